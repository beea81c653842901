"""arange, linspace, eye, the Tensor.new_* factories, type() and
type_as(), against NumPy and torch's rules."""
import math

import numpy as np
import pytest

import pygpu

from conftest import RTOL, rel_err


def host(t):
    return t.cpu().numpy()


# -- arange -----------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((0,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((9, 2, -3), {}),
    ((-4, 4), {}), ((0, 1, 0.1), {}), ((1, 2.5, 0.5), {}),
    ((0.5, 3), {}), ((10, 0, -0.75), {}), ((), {"end": 4}),
    ((), {"start": 1, "end": 4, "step": 2}),
])
def test_arange_matches_numpy(device, args, kwargs):
    t = pygpu.arange(*args, device=device, **kwargs)
    start = kwargs.get("start", args[0] if len(args) > 1 else 0)
    end = kwargs.get("end", args[1] if len(args) > 1 else
                     (args[0] if args else None))
    step = kwargs.get("step", args[2] if len(args) > 2 else 1)
    ref = np.arange(start, end, step)
    any_float = any(isinstance(v, float) for v in (start, end, step))
    assert t.dtype == (pygpu.float32 if any_float else pygpu.int64)
    assert t.device.type == device
    assert t.shape == ref.shape
    assert len(t) == math.ceil((end - start) / step)
    assert rel_err(host(t), ref) <= RTOL["float32"]


@pytest.mark.parametrize("dtype", [pygpu.float16, pygpu.float64,
                                   pygpu.int64])
def test_arange_dtype(device, dtype):
    t = pygpu.arange(0.5, 3, dtype=dtype, device=device)
    assert t.dtype == dtype
    if dtype == pygpu.int64:
        # torch converts the bounds to int64 first: 0, 1, 2
        assert host(t).tolist() == [0, 1, 2]
    else:
        assert host(t).tolist() == [0.5, 1.5, 2.5]


def test_arange_tensor_and_numpy_arguments():
    assert pygpu.arange(pygpu.tensor(3)).tolist() == [0, 1, 2]
    assert pygpu.arange(np.int64(2), np.float32(4)).tolist() == [2.0, 3.0]
    assert pygpu.arange(True).tolist() == [0]


@pytest.mark.parametrize("args,exc,msg", [
    ((1, 4, 0), RuntimeError, "step must be nonzero"),
    ((1.0, 4.0, 0.0), RuntimeError, "step must be nonzero"),
    ((4, 1, 1), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    ((1, 4, -1), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    ((0, float("nan")), RuntimeError, "unsupported range: 0 -> nan"),
    ((0, float("inf")), RuntimeError, "unsupported range: 0 -> inf"),
    ((10**19,), RuntimeError, "without overflow"),
    (("a",), TypeError, "must be Number, not str"),
])
def test_arange_errors(args, exc, msg):
    with pytest.raises(exc, match=msg):
        pygpu.arange(*args)


def test_arange_requires_grad():
    assert pygpu.arange(3.0, requires_grad=True).requires_grad
    assert pygpu.linspace(0, 1, 3, requires_grad=True).requires_grad
    assert pygpu.eye(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point "
                       "and complex dtype can require gradients"):
        pygpu.arange(3, requires_grad=True)


# -- linspace ---------------------------------------------------------------

def torch_linspace(start, end, steps):
    """torch's formula: symmetric from both ends."""
    if steps == 1:
        return np.array([start], dtype=np.float64)
    step = (end - start) / (steps - 1)
    i = np.arange(steps)
    return np.where(i < steps // 2, start + step * i,
                    end - step * (steps - 1 - i))


@pytest.mark.parametrize("start,end,steps", [
    (0, 1, 5), (0, 10, 5), (-3.5, 7.25, 100), (2, 2, 4), (5, -5, 11),
    (0, 1, 1), (0, 1, 0), (0.1, 0.3, 3),
])
def test_linspace(device, start, end, steps):
    t = pygpu.linspace(start, end, steps, device=device)
    assert t.dtype == pygpu.float32 and t.shape == (steps,)
    ref = torch_linspace(start, end, steps)
    assert rel_err(host(t), ref) <= RTOL["float32"]
    assert rel_err(host(t), np.linspace(start, end, steps)) <= 1e-6
    if steps > 1:  # both ends exact
        assert host(t)[0] == np.float32(start)
        assert host(t)[-1] == np.float32(end)


def test_linspace_dtypes(device):
    t = pygpu.linspace(0, 10, 5, dtype=pygpu.int64, device=device)
    assert t.dtype == pygpu.int64 and host(t).tolist() == [0, 2, 5, 7, 10]
    t = pygpu.linspace(-1, 1, 7, dtype=pygpu.float64, device=device)
    assert rel_err(host(t), torch_linspace(-1, 1, 7)) <= 1e-15
    t = pygpu.linspace(0, 1, 3, dtype=pygpu.float16, device=device)
    assert host(t).tolist() == [0.0, 0.5, 1.0]


def test_linspace_errors():
    with pytest.raises(RuntimeError, match="number of steps must be "
                                           "non-negative"):
        pygpu.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="steps"):
        pygpu.linspace(0, 1, 2.5)
    with pytest.raises(TypeError):
        pygpu.linspace(0, 1)


# -- eye --------------------------------------------------------------------

@pytest.mark.parametrize("n,m", [(0, None), (1, None), (3, None), (2, 5),
                                 (5, 2), (0, 3), (4, 0)])
@pytest.mark.parametrize("dtype", [pygpu.float32, pygpu.float16,
                                   pygpu.int64])
def test_eye(device, n, m, dtype):
    t = pygpu.eye(n, m, dtype=dtype, device=device)
    ref = np.eye(n, m)
    assert t.dtype == dtype and t.shape == ref.shape
    assert np.array_equal(host(t), ref)


def test_eye_errors():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, "
                                           "got -1"):
        pygpu.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, "
                                           "got -2"):
        pygpu.eye(2, -2)
    with pytest.raises(TypeError):
        pygpu.eye(2.0)


# -- new_* ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [pygpu.float16, pygpu.int64])
def test_new_factories_inherit_dtype_and_device(device, dtype):
    x = pygpu.zeros(2, dtype=dtype, device=device)
    for t, value in [(x.new_zeros(2, 3), 0), (x.new_zeros((2, 3)), 0),
                     (x.new_ones(2, 3), 1), (x.new_full((2, 3), 7), 7)]:
        assert t.dtype == dtype and t.device == x.device
        assert t.shape == (2, 3)
        assert (host(t) == value).all()
    e = x.new_empty(4)
    assert e.dtype == dtype and e.device == x.device and e.shape == (4,)
    n = x.new_tensor([[1, 2], [3, 4]])
    assert n.dtype == dtype and n.device == x.device
    assert host(n).tolist() == [[1, 2], [3, 4]]


def test_new_factories_overrides(device):
    x = pygpu.zeros(2, device=device)
    t = x.new_ones(3, dtype=pygpu.int64, device="cpu")
    assert t.dtype == pygpu.int64 and t.device.type == "cpu"
    # new_full keeps self's dtype even for a float value, as torch
    assert x.long().new_full((2,), 1.5).tolist() == [1, 1]
    assert x.long().new_tensor([1.5]).tolist() == [1]
    assert x.new_tensor([1, 2], dtype=pygpu.float64).dtype == pygpu.float64
    r = x.new_zeros(2, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        x.long().new_zeros(2, requires_grad=True)


# -- type() and type_as() ---------------------------------------------------

@pytest.mark.parametrize("dtype,name", [
    (pygpu.float32, "FloatTensor"), (pygpu.float16, "HalfTensor"),
    (pygpu.float64, "DoubleTensor"), (pygpu.int64, "LongTensor"),
])
def test_type_names(device, dtype, name):
    x = pygpu.zeros(2, dtype=dtype, device=device)
    prefix = "pygpu.cuda." if device == "cuda" else "pygpu."
    assert x.type() == prefix + name
    assert x.type(prefix + name) is x
    assert x.type("torch." + name).dtype == dtype


def test_type_converts(device):
    x = pygpu.arange(4, device=device) * 1.5
    y = x.type(pygpu.int64)
    assert y.dtype == pygpu.int64 and host(y).tolist() == [0, 1, 3, 4]
    assert x.type(pygpu.float32) is x
    assert x.type("pygpu.DoubleTensor").dtype == pygpu.float64
    with pytest.raises(ValueError, match="invalid type: 'torch.Foo'"):
        x.type("torch.Foo")
    with pytest.raises(TypeError):
        x.type(3)


def test_type_as(device):
    x = pygpu.arange(3, device=device)
    y = x.type_as(pygpu.zeros(1, dtype=pygpu.float16, device=device))
    assert y.dtype == pygpu.float16 and y.device == x.device
    assert x.type_as(x) is x
    if device == "cpu":
        # a CPU type converts a tensor elsewhere back to the CPU
        assert pygpu.zeros(2).type("pygpu.FloatTensor").device.type == "cpu"
    with pytest.raises(TypeError):
        x.type_as(3)


# -- CPU memory alignment ---------------------------------------------------

BIG = 1 << 16  # elements: float32 tensors of 256 KiB, over the threshold


@pytest.mark.parametrize("make", [
    lambda: pygpu.empty(BIG),
    lambda: pygpu.zeros(3, BIG, dtype=pygpu.float64),
    lambda: pygpu.tensor(np.random.rand(BIG).astype(np.float32)),
    lambda: pygpu.tensor(np.random.rand(7, BIG)[:, ::2]),
    lambda: pygpu.randn(BIG) + 1,
    lambda: pygpu.tensor(np.arange(BIG, dtype=np.int16)).float(),
])
def test_large_cpu_tensors_start_on_a_64_byte_line(make):
    t = make()
    assert t.data_ptr() % 64 == 0


def test_aligned_cpu_tensor_shares_memory_with_its_array():
    src = np.random.rand(5, BIG).astype(np.float32)
    t = pygpu.tensor(src)
    a = t.numpy()
    np.testing.assert_array_equal(a, src)
    assert a.ctypes.data == t.data_ptr()
    a[2, 3] = -7.0
    assert t[2, 3].item() == -7.0
    t[4, 1] = 9.0
    assert a[4, 1] == 9.0
    del t
    np.testing.assert_array_equal(a[0], src[0])  # the array keeps it alive
    # a copy of the data, not a view of src
    src[0, 0] = 123.0
    assert a[0, 0] != 123.0


def test_tensor_from_array_casts_like_numpy():
    big = np.random.randn(3, BIG) * 100
    t = pygpu.tensor(big, dtype=pygpu.int32)
    np.testing.assert_array_equal(t.numpy(), big.astype(np.int32))
    b = pygpu.tensor(np.random.rand(BIG) > 0.5)
    assert b.dtype == pygpu.bool
    assert b.data_ptr() % 64 == 0
