"""safetensors files of pygpu tensors, with the safetensors package's
names: save_file, load_file, save, load and safe_open.

The format is written and read here rather than through the safetensors
package's NumPy API: NumPy has no bfloat16, so that API cannot carry
bfloat16 tensors, and reading the file directly lets load_file wrap the
bytes it read without another copy and safe_open read only the tensors
(or slices) asked for.  The package is not needed; files written here
are read by it, and files it writes are read here (the `safetensors`
extra installs it for the tests that check so).

A file is an 8-byte little-endian header length N, N bytes of JSON
({name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
"__metadata__": {str: str}}, padded with spaces so that the data starts
8-byte aligned), then the tensors' bytes, little-endian, row-major,
back to back (sorted by alignment, then name, as the package sorts them).
Tensors are saved contiguous: views of one tensor are written as copies
of their own.  Reading checks the header as the package does (size,
JSON, dtypes, shapes, offsets inside the data, no overlap, no holes)
and raises SafetensorError with a message for a malformed file.
"""
import json
import os

import numpy as np

from .. import _C
from .._serial_common import RAW, host_bytes, host_tensor
from .._torch_zip import new_buffer

__all__ = ["save", "save_file", "load", "load_file", "safe_open",
           "SafetensorError"]

_CODE = {"float32": "F32", "float64": "F64", "float16": "F16",
         "bfloat16": "BF16", "int64": "I64", "int32": "I32", "uint8": "U8",
         "bool": "BOOL"}
_NAME = {v: k for k, v in _CODE.items()}
# what the format has and pygpu does not: torch's name for each
_OTHER = {"I8": "int8", "I16": "int16", "U16": "uint16", "U32": "uint32",
          "U64": "uint64", "F8_E5M2": "float8_e5m2",
          "F8_E4M3": "float8_e4m3fn", "F8_E8M0": "float8_e8m0fnu",
          "F4": "float4_e2m1fn_x2", "C64": "complex64"}
MAX_HEADER = 100_000_000  # the package's limit on the JSON header


class SafetensorError(Exception):
    """A malformed safetensors file, or one pygpu cannot hold."""


def _name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _plan(tensors, metadata):
    """(header bytes, [(name, tensor)] in data order)."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of str to Tensor, not "
                        f"{type(tensors).__name__}")
    for k, v in tensors.items():
        if type(k) is not str:
            raise TypeError(f"a tensor's name must be a str, not {k!r}")
        if k == "__metadata__":
            raise ValueError("'__metadata__' is not a tensor name")
        if not isinstance(v, _C.Tensor):
            raise TypeError(f"{k!r} is a {type(v).__name__}, not a Tensor")
    head = {}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                type(k) is str and type(v) is str
                for k, v in metadata.items()):
            raise TypeError("metadata must be a dict of str to str")
        head["__metadata__"] = metadata
    order = sorted(tensors.items(),
                   key=lambda kv: (-kv[1].element_size(), kv[0]))
    at = 0
    for k, v in order:
        n = v.numel() * v.element_size()
        head[k] = {"dtype": _CODE[_name(v)], "shape": list(v.shape),
                   "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(head, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    return len(text).to_bytes(8, "little") + text, order


def _chunks(order):
    for _, v in order:
        if v.numel():
            yield host_bytes(v.contiguous())


def save(tensors, metadata=None):
    """The safetensors bytes of tensors ({name: Tensor})."""
    head, order = _plan(tensors, metadata)
    return b"".join([head] + [c.tobytes() for c in _chunks(order)])


def save_file(tensors, filename, metadata=None):
    """Writes tensors ({name: Tensor}) to the file filename."""
    head, order = _plan(tensors, metadata)
    with open(filename, "wb") as f:
        f.write(head)
        for c in _chunks(order):
            f.write(memoryview(c).cast("B"))


def _bad(msg):
    return SafetensorError(f"malformed safetensors file: {msg}")


def _header(first8, read_header, size):
    """The checked header: ({name: (dtype, shape, begin, end)}, metadata,
    data start).  size: the whole file's bytes."""
    if len(first8) != 8:
        raise _bad("shorter than its 8-byte header length")
    n = int.from_bytes(first8, "little")
    if n > MAX_HEADER:
        raise _bad(f"a header of {n} bytes (at most {MAX_HEADER})")
    if 8 + n > size:
        raise _bad(f"a header of {n} bytes in a file of {size}")
    text = read_header(n)
    try:
        head = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _bad(f"the header is not JSON ({e})") from None
    if not isinstance(head, dict):
        raise _bad("the header is not a JSON object")
    meta = head.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(v, str) for v in meta.values())):
        raise _bad("__metadata__ is not an object of strings")
    buffer = size - 8 - n
    entries, spans = {}, []
    for name, e in head.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape",
                                                  "data_offsets"}:
            raise _bad(f"entry {name!r} is not dtype, shape, data_offsets")
        code, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if code not in _NAME:
            if code in _OTHER:
                raise SafetensorError(
                    f"tensor {name!r} has dtype {code} (torch.{_OTHER[code]}"
                    f"), which pygpu does not have")
            raise _bad(f"tensor {name!r} has unknown dtype {code!r}")
        if not isinstance(shape, list) or len(shape) > 16 or any(
                type(d) is not int or d < 0 for d in shape):
            raise _bad(f"tensor {name!r} has shape {shape!r}")
        if not isinstance(offs, list) or len(offs) != 2 or any(
                type(o) is not int for o in offs) or \
                not 0 <= offs[0] <= offs[1] <= buffer:
            raise _bad(f"tensor {name!r} has data_offsets {offs!r} in a "
                       f"data buffer of {buffer} bytes")
        numel = 1
        for d in shape:
            numel *= d
        dtype = _NAME[code]
        if offs[1] - offs[0] != numel * np.dtype(RAW[dtype]).itemsize:
            raise _bad(f"tensor {name!r} of shape {shape} and dtype {code} "
                       f"has {offs[1] - offs[0]} bytes")
        entries[name] = (dtype, tuple(shape), offs[0], offs[1])
        spans.append((offs[0], offs[1], name))
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            raise _bad(f"tensor {name!r} starts at {begin}, not at {at}: "
                       f"the data has a hole or an overlap")
        at = end
    if at != buffer:
        raise _bad(f"the tensors cover {at} bytes of a {buffer}-byte data "
                   f"buffer")
    return entries, meta, 8 + n


def _device(device):
    if isinstance(device, int):
        return _C.device("cuda", device)
    return device if isinstance(device, _C.device) else _C.device(device)


def _tensor(raw, dtype, shape, device):
    """A tensor of the little-endian bytes raw (a 1-d uint8 array),
    sharing them where it can."""
    if raw.ctypes.data % np.dtype(RAW[dtype]).itemsize:
        raw = raw.copy()  # unaligned: NumPy views need alignment
    host = raw.view(RAW[dtype])
    if dtype == "bool" and host.size and raw.max() > 1:
        raise _bad("a bool tensor holds a byte other than 0 and 1")
    t = host_tensor(host, dtype).reshape(shape)
    return t if device.type == "cpu" else t.to(device)


def load(data):
    """{name: Tensor} of safetensors bytes (CPU tensors)."""
    data = bytes(data)
    entries, _, start = _header(data[:8], lambda n: data[8:8 + n],
                                len(data))
    buf = np.frombuffer(data, np.uint8)
    cpu = _C.device("cpu")
    return {k: _tensor(buf[start + b:start + e], d, s, cpu)
            for k, (d, s, b, e) in entries.items()}


def load_file(filename, device="cpu"):
    """{name: Tensor} of the file filename, on device.  The file is read
    once, into one buffer that the CPU tensors share."""
    device = _device(device)
    with open(filename, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        entries, _, start = _header(f.read(8), f.read, size)
        buf = new_buffer(size - start)
        if f.readinto(memoryview(buf)) != buf.size:
            raise _bad("the file ends inside its data")
    return {k: _tensor(buf[b:e], d, s, device)
            for k, (d, s, b, e) in entries.items()}


class _Slice:
    """A tensor of a safe_open file, read in part: [index] reads what the
    index selects."""

    def __init__(self, owner, name):
        self.owner, self.name = owner, name
        self.dtype, self.shape = owner._entries[name][:2]

    def get_shape(self):
        return list(self.shape)

    def get_dtype(self):
        return _CODE[self.dtype]

    def __getitem__(self, index):
        whole = self.owner._array(self.name)
        part = np.array(whole[index])  # a copy: the tensor outlives the map
        return _tensor(part.reshape(-1).view(np.uint8), self.dtype,
                       part.shape, self.owner._dev)


class safe_open:
    """safe_open(filename, framework="pt", device="cpu"): the tensors of a
    file, read when asked for (the file is mapped, so get_tensor and
    get_slice read only the pages they need).  A context manager."""

    def __init__(self, filename, framework="pt", device="cpu"):
        if framework not in ("pt", "pygpu", "torch"):
            raise ValueError(f"framework {framework!r}: pygpu reads "
                             f"safetensors files as framework 'pt'")
        self._dev = _device(device)
        self._f = open(filename, "rb")
        try:
            size = os.fstat(self._f.fileno()).st_size
            self._entries, self._meta, self._start = _header(
                self._f.read(8), self._f.read, size)
            self._map = np.memmap(self._f, np.uint8, mode="r") if size \
                else np.empty(0, np.uint8)
        except BaseException:
            self._f.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._map = None
        self._f.close()

    def keys(self):
        return sorted(self._entries)

    def offset_keys(self):
        return [k for k, _ in sorted(self._entries.items(),
                                     key=lambda kv: kv[1][2])]

    def metadata(self):
        return None if self._meta is None else dict(self._meta)

    def _array(self, name):
        if name not in self._entries:
            raise SafetensorError(f"File does not contain tensor {name}")
        if self._map is None:
            raise SafetensorError("the file is closed")
        dtype, shape, b, e = self._entries[name]
        raw = self._map[self._start + b:self._start + e]
        return np.asarray(raw).view(RAW[dtype]).reshape(shape)

    def get_tensor(self, name):
        whole = self._array(name)
        return _tensor(np.array(whole).reshape(-1).view(np.uint8),
                       self._entries[name][0], whole.shape, self._dev)

    def get_slice(self, name):
        self._array(name)
        return _Slice(self, name)
