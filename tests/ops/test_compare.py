"""Comparisons: == != < <= > >= elementwise with tensors (broadcast) and
numbers (reflected too), eq/ne/lt/le/gt/ge as functions (out= of any
dtype) and methods, computed in the promoted dtype into bool tensors,
against NumPy; isnan/isinf/isfinite; isclose/allclose/equal; truth values;
other operands keep Python's default and arrays raise as in the
arithmetic; hashing is by identity; NumPy defers to the tensor."""
import itertools
import operator

import numpy as np
import pytest

import pygpu

from conftest import ALL_DTYPES, B, BF16, F16, I32, NP, U8, dtype_name, \
    host

COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le,
               operator.gt, operator.ge]
NAMES = {operator.eq: "eq", operator.ne: "ne", operator.lt: "lt",
         operator.le: "le", operator.gt: "gt", operator.ge: "ge"}
ARITHMETIC = [operator.add, operator.sub, operator.mul, operator.truediv,
              operator.matmul]
ALL = ALL_DTYPES


def values(dtype, shape, rng):
    """Small values with repeats (so == and != both happen), and NaN /
    inf for the floats."""
    v = rng.integers(0, 4, shape).astype(np.float64)
    if dtype is B:
        return pygpu.from_numpy(v.astype(bool) if v.size else
                                np.zeros(shape, bool))
    if dtype.is_floating_point:
        flat = v.reshape(-1)
        flat[::5] = np.nan
        flat[1::7] = np.inf
        flat[2::9] = -np.inf
    t = pygpu.from_numpy(v.astype(np.float32 if dtype is BF16
                                  else NP[dtype]))
    return t.to(dtype)


def ref(op, x, y, dtype):
    """op on x, y converted to their promoted dtype (NumPy has no bfloat16:
    the values here are exact in it)."""
    npdt = np.float32 if dtype is BF16 else NP[dtype]
    with np.errstate(invalid="ignore"):
        return op(np.asarray(x).astype(npdt), np.asarray(y).astype(npdt))


@pytest.mark.parametrize("da,db", list(itertools.product(ALL, ALL)),
                         ids=lambda d: dtype_name(d))
def test_every_dtype_pair(da, db, device, rng):
    a = values(da, (3, 1, 4), rng).to(device)
    b = values(db, (2, 1), rng).to(device)
    dtype = pygpu.promote_types(da, db)
    for op in COMPARISONS:
        got = op(a, b)
        assert got.dtype is B and got.shape == (3, 2, 4)
        want = ref(op, host(a), host(b), dtype)
        np.testing.assert_array_equal(got.cpu().numpy(), want)
        f = getattr(pygpu, NAMES[op])(a, b)
        np.testing.assert_array_equal(f.cpu().numpy(), want)
        m = getattr(a, NAMES[op])(b)
        np.testing.assert_array_equal(m.cpu().numpy(), want)


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: NAMES[o])
@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_numbers_both_orders(op, dtype, device, rng):
    t = values(dtype, (5, 3), rng).to(device).T  # strided
    x = host(t)
    for s in (2, 2.5, True, -1, np.float32(1.5), np.int64(3), np.bool_(1)):
        py = s.item() if isinstance(s, np.generic) else s
        cat = (bool if isinstance(py, bool) else
               int if isinstance(py, int) else float)
        promoted = pygpu.result_type(t, cat(py))
        got = op(t, s)
        assert got.dtype is B and got.shape == (3, 5)
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      ref(op, x, py, promoted))
        # reflected: s < t is t > s
        np.testing.assert_array_equal(op(s, t).cpu().numpy(),
                                      ref(op, py, x, promoted))


def test_scalars_convert_to_the_promoted_dtype(device):
    u = pygpu.tensor([0, 255], dtype=U8, device=device)
    assert (u == 256).tolist() == [True, False]  # 256 wraps as uint8
    assert (u == -1).tolist() == [False, True]
    assert (u == 255.0).tolist() == [False, True]
    h = pygpu.tensor([0.1], dtype=F16, device=device)
    assert (h == 0.1).tolist() == [True]  # 0.1 rounded to float16
    big = pygpu.tensor([2 ** 62 + 1], device=device)
    assert (big == 2 ** 62 + 1).tolist() == [True]
    assert (big == 2 ** 62).tolist() == [False]
    i = pygpu.tensor([70000], dtype=I32, device=device)
    inf = pygpu.tensor([float("inf")], dtype=F16, device=device)
    assert (i == inf).tolist() == [True]  # 70000 is inf in float16
    z = pygpu.tensor(2.5, device=device)
    assert (pygpu.tensor([2, 3], device=device) < z).tolist() == [True, False]


def test_out_and_errors(device):
    a = pygpu.tensor([1.0, 2.0, 3.0], device=device)
    out = pygpu.empty(3, dtype=B, device=device)
    assert pygpu.lt(a, 2.5, out=out) is out
    assert out.tolist() == [True, True, False]
    f = pygpu.empty(3, device=device)
    assert pygpu.ge(a, 2.0, out=f) is f and f.tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast"):
        pygpu.eq(a, a, out=pygpu.empty(2, dtype=B, device=device))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        a == pygpu.ones(2, device=device)  # noqa: B015
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        pygpu.eq(a, "x")
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.eq(1, a)
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        a.eq(None)
    empty = pygpu.ones(0, 3, device=device)
    assert (empty < 1).shape == (0, 3)
    assert (pygpu.tensor(1.0, device=device) == 1).shape == ()


@pytest.mark.cuda
def test_device_mismatch():
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.ones(2) == pygpu.ones(2, device="cuda")  # noqa: B015
    # a 0-d CPU tensor next to a CUDA tensor is a scalar, as in torch
    r = pygpu.ones(2, device="cuda") == pygpu.tensor(1.0)
    assert r.device.type == "cuda" and r.tolist() == [True, True]


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_isnan_isinf_isfinite(dtype, device, rng):
    t = values(dtype, (4, 6), rng).to(device).T
    x = host(t).astype(np.float64)
    for name, f in (("isnan", np.isnan), ("isinf", np.isinf),
                    ("isfinite", np.isfinite)):
        got = getattr(pygpu, name)(t)
        assert got.dtype is B
        np.testing.assert_array_equal(got.cpu().numpy(), f(x))
        np.testing.assert_array_equal(getattr(t, name)().cpu().numpy(), f(x))
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.isnan(1.0)


def test_truth_value(device):
    assert bool(pygpu.tensor([2], device=device)) is True
    assert bool(pygpu.tensor(0.0, device=device)) is False
    assert bool(pygpu.tensor([[True]], device=device)) is True
    assert not pygpu.tensor(False, device=device)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with "
                       "more than one value is ambiguous"):
        bool(pygpu.ones(2, device=device))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no "
                       "values is ambiguous"):
        bool(pygpu.ones(0, device=device))
    x = pygpu.tensor([1.0, 5.0], device=device)
    assert [bool(v > 2) for v in x] == [False, True]


def test_other_operands_keep_python_default(device):
    x = pygpu.ones(3, device=device)
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert (x == "a") is False
    assert (x != "a") is True
    assert (x == object()) is False
    assert (x == [1.0, 1.0, 1.0]) is False  # as torch: no list operands
    with pytest.raises(TypeError):
        x < None  # noqa: B015
    with pytest.raises(TypeError):
        x < [1.0]  # noqa: B015
    assert x is not None


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: NAMES[o])
def test_ndarray_operand_compares_as_tensor(op, device):
    # as torch: the array is the tensor made from it, either side
    x = pygpu.tensor([1.0, 2.0, 3.0], device=device)
    a = np.array([2.0, 2.0, 2.0])
    for r, want in ((op(x, a), op(np.array([1.0, 2.0, 3.0]), a)),
                    (op(a, x), op(a, np.array([1.0, 2.0, 3.0])))):
        assert isinstance(r, pygpu.Tensor) and r.device == x.device
        assert r.tolist() == want.tolist()


def test_hash_by_identity(device):
    x = pygpu.ones(2, device=device)
    y = pygpu.ones(2, device=device)
    assert hash(x) == hash(x)
    assert len({x, y, x}) == 2
    d = {x: "x", y: "y"}
    assert d[x] == "x" and d[y] == "y"


@pytest.mark.parametrize("op", ARITHMETIC, ids=lambda o: o.__name__)
def test_ndarray_operand_gives_tensor(op):
    x = pygpu.ones(3, 3, dtype=pygpu.float64)  # matmul does not promote
    a = np.full((3, 3), 2.0)
    for args in ((x, a), (a, x)):
        r = op(*args)
        assert isinstance(r, pygpu.Tensor) and r.dtype == pygpu.float64


def test_inplace_with_ndarray():
    x = pygpu.ones(3)
    x += np.full(3, 2.0)  # the float32 tensor keeps its dtype
    assert x.dtype == pygpu.float32 and x.tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("dt", [pygpu.float16, pygpu.float32, pygpu.float64,
                                pygpu.int64], ids=repr)
def test_numpy_scalars_follow_scalar_rules(device, dt):
    x = pygpu.ones(3, dtype=dt, device=device)
    for s in (np.float32(2), np.float16(2), np.float64(2)):
        for r in (s * x, x * s, x + s, s - x, x / s):
            assert isinstance(r, pygpu.Tensor)
            assert r.device == x.device
            # a float scalar keeps a float tensor's dtype, lifts int64
            want = dt if dt.is_floating_point else pygpu.float32
            assert r.dtype == want
    for s in (np.int64(2), np.int32(2), np.uint8(2), np.bool_(True)):
        r = s * x
        assert isinstance(r, pygpu.Tensor) and r.dtype == dt
    assert (np.float32(2) * x).tolist() == [2.0, 2.0, 2.0]
    assert (np.int32(5) - x).tolist() == [4, 4, 4]
    y = pygpu.ones(3, dtype=dt, device=device)
    y += np.int64(2)
    y *= np.float32(2) if dt.is_floating_point else np.int64(2)
    assert y.tolist() == [6, 6, 6]


def test_array_interop_still_works():
    x = pygpu.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(x).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.array(x).dtype == np.float32
    assert np.add(np.asarray(x), 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    # as torch's: NumPy's functions convert the tensor with __array__
    assert pygpu.Tensor.__array_priority__ == 1000
    r = np.add(x, 1)
    assert isinstance(r, np.ndarray) and r.tolist() == [[2.0, 3.0],
                                                        [4.0, 5.0]]


def test_equal(device):
    a = pygpu.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert pygpu.equal(a, a) is True
    assert pygpu.equal(a, pygpu.tensor([[1.0, 2.0], [3.0, 4.0]],
                                       device=device)) is True
    assert pygpu.equal(a, a.T) is False
    assert pygpu.equal(a, pygpu.tensor([1.0, 2.0, 3.0, 4.0],
                                       device=device)) is False
    assert pygpu.equal(a, a[:1]) is False
    nan = pygpu.tensor([float("nan")], device=device)
    assert pygpu.equal(nan, nan) is False
    assert pygpu.equal(pygpu.ones(2, 2, device=device),
                       pygpu.ones(1, device=device).expand(2, 2)) is True
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.equal(a, [[1.0, 2.0], [3.0, 4.0]])
    assert pygpu.equal(pygpu.ones(0, device=device),
                       pygpu.ones(0, device=device)) is True
    assert pygpu.equal(pygpu.tensor([1, 2], dtype=pygpu.int32, device=device),
                       pygpu.tensor([1, 2], device=device)) is True


def test_isclose_allclose(device):
    nan, inf = float("nan"), float("inf")
    a = pygpu.tensor([1.0, 1.0, inf, -inf, nan, 0.0, 100.0], device=device)
    b = pygpu.tensor([1.0 + 1e-6, 1.1, inf, inf, nan, 1e-9, 100.0005],
                     device=device)
    assert pygpu.isclose(a, b).tolist() == [True, False, True, False, False,
                                            True, True]
    assert pygpu.isclose(a, b, equal_nan=True).tolist()[4] is True
    assert pygpu.isclose(a, b, rtol=0, atol=0).tolist() == [
        False, False, True, False, False, False, False]
    assert pygpu.isclose(a, b, rtol=0.2).tolist()[1] is True
    x = pygpu.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert pygpu.allclose(x, x + 1e-7) is True
    assert pygpu.allclose(x, x + 1e-3) is False
    assert pygpu.allclose(a, a) is False  # NaN
    assert pygpu.allclose(a, a, equal_nan=True) is True
    i = pygpu.tensor([1, 2, 3], device=device)
    assert pygpu.isclose(i, i + 1).tolist() == [False] * 3
    assert pygpu.isclose(i, i + 1, atol=1).tolist() == [True] * 3
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        pygpu.isclose(i, i.float())
    with pytest.raises(RuntimeError, match="rtol must be greater"):
        pygpu.isclose(x, x, rtol=-1)


@pytest.mark.cuda
def test_equal_device_mismatch():
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.equal(pygpu.ones(2), pygpu.ones(2, device="cuda"))
