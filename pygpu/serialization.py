"""pygpu.save / pygpu.load: tensors and state dicts in a pickle.

The file is a plain pickle, not torch's zip format: torch checkpoints do not
load and pygpu files do not open in torch.

Storages.  save writes the memory of the tensors it reaches once per
storage: tensors whose memory overlaps (views of one tensor: x, x[1], x.T,
x.expand(...)) become views of one storage record, and load gives them
back as views of one storage again, sharing memory as they did, as torch
does.  A storage record is `_rebuild_storage(data, dtype, numel,
location)`: its bytes copied to the host (bfloat16 travels as float32,
which holds it exactly; NumPy has no bfloat16), a tensor record
`_rebuild_view(storage, offset, shape, strides, requires_grad)` in
elements.  pickle.dumps and copy.deepcopy of a tensor take the older
self-contained record `_rebuild_tensor(data, dtype, shape, location,
requires_grad)` (a contiguous copy), which load reads as well.  Both keep
requires_grad: a tensor that required grad loads as a leaf that requires
grad; a Parameter stays a Parameter.

A tensor comes back on its saved device or where map_location sends it.
load(weights_only=True), the default as in torch >= 2.6, unpickles with an
allowlist: containers, numbers, strings, tensors, Parameters, devices,
dtypes, Size and OrderedDict; any other global raises UnpicklingError, so a
crafted file cannot run code.

Malformed files.  A truncated or corrupted file (bad pickle opcodes, a
record with missing or wrong fields, an unknown dtype name, data whose
length is not the declared size, a view outside its storage, a bool
storage with a byte other than 0 or 1, a declared length larger than the
file) raises pickle.UnpicklingError, whose message says what was wrong and
whose __cause__ is the error underneath; never another exception type.
Errors that are not the file's fault keep their types: OSError reading the
file, the RuntimeError for a CUDA location on a machine without that
device, whatever a map_location callable raises.  A zip file (a torch
checkpoint) is refused with a RuntimeError saying so.
"""
import bisect
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
_MAX_DIMS = 16  # pygpu's limit on a tensor's dims


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _host(t):
    """t's values as a NumPy array on the host (bfloat16 as float32)."""
    t = t.detach()
    if t.dtype == _C.bfloat16:
        t = t.float()
    return t.cpu().numpy()


def _reduce_tensor(t):
    data = np.ascontiguousarray(_host(t)).tobytes()
    return _rebuild_tensor, (data, _dtype_name(t), tuple(t.shape),
                             str(t.device), bool(t.requires_grad))


copyreg.pickle(_C.Tensor, _reduce_tensor)


# ------------------------------------------------------------- saving


def _extent(t):
    """The number of elements from t's first element to its last (t has
    elements and no negative stride)."""
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


class _Group:
    """The tensors of one device and dtype whose memory overlaps, over
    the bytes [start, end): one storage in the file."""

    def __init__(self, start, end, t):
        self.start, self.end, self.members = start, end, [t]


class _SavedStorage:
    """A storage being saved: pickled once (the pickler's memo), however
    many tensors refer to it."""

    def __init__(self, group):
        self.group = group

    def record(self):
        g, t0 = self.group, self.group.members[0]
        isz = t0.element_size()
        numel = (g.end - g.start) // isz
        if len(g.members) == 1 and t0.is_contiguous() and \
                t0.numel() == numel:
            data = np.ascontiguousarray(_host(t0)).tobytes()
        else:
            buf = np.zeros(numel, _NP[_dtype_name(t0)])
            for t in g.members:
                at = buf[(t.data_ptr() - g.start) // isz:]
                np.lib.stride_tricks.as_strided(
                    at, tuple(t.shape),
                    tuple(s * buf.itemsize for s in t.stride()))[...] = \
                    _host(t)
            data = buf.tobytes()
        return data, _dtype_name(t0), numel, str(t0.device)


class _Sink:
    def write(self, b):
        return len(b)


class _Recorder(pickle.Pickler):
    """A first pass that writes nothing and notes every tensor reached."""

    def __init__(self, protocol):
        super().__init__(_Sink(), protocol=protocol)
        self.tensors = []

    def persistent_id(self, obj):
        if type(obj) is _C.Tensor:
            self.tensors.append(obj)  # kept alive: no address is reused
            return 0
        return None


def _groups(tensors):
    """{(device, dtype, alignment): ([starts], [groups])}, the groups
    sorted and disjoint."""
    spans = collections.defaultdict(list)
    for t in tensors:
        if t.numel() == 0 or any(s < 0 for s in t.stride()):
            continue
        isz = t.element_size()
        p = t.data_ptr()
        spans[(str(t.device), t.dtype, p % isz)].append(
            (p, p + _extent(t) * isz, t))
    out = {}
    for key, items in spans.items():
        items.sort(key=lambda x: (x[0], -x[1]))
        merged = []
        for start, end, t in items:
            if merged and start < merged[-1].end:
                g = merged[-1]
                g.end = max(g.end, end)
                g.members.append(t)
            else:
                merged.append(_Group(start, end, t))
        out[key] = ([g.start for g in merged], merged)
    return out


class _Pickler(pickle.Pickler):
    """The second pass: each tensor a view of its group's storage."""

    def __init__(self, file, protocol, groups):
        super().__init__(file, protocol=protocol)
        self.groups = groups
        self.storages = {}

    def _group_of(self, t):
        if t.numel() == 0 or any(s < 0 for s in t.stride()):
            return None
        isz = t.element_size()
        p = t.data_ptr()
        found = self.groups.get((str(t.device), t.dtype, p % isz))
        if found is None:
            return None
        i = bisect.bisect_right(found[0], p) - 1
        g = found[1][i] if i >= 0 else None
        if g is None or p + _extent(t) * isz > g.end:
            return None
        return g

    def reducer_override(self, obj):
        if type(obj) is _SavedStorage:
            return _rebuild_storage, obj.record()
        if type(obj) is not _C.Tensor:
            return NotImplemented
        g = self._group_of(obj)
        if g is None:  # empty, or met only now: a storage of its own
            if not obj.is_contiguous():
                return _reduce_tensor(obj)
            g = _Group(obj.data_ptr(), obj.data_ptr() + (
                _extent(obj) if obj.numel() else 0) * obj.element_size(),
                obj)
        st = self.storages.get(id(g))
        if st is None:
            st = self.storages[id(g)] = _SavedStorage(g)
        offset = (obj.data_ptr() - g.start) // obj.element_size()
        return _rebuild_view, (st, offset, tuple(obj.shape), obj.stride(),
                               bool(obj.requires_grad))


# ------------------------------------------------------------- loading


def _malformed(msg):
    return pickle.UnpicklingError(f"pygpu.load: malformed file: {msg}")


def _not_the_file(e):
    """Marks e as an error that load passes on as it is."""
    e._pygpu_not_the_file = True
    return e


def _check_device(dev):
    if dev.type != "cuda":
        return
    if not _C._cuda_is_available():
        raise _not_the_file(RuntimeError(
            "Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False. If you are running on a "
            "CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the "
            "CPU."))
    n = _C._cuda_device_count()
    if (dev.index or 0) >= n:
        raise _not_the_file(RuntimeError(
            f"Attempting to deserialize object on CUDA device {dev.index} "
            f"but torch.cuda.device_count() is {n}. Please use torch.load "
            f"with map_location to map your storages to an existing "
            f"device."))


def _int(x, what, low=0):
    if type(x) is not int or x < low:
        raise _malformed(f"{what} is {x!r}, not an int >= {low}")
    return x


def _ints(xs, what):
    if not isinstance(xs, (tuple, list, _C.Size)) or len(xs) > _MAX_DIMS:
        raise _malformed(f"{what} is {xs!r}, not a tuple of at most "
                         f"{_MAX_DIMS} ints")
    return tuple(_int(x, what) for x in xs)


def _host_array(data, dtype, numel):
    """The checked bytes of a record as a 1-d NumPy array."""
    if type(dtype) is not str or dtype not in _NP:
        raise _malformed(f"unknown dtype {dtype!r}")
    if type(data) is not bytes:
        raise _malformed(f"tensor data is {type(data).__name__}, not "
                         f"bytes")
    itemsize = np.dtype(_NP[dtype]).itemsize
    if len(data) != numel * itemsize:
        raise _malformed(f"{len(data)} bytes of data for {numel} elements "
                         f"of {dtype}")
    if dtype == "bool":
        raw = np.frombuffer(data, np.uint8)
        if raw.size and raw.max() > 1:
            raise _malformed("a bool tensor holds a byte other than 0 "
                             "and 1")
    return np.frombuffer(data, dtype=_NP[dtype])


def _device(where):
    return where if isinstance(where, _C.device) else _C.device(where)


def _placed(host, dtype, location, map_location):
    """The host array as a tensor of dtype where map_location sends a
    tensor saved at location."""
    dt = getattr(_C, dtype)
    if not isinstance(location, (str, _C.device)):
        raise _malformed(f"a location is {location!r}")
    try:
        saved = _device(location)
    except Exception as e:
        raise _malformed(f"bad location {location!r}") from e
    if saved.type not in ("cpu", "cuda"):
        raise _malformed(f"bad location {location!r}")
    try:
        if callable(map_location):
            out = map_location(_C.tensor(host, dtype=dt), location)
            if out is not None:
                return out
            dev = saved
        elif isinstance(map_location, dict):
            dev = _device(map_location.get(location, saved))
        else:
            dev = saved if map_location is None else _device(map_location)
    except Exception as e:  # map_location's own error
        raise _not_the_file(e)
    _check_device(dev)
    try:
        # bfloat16 comes back from float32: a signalling NaN in the file
        # is a value like any other, not a floating-point error to report
        with np.errstate(all="ignore"):
            return _C.tensor(host, dtype=dt, device=dev)
    except Exception as e:  # out of memory on the device, ...
        raise _not_the_file(e)


def _rebuild_tensor(data, dtype, shape, location, requires_grad=False,
                    map_location=None):
    shape = _ints(shape, "a tensor's shape")
    numel = 1
    for n in shape:
        numel *= n
    host = _host_array(data, dtype, numel).reshape(shape)
    if type(requires_grad) is not bool:
        raise _malformed(f"requires_grad is {requires_grad!r}")
    t = _placed(host, dtype, location, map_location)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _LoadedStorage:
    """A storage read back: a flat tensor that the views share."""

    def __init__(self, flat):
        self.flat = flat


def _rebuild_storage(data, dtype, numel, location, map_location=None):
    numel = _int(numel, "a storage's size")
    flat = _placed(_host_array(data, dtype, numel), dtype, location,
                   map_location)
    if not isinstance(flat, _C.Tensor):
        raise _not_the_file(TypeError(
            f"map_location returned {type(flat).__name__}, not a Tensor"))
    return _LoadedStorage(flat.detach().reshape(-1))


def _rebuild_view(storage, offset, shape, strides, requires_grad):
    if type(storage) is not _LoadedStorage:
        raise _malformed(f"a tensor's storage is {type(storage).__name__}")
    offset = _int(offset, "a tensor's offset")
    shape = _ints(shape, "a tensor's shape")
    strides = _ints(strides, "a tensor's strides")
    if type(requires_grad) is not bool:
        raise _malformed(f"requires_grad is {requires_grad!r}")
    try:
        t = _C._strided_view(storage.flat, shape, strides, offset)
    except RuntimeError as e:
        raise _malformed(f"a tensor of shape {shape}, strides {strides} "
                         f"and offset {offset} does not fit its storage of "
                         f"{storage.flat.numel()} elements") from e
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad):
    from .nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise _malformed(f"a Parameter's data is {type(data).__name__}")
    return Parameter(data, requires_grad)


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("pygpu", "Size"): _C.Size,
    ("pygpu", "device"): _C.device,
    (__name__, "_rebuild_parameter"): _rebuild_parameter,
    (__name__, "_rebuild_view"): _rebuild_view,
}
for _name in _NP:
    _ALLOWED[("pygpu", _name)] = getattr(_C, _name)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, map_location, weights_only):
        super().__init__(file)
        self.map_location = map_location
        self.weights_only = weights_only

    def find_class(self, module, name):
        if module == __name__ and name in ("_rebuild_tensor",
                                           "_rebuild_storage"):
            return functools.partial(globals()[name],
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


class _Bounded:
    """A binary file whose read(n) asks for no more than what is left of
    it, so that a corrupted length cannot make the unpickler allocate that
    much (a file that cannot tell its size is read as it is).  `head`
    keeps the first four bytes read through it."""

    def __init__(self, f):
        self._f = f
        self.head = b""
        try:
            pos = f.tell()
            self._left = f.seek(0, os.SEEK_END) - pos
            f.seek(pos)
        except (AttributeError, OSError, ValueError):
            self._left = None

    def _seen(self, data):
        if len(self.head) < 4:
            self.head += data[:4 - len(self.head)]
        return data

    def read(self, n=-1):
        if self._left is None:
            return self._seen(self._f.read(n))
        if n is None or n < 0 or n > self._left:
            n = self._left
        data = self._f.read(n)
        self._left -= len(data)
        return self._seen(data)

    def readline(self):
        line = self._f.readline()
        if self._left is not None:
            self._left -= len(line)
        return self._seen(line)


def _opened(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode)
    return None


def save(obj: Any, f: Union[str, "os.PathLike[str]", IO[bytes]],
         pickle_protocol: int = DEFAULT_PROTOCOL) -> None:
    """Write obj (tensors, state dicts, nested containers) to a path or a
    binary file object; tensors that share memory are written as views of
    one storage."""
    rec = _Recorder(pickle_protocol)
    rec.dump(obj)
    groups = _groups(rec.tensors)
    own = _opened(f, "wb")
    try:
        _Pickler(own or f, pickle_protocol, groups).dump(obj)
    finally:
        if own is not None:
            own.close()


def load(f: Union[str, "os.PathLike[str]", IO[bytes]],
         map_location: Any = None, weights_only: bool = True) -> Any:
    """Read what save wrote.  map_location: a device or string (every
    tensor goes there), a dict {saved location: new location}, or a
    callable(cpu_tensor, saved_location) returning a tensor (or None for
    the default), called once per storage.  A malformed file raises
    pickle.UnpicklingError."""
    own = _opened(f, "rb")
    src = own or f
    try:
        bounded = _Bounded(src)
        up = _Unpickler(bounded, map_location, weights_only)
        try:
            return up.load()
        except Exception as e:
            if bounded.head[:1] == b"P":  # a persistent id, or a zip file
                try:
                    bounded.read(4 - len(bounded.head))
                except Exception:
                    pass
            if bounded.head == b"PK\x03\x04":
                raise RuntimeError(
                    "this is a zip file (a torch checkpoint?); pygpu.load "
                    "reads files written by pygpu.save") from None
            if isinstance(e, (pickle.UnpicklingError, OSError)) or \
                    getattr(e, "_pygpu_not_the_file", False):
                raise
            raise _malformed(f"{type(e).__name__}: {e}") from e
    finally:
        if own is not None:
            own.close()
