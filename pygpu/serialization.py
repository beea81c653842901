"""pygpu.save / pygpu.load: tensors and state dicts in a pickle.

A tensor pickles as its bytes (copied to the host), dtype, shape and
device, and comes back on that device or where map_location sends it.
load(weights_only=True), the default as in torch >= 2.6, unpickles with an
allowlist: containers, numbers, strings, tensors, Parameters, devices,
dtypes, Size and OrderedDict; any other global raises UnpicklingError, so a
crafted file cannot run code.  The file is a plain pickle, not torch's zip
format: torch checkpoints do not load and pygpu files do not open in torch.
"""
import collections
import copyreg
import functools
import os
import pickle
from typing import IO, Any, Union

import numpy as np

from . import _C

__all__ = ["save", "load"]

# The bytes of each dtype as NumPy reads them; bfloat16 travels as float32
# (which holds it exactly: NumPy has no bfloat16).
_NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
       "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
       "bool": np.bool_, "bfloat16": np.float32}
DEFAULT_PROTOCOL = 4


def _reduce_tensor(t):
    name = str(t.dtype).rsplit(".", 1)[-1]
    host = t.detach().float() if name == "bfloat16" else t.detach()
    data = np.ascontiguousarray(host.cpu().numpy()).tobytes()
    return _rebuild_tensor, (data, name, tuple(t.shape), str(t.device))


copyreg.pickle(_C.Tensor, _reduce_tensor)


def _check_device(dev):
    if dev.type != "cuda":
        return
    if not _C._cuda_is_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False. If you are running on a "
            "CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the "
            "CPU.")
    n = _C._cuda_device_count()
    if (dev.index or 0) >= n:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {dev.index} "
            f"but torch.cuda.device_count() is {n}. Please use torch.load "
            f"with map_location to map your storages to an existing device.")


def _rebuild_tensor(data, dtype, shape, location, map_location=None):
    arr = np.frombuffer(data, dtype=_NP[dtype]).reshape(shape)
    dt = getattr(_C, dtype)
    if callable(map_location):
        out = map_location(_C.tensor(arr, dtype=dt), location)
        if out is not None:
            return out
    elif isinstance(map_location, dict):
        location = map_location.get(location, location)
    elif map_location is not None:
        location = map_location
    dev = location if isinstance(location, _C.device) else _C.device(location)
    _check_device(dev)
    return _C.tensor(arr, dtype=dt, device=dev)


def _rebuild_parameter(data, requires_grad):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("pygpu", "Size"): _C.Size,
    ("pygpu", "device"): _C.device,
    (__name__, "_rebuild_parameter"): _rebuild_parameter,
}
for _name in _NP:
    _ALLOWED[("pygpu", _name)] = getattr(_C, _name)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, map_location, weights_only):
        super().__init__(file)
        self.map_location = map_location
        self.weights_only = weights_only

    def find_class(self, module, name):
        if (module, name) == (__name__, "_rebuild_tensor"):
            return functools.partial(_rebuild_tensor,
                                     map_location=self.map_location)
        if not self.weights_only:
            return super().find_class(module, name)
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"Weights only load failed. Unsupported global: GLOBAL "
                f"{module}.{name} was not an allowed global by default. "
                f"Load with weights_only=False only if you trust the source "
                f"of the file: unpickling can run arbitrary code.")
        return found


def _opened(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode)
    return None


def save(obj: Any, f: Union[str, "os.PathLike[str]", IO[bytes]],
         pickle_protocol: int = DEFAULT_PROTOCOL) -> None:
    """Write obj (tensors, state dicts, nested containers) to a path or a
    binary file object."""
    own = _opened(f, "wb")
    try:
        pickle.dump(obj, own or f,  # type: ignore[arg-type]
                    protocol=pickle_protocol)
    finally:
        if own is not None:
            own.close()


def load(f: Union[str, "os.PathLike[str]", IO[bytes]],
         map_location: Any = None, weights_only: bool = True) -> Any:
    """Read what save wrote.  map_location: a device or string (every
    tensor goes there), a dict {saved location: new location}, or a
    callable(cpu_tensor, saved_location) returning a tensor (or None for
    the default)."""
    own = _opened(f, "rb")
    src = own or f
    try:
        head = src.peek(4)[:4] if hasattr(src, "peek") else b""
        if head == b"PK\x03\x04":
            raise RuntimeError("this is a zip file (a torch checkpoint?); "
                               "pygpu.load reads files written by "
                               "pygpu.save")
        return _Unpickler(src, map_location, weights_only).load()
    finally:
        if own is not None:
            own.close()
