"""pow, maximum, minimum, clamp/clip, fmod, remainder and floor_divide:
every dtype and device against NumPy float64 (or exact int64 Python
arithmetic), broadcasting, scalars in both orders, operators, in-place
forms, torch's promotion, NaN, and the errors in torch's words."""
import math

import numpy as np
import pytest

import pygpu

from conftest import RTOL, rel_err

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
ALL = FLOATS + [pygpu.int64]
SHAPES = [((), ()), ((0,), (0,)), ((1, 1), (1, 1)), ((7,), (7,)),
          ((3, 5), (5,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
          ((4,), ()), ((0, 3), (3,))]


def tol(dt):
    return RTOL[repr(dt).split(".")[1]] * 4


def t(x, device, dtype=None):
    return pygpu.tensor(x, device=device, dtype=dtype)


def host(x):
    return x.cpu().numpy()


def make(rng, shape, dt, lo=-3.0, hi=3.0):
    if dt is pygpu.int64:
        return rng.integers(int(lo) * 10, int(hi) * 10 + 1, size=shape)
    return rng.uniform(lo, hi, size=shape).astype(dt.numpy_dtype)


# ------------------------------------------------------------------ pow

@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_pow_tensors(device, rng, dt, sa, sb):
    a = make(rng, sa, dt, 0.1, 3.0)
    b = make(rng, sb, dt, -2.0, 3.0)
    ta, tb = t(a, device), t(b, device)
    ref = np.power(a.astype(np.float64), b.astype(np.float64))
    for got in (ta ** tb, pygpu.pow(ta, tb), ta.pow(tb)):
        assert got.dtype is dt and got.shape == ref.shape
        assert rel_err(host(got), ref) <= tol(dt)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("e", [2, 3, 0.5, -1, -2.5, 0])
def test_pow_scalar_exponent(device, rng, dt, e):
    a = make(rng, (4, 5), dt, 0.1, 3.0)
    ta = t(a, device)
    ref = np.power(a.astype(np.float64), float(e))
    got = ta ** e
    assert got.dtype is dt
    assert rel_err(host(got), ref) <= tol(dt)
    b = ta.clone()
    assert b.pow_(e) is b
    np.testing.assert_array_equal(host(b), host(got))
    c = ta.clone()
    c **= e
    np.testing.assert_array_equal(host(c), host(got))


@pytest.mark.parametrize("dt", ALL, ids=repr)
def test_rpow(device, rng, dt):
    e = make(rng, (6,), dt, -2, 3)
    te = t(e, device)
    got = 2 ** te
    if dt is pygpu.int64:
        want = [2 ** int(x) if x >= 0 else 0 for x in e]
        assert got.dtype is pygpu.int64 and got.tolist() == want
    else:
        assert got.dtype is dt
        assert rel_err(host(got), 2.0 ** e.astype(np.float64)) <= tol(dt)
    half = 1.5 ** te
    expect = dt if dt.is_floating_point else pygpu.float32
    assert half.dtype is expect
    np.testing.assert_array_equal(host(pygpu.pow(1.5, te)), host(half))


def wrap(x):
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


def test_pow_int64_wraps_and_negative_exponents(device):
    base = [3, -3, 2, 7, 0, 1, -1, 2, -2, 5, 0, 1, -1, 4]
    exp_ = [40, 41, 63, 30, 0, -5, -3, -1, -2, 0, -1, 1000, -1000, 32]
    got = (t(base, device) ** t(exp_, device)).tolist()
    want = []
    for b, e in zip(base, exp_):
        if e < 0:  # torch's integer rule for tensor exponents
            want.append(1 if b == 1 else (-1) ** e if b == -1 else 0)
        else:
            want.append(wrap(b ** e))
    assert got == want
    assert (t(base, device) ** 3).tolist() == [wrap(b ** 3) for b in base]
    assert t(base, device).pow(0).tolist() == [1] * len(base)


def test_pow_promotion_and_errors(device):
    i = t([2, 3], device)
    with pytest.raises(RuntimeError,
                       match="Integers to negative integer powers are not "
                             "allowed."):
        i ** -1
    with pytest.raises(RuntimeError, match="negative integer powers"):
        i.pow_(-2)
    assert (i ** 0.5).dtype is pygpu.float32  # int ** float -> default
    np.testing.assert_allclose(host(i ** 0.5), np.sqrt([2, 3]), rtol=1e-6)
    assert (i ** t(2.0, device, pygpu.float64)).dtype is pygpu.float64
    np.testing.assert_allclose(host(i ** -1.0), [0.5, 1 / 3], rtol=1e-7)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.pow_(0.5)
    f = t([0.0, float("nan"), -1.0, float("inf")], device)
    assert host(f ** 0).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert math.isnan((f ** 0.5).tolist()[2])
    # x ** 0.5 is sqrt (as torch): -0.0 stays -0.0, -inf gives NaN
    r = (t([-0.0, -float("inf"), 4.0], device) ** 0.5).tolist()
    assert math.copysign(1, r[0]) == -1 and math.isnan(r[1]) and r[2] == 2
    assert (t([4.0, 0.25], device) ** -0.5).tolist() == [0.5, 2.0]
    assert (i ** 0.5).dtype is pygpu.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.pow_(-0.5)
    with pytest.raises(TypeError):
        pow(i, 2, 5)
    with pytest.raises(TypeError):
        pygpu.pow("a", i)
    h = t([3.0, 0.5], device, pygpu.float16)
    assert (h ** 2).dtype is pygpu.float16 and (h ** 2).tolist() == [9, 0.25]


def test_pow_strided_and_broadcast(device, rng):
    a = make(rng, (5, 4), pygpu.float64, 0.5, 2.0)
    b = make(rng, (4, 1), pygpu.float64, -1.0, 2.0)
    ta, tb = t(a, device).T, t(b, device)
    got = pygpu.pow(ta, tb)
    np.testing.assert_allclose(host(got), a.T ** b, rtol=1e-12)


# ------------------------------------------------------ maximum, minimum

@pytest.mark.parametrize("dt", ALL, ids=repr)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_maximum_minimum(device, rng, dt, sa, sb):
    a, b = make(rng, sa, dt), make(rng, sb, dt)
    ta, tb = t(a, device), t(b, device)
    for name, npf in (("maximum", np.maximum), ("minimum", np.minimum)):
        got = getattr(pygpu, name)(ta, tb)
        assert got.dtype is dt
        np.testing.assert_array_equal(host(got), npf(a, b))
        np.testing.assert_array_equal(host(getattr(ta, name)(tb)), npf(a, b))


def test_maximum_nan_promotion_errors(device):
    nan = float("nan")
    a = t([1.0, nan, nan, 2.0], device)
    b = t([nan, 1.0, nan, -3.0], device)
    for f in (pygpu.maximum, pygpu.minimum):
        r = f(a, b).tolist()
        assert all(math.isnan(x) for x in r[:3])
    assert pygpu.maximum(a, b).tolist()[3] == 2.0
    assert pygpu.minimum(a, b).tolist()[3] == -3.0
    mixed = pygpu.maximum(t([1, 5], device), t([2.5, 0.5], device))
    assert mixed.dtype is pygpu.float32 and mixed.tolist() == [2.5, 5.0]
    with pytest.raises(TypeError, match="other"):
        pygpu.maximum(a, 1)
    with pytest.raises(TypeError, match="input"):
        pygpu.minimum(1, a)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        pygpu.maximum(t([1, 2], device), t([1, 2, 3], device))


# ----------------------------------------------------------------- clamp

@pytest.mark.parametrize("dt", ALL, ids=repr)
def test_clamp_scalars(device, rng, dt):
    a = make(rng, (3, 7), dt)
    ta = t(a, device)
    for lo, hi in ((-1, 1), (None, 0), (0, None), (2, -2)):
        got = pygpu.clamp(ta, lo, hi)
        ref = a
        if lo is not None:
            ref = np.maximum(ref, lo)
        if hi is not None:
            ref = np.minimum(ref, hi)
        assert got.dtype is dt
        np.testing.assert_array_equal(host(got), ref.astype(a.dtype))
        np.testing.assert_array_equal(host(ta.clip(min=lo, max=hi)),
                                      host(got))
        c = ta.clone()
        assert c.clamp_(lo, hi) is c
        np.testing.assert_array_equal(host(c), host(got))


def test_clamp_tensors_broadcast(device, rng):
    a = make(rng, (4,), pygpu.float32)
    lo = make(rng, (3, 1), pygpu.float32, -2, 0)
    hi = make(rng, (1, 4), pygpu.float64, 0, 2)
    got = pygpu.clamp(t(a, device), t(lo, device), t(hi, device))
    assert got.shape == (3, 4) and got.dtype is pygpu.float64
    np.testing.assert_array_equal(
        host(got), np.minimum(np.maximum(a, lo).astype(np.float64), hi))
    got = pygpu.clip(t(a, device), max=t(hi, device))
    np.testing.assert_array_equal(host(got), np.minimum(a, hi))


def test_clamp_semantics_and_errors(device):
    nan = float("nan")
    x = t([1.0, nan, 3.0], device)
    r = pygpu.clamp(x, min=2).tolist()
    assert r[0] == 2.0 and math.isnan(r[1]) and r[2] == 3.0
    assert all(math.isnan(v) for v in pygpu.clamp(x, min=nan).tolist())
    assert pygpu.clamp(x, 3, 1).tolist()[0] == 1.0  # min > max gives max
    i = t([1, 2, 3], device)
    f = pygpu.clamp(i, min=1.5)
    assert f.dtype is pygpu.float32 and f.tolist() == [1.5, 2.0, 3.0]
    assert pygpu.clamp(i, 0, 2).dtype is pygpu.int64
    d = pygpu.clamp(i, min=t(2.0, device, pygpu.float64))
    assert d.dtype is pygpu.float64 and d.tolist() == [2.0, 2.0, 3.0]
    with pytest.raises(RuntimeError,
                       match="At least one of 'min' or 'max' must not be "
                             "None"):
        pygpu.clamp(x)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.clamp_(min=1.5)
    with pytest.raises(TypeError, match="min"):
        pygpu.clamp(x, min="a")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast"):
        x.clamp_(min=t([[0.0], [1.0]], device))


def test_clamp_out_aliasing_max(device):
    x = t([0.0, 5.0, 10.0], device)
    hi = t([4.0, 4.0, 4.0], device)
    pygpu.clamp(x, 1.0, hi, out=hi)
    assert hi.tolist() == [1.0, 4.0, 4.0]
    y = t([0.0, 5.0, 10.0], device)
    assert pygpu.clamp(y, y, 4.0, out=y) is y and y.tolist() == [0, 4, 4]


# ------------------------------------------- fmod, remainder, floor_divide

DIV_OPS = {"fmod": np.fmod, "remainder": np.remainder,
           "floor_divide": np.floor_divide}


def nonzero(rng, shape, dt):
    b = make(rng, shape, dt)
    if dt is pygpu.int64:
        return np.where(b == 0, 7, b)
    return np.where(np.abs(b) < 0.25, 1.25, b).astype(b.dtype)


@pytest.mark.parametrize("name", DIV_OPS)
@pytest.mark.parametrize("dt", ALL, ids=repr)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_division_family(device, rng, name, dt, sa, sb):
    a, b = make(rng, sa, dt), nonzero(rng, sb, dt)
    ta, tb = t(a, device), t(b, device)
    got = getattr(pygpu, name)(ta, tb)
    ref = DIV_OPS[name](a.astype(np.float64), b.astype(np.float64))
    assert got.dtype is dt and got.shape == ref.shape
    if dt is pygpu.int64:
        np.testing.assert_array_equal(host(got), DIV_OPS[name](a, b))
    else:
        assert rel_err(host(got), ref) <= tol(dt) * 2
    np.testing.assert_array_equal(host(getattr(ta, name)(tb)), host(got))


@pytest.mark.parametrize("dt", [pygpu.int64, pygpu.float64], ids=repr)
def test_division_operators(device, dt):
    npdt = np.int64 if dt is pygpu.int64 else np.float64
    a = np.array([5, -5, 5, -5, 0, 7], dtype=npdt)
    b = np.array([3, 3, -3, -3, 2, 1], dtype=npdt)
    ta, tb = t(a, device), t(b, device)
    np.testing.assert_array_equal(host(ta // tb), a // b)
    np.testing.assert_array_equal(host(ta % tb), a % b)
    np.testing.assert_array_equal(host(ta % 3), a % 3)
    np.testing.assert_array_equal(host(17 // tb), 17 // b)
    np.testing.assert_array_equal(host(17 % tb), 17 % b)
    np.testing.assert_array_equal(host(pygpu.fmod(ta, tb)), np.fmod(a, b))
    c = ta.clone()
    c //= 2
    np.testing.assert_array_equal(host(c), a // 2)
    c = ta.clone()
    c %= tb
    np.testing.assert_array_equal(host(c), a % b)
    for name in DIV_OPS:
        c = ta.clone()
        assert getattr(c, name + "_")(tb) is c
        np.testing.assert_array_equal(host(c), DIV_OPS[name](a, b))


def test_division_edges(device):
    inf, nan = float("inf"), float("nan")
    f = t([5.0, -5.0, 0.0, inf, 1.0], device)
    z = t([0.0, 0.0, 0.0, 2.0, inf], device)
    q = (f // z).tolist()
    assert q[:2] == [inf, -inf] and math.isnan(q[2]) and math.isnan(q[3])
    assert (t([-1.0], device) // t([3.0], device)).tolist() == [-1.0]
    assert math.copysign(1, (t([-0.5], device) // t([3.0], device)).item()) \
        == -1  # -0.0, as torch
    big = t([2 ** 62, -(2 ** 63)], device)
    assert (big // -1).tolist() == [-(2 ** 62), -(2 ** 63)]  # wraps
    assert (big % -1).tolist() == [0, 0]
    i = t([5, -5], device)
    for op in (lambda: i % 0, lambda: i // 0, lambda: pygpu.fmod(i, 0),
               lambda: pygpu.remainder(i, 0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op()
    # an int64 tensor divisor of 0 gives 0 (no trap; torch's CPU raises)
    assert (i % t([0, 0], device)).tolist() == [0, 0]
    assert (i // t([0, 0], device)).tolist() == [0, 0]
    assert (i % 2.5).dtype is pygpu.float32
    with pytest.raises(TypeError, match="input"):
        pygpu.fmod(7, i)
    assert pygpu.remainder(7, t([2, 3], device)).tolist() == [1, 1]
    assert pygpu.floor_divide(7, t([2, 3], device)).tolist() == [3, 2]
    assert (i // np.array([2, 2])).tolist() == (i // 2).tolist()
    with pytest.raises(TypeError):
        i % "a"
