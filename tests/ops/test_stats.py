"""var, std and norm against NumPy float64: dims (None, int, tuple),
keepdim, correction/unbiased, every p, float16 in float32, degenerate
shapes, NaN/inf, errors."""
import numpy as np
import pytest

import pygpu

from conftest import rel_err

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
TOL = {"float32": 1e-5, "float16": 2e-3, "float64": 1e-12}


def name(dt):
    return repr(dt).split(".")[1]


def axis_of(dim):
    return tuple(dim) if isinstance(dim, list) else dim


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("shape", [(), (1,), (9,), (3, 5), (2, 3, 4),
                                   (4, 1)], ids=str)
def test_var_std(device, rng, dt, shape):
    a = (rng.standard_normal(shape) * 3 + 10).astype(dt.numpy_dtype)
    t = pygpu.tensor(a, device=device)
    a64 = a.astype(np.float64)
    dims = [None] + list(range(len(shape))) + ([(0, -1)] if len(shape) > 1
                                                 else [])
    for dim in dims:
        for corr in (1, 0, 2):
            for keep in (False, True):
                n = a.size if dim is None else int(np.prod(
                    [shape[d] for d in np.atleast_1d(dim)])) if shape else 1
                got = t.var(dim, keepdim=keep, correction=corr)
                s = pygpu.std(t, dim=dim, keepdim=keep, correction=corr)
                with np.errstate(invalid="ignore", divide="ignore"):
                    ref = a64.var(axis=axis_of(dim), keepdims=keep,
                                  ddof=0) * n / max(n - corr, 0)
                    assert got.dtype is dt and got.shape == np.shape(ref)
                    assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]
                    assert rel_err(s.cpu().numpy(),
                                   np.sqrt(ref)) <= TOL[name(dt)]


def test_var_forms_and_degenerate(device, rng):
    a = rng.standard_normal((4, 6))
    t = pygpu.tensor(a, device=device)
    assert rel_err(t.var().cpu().numpy(), a.var(ddof=1)) < 1e-12
    assert rel_err(t.var(1, False).cpu().numpy(), a.var(1)) < 1e-12
    assert rel_err(pygpu.var(t, False).cpu().numpy(), a.var()) < 1e-12
    assert rel_err(t.std(unbiased=False).cpu().numpy(), a.std()) < 1e-12
    assert rel_err(t.var([0, 1]).cpu().numpy(), a.var(ddof=1)) < 1e-12
    assert rel_err(t.T.var(0).cpu().numpy(), a.T.var(0, ddof=1)) < 1e-12
    assert np.isnan(pygpu.tensor([5.0], device=device).var().item())
    assert np.isnan(pygpu.zeros(0, device=device).std().item())
    assert pygpu.zeros(3, 0, device=device).var(0).shape == (0,)
    assert np.isnan(pygpu.zeros(0, 2, device=device).var(0).cpu().numpy()).all()
    x = pygpu.tensor([1.0, float("nan"), 2.0], device=device)
    assert np.isnan(x.var().item())
    assert np.isnan(pygpu.tensor([1.0, float("inf")], device=device).var().item())
    # stable: a large offset does not wipe out a small spread
    b = np.float32(1e4) + rng.standard_normal(1000).astype(np.float32)
    assert rel_err(pygpu.tensor(b, device=device).var().cpu().numpy(),
                   b.astype(np.float64).var(ddof=1)) < 1e-4


def test_var_errors(device):
    t = pygpu.ones(3, device=device)
    with pytest.raises(NotImplementedError, match="floating point"):
        pygpu.tensor([1, 2], device=device).var()
    with pytest.raises(RuntimeError, match="both"):
        t.var(0, True, correction=0)
    with pytest.raises(IndexError):
        t.std(1)
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.var([1.0])


def np_norm(a, p, axis, keep):
    a = np.abs(a.astype(np.float64))
    if p == np.inf:
        return a.max(axis=axis, keepdims=keep)
    if p == -np.inf:
        return a.min(axis=axis, keepdims=keep)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keep).astype(np.float64)
    return (a ** p).sum(axis=axis, keepdims=keep) ** (1 / p)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("p", [2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5],
                         ids=str)
def test_norm(device, rng, dt, p):
    a = rng.standard_normal((3, 4, 5)).astype(dt.numpy_dtype)
    a[0, 0, 0] = 0
    t = pygpu.tensor(a, device=device)
    tol = TOL[name(dt)] * (1 if p in (1, 2, 0, np.inf, -np.inf) else 10)
    for dim in [None, 1, -1, (0, 2)]:
        for keep in (False, True):
            got = t.norm(p, dim, keep)
            with np.errstate(divide="ignore", invalid="ignore"):
                ref = np_norm(a, p, dim, keep)
                assert got.dtype is dt and got.shape == np.shape(ref)
                assert rel_err(got.cpu().numpy(), ref) <= tol


def test_norm_forms(device, rng):
    a = rng.standard_normal((4, 5))
    t = pygpu.tensor(a, device=device)
    ref = np.sqrt((a ** 2).sum())
    assert rel_err(t.norm().cpu().numpy(), ref) < 1e-12
    assert rel_err(pygpu.norm(t, "fro").cpu().numpy(), ref) < 1e-12
    assert rel_err(pygpu.norm(t, p=None).cpu().numpy(), ref) < 1e-12
    assert rel_err(t.T.norm(dim=1).cpu().numpy(),
                   np.sqrt((a.T ** 2).sum(1))) < 1e-12
    f = pygpu.tensor(a.astype(np.float32), device=device)
    assert f.norm(dtype=pygpu.float64).dtype is pygpu.float64
    assert pygpu.zeros(0, device=device).norm().item() == 0
    assert pygpu.zeros(2, 3, device=device).norm(3).item() == 0
    with pytest.raises(NotImplementedError, match="Long"):
        pygpu.tensor([1, 2], device=device).norm()
    with pytest.raises(RuntimeError, match="not supported"):
        t.norm("nuc")
    inf = pygpu.tensor([1.0, -float("inf")], device=device)
    assert inf.norm().item() == float("inf")
    assert inf.norm(float("inf")).item() == float("inf")
