"""sum, mean, max over all elements and over dims (keepdim), against NumPy
float64: every dtype, empty and 0-d inputs, strided inputs, NaN, errors."""
import numpy as np
import pytest

import pygpu

from conftest import rel_err

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
TOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-12, "int64": 0}
SHAPES = [(), (1,), (7,), (0,), (3, 5), (4, 1), (2, 3, 4), (0, 3), (3, 0),
          (1, 1), (5, 1, 6)]


def name(dt):
    return repr(dt).split(".")[1]


def data(rng, shape, dt):
    if dt is pygpu.int64:
        return rng.integers(-100, 100, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(dt.numpy_dtype)


@pytest.mark.parametrize("dt", FLOATS + [pygpu.int64], ids=repr)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_mean_all(device, rng, dt, shape):
    a = data(rng, shape, dt)
    t = pygpu.tensor(a, device=device)
    s = t.sum()
    assert s.shape == () and s.dtype is dt
    assert rel_err(s.cpu().numpy(), a.astype(np.float64).sum()) <= TOL[name(dt)]
    assert pygpu.sum(t).item() == s.item()
    if dt.is_floating_point:
        m = t.mean()
        with np.errstate(invalid="ignore"):
            ref = a.astype(np.float64).mean() if a.size else np.nan
        assert rel_err(m.cpu().numpy(), ref) <= TOL[name(dt)]
    k = t.sum(keepdim=True) if t.ndim else None
    if k is not None:
        assert k.shape == (1,) * t.ndim


@pytest.mark.parametrize("dt", FLOATS + [pygpu.int64], ids=repr)
@pytest.mark.parametrize("shape", [s for s in SHAPES if s], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_over_each_dim(device, rng, dt, shape, keepdim):
    a = data(rng, shape, dt)
    t = pygpu.tensor(a, device=device)
    a64 = a.astype(np.float64)
    for d in list(range(len(shape))) + [-1]:
        s = t.sum(d, keepdim=keepdim)
        ref = a64.sum(axis=d, keepdims=keepdim)
        assert s.shape == ref.shape and s.dtype is dt
        assert rel_err(s.cpu().numpy(), ref) <= TOL[name(dt)]
        if dt.is_floating_point:
            m = pygpu.mean(t, dim=d, keepdim=keepdim)
            with np.errstate(invalid="ignore", divide="ignore"):
                mref = a64.mean(axis=d, keepdims=keepdim) if shape[d] else \
                    np.full(ref.shape, np.nan)
            assert rel_err(m.cpu().numpy(), mref) <= TOL[name(dt)]
        if shape[d] > 0:
            values, indices = t.max(d, keepdim=keepdim)
            assert values.dtype is dt and indices.dtype is pygpu.int64
            np.testing.assert_array_equal(values.cpu().numpy(),
                                          a.max(axis=d, keepdims=keepdim))
            np.testing.assert_array_equal(
                indices.cpu().numpy(), np.argmax(a, axis=d).reshape(
                    values.shape))
            r = pygpu.max(t, dim=d, keepdim=keepdim)
            assert r.values.shape == values.shape


def test_max_all(device, rng):
    a = rng.standard_normal((37, 41))
    t = pygpu.tensor(a, device=device)
    assert t.max().item() == a.max()
    assert t.max().shape == ()
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        pygpu.zeros(0, device=device).max()
    with pytest.raises(IndexError, match="non-zero size"):
        pygpu.zeros(3, 0, device=device).max(1)


def test_max_nan_and_ties(device):
    t = pygpu.tensor([[1.0, float("nan"), 3.0, float("nan")],
                      [5.0, 5.0, 2.0, 5.0]], device=device)
    v, i = t.max(1)
    assert np.isnan(v.cpu().numpy()[0]) and i.tolist() == [1, 0]
    assert np.isnan(t.max().item())
    assert np.isnan(t.sum().item())


@pytest.mark.parametrize("n", [1, 255, 256, 257, 4097, 100_003, 1 << 20])
def test_large_sums(device, rng, n):
    a = rng.standard_normal(n).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    assert rel_err(t.sum().cpu().numpy(), a.astype(np.float64).sum()) < 1e-5 * \
        max(1.0, np.abs(a).sum() / max(abs(a.astype(np.float64).sum()), 1e-9))
    ones = pygpu.ones(n, device=device)
    assert ones.sum().item() == n
    v, i = t.max(0)
    assert v.item() == a.max() and i.item() == int(np.argmax(a))


def test_float32_accumulation_is_not_naive(device):
    n = 1 << 24
    t = pygpu.ones(n + 8, device=device)  # 2^24 + 8 is a float32
    assert t.sum().item() == n + 8  # a single float accumulator stops at 2^24
    assert t.mean().item() == 1.0


def test_strided_input(device, rng):
    a = rng.standard_normal((6, 8))
    t = pygpu.tensor(a, device=device)
    assert rel_err(t.T.sum(0).cpu().numpy(), a.T.sum(0)) < 1e-12
    assert rel_err(t[::2, 1::3].sum(1).cpu().numpy(),
                   a[::2, 1::3].sum(1)) < 1e-12


def test_tuple_dims(device, rng):
    a = rng.standard_normal((2, 3, 4, 5))
    t = pygpu.tensor(a, device=device)
    for dims in [(0, 2), (1, 3), (-1, 0), (0, 1, 2, 3)]:
        for keep in (False, True):
            got = t.sum(dims, keepdim=keep)
            ref = a.sum(axis=dims, keepdims=keep)
            assert got.shape == ref.shape
            assert rel_err(got.cpu().numpy(), ref) < 1e-12
            m = t.mean(dim=dims, keepdim=keep)
            assert rel_err(m.cpu().numpy(), a.mean(axis=dims,
                                                   keepdims=keep)) < 1e-12
    with pytest.raises(RuntimeError, match="multiple times"):
        t.sum((1, 1))


def test_dtype_argument(device):
    t = pygpu.ones(4, dtype=pygpu.float16, device=device)
    assert t.sum(dtype=pygpu.float64).dtype is pygpu.float64


def test_errors(device):
    t = pygpu.ones(2, 3, device=device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.sum(2)
    with pytest.raises(TypeError):
        t.sum("0")
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer"):
        pygpu.ones(3, dtype=pygpu.int64, device=device).mean()
    with pytest.raises(TypeError):
        pygpu.sum([1, 2])
    with pytest.raises(TypeError):
        t.max((0, 1))
