"""pygpu.save: torch's zip checkpoint, written without torch.

data.pkl is pickled (protocol 2 by default, as torch) by a subclass of
the pure-Python pickler that writes torch's globals by name: a tensor is a
`torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
requires_grad, OrderedDict())` record, a Parameter a
`torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())`
record, a storage the persistent id `('storage', torch.FloatStorage (and
so on), key, location, numel)`, pygpu's dtypes, devices and Size torch's.
The storages are then written once each as data/<key>.

Storages.  pygpu does not expose storages, so save makes them: a first
pass (the C pickler, writing nothing) notes every tensor reached; tensors
of one device and dtype whose memory spans overlap (views of one tensor:
x, x[1], x.T, x.expand(...)) form one group, and a group is one storage
holding the bytes of its span, copied to the host.  Each tensor is a view
of its group's storage (offset, size and stride in elements), so they
share memory again after a load, in torch as in pygpu.  A tensor with a
negative stride, which torch cannot express, is saved as a contiguous
copy of its own.
"""
import bisect
import collections
import io
import os
import pickle

import numpy as np

from . import _C
from ._serial_common import dtype_name, host_bytes, RAW
from ._torch_zip import Writer

STORAGE_CLASS = {"float32": "FloatStorage", "float64": "DoubleStorage",
                 "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                 "int64": "LongStorage", "int32": "IntStorage",
                 "uint8": "ByteStorage", "bool": "BoolStorage"}
FORMAT_VERSION = b"3\n"  # the `version` record torch writes


class TorchGlobal:
    """A global of torch's, pickled by name (torch need not be there)."""
    _made = {}

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle wants a reduce's function callable
        raise TypeError(f"{self.module}.{self.name} is torch's, written by "
                        f"name only")

    @classmethod
    def get(cls, module, name):
        found = cls._made.get((module, name))
        if found is None:
            found = cls._made[(module, name)] = cls(module, name)
        return found


def _extent(t):
    """The number of elements from t's first element to its last (t has
    elements and no negative stride)."""
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _storable(t):
    return t.numel() > 0 and all(s >= 0 for s in t.stride())


class _Group:
    """The tensors of one device and dtype whose memory overlaps, over
    the bytes [start, end): one storage in the file."""

    def __init__(self, start, end, t):
        self.start, self.end, self.members = start, end, [t]
        self.key = None


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
        if not _storable(t):
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


def _location(t):
    d = t.device
    return "cpu" if d.type == "cpu" else f"{d.type}:{d.index or 0}"


def _storage_bytes(g):
    """The host bytes of a group's span, as a 1-d array."""
    t0 = g.members[0]
    isz = t0.element_size()
    numel = (g.end - g.start) // isz
    if len(g.members) == 1 and t0.is_contiguous() and t0.numel() == numel:
        return host_bytes(t0)
    buf = np.zeros(numel, RAW[dtype_name(t0)])
    for t in g.members:
        at = buf[(t.data_ptr() - g.start) // isz:]
        np.lib.stride_tricks.as_strided(
            at, tuple(t.shape),
            tuple(s * buf.itemsize for s in t.stride()))[...] = \
            host_bytes(t.contiguous()).reshape(tuple(t.shape))
    return buf


class _Pickler(pickle._Pickler):
    """data.pkl: each tensor a view of its group's storage."""
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, groups):
        super().__init__(file, protocol=protocol)
        self.groups = groups
        self.storages = []  # the groups, in key order

    def _save_torch_global(self, obj):
        self.write(pickle.GLOBAL +
                   f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[TorchGlobal] = _save_torch_global

    def _save_dtype(self, obj):
        self.save(TorchGlobal.get("torch", str(obj).rsplit(".", 1)[-1]))

    dispatch[type(_C.float32)] = _save_dtype

    def _group_of(self, t):
        if not _storable(t):
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

    def persistent_id(self, obj):
        if type(obj) is not _Group:
            return None
        if obj.key is None:
            obj.key = str(len(self.storages))
            self.storages.append(obj)
        t = obj.members[0]
        return ("storage",
                TorchGlobal.get("torch", STORAGE_CLASS[dtype_name(t)]),
                obj.key, _location(t),
                (obj.end - obj.start) // t.element_size())

    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            return self._reduce_tensor(obj)
        if type(obj) is _C.device:
            args = (obj.type,) if obj.index is None else \
                (obj.type, obj.index)
            return TorchGlobal.get("torch", "device"), args
        if type(obj) is _C.Size:
            return TorchGlobal.get("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _reduce_tensor(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (TorchGlobal.get("torch._utils", "_rebuild_parameter"),
                    (obj.detach(), bool(obj.requires_grad),
                     collections.OrderedDict()))
        g = self._group_of(obj)
        if g is None:  # empty, negative strides or met only now
            t = obj.detach().contiguous()
            g = _Group(t.data_ptr(), t.data_ptr() + t.numel() *
                       t.element_size(), t)
            if t.numel() == 0:
                g.end = g.start
            offset, stride = 0, t.stride()
        else:
            offset = (obj.data_ptr() - g.start) // obj.element_size()
            stride = obj.stride()
        return (TorchGlobal.get("torch._utils", "_rebuild_tensor_v2"),
                (g, offset, tuple(obj.shape), tuple(stride),
                 bool(obj.requires_grad), collections.OrderedDict()))


def save(obj, f, protocol, name, crc32=True):
    """Writes obj as a torch zip checkpoint to the binary file f; name is
    the archive's top folder."""
    rec = _Recorder(protocol)
    rec.dump(obj)
    pkl = io.BytesIO()
    p = _Pickler(pkl, protocol, _groups(rec.tensors))
    p.dump(obj)
    w = Writer(f, crc32)
    try:
        w.add(f"{name}/data.pkl", pkl.getvalue())
        w.add(f"{name}/.format_version", b"1")
        w.add(f"{name}/.storage_alignment", b"64")
        w.add(f"{name}/byteorder", b"little")
        for g in p.storages:
            data = _storage_bytes(g) if g.end > g.start else b""
            w.add(f"{name}/data/{g.key}", data)
            del data
        w.add(f"{name}/version", FORMAT_VERSION)
        w.add(f"{name}/.data/serialization_id",
              str(int.from_bytes(os.urandom(16), "little")).zfill(40)
              .encode())
    except BaseException:
        w.pool.shutdown()
        raise
    w.close()
