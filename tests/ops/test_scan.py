"""cumsum and cumprod against NumPy float64: every dim, every dtype (integers
give int64), dtype=, degenerate shapes, strided inputs, long rows, errors."""
import numpy as np
import pytest

import pygpu

from conftest import rel_err

DTYPES = [pygpu.float32, pygpu.float16, pygpu.float64, pygpu.int64]
TOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-12, "int64": 0}


def name(dt):
    return repr(dt).split(".")[1]


def data(rng, shape, dt, for_prod=False):
    if dt is pygpu.int64:
        return rng.integers(-3 if for_prod else -100, 4 if for_prod else 100,
                            size=shape).astype(np.int64)
    a = rng.standard_normal(shape)
    if for_prod:
        a = rng.uniform(0.7, 1.3, shape) * np.sign(a)
    return a.astype(dt.numpy_dtype)


@pytest.mark.parametrize("dt", DTYPES, ids=repr)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (0,), (3, 5), (2, 3, 4),
                                   (3, 0, 2), (1, 1), (5, 1, 6)], ids=str)
def test_cumsum_cumprod(device, rng, dt, shape):
    for op, npop, fn in (("cumsum", np.cumsum, pygpu.cumsum),
                         ("cumprod", np.cumprod, pygpu.cumprod)):
        a = data(rng, shape, dt, for_prod=op == "cumprod")
        t = pygpu.tensor(a, device=device)
        for d in range(-1, max(len(shape), 1)):
            got = getattr(t, op)(d)
            ref = npop(a.astype(np.float64), axis=d) if shape else \
                a.astype(np.float64)
            assert got.dtype is dt and got.shape == t.shape
            assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]
            assert rel_err(fn(t, dim=d).cpu().numpy(), ref) <= TOL[name(dt)]


def test_dtype_and_int_wrap(device):
    t = pygpu.tensor([1, 2, 3], device=device)
    assert t.cumsum(0).dtype is pygpu.int64
    f = t.cumsum(0, dtype=pygpu.float64)
    assert f.dtype is pygpu.float64 and f.tolist() == [1.0, 3.0, 6.0]
    big = pygpu.full((3,), 2 ** 62, dtype=pygpu.int64, device=device)
    assert big.cumsum(0).tolist() == \
        np.cumsum(np.full(3, 2 ** 62, np.int64)).tolist()
    h = pygpu.ones(3000, dtype=pygpu.float16, device=device).cumsum(0)
    assert h.cpu().numpy()[2047] == 2048  # float16 rounds; runs in float32


@pytest.mark.parametrize("shape,dim", [((3, 100_003), 1), ((2, 5000, 3), 1),
                                       ((4097,), 0), ((700, 600), 0)])
def test_long_lines(device, rng, shape, dim):
    a = rng.standard_normal(shape)
    t = pygpu.tensor(a, device=device)
    ref = np.cumsum(a, axis=dim)
    assert rel_err(t.cumsum(dim).cpu().numpy(), ref) < 1e-12
    f = pygpu.tensor(a.astype(np.float32), device=device)
    scale = np.abs(a).sum(axis=dim).max() / np.abs(ref).max()
    assert rel_err(f.cumsum(dim).cpu().numpy(), ref) < 1e-5 * max(scale, 1)


def test_strided_and_nan(device, rng):
    a = rng.standard_normal((5, 7))
    t = pygpu.tensor(a, device=device)
    assert rel_err(t.T.cumsum(1).cpu().numpy(), np.cumsum(a.T, 1)) < 1e-12
    assert rel_err(t[:, ::2].cumprod(0).cpu().numpy(),
                   np.cumprod(a[:, ::2], 0)) < 1e-12
    n = pygpu.tensor([1.0, float("nan"), 2.0], device=device).cumsum(0)
    assert n.tolist()[0] == 1.0 and np.isnan(n.cpu().numpy()[1:]).all()


def test_errors(device):
    t = pygpu.ones(2, 3, device=device)
    with pytest.raises(TypeError):
        t.cumsum()
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.cumsum(2)
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.cumprod([1.0], 0)
    with pytest.raises(TypeError):
        t.cumsum(0.5)
