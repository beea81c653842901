"""pygpu.accelerator: torch.accelerator's device-agnostic queries.  pygpu's
only accelerator is CUDA."""
from . import _C, cuda

__all__ = ["is_available", "current_accelerator", "device_count",
           "current_device_index", "set_device_index", "synchronize"]


def is_available():
    """True when an accelerator (a CUDA device) can be used."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when pygpu was built with CUDA (and, with
    check_available=True, a CUDA device can be used now), else None."""
    if not _C._cuda_is_built():
        return None
    if check_available and not cuda.is_available():
        return None
    return _C.device("cuda")


def device_count():
    """The number of usable accelerator devices (0 without any)."""
    return cuda.device_count()


def current_device_index():
    """The index of the current accelerator device (RuntimeError without
    one, as CUDA's current_device)."""
    return cuda.current_device()


def set_device_index(device):
    """Make device (an index, 'cuda:N' or a device) the current one."""
    cuda.set_device(device)


def synchronize(device=None):
    """Wait for all work queued on device (the current one by default)."""
    cuda.synchronize(device)
