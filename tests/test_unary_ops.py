"""The unary ops of csrc/ops/op_list.h, from one table: each row names the op
and its NumPy reference, exact on every dtype (float16 included), and
every row runs through pygpu.<name>, Tensor.<name> and Tensor.<name>_ on
every device, on strided views and on the special values (signed zeros,
NaN, infinities, the int64 extremes), compared bit for bit."""
import numpy as np
import pytest

import pygpu

# name -> NumPy reference.  One row per op of csrc/ops/op_list.h.
UNARY_OPS = {
    "abs": np.abs,
}

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


def test_table_covers_the_list():
    assert sorted(UNARY_OPS) == sorted(pygpu._C._unary_ops)


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
@pytest.mark.parametrize("dt", ALL, ids=repr)
def test_unary_op(device, rng, name, dt):
    ref = UNARY_OPS[name]
    a = special(dt)
    t = pygpu.tensor(a, device=device)
    same_bits(getattr(pygpu, name)(t).cpu().numpy(), ref(a))
    same_bits(getattr(t, name)().cpu().numpy(), ref(a))
    # strided: a transposed view of a random matrix
    if dt is pygpu.int64:
        m = rng.integers(-50, 50, size=(5, 3)).astype(np.int64)
    else:
        m = rng.standard_normal((5, 3)).astype(dt.numpy_dtype)
    tm = pygpu.tensor(m, device=device)
    same_bits(getattr(tm.T, name)().cpu().numpy(), ref(m.T))
    # in place returns the tensor itself
    u = pygpu.tensor(a, device=device)
    assert getattr(u, name + "_")() is u
    same_bits(u.cpu().numpy(), ref(a))


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
def test_unary_op_errors(name):
    with pytest.raises(TypeError, match="must be Tensor"):
        getattr(pygpu, name)([1.0])
    t = pygpu.ones(3).expand(2, 3)  # internal overlap: no in-place write
    with pytest.raises(RuntimeError, match="single memory location"):
        getattr(t, name + "_")()
