"""sort, argsort, topk, kthvalue, median, mode and unique against NumPy
float64: every dim (negative too), ties and NaNs, degenerate shapes,
non-contiguous inputs, lines long enough for CUDA's multi-pass sort,
gradients scattered back through the indices, and torch's errors."""
import numpy as np
import pytest

import pygpu

from conftest import ALL_DTYPES, BF16, F16, F32, F64, I32, I64, NP, U8, B, \
    dtype_name, host

SHAPES = [(), (1,), (7,), (0,), (3, 5), (2, 3, 4), (3, 0, 2), (5, 1, 6)]


def data(rng, shape, dt, nans=True):
    """Values with many ties (few distinct values) and, for floating
    dtypes, NaNs and infinities."""
    if dt is B:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    a = rng.integers(-4, 5, size=shape).astype(np.float64)
    if dt in (F16, BF16, F32, F64):
        a = a * 0.5
        if nans and a.size:
            flat = a.reshape(-1)
            flat[rng.random(flat.size) < 0.1] = np.nan
            flat[rng.random(flat.size) < 0.05] = np.inf
            flat[rng.random(flat.size) < 0.05] = -np.inf
    if dt is U8:
        a = np.abs(a)
    return a.astype(np.float32 if dt is BF16 else NP[dt])


def tensor(a, dt, device):
    return pygpu.tensor(a, device=device).to(dt) if dt is BF16 else \
        pygpu.tensor(a, device=device)


def ref_sort(a, d, descending):
    """NumPy's stable argsort with NaN the largest, descending by sorting
    the reversed order (keeps ties in index order)."""
    a64 = a.astype(np.float64)
    if a64.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(a64, axis=d, kind="stable")
    # descending, ties in ascending index: sort the negated keys, NaN first
    key = np.where(np.isnan(a64), -np.inf, -a64)
    key = np.where(np.isnan(a64), -np.inf, key)
    nan_first = np.isnan(a64)
    order = np.argsort(key, axis=d, kind="stable")
    # NaN must precede -(+inf) == -inf: a second stable pass on the NaN flag
    flag = np.take_along_axis(~nan_first, order, axis=d)
    o2 = np.argsort(flag, axis=d, kind="stable")
    return np.take_along_axis(order, o2, axis=d)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sort_argsort(device, rng, dt, shape):
    a = data(rng, shape, dt)
    t = tensor(a, dt, device)
    for d in range(-max(len(shape), 1), max(len(shape), 1)):
        for desc in (False, True):
            r = pygpu.sort(t, d, descending=desc, stable=True)
            ix = ref_sort(a, d, desc)
            assert r.indices.dtype is I64 and r.values.dtype is dt
            assert r.values.shape == t.shape == r.indices.shape
            got = host(r.indices)
            np.testing.assert_array_equal(got, ix)
            want = a if a.ndim == 0 else np.take_along_axis(a, ix, axis=d)
            np.testing.assert_array_equal(host(r.values),
                                          want.astype(host(r.values).dtype))
            np.testing.assert_array_equal(host(t.argsort(d, desc)), ix)
            v, i = t.sort(dim=d, descending=desc)
            np.testing.assert_array_equal(host(i), ix)


@pytest.mark.parametrize("n", [1, 2, 3, 31, 1000, 2048, 2049, 5000, 70000])
def test_sort_long_lines(device, rng, n):
    """Lines that fit a CUDA block, just past it (the multi-pass sort), and
    long; random float32 with ties and NaNs, both directions."""
    a = (rng.integers(-50, 50, size=(2, n)) * 0.25).astype(np.float32)
    a[rng.random(a.shape) < 0.01] = np.nan
    t = pygpu.tensor(a, device=device)
    for desc in (False, True):
        ix = host(pygpu.argsort(t, -1, desc))
        np.testing.assert_array_equal(ix, ref_sort(a, -1, desc))


def test_sort_columns_and_strided(device, rng):
    """dim other than the last (inner > 1), and non-contiguous inputs."""
    a = data(rng, (6, 40, 3), F32)
    t = pygpu.tensor(a, device=device)
    tt = t.transpose(0, 2)              # (3, 40, 6), not contiguous
    at = a.transpose(2, 1, 0)
    for d in (0, 1, -1):
        np.testing.assert_array_equal(host(tt.argsort(d)),
                                      ref_sort(at, d, False))
        np.testing.assert_array_equal(host(t.argsort(d, True)),
                                      ref_sort(a, d, True))
    s = t[:, ::3, 1]
    np.testing.assert_array_equal(host(s.sort(0).indices),
                                  ref_sort(a[:, ::3, 1], 0, False))


def test_sort_nan_and_zero_order(device):
    x = pygpu.tensor([np.nan, 1.0, -np.inf, np.inf, 0.0, -0.0, np.nan, -1.0],
                     device=device)       # -0.0 and 0.0 tie
    v, i = pygpu.sort(x)
    np.testing.assert_array_equal(host(i), [2, 7, 4, 5, 1, 3, 0, 6])
    v, i = pygpu.sort(x, descending=True)
    np.testing.assert_array_equal(host(i), [0, 6, 3, 1, 4, 5, 7, 2])
    for dt in (pygpu.int64, pygpu.int32):
        y = pygpu.tensor([3, -2**31, 2**31 - 1, -1, 0, 3], dtype=dt,
                         device=device)
        np.testing.assert_array_equal(host(y.argsort()), [1, 3, 4, 0, 5, 2])


@pytest.mark.parametrize("dt", [F32, F64, F16, I64, I32, U8], ids=dtype_name)
@pytest.mark.parametrize("shape", [(), (1,), (9,), (4, 6), (3, 5, 2)],
                         ids=str)
def test_topk(device, rng, dt, shape):
    a = data(rng, shape, dt)
    t = tensor(a, dt, device)
    for d in range(-max(len(shape), 1), max(len(shape), 1)):
        n = shape[d] if shape else 1
        for k in sorted({0, 1, n // 2, n}):
            for largest in (True, False):
                v, i = pygpu.topk(t, k, d, largest=largest)
                ix = ref_sort(a, d, largest)
                if a.ndim == 0 and k == 0:
                    assert v.numel() == 0 and i.numel() == 0
                    continue
                ix = ix if a.ndim == 0 else np.take(ix, range(k), axis=d)
                np.testing.assert_array_equal(host(i), ix)
                want = a if a.ndim == 0 else \
                    np.take_along_axis(a, ix, axis=d)
                np.testing.assert_array_equal(host(v), want)
                assert v.shape == i.shape
        r = t.topk(1, dim=d)
        assert isinstance(r, pygpu.return_types.topk)


def kth_ref(a, k, d):
    """The k-th smallest (NaN the largest) along d, float64."""
    s = np.sort(a.astype(np.float64), axis=d)   # NumPy sorts NaN last too
    return np.take(s, k - 1, axis=d)


@pytest.mark.parametrize("dt", [F32, F64, F16, I64, U8], ids=dtype_name)
@pytest.mark.parametrize("shape", [(), (1,), (9,), (4, 6), (3, 5, 2)],
                         ids=str)
def test_kthvalue(device, rng, dt, shape):
    a = data(rng, shape, dt)
    t = tensor(a, dt, device)
    for d in range(-max(len(shape), 1), max(len(shape), 1)):
        n = shape[d] if shape else 1
        for k in sorted({1, (n + 1) // 2, n}):
            for keepdim in (False, True):
                v, i = pygpu.kthvalue(t, k, d, keepdim)
                if a.ndim:
                    want = kth_ref(a, k, d)
                    part = np.partition(np.nan_to_num(
                        a.astype(np.float64), nan=np.inf), k - 1, axis=d)
                    assert np.array_equal(np.take(part, k - 1, axis=d),
                                          np.nan_to_num(want, nan=np.inf))
                    if keepdim:
                        want = np.expand_dims(want, d)
                else:
                    want = a.astype(np.float64)
                np.testing.assert_array_equal(host(v).astype(np.float64),
                                              want)
                assert i.dtype is I64 and i.shape == v.shape
                # the index points at the value
                ii = host(i) if keepdim or not a.ndim else \
                    np.expand_dims(host(i), d)
                got = a if not a.ndim else np.take_along_axis(a, ii, axis=d)
                np.testing.assert_array_equal(
                    got.astype(np.float64).reshape(np.shape(want)), want)


def lower_median(a, d):
    a64 = a.astype(np.float64)
    n = a64.shape[d]
    s = np.sort(a64, axis=d)
    med = np.take(s, (n - 1) // 2, axis=d)
    return np.where(np.isnan(a64).any(axis=d), np.nan, med)


@pytest.mark.parametrize("dt", [F32, F64, F16, I64, I32], ids=dtype_name)
@pytest.mark.parametrize("shape", [(1,), (8,), (9,), (4, 6), (3, 5, 2),
                                   (2, 3000)], ids=str)
def test_median(device, rng, dt, shape):
    for nans in (False, True):
        a = data(rng, shape, dt, nans=nans)
        t = tensor(a, dt, device)
        m = pygpu.median(t)
        assert m.shape == () and m.dtype is dt
        flat = a.reshape(-1).astype(np.float64)
        want = np.nan if np.isnan(flat).any() else \
            np.sort(flat)[(flat.size - 1) // 2]
        np.testing.assert_array_equal(host(m), want)
        for d in range(-len(shape), len(shape)):
            for keepdim in (False, True):
                v, i = t.median(d, keepdim)
                want = lower_median(a, d)
                ii = host(i) if keepdim else np.expand_dims(host(i), d)
                if keepdim:
                    want = np.expand_dims(want, d)
                np.testing.assert_array_equal(host(v).astype(np.float64),
                                              want)
                got = np.take_along_axis(a, ii, axis=d).astype(np.float64)
                np.testing.assert_array_equal(got.reshape(want.shape), want)
                # with a NaN, the index is that of the line's first NaN
                nan_first = np.argmax(np.isnan(a.astype(np.float64)), axis=d)
                has = np.isnan(a.astype(np.float64)).any(axis=d)
                iflat = ii.squeeze(d)
                assert np.array_equal(iflat[has], nan_first[has])


def test_median_degenerate(device):
    m = pygpu.median(pygpu.tensor(2.5, device=device))
    assert m.shape == () and float(m) == 2.5
    v, i = pygpu.tensor(2.5, device=device).median(0)
    assert v.shape == () and i.shape == () and int(i) == 0
    e = pygpu.median(pygpu.empty(0, device=device))
    assert e.shape == () and np.isnan(float(e))
    with pytest.raises(IndexError, match="non-zero size"):
        pygpu.median(pygpu.empty(3, 0, device=device), 1)


def mode_ref(a, d):
    """Most frequent value along d, the smallest among ties."""
    a = np.moveaxis(a.astype(np.float64), d, -1)
    out = np.empty(a.shape[:-1])
    for idx in np.ndindex(*a.shape[:-1]):
        vals, counts = np.unique(a[idx], return_counts=True)
        out[idx] = vals[np.argmax(counts)]
    return out


@pytest.mark.parametrize("dt", [F32, F64, I64, I32, U8, B], ids=dtype_name)
@pytest.mark.parametrize("shape", [(), (1,), (9,), (4, 6), (3, 5, 2),
                                   (2, 2500)], ids=str)
def test_mode(device, rng, dt, shape):
    a = data(rng, shape, dt, nans=False)
    t = tensor(a, dt, device)
    for d in range(-max(len(shape), 1), max(len(shape), 1)):
        for keepdim in (False, True):
            v, i = pygpu.mode(t, d, keepdim)
            assert v.dtype is dt and i.dtype is I64
            if not a.ndim:
                assert v.shape == () and int(i) == 0
                continue
            want = mode_ref(a, d)
            ii = host(i) if keepdim else np.expand_dims(host(i), d)
            if keepdim:
                want = np.expand_dims(want, d)
            np.testing.assert_array_equal(host(v).astype(np.float64), want)
            got = np.take_along_axis(a, ii, axis=d).astype(np.float64)
            np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_mode_example(device):
    x = pygpu.tensor([[3, 1, 2, 2, 1, 5], [7, 7, 7, 0, 0, 0]],
                     device=device)
    v, i = x.mode(1)
    assert host(v).tolist() == [1, 0]
    assert host(i).tolist() == [4, 5]      # the last occurrence


@pytest.mark.parametrize("dt", [F32, F64, I64, I32, U8, B], ids=dtype_name)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (17,), (4, 6),
                                   (3, 5, 2), (5000,)], ids=str)
def test_unique(device, rng, dt, shape):
    a = data(rng, shape, dt)
    t = tensor(a, dt, device)
    u, inv, cnt = pygpu.unique(t, return_inverse=True, return_counts=True)
    flat = a.reshape(-1).astype(np.float64)
    ru, rinv, rcnt = np.unique(flat, return_inverse=True, return_counts=True,
                               equal_nan=False)
    np.testing.assert_array_equal(host(u).astype(np.float64), ru)
    assert u.dtype is dt and inv.dtype is I64 and cnt.dtype is I64
    assert inv.shape == t.shape
    # each NaN is its own element: NumPy may number them otherwise
    fin = ~np.isnan(flat)
    np.testing.assert_array_equal(host(inv).reshape(-1)[fin],
                                  rinv.reshape(-1)[fin])
    np.testing.assert_array_equal(
        host(u).astype(np.float64)[host(inv).reshape(-1)], flat)
    assert sorted(host(inv).reshape(-1)[~fin]) == \
        list(range(len(ru) - (~fin).sum(), len(ru)))
    np.testing.assert_array_equal(host(cnt), rcnt)
    u2 = t.unique()
    np.testing.assert_array_equal(host(u2).astype(np.float64), ru)
    u3, c3 = pygpu.unique(t, sorted=False, return_counts=True)
    np.testing.assert_array_equal(host(c3), rcnt)


def test_unique_dim(device, rng):
    a = rng.integers(0, 2, size=(7, 3)).astype(np.int64)
    t = pygpu.tensor(a, device=device)
    u, inv, cnt = pygpu.unique(t, dim=0, return_inverse=True,
                               return_counts=True)
    ru, rinv, rcnt = np.unique(a, axis=0, return_inverse=True,
                               return_counts=True)
    np.testing.assert_array_equal(host(u), ru)
    np.testing.assert_array_equal(host(inv), rinv.reshape(-1))
    np.testing.assert_array_equal(host(cnt), rcnt)
    u1 = pygpu.unique(t.T.contiguous(), dim=1)
    np.testing.assert_array_equal(host(u1), np.unique(a.T, axis=1))


def test_gradient_values(device, rng):
    a = rng.standard_normal((3, 6))
    x = pygpu.tensor(a, device=device, requires_grad=True)
    v, i = x.topk(2, 1)
    gout = rng.standard_normal((3, 2))
    v.backward(pygpu.tensor(gout, device=device))
    ref = np.zeros_like(a)
    np.put_along_axis(ref, host(i), gout, axis=1)
    np.testing.assert_allclose(host(x.grad), ref, rtol=1e-12)
    for op, args in (("kthvalue", (2, 1)), ("median", (1,)), ("mode", (1,)),
                     ("sort", (1, True)), ("kthvalue", (3, 1, True)),
                     ("median", (1, True))):
        x.grad = None
        v, i = getattr(x, op)(*args)
        gout = rng.standard_normal(tuple(v.shape))
        v.backward(pygpu.tensor(gout, device=device))
        ref = np.zeros_like(a)
        ii = host(i) if v.ndim == 2 else host(i)[:, None]
        gg = gout if v.ndim == 2 else gout[:, None]
        np.put_along_axis(ref, ii, gg, axis=1)
        np.testing.assert_allclose(host(x.grad), ref, rtol=1e-12)


def test_grad_fn_names(device):
    x = pygpu.randn(3, 4, device=device, requires_grad=True)
    names = {
        "SortBackward0": x.sort(1).values,
        "TopkBackward0": x.topk(2).values,
        "KthvalueBackward0": x.kthvalue(2).values,
        "MedianBackward0": x.median(),
        "MedianBackward1": x.median(0).values,
        "ModeBackward0": x.mode(0).values,
    }
    for name, v in names.items():
        assert v.grad_fn.name() == name
        assert v.requires_grad
    with pygpu.no_grad():
        assert x.sort().values.grad_fn is None
    assert x.sort().indices.grad_fn is None
    assert not x.sort().indices.requires_grad


def test_gradient_by_hand(device):
    x = pygpu.tensor([[1.0, 3.0, 2.0], [5.0, 5.0, 4.0]], device=device,
                     requires_grad=True)
    v, _ = x.sort(1, descending=True)
    v.backward(pygpu.tensor([[10.0, 20.0, 30.0], [1.0, 2.0, 3.0]],
                            device=device))
    # row 0: 3 -> 10, 2 -> 20, 1 -> 30; row 1 (a stable tie): 5, 5, 4
    assert host(x.grad).tolist() == [[30.0, 10.0, 20.0], [1.0, 2.0, 3.0]]
    x.grad = None
    m = x.median(0).values        # the lower median of each column
    m.sum().backward()
    assert host(x.grad).tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    x.grad = None
    x.mode(1).values.sum().backward()  # row 1: 5 twice, its last index
    assert host(x.grad).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    x.grad = None
    pygpu.median(x).backward()    # all six: the lower median is 3 at [0, 1]
    assert host(x.grad).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def test_errors(device):
    x = pygpu.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(-1)
    with pytest.raises(RuntimeError, match="selected number k out of range "
                       "for dimension 1"):
        x.kthvalue(0)
    with pytest.raises(RuntimeError, match="selected number k out of range "
                       "for dimension 0"):
        x.kthvalue(4, 0)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected "
                       "reduction dim 1 to have non-zero size"):
        pygpu.empty(2, 0, device=device).kthvalue(1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sort(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        pygpu.argsort(x, -3)
    with pytest.raises(IndexError, match="non-zero size"):
        pygpu.mode(pygpu.empty(2, 0, device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.sort([3, 1, 2])
    with pytest.raises(IndexError, match="Dimension out of range"):
        pygpu.tensor(1.0, device=device).sort(1)


def test_zero_d_and_empty(device):
    s = pygpu.tensor(3.0, device=device)
    v, i = s.sort()
    assert v.shape == () and float(v) == 3.0 and int(i) == 0
    v, i = s.topk(1)
    assert v.shape == () and int(i) == 0
    v, i = s.topk(0)
    assert v.numel() == 0 and i.numel() == 0
    v, i = s.kthvalue(1)
    assert float(v) == 3.0 and int(i) == 0
    e = pygpu.empty(0, 3, device=device)
    v, i = e.sort(0)
    assert v.shape == (0, 3) and i.shape == (0, 3)
    v, i = e.topk(0, 0)
    assert v.shape == (0, 3)
    assert pygpu.unique(pygpu.empty(0, device=device)).shape == (0,)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("shape,d", [((300, 5), 0), ((3, 4097), 1),
                                     ((2, 20000), -1), ((64, 33), 1),
                                     ((1, 2048), 1), ((5, 3, 1025), 2),
                                     ((5000, 3), 1), ((777, 1), 1),
                                     ((3, 7, 50), 1), ((2, 70000), 1),
                                     ((9, 2), 0)],
                         ids=str)
def test_cuda_matches_cpu(rng, dt, shape, d):
    """The CUDA sort gives the CPU's indices exactly (one stable order)."""
    a = data(rng, shape, dt)
    c = tensor(a, dt, "cpu")
    g = tensor(a, dt, "cuda")
    for desc in (False, True):
        np.testing.assert_array_equal(host(g.argsort(d, desc)),
                                      host(c.argsort(d, desc)))
        np.testing.assert_array_equal(host(g.argsort(d, desc)),
                                      ref_sort(a, d, desc))
    n = shape[d]
    for fn in (lambda t: t.topk(min(3, n), d),
               lambda t: t.kthvalue(min(2, n), d),
               lambda t: t.median(d), lambda t: t.mode(d)):
        rg, rc = fn(g), fn(c)
        np.testing.assert_array_equal(host(rg.values), host(rc.values))
    np.testing.assert_array_equal(host(pygpu.unique(g)),
                                  host(pygpu.unique(c)))


def test_no_leaks():
    from conftest import assert_no_leak, raising
    x = pygpu.tensor(np.arange(12.0).reshape(3, 4)[:, ::-1].copy())
    xg = pygpu.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)

    def cycle():
        pygpu.sort(x, 1, descending=True)
        pygpu._C._sort_indices(x, 0, False)
        v = xg.topk(2).values
        v.sum().backward()
        xg.grad = None
    assert_no_leak(cycle)
    assert_no_leak(raising(IndexError, pygpu._C._sort_indices, x, 2, False))
    assert_no_leak(raising(TypeError, pygpu._C._sorted_values, x, 0, 1,
                           False, 0))


def test_sorted_values_checks():
    x = pygpu.ones(3, 4)
    ix = pygpu.zeros(3, 2, dtype=pygpu.int64)
    with pytest.raises(ValueError, match="which 6"):
        pygpu._C._sorted_values(x, 1, ix, False, 6)
    with pytest.raises(RuntimeError, match="int64"):
        pygpu._C._sorted_values(x, 1, ix.int(), False, 0)
    with pytest.raises(RuntimeError, match="squeezing dim 1 of size 2"):
        pygpu._C._sorted_values(x, 1, ix, True, 2)
    v = pygpu._C._sorted_values(x, 1, ix[:, :1].contiguous(), True, 2)
    assert tuple(v.shape) == (3,)
