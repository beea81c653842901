"""DLPack exchange with torch's names: from_dlpack and to_dlpack.

from_dlpack takes any object with __dlpack__ (a NumPy array, a torch or
CuPy tensor, a pygpu tensor) or a capsule, and shares its memory.  For CUDA
producers it passes pygpu's current stream, so that the producer orders its
pending work before pygpu's; it asks for a versioned capsule and falls back
to a legacy one for producers that do not know max_version.
"""
import enum

from .. import _C

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The DLPack device types (the first item of __dlpack_device__())."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14


def to_dlpack(tensor):
    """A legacy ("dltensor") capsule sharing `tensor`'s memory."""
    return tensor.__dlpack__()


def _consumer_stream(device_type, device_id):
    if device_type != DLDeviceType.kDLCUDA:
        return None
    handle = _C._cuda_current_stream(device_id)
    return handle if handle != 0 else 1  # 1: the legacy default stream


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of `ext_tensor` (an object with
    __dlpack__, or a DLPack capsule, which is consumed)."""
    if hasattr(ext_tensor, "__dlpack__"):
        kwargs = {"max_version": (1, 0)}
        device = ext_tensor.__dlpack_device__()
        stream = _consumer_stream(device[0], device[1])
        if stream is not None:
            kwargs["stream"] = stream
        try:
            capsule = ext_tensor.__dlpack__(**kwargs)
        except TypeError:
            del kwargs["max_version"]  # a producer before DLPack 1.0
            capsule = ext_tensor.__dlpack__(**kwargs)
    else:
        capsule = ext_tensor
    return _C._from_dlpack(capsule)
