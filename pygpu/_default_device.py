"""set_default_device / get_default_device, as torch's: the device that
factories (empty, zeros, ones, full, rand, randn, arange, linspace, eye,
tensor, as_tensor) use when given no device=.  Per thread, as torch keeps
it; ``with pygpu.device("cuda"):`` sets it for a block (pygpu.device's
__enter__/__exit__, in C: csrc/core/default_device.c)."""
from . import _C

__all__ = ["set_default_device", "get_default_device"]


def set_default_device(device):
    """Make device (a pygpu.device, a string such as "cuda" or "cuda:1",
    an int for a CUDA ordinal, or None for the CPU again) this thread's
    default for factories given no device=.  Tensor methods and the
    *_like functions keep following their tensor's device."""
    _C._set_default_device(device)


def get_default_device():
    """This thread's default device: device('cpu') unless set; a CUDA
    default without an index reads as the current CUDA device, as torch's
    does (which needs CUDA)."""
    d = _C._get_default_device()
    if d is None:
        return _C.device("cpu")
    if d.type == "cuda" and d.index is None:
        return _C.device("cuda", _C._cuda_device_index(None))
    return d
