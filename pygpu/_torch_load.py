"""pygpu.load of torch's checkpoints: the zip format (torch >= 1.6) and
the older one that torch.save still writes with
_use_new_zipfile_serialization=False.

data.pkl is read by the C unpickler, whose find_class hands out pygpu's
counterparts of torch's globals: the tensor and Parameter rebuilders,
storage classes (each naming a dtype), dtypes, Size and device.  With
weights_only=True (the default) nothing else is allowed but
OrderedDict, set, frozenset, complex, bytearray, slice and
_codecs.encode (protocol 2's bytes); anything else raises
pickle.UnpicklingError naming the global, as torch.  persistent_load
reads each storage once: its record's bytes straight into a new buffer
(or a copy-on-write map of the file with mmap=True), byte-swapped when the
file says 'big', wrapped as a CPU tensor without a copy (bfloat16 widened
through float32) and moved where map_location sends it; tensors are
strided views of it, checked to lie inside it.
"""
import _compat_pickle
import codecs
import collections
import pickle
import io
import struct

import numpy as np

from . import _C
from .autograd.grad_mode import no_grad
from ._serial_common import (RAW, BadFile, check_view, host_tensor,
                             malformed, not_the_file, place, safe_global)
from ._serial_pygpu import _Bounded, unsupported_global
from ._torch_save import STORAGE_CLASS
from ._torch_zip import Reader, bad_archive, new_buffer

MAX_VERSION = 10  # the newest `version` record torch reads
_DTYPE_OF_CLASS = {v: k for k, v in STORAGE_CLASS.items()}
# torch's storage classes and dtypes that pygpu lacks
_MISSING_CLASS = {"CharStorage": "int8", "ShortStorage": "int16",
                  "ComplexFloatStorage": "complex64",
                  "ComplexDoubleStorage": "complex128",
                  "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                  "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2",
                  "QUInt2x4Storage": "quint2x4"}
_TORCH_DTYPES = {
    "uint16", "uint32", "uint64", "int8", "int16", "complex32", "complex64",
    "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8",
    "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16",
    "bits1x8", "bits2x4", "bits4x2", "int1", "int2", "int3", "int4",
    "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5",
    "uint6", "uint7"}


def missing_dtype(name):
    return not_the_file(RuntimeError(
        f"pygpu.load: the file holds a tensor of dtype torch.{name}, which "
        f"pygpu does not have (pygpu's dtypes: {', '.join(sorted(RAW))}); "
        f"convert it in torch before saving"))


class _StorageClass:
    """torch.FloatStorage and the like: the dtype of a storage (None:
    torch.UntypedStorage, in bytes)."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Storage:
    """A storage read from the file: its host bytes, its location, and
    the flat tensor of each dtype it has been viewed as, placed."""

    def __init__(self, raw, location, big_endian):
        self.raw, self.location = raw, location
        self.big_endian = big_endian
        self.flat = {}
        self.dtype = None  # the typed storage's dtype, if typed
        self.pending = False  # raw's bytes are not read yet

    @staticmethod
    def _check_bool(host):
        if host.size and host.view(np.uint8).max() > 1:
            raise malformed("a bool storage holds a byte other than 0 "
                            "and 1")

    def typed(self, dtype, map_location):
        flat = self.flat.get(dtype)
        if flat is not None:
            return flat
        itemsize = np.dtype(RAW[dtype]).itemsize
        if self.raw.nbytes % itemsize:
            raise malformed(f"a storage of {self.raw.nbytes} bytes viewed "
                            f"as {dtype}")
        host = self.raw.view(RAW[dtype])
        if self.big_endian and itemsize > 1:  # a copy: raw stays as read
            host = host.byteswap()
        if dtype == "bool" and not self.pending:
            self._check_bool(host)
        flat = place(host_tensor(host, dtype), self.location, map_location)
        flat = self.flat[dtype] = flat.detach().reshape(-1)
        return flat

    def fill(self):
        """Copies the bytes now in raw into the flat tensors that do not
        share raw's memory (the legacy format's storages come last)."""
        self.pending = False
        for dtype, flat in self.flat.items():
            host = self.raw.view(RAW[dtype])
            if dtype == "bool":
                self._check_bool(host)
            if flat.device.type == "cpu" and flat.numel() and \
                    flat.data_ptr() == host.ctypes.data:
                continue
            with no_grad():
                flat.copy_(host_tensor(host, dtype).to(flat.device))


def _rebuild_parameter(data, requires_grad, backward_hooks=None,
                       state=None):
    from .nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise malformed(f"a Parameter's data is {type(data).__name__}")
    if type(requires_grad) is not bool:
        raise malformed(f"requires_grad is {requires_grad!r}")
    return Parameter(data, requires_grad)


def _device(*args):
    return _C.device(*args)


def _size(dims=()):
    return _C.Size(dims)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, storage_of, map_location, weights_only):
        super().__init__(file)
        self.storage_of = storage_of  # (key, nbytes, location) -> _Storage
        self.map_location = map_location
        self.weights_only = weights_only
        self.storages = {}

    def find_class(self, module, name):
        # protocol 2 names builtins as Python 2 did
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        found = _GLOBALS.get((module, name))
        if found is not None:
            return getattr(self, found) if type(found) is str else found
        if module == "torch" and name in _DTYPE_OF_CLASS:
            return _StorageClass(_DTYPE_OF_CLASS[name])
        if module == "torch" and name in _MISSING_CLASS:
            raise missing_dtype(_MISSING_CLASS[name])
        if module == "torch" and (name in RAW or name in _TORCH_DTYPES):
            if name in RAW:
                return getattr(_C, name)
            raise missing_dtype(name)
        if self.weights_only:
            found = safe_global(module, name)
            if found is None:
                raise unsupported_global(module, name)
            return found
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (type(pid) is tuple and len(pid) in (5, 6) and
                pid[0] == "storage"):
            raise malformed(f"unknown persistent id {pid!r:.200}")
        cls, key, location, numel = pid[1:5]
        if type(cls) is not _StorageClass:
            raise malformed(f"a storage's class is {cls!r:.100}")
        if type(key) is not str or type(numel) is not int or numel < 0:
            raise malformed(f"a storage of key {key!r:.100} and size "
                            f"{numel!r:.100}")
        if len(pid) == 6 and pid[5] is not None:
            raise malformed("a storage view (torch < 0.4) is not read")
        st = self.storages.get(key)
        if st is None:
            nbytes = numel * (np.dtype(RAW[cls.dtype]).itemsize
                              if cls.dtype else 1)
            st = self.storages[key] = self.storage_of(key, nbytes, location)
        if cls.dtype is not None:
            if st.dtype not in (None, cls.dtype):
                raise malformed(f"storage {key} is read as both {st.dtype} "
                                f"and {cls.dtype}")
            st.dtype = cls.dtype
        return st

    def _view(self, storage, dtype, offset, size, stride, requires_grad):
        flat = storage.typed(dtype, self.map_location)
        offset, size, stride = check_view(flat.numel(), offset, size, stride)
        if type(requires_grad) is not bool:
            raise malformed(f"requires_grad is {requires_grad!r}")
        if 0 in size:
            t = _C.empty(size, dtype=flat.dtype, device=flat.device)
        else:
            t = _C._strided_view(flat, size, stride, offset)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rebuild_v2(self, storage, storage_offset, size, stride,
                   requires_grad, backward_hooks, metadata=None):
        if type(storage) is not _Storage or storage.dtype is None:
            raise malformed(f"a tensor's storage is "
                            f"{type(storage).__name__}")
        return self._view(storage, storage.dtype, storage_offset, size,
                          stride, requires_grad)

    def rebuild_v3(self, storage, storage_offset, size, stride,
                   requires_grad, backward_hooks, dtype, metadata=None):
        if type(storage) is not _Storage:
            raise malformed(f"a tensor's storage is "
                            f"{type(storage).__name__}")
        if type(dtype) is not type(_C.float32):
            raise malformed(f"a tensor's dtype is {dtype!r:.100}")
        return self._view(storage, str(dtype).rsplit(".", 1)[-1],
                          storage_offset, size, stride, requires_grad)


def _encode(text, encoding="utf-8"):
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise malformed("_codecs.encode of something else than a str in "
                        "latin1")
    return codecs.encode(text, encoding)


_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): "rebuild_v2",
    ("torch._utils", "_rebuild_tensor_v3"): "rebuild_v3",
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.storage", "UntypedStorage"): _StorageClass(None),
    ("torch", "UntypedStorage"): _StorageClass(None),
    ("torch", "Size"): _size,
    ("torch", "device"): _device,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "slice"): slice,
    ("_codecs", "encode"): _encode,
}


def _check_version(reader):
    if not reader.has("version"):
        raise bad_archive("no version record")
    text = reader.read("version")
    try:
        version = int(text.strip())
    except ValueError:
        raise bad_archive(f"version record {text[:40]!r}") from None
    if version > MAX_VERSION:
        raise bad_archive(
            f"Attempted to read a PyTorch file with version {version}, but "
            f"the maximum supported version for reading is {MAX_VERSION}.")
    if version < 1:
        raise bad_archive(f"version {version}")


def load_zip(f, map_location, weights_only, mmap_path):
    """Reads a torch zip checkpoint from the seekable binary file f
    (mapping storages from the file at mmap_path if given)."""
    reader = Reader(f)
    _check_version(reader)
    order = "little"
    if reader.has("byteorder"):
        order = reader.read("byteorder").decode("ascii", "replace")
        if order not in ("little", "big"):
            raise bad_archive(f"byteorder {order[:20]!r}")
    big = order == "big"

    def storage_of(key, nbytes, location):
        name = f"data/{key}"
        if reader.has(name) and reader.size_of(name) != nbytes:
            raise malformed(f"storage record {name} holds "
                            f"{reader.size_of(name)} bytes, not the "
                            f"{nbytes} of its storage")
        if mmap_path is not None:
            return _Storage(reader.map_array(name, mmap_path), location, big)
        return _Storage(reader.read_array(name), location, big)

    if not reader.has("data.pkl"):
        raise bad_archive("no data.pkl record")
    pkl = reader.read("data.pkl")
    return _unpickle(_Bounded(io.BytesIO(pkl)), storage_of, map_location,
                     weights_only)


def _unpickle(f, storage_of=None, map_location=None, weights_only=True):
    """One object from f.  The memo is cleared after, as it holds the
    unpickler's own bound methods (the rebuild functions find_class
    returns): a cycle CPython 3.10's collector does not see through, which
    would keep every loaded tensor alive."""
    up = _Unpickler(f, storage_of, map_location, weights_only)
    try:
        return up.load()
    finally:
        up.memo.clear()


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001


def is_legacy(head):
    """Whether the first bytes of a file are torch's legacy magic number
    (pickled with protocol 2)."""
    return head[:3] == b"\x80\x02\x8a" and head[3:4] == b"\x0a" and \
        int.from_bytes(head[4:14], "little") == _LEGACY_MAGIC


def load_legacy(f, size, map_location, weights_only):
    """Reads the format torch.save wrote before the zip one: pickles of
    the magic number, the protocol version and the system's description,
    then the object (storages as persistent ids), then the sorted storage
    keys, then each storage as a little-endian int64 count and its raw
    little-endian bytes."""
    try:
        magic = _unpickle(_Bounded(f))
        proto = _unpickle(_Bounded(f))
        info = _unpickle(_Bounded(f))
    except pickle.UnpicklingError:
        raise
    except Exception as e:
        raise malformed(f"{type(e).__name__}: {e}") from e
    if magic != _LEGACY_MAGIC or proto != _LEGACY_PROTOCOL or \
            not isinstance(info, dict):
        raise malformed("not a torch checkpoint of the legacy format")
    wanted = {}

    def storage_of(key, nbytes, location):
        if nbytes > size:
            raise malformed(f"storage {key!r:.40} of {nbytes} bytes in a "
                            f"file of {size}")
        # its bytes come after the object: the tensors view a buffer that
        # is filled once they are read
        st = _Storage(new_buffer(nbytes), location, False)
        st.pending = True
        wanted[key] = (st, nbytes)
        return st

    obj = _unpickle(_Bounded(f), storage_of, map_location, weights_only)
    keys = _unpickle(_Bounded(f))
    if not isinstance(keys, list) or \
            any(type(k) is not str for k in keys):
        raise malformed("the storage key list is not a list of str")
    for key in keys:
        st, nbytes = wanted.pop(key, (None, None))
        if st is None:
            raise malformed(f"storage {key!r:.40} is listed twice or not "
                            f"used")
        head = f.read(8)
        if len(head) != 8:
            raise malformed("the file ends inside the storages")
        itemsize = np.dtype(RAW[st.dtype]).itemsize if st.dtype else 1
        count = struct.unpack("<q", head)[0]
        if count < 0 or count * itemsize != nbytes:
            raise malformed(f"storage {key!r:.40} holds {count} elements, "
                            f"not the {nbytes // itemsize} of its tensors")
        if f.readinto(memoryview(st.raw)) != nbytes:
            raise malformed("the file ends inside the storages")
        st.fill()
    if wanted:
        raise malformed(f"no data for storage {next(iter(wanted))!r:.40}")
    return obj


