"""Comparisons: elementwise ones are not there yet, so == != < <= > >= with
a tensor, number, array or list raise TypeError instead of answering by
identity; other operands get Python's default; hashing is by identity;
NumPy defers to the tensor's operators instead of answering with an
ndarray; pygpu.equal is torch.equal."""
import operator

import numpy as np
import pytest

import pygpu

COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le,
               operator.gt, operator.ge]
ARITHMETIC = [operator.add, operator.sub, operator.mul, operator.truediv,
              operator.matmul]


def _others(device):
    x = pygpu.ones(3, device=device)
    return [x, x.clone(), 1, 1.0, True, np.float32(1), np.int64(1), np.bool_(True),
            np.ones(3), np.float64(1.0), [1.0, 1.0, 1.0], (1.0, 1.0, 1.0)]


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: o.__name__)
def test_comparisons_raise_both_orders(device, op):
    x = pygpu.ones(3, device=device)
    for other in _others(device):
        with pytest.raises(TypeError, match="not supported yet"):
            op(x, other)
        with pytest.raises(TypeError, match="not supported yet"):
            op(other, x)


def test_comparison_names_the_other_operand():
    x = pygpu.ones(2)
    with pytest.raises(TypeError, match=r"\(==\).*numpy\.ndarray"):
        x == np.ones(2)  # noqa: B015
    with pytest.raises(TypeError, match=r"pygpu\.equal"):
        x < 1  # noqa: B015


def test_other_operands_keep_python_default(device):
    x = pygpu.ones(3, device=device)
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert (x == "a") is False
    assert (x != "a") is True
    assert (x == object()) is False
    with pytest.raises(TypeError):
        x < None  # noqa: B015
    assert x is not None


def test_hash_by_identity(device):
    x = pygpu.ones(2, device=device)
    y = pygpu.ones(2, device=device)
    assert hash(x) == hash(x)
    assert len({x, y, x}) == 2
    d = {x: "x", y: "y"}
    assert d[x] == "x" and d[y] == "y"


@pytest.mark.parametrize("op", ARITHMETIC, ids=lambda o: o.__name__)
def test_ndarray_operand_never_gives_ndarray(op):
    x = pygpu.ones(3, 3)
    a = np.ones((3, 3))
    for args in ((x, a), (a, x)):
        with pytest.raises(TypeError, match="convert the array"):
            op(*args)


def test_inplace_with_ndarray_raises():
    x = pygpu.ones(3)
    with pytest.raises(TypeError, match=r"\+="):
        x += np.ones(3)
    assert isinstance(x, pygpu.Tensor)
    assert x.tolist() == [1.0, 1.0, 1.0]


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
    assert pygpu.Tensor.__array_ufunc__ is None
    with pytest.raises(TypeError):
        np.add(x, 1)


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


@pytest.mark.cuda
def test_equal_device_mismatch():
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.equal(pygpu.ones(2), pygpu.ones(2, device="cuda"))
