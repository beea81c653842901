"""as_tensor: data as a tensor, sharing memory where torch does (tensors,
NumPy arrays, objects with __cuda_array_interface__), else a copy."""
import numpy as np

from . import _C


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor of `dtype` on `device` without copying when it
    already is one (a tensor, an ndarray pygpu can view, a CUDA array with
    __cuda_array_interface__); otherwise a new tensor, as tensor() makes.
    A default device (set_default_device, `with device(...)`) is the
    device when none is given, as in torch."""
    if device is None:
        device = _C._get_default_device()
    if isinstance(data, _C.Tensor):
        t = data
    elif isinstance(data, np.ndarray):
        try:
            t = _C.from_numpy(data)
        except (TypeError, ValueError):  # a layout or dtype it cannot view
            return _C.tensor(data, dtype=dtype, device=device)
    elif hasattr(data, "__cuda_array_interface__"):
        t = _C._from_cuda_array_interface(data)
    else:
        return _C.tensor(data, dtype=dtype, device=device)
    if device is None and dtype is None:
        return t
    return t.to(device=t.device if device is None else device,
                dtype=t.dtype if dtype is None else dtype)
