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


# ------------------------------------------------- min, prod, amax, argmax

def _nan_argext(a, axis, fn):
    """np.argmax/argmin with torch's rule: the first NaN wins."""
    idx = fn(a, axis=axis)
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        idx = np.where(nan.any(axis=axis), np.argmax(nan, axis=axis), idx)
    return idx


@pytest.mark.parametrize("dt", FLOATS + [pygpu.int64], ids=repr)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (5, 1, 6),
                                   (1, 1), (4, 0)], ids=str)
def test_min_prod_arg_over_dims(device, rng, dt, shape):
    a = data(rng, shape, dt)
    if dt is not pygpu.int64:
        a = (a * 0.5 + 1).astype(a.dtype)  # products stay moderate
    t = pygpu.tensor(a, device=device)
    a64 = a.astype(np.float64)
    for d in list(range(len(shape))) + [-1]:
        for keep in (False, True):
            p = t.prod(d, keepdim=keep)
            ref = a64.prod(axis=d, keepdims=keep)
            assert p.shape == ref.shape and p.dtype is dt
            assert rel_err(p.cpu().numpy(), ref) <= TOL[name(dt)] * 10
            if shape[d] == 0:
                with pytest.raises(IndexError, match="non-zero size"):
                    t.min(d)
                with pytest.raises(IndexError, match="argmax\\(\\)"):
                    t.argmax(d)
                continue
            for fn, npf, mm in ((pygpu.min, np.argmin, np.min),
                                (pygpu.max, np.argmax, np.max)):
                r = fn(t, d, keep)
                np.testing.assert_array_equal(r.values.cpu().numpy(),
                                              mm(a, axis=d, keepdims=keep))
                idx = npf(a, axis=d, keepdims=keep)
                np.testing.assert_array_equal(r.indices.cpu().numpy(), idx)
            np.testing.assert_array_equal(
                pygpu.argmin(t, d, keepdim=keep).cpu().numpy(),
                np.argmin(a, axis=d, keepdims=keep))
            np.testing.assert_array_equal(
                t.argmax(dim=d, keepdim=keep).cpu().numpy(),
                np.argmax(a, axis=d, keepdims=keep))
            np.testing.assert_array_equal(
                t.amin(d, keep).cpu().numpy(), a.min(axis=d, keepdims=keep))


def test_min_result_type(device):
    t = pygpu.tensor([[3.0, 1.0, 1.0], [2.0, 5.0, 0.5]], device=device)
    r = t.min(1)
    assert type(r).__name__ == "min" and type(t.max(1)).__name__ == "max"
    values, indices = r
    assert values.tolist() == [1.0, 0.5] and indices.tolist() == [1, 2]
    assert r.values is values and r.indices is indices
    assert t.min().item() == 0.5 and pygpu.min(t).shape == ()


@pytest.mark.parametrize("dt", FLOATS + [pygpu.int64], ids=repr)
def test_whole_tensor_min_prod_arg(device, rng, dt):
    for shape in [(), (1,), (6,), (3, 4), (2, 3, 5)]:
        a = data(rng, shape, dt)
        t = pygpu.tensor(a, device=device)
        assert t.min().item() == a.min() and t.amax().item() == a.max()
        am = pygpu.argmax(t)
        assert am.shape == () and am.dtype is pygpu.int64
        assert am.item() == int(np.argmax(a))
        assert t.argmin().item() == int(np.argmin(a))
        assert pygpu.argmax(t, keepdim=True).shape == (1,) * len(shape)
        if dt is pygpu.int64:  # wraps around as NumPy's int64 does
            assert t.prod().item() == int(a.prod())
        elif dt is not pygpu.float16:
            assert rel_err(t.prod().cpu().numpy(),
                           a.astype(np.float64).prod()) <= TOL[name(dt)] * 10
    assert pygpu.zeros(0, 3, dtype=dt, device=device).prod().item() == 1


def test_argmax_nan_and_ties(device):
    t = pygpu.tensor([[1.0, float("nan"), 3.0, float("nan")],
                      [5.0, 5.0, 2.0, 5.0], [2.0, 0.0, 0.0, 7.0]],
                     device=device)
    a = t.cpu().numpy()
    assert t.argmax(1).tolist() == [1, 0, 3]
    assert t.argmin(1).tolist() == [1, 2, 1]
    assert t.argmax().item() == 1 and t.argmin().item() == 1
    v, i = t.min(0)
    assert i.tolist() == [0, 0, 2, 0]
    assert np.isnan(v.cpu().numpy()[0]) == np.isnan(a[:, 0]).any()
    assert np.isnan(t.amin().item()) and np.isnan(t.amax(1)[0].item())


def test_arg_long_rows(device, rng):
    a = rng.standard_normal((3, 100_003)).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    assert t.argmax(1).tolist() == np.argmax(a, 1).tolist()
    assert t.argmin(0).tolist() == np.argmin(a, 0).tolist()
    assert t.argmin().item() == int(np.argmin(a))
    v, i = t.min(1)
    assert i.tolist() == np.argmin(a, 1).tolist()


def test_amax_amin_tuple_dims(device, rng):
    a = rng.standard_normal((2, 3, 4))
    t = pygpu.tensor(a, device=device)
    for dims in [(0, 2), (1,), (), None, [2, 0, 1], 1]:
        for keep in (False, True):
            ax = None if dims in ((), None) else dims
            ax = tuple(ax) if isinstance(ax, list) else ax
            np.testing.assert_array_equal(
                t.amax(dims, keep).cpu().numpy(),
                a.max(axis=ax, keepdims=keep))
            np.testing.assert_array_equal(
                pygpu.amin(t, dim=dims, keepdim=keep).cpu().numpy(),
                a.min(axis=ax, keepdims=keep))


def test_prod_dtypes_and_strided(device, rng):
    t = pygpu.tensor([[1, 2], [3, 4]], device=device)
    assert t.prod(1).tolist() == [2, 12] and t.prod(1).dtype is pygpu.int64
    assert t.prod(dtype=pygpu.float64).dtype is pygpu.float64
    big = pygpu.full((70,), 3, dtype=pygpu.int64, device=device)
    assert big.prod().item() == int(np.prod(np.full(70, 3, np.int64)))
    a = rng.uniform(0.5, 1.5, (5, 6))
    s = pygpu.tensor(a, device=device).T
    assert rel_err(s.prod(1).cpu().numpy(), a.T.prod(1)) < 1e-12
    assert rel_err(pygpu.prod(s, (0, 1)).cpu().numpy(), a.prod()) < 1e-12


def test_more_reduce_errors(device):
    t = pygpu.ones(2, 3, device=device)
    e = pygpu.zeros(0, device=device)
    with pytest.raises(RuntimeError, match="amax\\(\\): Expected reduction"):
        e.amax()
    with pytest.raises(RuntimeError, match="min\\(\\): Expected reduction"):
        pygpu.min(e)
    with pytest.raises(IndexError, match="argmin\\(\\): Expected reduction "
                       "dim to be specified"):
        e.argmin()
    with pytest.raises(IndexError, match="non-zero size"):
        pygpu.zeros(3, 0, device=device).amin(1)
    with pytest.raises(TypeError):
        t.min((0, 1))
    with pytest.raises(TypeError):
        t.argmax((0, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.argmax(2)
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.prod([1, 2])
    with pytest.raises(RuntimeError, match="multiple times"):
        t.amax((1, -1))
