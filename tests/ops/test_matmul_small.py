"""Small CPU matrix products, which a loop of pygpu's own computes instead
of NumPy: shapes at and around the size limit, 1-D operands, transposed
and strided views (the loop takes some layouts, NumPy the others), k == 0,
NaN/inf, against a float64 NumPy reference."""
import numpy as np
import pytest

import pygpu

TOL = {np.float32: 1e-5, np.float64: 1e-12}


def ref(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def check(got, want, dtype):
    got = got.numpy()
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL[dtype],
                               atol=TOL[dtype] * max(1, np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (16, 16, 16), (3, 5, 7),
                                   (16, 32, 16), (17, 32, 16), (1, 64, 1),
                                   (40, 40, 40), (2, 0, 3), (5, 2, 1)])
def test_shapes(dtype, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    check(pygpu.from_numpy(a) @ pygpu.from_numpy(b), ref(a, b), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_views_and_vectors(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((12, 20)).astype(dtype)
    b = rng.standard_normal((20, 12)).astype(dtype)
    ta, tb = pygpu.from_numpy(a), pygpu.from_numpy(b)
    check(tb.t() @ ta.t(), ref(b.T, a.T), dtype)          # both transposed
    check(ta[:, ::2] @ tb[::2, :], ref(a[:, ::2], b[::2, :]), dtype)
    check(ta @ tb[:, ::3], ref(a, b[:, ::3]), dtype)      # strided columns
    v = rng.standard_normal(20).astype(dtype)
    tv = pygpu.from_numpy(v)
    check(ta @ tv, ref(a, v), dtype)                      # matrix @ vector
    check(tv @ tb, ref(v, b), dtype)                      # vector @ matrix
    check(tv @ tv, ref(v, v), dtype)                      # 0-d result
    check(pygpu.mm(ta, tb), ref(a, b), dtype)


def test_nan_inf():
    a = np.ones((4, 4), np.float32)
    b = np.ones((4, 4), np.float32)
    a[1, 2] = np.nan
    b[0, 3] = np.inf
    got = (pygpu.from_numpy(a) @ pygpu.from_numpy(b)).numpy()
    want = a @ b
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def test_float16_and_int64_still_work():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    got = (pygpu.from_numpy(a) @ pygpu.from_numpy(a.T.copy())).numpy()
    np.testing.assert_array_equal(got, a @ a.T)
    h = np.random.default_rng(2).standard_normal((8, 8)).astype(np.float16)
    got = (pygpu.from_numpy(h) @ pygpu.from_numpy(h)).numpy()
    np.testing.assert_allclose(got, ref(h, h), rtol=1e-2, atol=5e-2)
