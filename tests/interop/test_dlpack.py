"""DLPack: export (Tensor.__dlpack__), import (pygpu.from_dlpack), zero-copy
round trips with NumPy (and torch / CuPy when importable), capsule
lifetimes and reference counts, the stream handshake's argument rules, and
the CUDA Array Interface / as_tensor."""
import ctypes
import gc
import sys
import threading

import numpy as np
import pytest

import pygpu
from pygpu.utils import dlpack as pdl

# NumPy 1.x consumes DLPack 0.x only: legacy capsules, no copy= or
# max_version, imported arrays read-only, read-only arrays not exported.
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
NP_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32",
             "float64"]
ALL_DTYPES = NP_DTYPES + ["bfloat16"]

# --------------------------------------------------------------- capsules
_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device),
                ("ndim", ctypes.c_int32), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER)]


class _ManagedV(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


def capsule_name(cap):
    return _api.PyCapsule_GetName(cap).decode()


def managed(cap):
    name = capsule_name(cap)
    ptr = _api.PyCapsule_GetPointer(cap, name.encode())
    cls = _ManagedV if name.endswith("versioned") else _Managed
    return cls.from_address(ptr), ptr


READ_ONLY, IS_COPIED = 1, 2


def make(dtype, shape, rng):
    if dtype == "bfloat16":
        return pygpu.tensor(rng.standard_normal(shape), dtype=pygpu.bfloat16)
    if dtype == "bool":
        return pygpu.from_numpy(rng.random(shape) > 0.5)
    if dtype in ("uint8", "int32", "int64"):
        return pygpu.from_numpy(rng.integers(0, 100, shape).astype(dtype))
    return pygpu.from_numpy(rng.standard_normal(shape).astype(dtype))


def as_np(t):
    if t.dtype == pygpu.bfloat16:
        return t.float().numpy()
    return t.numpy()


# ----------------------------------------------------------- NumPy <-> pygpu
@pytest.mark.parametrize("dtype", NP_DTYPES)
@pytest.mark.parametrize("view", ["plain", "T", "slice", "0d", "empty",
                                  "expand"])
def test_numpy_consumes_pygpu_without_copy(dtype, view, rng):
    base = make(dtype, (4, 6), rng)
    t = {"plain": lambda b: b, "T": lambda b: b.T,
         "slice": lambda b: b[1:, ::2],
         "0d": lambda b: b[2, 3],
         "empty": lambda b: b[:, 6:],
         "expand": lambda b: b[1:2].expand(3, 6)}[view](base)
    a = np.from_dlpack(t)
    assert a.shape == tuple(t.shape)
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, t.numpy())
    if t.numel():
        assert a.ctypes.data == t.data_ptr()
        assert a.strides == tuple(s * t.element_size() for s in t.stride())
        if view != "expand" and NUMPY2:
            # writes through numpy are seen by pygpu
            a[(0,) * a.ndim] = np.array(1).astype(dtype)
            assert t.numpy()[(0,) * a.ndim] == np.array(1).astype(dtype)


@pytest.mark.parametrize("dtype", NP_DTYPES)
@pytest.mark.parametrize("view", ["plain", "T", "slice", "0d", "empty"])
def test_pygpu_consumes_numpy_without_copy(dtype, view, rng):
    a = as_np(make(dtype, (5, 4), rng)).copy()
    a = {"plain": lambda x: x, "T": lambda x: x.T,
         "slice": lambda x: x[1:, ::3], "0d": lambda x: x[2, 1],
         "empty": lambda x: x[5:]}[view](a)
    a = np.asarray(a)
    t = pygpu.from_dlpack(a)
    assert t.dtype == getattr(pygpu, dtype)
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    if a.size:
        assert t.data_ptr() == a.ctypes.data
        t.numpy()[(0,) * a.ndim] = np.array(0).astype(dtype)
        assert a[(0,) * a.ndim] == np.array(0).astype(dtype)


def test_bfloat16_pygpu_to_pygpu_and_numpy_refuses(rng):
    t = make("bfloat16", (3, 5), rng)
    u = pygpu.from_dlpack(t)
    assert u.dtype == pygpu.bfloat16 and u.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(u.float().numpy(), t.float().numpy())
    cap = t.__dlpack__()
    m, _ = managed(cap)
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (4, 16)
    with pytest.raises((RuntimeError, BufferError, TypeError)):
        np.from_dlpack(t)  # NumPy has no bfloat16: its own clean error


@pytest.mark.parametrize("dtype,code,bits", [
    ("bool", 6, 8), ("uint8", 1, 8), ("int32", 0, 32), ("int64", 0, 64),
    ("float16", 2, 16), ("float32", 2, 32), ("float64", 2, 64),
    ("bfloat16", 4, 16)])
def test_capsule_fields(dtype, code, bits, rng):
    t = make(dtype, (4, 6), rng)[1:, 2:]
    for kwargs, name in [({}, "dltensor"),
                         ({"max_version": (0, 8)}, "dltensor"),
                         ({"max_version": (1, 0)}, "dltensor_versioned"),
                         ({"max_version": (1, 3)}, "dltensor_versioned")]:
        cap = t.__dlpack__(**kwargs)
        assert capsule_name(cap) == name
        m, _ = managed(cap)
        d = m.dl_tensor
        assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (code, bits, 1)
        assert (d.device.device_type, d.device.device_id) == (1, 0)
        assert d.ndim == 2 and d.byte_offset == 0
        assert d.data == t.data_ptr()
        assert [d.shape[i] for i in range(2)] == [3, 4]
        assert [d.strides[i] for i in range(2)] == [6, 1]
        if name.endswith("versioned"):
            assert (m.version.major, m.version.minor) == (1, 0)
            assert m.flags == 0


def test_dlpack_device():
    assert pygpu.ones(2).__dlpack_device__() == (1, 0)
    assert pdl.DLDeviceType.kDLCPU == 1 and pdl.DLDeviceType.kDLCUDA == 2


def test_read_only_flag_both_ways():
    a = np.arange(6.0)
    a.flags.writeable = False
    t = pygpu.from_numpy(a)
    cap = t.__dlpack__(max_version=(1, 0))
    m, _ = managed(cap)
    assert m.flags & READ_ONLY
    if not NUMPY2:  # NumPy 1.x asks for a legacy capsule: refused
        with pytest.raises(BufferError, match="Cannot export readonly"):
            np.from_dlpack(t)
        return
    b = np.from_dlpack(t)
    assert not b.flags.writeable
    u = pygpu.from_dlpack(a)  # NumPy's versioned capsule, read-only
    assert u.data_ptr() == a.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        u.add_(1)


def test_legacy_capsule_of_read_only_tensor_is_refused():
    """A legacy capsule has no read-only flag: a consumer would write into
    immutable memory (bytes, a read-only mmap).  Refused as NumPy refuses;
    a versioned capsule carries the flag, and copy=True exports a copy."""
    data = np.arange(1.0, 7.0).tobytes()
    t = pygpu.from_numpy(np.frombuffer(data, dtype=np.float64))
    for export in (lambda: t.__dlpack__(), lambda: pdl.to_dlpack(t),
                   lambda: t.__dlpack__(max_version=(0, 8)),
                   lambda: t[1:].__dlpack__(copy=False)):
        with pytest.raises(BufferError, match="Cannot export readonly "
                           "tensor since signalling readonly is "
                           "unsupported by DLPack"):
            export()
    cap = t.__dlpack__(max_version=(1, 0))
    m, _ = managed(cap)
    assert m.flags & READ_ONLY
    u = pygpu.from_dlpack(t.__dlpack__(copy=True))  # legacy, of a copy
    assert u.data_ptr() != t.data_ptr()
    u.add_(1)
    assert np.frombuffer(data).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert u.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    v = pygpu.from_dlpack(t)  # asks for a versioned capsule: read-only
    assert v.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="read-only"):
        v.add_(1)


def test_copy_true_makes_a_flagged_copy():
    t = pygpu.arange(6.0)
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    m, _ = managed(cap)
    assert m.flags & IS_COPIED and not m.flags & READ_ONLY
    assert m.dl_tensor.data != t.data_ptr()
    u = pygpu.from_dlpack(cap)
    u.add_(1)
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0))
    if not NUMPY2:
        return
    c = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(c, t.numpy())
    # copy=False and same device: shares
    assert np.from_dlpack(t, copy=False).ctypes.data == t.data_ptr()


def test_dl_device_rules():
    t = pygpu.arange(4)
    cap = t.__dlpack__(dl_device=(1, 0), copy=False)
    assert managed(cap)[0].dl_tensor.data == t.data_ptr()
    with pytest.raises(BufferError, match="without copying"):
        t.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(RuntimeError):  # no GPU here, or no CUDA build
        if pygpu.cuda.is_available():
            raise RuntimeError("skip")
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="cannot export"):
        t.__dlpack__(dl_device=(4, 0))
    with pytest.raises(TypeError):
        t.__dlpack__(dl_device="cpu")


def test_argument_errors():
    t = pygpu.arange(4.0)
    for stream in (1, 2, -1, 5):
        with pytest.raises(ValueError, match="stream must be None"):
            t.__dlpack__(stream=stream)
    with pytest.raises(TypeError):
        t.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        t.__dlpack__(1)  # keyword-only
    with pytest.raises(TypeError):
        t.__dlpack__(bogus=1)
    w = pygpu.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't export tensors that "
                       "require gradient, use tensor.detach()"):
        w.__dlpack__()
    assert np.from_dlpack(w.detach()).shape == (3,)
    with pytest.raises(TypeError, match="__dlpack__"):
        pygpu.from_dlpack([1, 2])


def test_capsule_consumed_once():
    t = pygpu.arange(3)
    cap = t.__dlpack__()
    u = pygpu.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    with pytest.raises(RuntimeError, match="consumed only once"):
        pygpu.from_dlpack(cap)
    if NUMPY2:
        cap = t.__dlpack__(max_version=(1, 0))
        np.from_dlpack(_Wrap(cap))
        assert capsule_name(cap) == "used_dltensor_versioned"
    assert u.data_ptr() == t.data_ptr()


class _Wrap:
    """A producer handing out a fixed capsule (for NumPy's consumer)."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kwargs):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_legacy_producer_without_max_version():
    class Old:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    t = pygpu.arange(5.0)
    u = pygpu.from_dlpack(Old(t))
    assert u.data_ptr() == t.data_ptr()
    assert pygpu.utils.dlpack.to_dlpack(t) is not None


# ------------------------------------------------------ lifetimes, leaks
def test_producer_kept_alive_by_consumer():
    t = pygpu.arange(1000.0)
    base = t.numpy().base
    a = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(1000.0))
    x = np.arange(1000.0)
    u = pygpu.from_dlpack(x)
    del x
    gc.collect()
    np.testing.assert_array_equal(u.numpy(), np.arange(1000.0))
    del base


def test_refcounts_consumed_and_unconsumed():
    t = pygpu.arange(10.0)
    base = t.numpy().base  # the tensor's memory owner
    n0 = sys.getrefcount(base)
    for kwargs in ({}, {"max_version": (1, 0)}):
        cap = t.__dlpack__(**kwargs)
        assert sys.getrefcount(base) == n0 + 1
        del cap  # never consumed: its destructor releases
        assert sys.getrefcount(base) == n0
        u = pygpu.from_dlpack(t.__dlpack__(**kwargs))
        assert sys.getrefcount(base) == n0 + 1
        a = np.from_dlpack(u)
        del u
        gc.collect()
        assert sys.getrefcount(base) == n0 + 1  # a still holds it
        del a
        gc.collect()
        assert sys.getrefcount(base) == n0
    x = np.arange(10.0)
    m0 = sys.getrefcount(x)
    for _ in range(200):
        u = pygpu.from_dlpack(x)
        v = pygpu.from_dlpack(u)
        del u, v
    gc.collect()
    assert sys.getrefcount(x) == m0


def test_failed_import_consumes_nothing():
    x = np.arange(6, dtype=np.int16)
    m0 = sys.getrefcount(x)
    cap = x.__dlpack__()
    with pytest.raises(BufferError, match="no pygpu dtype"):
        pygpu.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor"  # still the producer's
    del cap
    gc.collect()
    assert sys.getrefcount(x) == m0
    with pytest.raises(BufferError):
        pygpu.from_dlpack(np.zeros(3, dtype=np.complex64))
    with pytest.raises(BufferError, match="negative strides"):
        pygpu.from_dlpack(np.arange(5.0)[::-1])


@pytest.mark.parametrize("n,stride,exc,msg", [
    (3, 2**59 + 1, RuntimeError, "Storage size calculation overflowed "
     r"with sizes=\[3\] and strides=\[576460752303423489\]"),
    (1, 2**61, BufferError, "DLPack stride 2305843009213693952 overflows "
     "int64 in bytes")])
def test_import_refuses_strides_past_int64(n, stride, exc, msg):
    """A producer's strides whose span (or bytes) pass int64 would wrap
    into a view of memory the producer never gave."""
    x = np.zeros(n)
    cap = x.__dlpack__()
    m, _ = managed(cap)
    if not NUMPY2 and not m.dl_tensor.strides:
        pytest.skip("NumPy 1.x leaves a compact array's strides out")
    assert bool(m.dl_tensor.strides)
    m.dl_tensor.strides[0] = stride
    with pytest.raises(exc, match=msg):
        pygpu.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor"  # not consumed


def test_deleter_without_gil_from_another_thread():
    """A consumer may call the deleter from any thread without the GIL
    (a ctypes call releases it)."""
    t = pygpu.arange(8.0)
    base = t.numpy().base
    n0 = sys.getrefcount(base)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    assert sys.getrefcount(base) == n0 + 2
    calls = []
    names = [b"used_dltensor", b"used_dltensor_versioned"]  # outlive caps
    for cap, name in zip(caps, names):
        m, ptr = managed(cap)
        _api.PyCapsule_SetName(cap, name)  # the capsule keeps the pointer
        calls.append((m.deleter, ptr))

    def run():
        for deleter, ptr in calls:
            deleter(ptr)

    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert sys.getrefcount(base) == n0
    del caps
    gc.collect()
    assert sys.getrefcount(base) == n0
    del names


# ------------------------------------------------------------------ torch
def test_torch_cpu_round_trip():
    torch = pytest.importorskip("torch")
    t = pygpu.arange(12.0).reshape(3, 4)[:, 1:]
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr()
    assert tt.stride() == tuple(t.stride())
    tt[0, 0] = 42
    assert t[0, 0].item() == 42
    src = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()
    u = pygpu.from_dlpack(src)
    assert u.data_ptr() == src.data_ptr() and tuple(u.stride()) == (1, 3)
    b = torch.ones(3, dtype=torch.bfloat16)
    ub = pygpu.from_dlpack(b)
    assert ub.dtype == pygpu.bfloat16 and ub.data_ptr() == b.data_ptr()
    assert torch.from_dlpack(ub).dtype == torch.bfloat16


# ------------------------------------------------------------------- CUDA
@pytest.mark.cuda
def test_cuda_round_trip_shares_and_is_not_counted():
    t = pygpu.arange(1000.0, device="cuda")
    before = pygpu.cuda.memory_allocated()
    u = pygpu.from_dlpack(t)
    assert u.device == t.device and u.data_ptr() == t.data_ptr()
    assert pygpu.cuda.memory_allocated() == before
    assert t.__dlpack_device__() == (2, t.device.index)
    del t
    gc.collect()
    np.testing.assert_array_equal(u.cpu().numpy(), np.arange(1000.0))
    c = u.__dlpack__(dl_device=(1, 0))  # a copy to the host
    np.testing.assert_array_equal(pygpu.from_dlpack(c).numpy(),
                                  np.arange(1000.0))
    s = pygpu.cuda.Stream()
    for stream in (None, 1, 2, -1, s.cuda_stream):
        pygpu.from_dlpack(u.__dlpack__(stream=stream))
    with pytest.raises(ValueError):
        u.__dlpack__(stream=0)
    with pytest.raises(TypeError):
        u.__dlpack__(stream="1")


@pytest.mark.cuda
def test_cuda_array_interface():
    t = pygpu.arange(12.0, dtype=pygpu.float64, device="cuda").reshape(3, 4)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f8"
    assert cai["shape"] == (3, 4) and cai["strides"] is None
    assert cai["data"] == (t.data_ptr(), False)
    assert cai["stream"] == 1  # the legacy default stream
    tt = t.T
    assert tt.__cuda_array_interface__["strides"] == (8, 32)

    class Holder:
        __cuda_array_interface__ = tt.__cuda_array_interface__

    u = pygpu.as_tensor(Holder())
    assert u.data_ptr() == tt.data_ptr() and tuple(u.stride()) == (1, 4)
    np.testing.assert_array_equal(u.cpu().numpy(), tt.cpu().numpy())
    v = pygpu.tensor(Holder())
    assert v.data_ptr() != tt.data_ptr() and v.device == tt.device


@pytest.mark.cuda
def test_cuda_torch_and_cupy():
    t = pygpu.arange(6.0, device="cuda").reshape(2, 3)
    torch = None
    try:
        import torch
    except ImportError:
        pass
    if torch is not None and torch.cuda.is_available():
        tt = torch.from_dlpack(t)
        assert tt.data_ptr() == t.data_ptr()
        u = pygpu.from_dlpack(tt * 2)
        np.testing.assert_array_equal(u.cpu().numpy(),
                                      2 * np.arange(6.0).reshape(2, 3))
    try:
        import cupy
    except ImportError:
        pytest.skip("cupy is not installed")
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t.data_ptr()
    c2 = cupy.asarray(t)  # through __cuda_array_interface__
    assert c2.data.ptr == t.data_ptr()
    u = pygpu.as_tensor(c * 3)
    np.testing.assert_array_equal(u.cpu().numpy(),
                                  3 * np.arange(6.0).reshape(2, 3))
    w = pygpu.from_dlpack(c)
    assert w.data_ptr() == c.data.ptr


# ------------------------------------------ CUDA Array Interface on the CPU
def test_cuda_array_interface_absent_on_cpu():
    t = pygpu.ones(3)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError):
        t.__cuda_array_interface__


def test_as_tensor_shares_where_torch_does():
    a = np.arange(6.0).reshape(2, 3)
    t = pygpu.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype == pygpu.float64
    assert pygpu.as_tensor(t) is t
    f = pygpu.as_tensor(a, dtype=pygpu.float32)
    assert f.dtype == pygpu.float32 and f.data_ptr() != a.ctypes.data
    r = pygpu.as_tensor(a[:, ::-1])  # NumPy layout pygpu cannot view
    np.testing.assert_array_equal(r.numpy(), a[:, ::-1])
    lst = pygpu.as_tensor([1, 2, 3])
    assert lst.dtype == pygpu.int64


def test_cuda_array_interface_objects_without_a_gpu():
    if pygpu.cuda.is_available():
        pytest.skip("checks the refusal without a GPU")

    class Fake:
        def __init__(self, **kw):
            self.__cuda_array_interface__ = dict(
                shape=(0,), typestr="<f4", data=(0, False), version=3, **kw)

    with pytest.raises(RuntimeError):
        pygpu.as_tensor(Fake())
    with pytest.raises(RuntimeError):
        pygpu.tensor(Fake())
    bad = Fake()
    bad.__cuda_array_interface__["typestr"] = "<c8"
    with pytest.raises(TypeError, match="typestr"):
        pygpu.as_tensor(bad)
    bad.__cuda_array_interface__ = [1]
    with pytest.raises(TypeError, match="dict"):
        pygpu.as_tensor(bad)


def test_cuda_array_interface_entries_emptied_while_read():
    """An __index__ or __bool__ in the interface that empties its dict
    frees the entries the reader has not finished with: it holds them."""
    class Index:
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    class Empties(Index):
        def __init__(self, v, owner):
            super().__init__(v)
            self.owner = owner

        def __index__(self):
            self.owner.cai.clear()
            return self.v

        def __bool__(self):
            self.owner.cai.clear()
            return False

    class Producer:
        def __init__(self, field):
            self.field = field

        @property
        def __cuda_array_interface__(self):
            # a new dict each time: it alone holds its entries
            self.cai = dict(shape=(0, 3), typestr="<f4", data=(0, False),
                            version=3, strides=(12, 4))
            if self.field == "shape":
                self.cai["shape"] = (Empties(0, self), Index(3))
            elif self.field == "strides":
                self.cai["strides"] = (Empties(12, self), Index(4))
            else:
                self.cai["data"] = (0, Empties(0, self))
            return self.cai

    for field in ("shape", "strides", "data"):
        p = Producer(field)
        if pygpu.cuda.is_available():
            assert pygpu.as_tensor(p).shape == (0, 3)
        else:
            with pytest.raises(RuntimeError):
                pygpu.as_tensor(p)
        assert p.cai == {}
