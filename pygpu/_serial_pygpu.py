"""pygpu's own pickle records: what pickle.dumps and copy.deepcopy of a
tensor write, and what pygpu.save wrote before it wrote torch's format
(pygpu.load still reads those files).

A self-contained tensor record is `_rebuild_tensor(data, dtype, shape,
location, requires_grad)` (a contiguous copy of the bytes; bfloat16 as
float32, which holds it exactly); the older pygpu.save files also hold
storage records `_rebuild_storage(data, dtype, numel, location)` and views
of them `_rebuild_view(storage, offset, shape, strides, requires_grad)`.
The rebuilders live in pygpu.serialization's namespace, where the records
name them.
"""
import collections
import copyreg
import functools
import os
import pickle

import numpy as np

from . import _C
from ._serial_common import (check_int, check_ints, dtype_name, malformed,
                             not_the_file, place, safe_global)

MODULE = "pygpu.serialization"  # where the records name the rebuilders
_NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
       "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
       "bool": np.bool_, "bfloat16": np.float32}


def _reduce_tensor(t):
    h = t.detach()
    if h.dtype == _C.bfloat16:
        h = h.float()
    data = np.ascontiguousarray(h.cpu().numpy()).tobytes()
    return _rebuild_tensor, (data, dtype_name(t), tuple(t.shape),
                             str(t.device), bool(t.requires_grad))


copyreg.pickle(_C.Tensor, _reduce_tensor)


def _host_array(data, dtype, numel):
    """The checked bytes of a record as a 1-d NumPy array."""
    if type(dtype) is not str or dtype not in _NP:
        raise malformed(f"unknown dtype {dtype!r}")
    if type(data) is not bytes:
        raise malformed(f"tensor data is {type(data).__name__}, not bytes")
    itemsize = np.dtype(_NP[dtype]).itemsize
    if len(data) != numel * itemsize:
        raise malformed(f"{len(data)} bytes of data for {numel} elements "
                        f"of {dtype}")
    if dtype == "bool":
        raw = np.frombuffer(data, np.uint8)
        if raw.size and raw.max() > 1:
            raise malformed("a bool tensor holds a byte other than 0 and 1")
    return np.frombuffer(data, dtype=_NP[dtype])


def _placed(host, dtype, location, map_location):
    with np.errstate(all="ignore"):  # a signalling NaN is a value here
        try:
            cpu = _C.tensor(host, dtype=getattr(_C, dtype))
        except Exception as e:
            raise not_the_file(e)
    return place(cpu, location, map_location)


def _rebuild_tensor(data, dtype, shape, location, requires_grad=False,
                    map_location=None):
    shape = check_ints(shape, "a tensor's shape")
    numel = 1
    for n in shape:
        numel *= n
    host = _host_array(data, dtype, numel).reshape(shape)
    if type(requires_grad) is not bool:
        raise malformed(f"requires_grad is {requires_grad!r}")
    t = _placed(host, dtype, location, map_location)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _LoadedStorage:
    """A storage read back: a flat tensor that the views share."""

    def __init__(self, flat):
        self.flat = flat


def _rebuild_storage(data, dtype, numel, location, map_location=None):
    numel = check_int(numel, "a storage's size")
    flat = _placed(_host_array(data, dtype, numel), dtype, location,
                   map_location)
    return _LoadedStorage(flat.detach().reshape(-1))


def _rebuild_view(storage, offset, shape, strides, requires_grad):
    if type(storage) is not _LoadedStorage:
        raise malformed(f"a tensor's storage is {type(storage).__name__}")
    offset = check_int(offset, "a tensor's offset")
    shape = check_ints(shape, "a tensor's shape")
    strides = check_ints(strides, "a tensor's strides")
    if type(requires_grad) is not bool:
        raise malformed(f"requires_grad is {requires_grad!r}")
    try:
        t = _C._strided_view(storage.flat, shape, strides, offset)
    except RuntimeError as e:
        raise malformed(f"a tensor of shape {shape}, strides {strides} "
                        f"and offset {offset} does not fit its storage of "
                        f"{storage.flat.numel()} elements") from e
    if requires_grad:
        t.requires_grad_(True)
    return t


for _f in (_rebuild_tensor, _rebuild_storage, _rebuild_view):
    _f.__module__ = MODULE


def _allowed():
    from .serialization import _rebuild_parameter
    found = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "complex"): complex,
        ("pygpu", "Size"): _C.Size,
        ("pygpu", "device"): _C.device,
        (MODULE, "_rebuild_parameter"): _rebuild_parameter,
        (MODULE, "_rebuild_view"): _rebuild_view,
    }
    for name in _NP:
        found[("pygpu", name)] = getattr(_C, name)
    return found


def unsupported_global(module, name):
    return not_the_file(pickle.UnpicklingError(
        f"Weights only load failed. Re-running `pygpu.load` with "
        f"`weights_only` set to `False` will likely succeed, but it can "
        f"result in arbitrary code execution. Do it only if you got the "
        f"file from a trusted source.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {module}.{name} was not an allowed "
        f"global by default. Please use `pygpu.serialization."
        f"add_safe_globals([{name}])` or the `pygpu.serialization."
        f"safe_globals([{name}])` context manager to allowlist this global "
        f"if you trust this class/function."))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, map_location, weights_only):
        super().__init__(file)
        self.map_location = map_location
        self.weights_only = weights_only
        self.allowed = _allowed()

    def find_class(self, module, name):
        if module == MODULE and name in ("_rebuild_tensor",
                                         "_rebuild_storage"):
            return functools.partial(globals()[name],
                                     map_location=self.map_location)
        if not self.weights_only:
            return super().find_class(module, name)
        found = self.allowed.get((module, name))
        if found is None:
            found = safe_global(module, name)
        if found is None:
            raise unsupported_global(module, name)
        return found


class _Bounded:
    """A binary file whose read(n) asks for no more than what is left of
    it, so that a corrupted length cannot make the unpickler allocate that
    much (a file that cannot tell its size is read as it is)."""

    def __init__(self, f):
        self._f = f
        try:
            pos = f.tell()
            self._left = f.seek(0, os.SEEK_END) - pos
            f.seek(pos)
        except (AttributeError, OSError, ValueError):
            self._left = None

    def read(self, n=-1):
        if self._left is None:
            return self._f.read(n)
        if n is None or n < 0 or n > self._left:
            n = self._left
        data = self._f.read(n)
        self._left -= len(data)
        return data

    def readline(self):
        line = self._f.readline()
        if self._left is not None:
            self._left -= len(line)
        return line


def load(f, map_location, weights_only):
    """Reads one of pygpu's own pickles from the binary file f."""
    return _Unpickler(_Bounded(f), map_location, weights_only).load()
