"""The unary ops of csrc/ops/op_list.h, from one table: each row names the op
and its NumPy reference, and every row runs through pygpu.<name>,
Tensor.<name> and Tensor.<name>_ on every device, on strided views and on
the special values (signed zeros, NaN, infinities, the int64 extremes).
The exact ops are compared bit for bit; the floating functions (FLOATING)
against the float64 reference rounded to the result dtype, within float32's
or float16's accuracy, and their int64 inputs give float32, as in torch."""
import math

import numpy as np
import pytest

import pygpu

_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _f64(f):
    """A float64 reference: f on the input converted to float64."""
    def ref(a):
        with np.errstate(all="ignore"):
            return f(np.asarray(a, dtype=np.float64))
    return ref


def _same_dtype(f):
    """f, where an integer is its own answer (NumPy 1.x's floor and ceil
    go through float64 for integers; NumPy 2's, like torch's, do not)."""
    def exact(a):
        a = np.asarray(a)
        return a.copy() if a.dtype.kind in "iu" else f(a)
    return exact


# name -> NumPy reference.  One row per op of csrc/ops/op_list.h.
UNARY_OPS = {
    "abs": np.abs,
    "floor": _same_dtype(np.floor),
    "ceil": _same_dtype(np.ceil),
    "round": np.round,
    "sign": np.sign,
    "exp": _f64(np.exp),
    "log": _f64(np.log),
    "log1p": _f64(np.log1p),
    "expm1": _f64(np.expm1),
    "sqrt": _f64(np.sqrt),
    "rsqrt": _f64(lambda x: 1 / np.sqrt(x)),
    "sin": _f64(np.sin),
    "cos": _f64(np.cos),
    "tanh": _f64(np.tanh),
    "sigmoid": _f64(lambda x: 1 / (1 + np.exp(-x))),
    "reciprocal": _f64(lambda x: 1 / x),
    "silu": _f64(lambda x: x / (1 + np.exp(-x))),
    "gelu": _f64(lambda x: 0.5 * x * _erfc(-x / np.sqrt(2))),
}
# The floating functions: computed in the input's floating dtype (float16
# in float32), int64 promoted to float32.
FLOATING = {name for name, f in UNARY_OPS.items()
            if f.__name__ == "ref"}
# (rtol, atol) by result dtype: float32 within ~1e-5, float16 within a
# few of its ulps (subnormals included), float64 near its precision.
TOL = {np.float32: (1e-5, 1e-37), np.float16: (2e-3, 1e-7),
       np.float64: (1e-12, 1e-300)}

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
ALL = FLOATS + [pygpu.int64]
I64 = np.iinfo(np.int64)


def special(dt):
    if dt is pygpu.int64:
        return np.array([I64.min, I64.min + 1, -1, 0, 1, I64.max, -7, 42],
                        dtype=np.int64)
    return np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.5, 2.25,
                     -1e-30, 3e38 if dt is not pygpu.float16 else 6e4],
                    dtype=np.float64).astype(dt.numpy_dtype)


def same_bits(got, want):
    """Equal, with -0.0 apart from 0.0; a NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan], want[~nan])
        np.testing.assert_array_equal(np.signbit(got[~nan]),
                                      np.signbit(want[~nan]))
    else:
        np.testing.assert_array_equal(got, want)


def expected(name, a):
    """The reference of op `name` on array a, in the result dtype."""
    want = UNARY_OPS[name](a)
    if name in FLOATING:
        dt = np.float32 if a.dtype == np.int64 else a.dtype
        with np.errstate(all="ignore"):
            want = np.asarray(want).astype(dt)
    return want


def check(name, got, a):
    want = expected(name, a)
    if name not in FLOATING:
        same_bits(got, want)
        return
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    rtol, atol = TOL[want.dtype.type]
    np.testing.assert_allclose(got[~nan].astype(np.float64),
                               want[~nan].astype(np.float64),
                               rtol=rtol, atol=atol)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]),
                                  np.signbit(want[zero]))


def test_table_covers_the_list():
    assert sorted(UNARY_OPS) == sorted(pygpu._C._unary_ops)


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
@pytest.mark.parametrize("dt", ALL, ids=repr)
def test_unary_op(device, rng, name, dt):
    a = special(dt)
    t = pygpu.tensor(a, device=device)
    check(name, getattr(pygpu, name)(t).cpu().numpy(), a)
    check(name, getattr(t, name)().cpu().numpy(), a)
    # strided: a transposed view of a random matrix
    if dt is pygpu.int64:
        m = rng.integers(-50, 50, size=(5, 3)).astype(np.int64)
    else:
        m = rng.standard_normal((5, 3)).astype(dt.numpy_dtype)
    tm = pygpu.tensor(m, device=device)
    check(name, getattr(tm.T, name)().cpu().numpy(), m.T)
    # degenerate shapes keep their shape
    for shape in [(0,), (3, 0), ()]:
        e = np.full(shape, 2, dtype=a.dtype)
        check(name, getattr(pygpu, name)(
            pygpu.tensor(e, device=device)).cpu().numpy(), e)
    # in place returns the tensor itself
    u = pygpu.tensor(a, device=device)
    if name in FLOATING and dt is pygpu.int64:
        with pytest.raises(RuntimeError, match="result type Float can't "
                           "be cast to the desired output type Long"):
            getattr(u, name + "_")()
        np.testing.assert_array_equal(u.cpu().numpy(), a)
        return
    assert getattr(u, name + "_")() is u
    check(name, u.cpu().numpy(), a)


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
def test_unary_op_errors(name):
    with pytest.raises(TypeError, match="must be Tensor"):
        getattr(pygpu, name)([1.0])
    t = pygpu.ones(3).expand(2, 3)  # internal overlap: no in-place write
    with pytest.raises(RuntimeError, match="single memory location"):
        getattr(t, name + "_")()
