"""softmax, log_softmax and logsumexp against NumPy float64 (max-subtracted):
every dim, dtypes (float16 computed in float32), dtype=, large and -inf
inputs, NaN, degenerate shapes, strided inputs; nn.Softmax/LogSoftmax."""
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F

from conftest import rel_err

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
TOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-12}


def name(dt):
    return repr(dt).split(".")[1]


def np_lse(a, axis, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def np_log_softmax(a, axis):
    return a - np_lse(a, axis, keepdims=True)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("shape", [(), (1,), (9,), (3, 5), (2, 3, 4),
                                   (4, 1), (1, 300), (3, 0), (0, 4)],
                         ids=str)
def test_softmax_family(device, rng, dt, shape):
    a = (rng.standard_normal(shape) * 4).astype(dt.numpy_dtype)
    t = pygpu.tensor(a, device=device)
    a64 = a.astype(np.float64)
    for d in range(-1, max(len(shape), 1)):
        ax = d if shape else None
        ls_ref = np_log_softmax(a64, ax) if a.size else a64
        s = t.softmax(d)
        ls = pygpu.log_softmax(t, d)
        assert s.dtype is dt and s.shape == t.shape and ls.shape == t.shape
        assert rel_err(s.cpu().numpy(), np.exp(ls_ref)) <= TOL[name(dt)]
        assert rel_err(ls.cpu().numpy(), ls_ref) <= TOL[name(dt)]
        for keep in (False, True):
            got = t.logsumexp(d, keepdim=keep)
            if shape:
                ref = np_lse(a64, d, keep) if shape[d] else \
                    np.full(np.sum(a64, axis=d, keepdims=keep).shape, -np.inf)
            else:
                ref = a64
            assert got.dtype is dt and got.shape == np.shape(ref)
            with np.errstate(invalid="ignore"):  # -inf against -inf
                assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]


def test_extreme_values(device):
    big = pygpu.tensor([[1000.0, 1000.0, -1000.0], [-1e30, 0.0, 1e30]],
                       device=device)
    s = big.softmax(1).cpu().numpy()
    assert np.allclose(s, [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    assert rel_err(big.logsumexp(1).cpu().numpy(),
                   [1000 + np.log(2), 1e30]) < 1e-6
    ninf = pygpu.tensor([[-np.inf, -np.inf], [-np.inf, 0.0]], device=device)
    assert ninf.logsumexp(1).tolist() == [-np.inf, 0.0]
    assert ninf.softmax(1).tolist()[1] == [0.0, 1.0]
    assert ninf.log_softmax(1).tolist()[1] == [-np.inf, 0.0]
    pinf = pygpu.tensor([[np.inf, 1.0]], device=device)
    assert pinf.logsumexp(1).tolist() == [np.inf]
    nan = pygpu.tensor([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], device=device)
    r = nan.softmax(1).cpu().numpy()
    assert np.isnan(r[0]).all() and not np.isnan(r[1]).any()
    assert np.isnan(nan.logsumexp(1).cpu().numpy()[0])


@pytest.mark.parametrize("shape,dim", [((3, 100_003), 1), ((4097,), 0),
                                       ((2, 3000, 5), 1), ((300, 7), 0)])
def test_long_lines(device, rng, shape, dim):
    a = (rng.standard_normal(shape) * 3).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    ref = np_log_softmax(a.astype(np.float64), dim)
    assert rel_err(t.softmax(dim).cpu().numpy(), np.exp(ref)) < 1e-5
    assert rel_err(t.log_softmax(dim).cpu().numpy(), ref) < 1e-5


def test_dtype_strided_and_tuple(device, rng):
    a = rng.standard_normal((4, 6))
    t = pygpu.tensor(a.astype(np.float16), device=device)
    s = t.softmax(1, dtype=pygpu.float32)
    assert s.dtype is pygpu.float32
    ref = np.exp(np_log_softmax(a.astype(np.float16).astype(np.float64), 1))
    assert rel_err(s.cpu().numpy(), ref) < 1e-5
    d = pygpu.tensor(a, device=device)
    assert rel_err(d.T.softmax(0).cpu().numpy(),
                   np.exp(np_log_softmax(a.T, 0))) < 1e-12
    assert rel_err(d[:, ::2].log_softmax(-1).cpu().numpy(),
                   np_log_softmax(a[:, ::2], -1)) < 1e-12
    for dims in [(0, 1), (1, 0), [1]]:
        for keep in (False, True):
            got = pygpu.logsumexp(d, dims, keep)
            m = a.max()
            ax = tuple(dims)
            ref = np.log(np.exp(a - m).sum(axis=ax, keepdims=keep)) + m
            assert got.shape == ref.shape
            assert rel_err(got.cpu().numpy(), ref) < 1e-12
    i = pygpu.tensor([[1, 2], [3, 4]], device=device)
    assert i.logsumexp(1).dtype is pygpu.float32
    assert i.softmax(1, pygpu.float64).dtype is pygpu.float64


def test_errors(device):
    t = pygpu.ones(2, 3, device=device)
    with pytest.raises(NotImplementedError, match="Long"):
        pygpu.tensor([1, 2], device=device).softmax(0)
    with pytest.raises(TypeError):
        t.softmax()
    with pytest.raises(TypeError):
        pygpu.logsumexp(t)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.log_softmax(2)
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.softmax([1.0], 0)
    with pytest.raises(TypeError, match="dim"):
        F.softmax(t)
    with pytest.raises(TypeError, match="dim"):
        F.log_softmax(t)


def test_nn(device, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    m = pygpu.nn.Softmax(dim=1)
    assert repr(m) == "Softmax(dim=1)"
    assert repr(pygpu.nn.LogSoftmax(-1)) == "LogSoftmax(dim=-1)"
    assert repr(pygpu.nn.Softmax()) == "Softmax(dim=None)"
    ref = np_log_softmax(a.astype(np.float64), 1)
    assert rel_err(m(t).cpu().numpy(), np.exp(ref)) < 1e-5
    assert rel_err(pygpu.nn.LogSoftmax(1)(t).cpu().numpy(), ref) < 1e-5
    assert rel_err(F.softmax(t, dim=1).cpu().numpy(), np.exp(ref)) < 1e-5
    assert rel_err(F.log_softmax(t, 1, dtype=pygpu.float64).cpu().numpy(),
                   ref) < 1e-5
    assert F.softmax(t, 0, dtype=pygpu.float64).dtype is pygpu.float64
    with pytest.raises(TypeError, match="dim"):
        pygpu.nn.Softmax()(t)


@pytest.mark.parametrize("n", [15, 16, 17, 37, 1000])
def test_float32_rows_match_the_strided_path_bit_for_bit(n):
    """Contiguous float32 rows are read in place; columns of a transposed
    input are read through a tile; both sum through the same cloned
    function, chunk by chunk, and must give the same bits, with NaN, +inf
    and -inf anywhere in a line (tests/ops/test_softmax_lines.py: more
    lengths and layouts, each CPU capability)."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((12, n)) * 5).astype(np.float32)
    for row, pos, v in [(1, 0, np.nan), (2, n - 1, np.nan),
                        (3, n // 2, np.nan), (4, n // 3, np.inf),
                        (5, n - 1, -np.inf), (7, 0, np.inf)]:
        x[row, pos] = v
    x[6] = -np.inf
    x[8, ::2] = -np.inf
    x[9] = 0.0
    x[9, 3 % n] = -0.0
    x[10] = 88.5
    x[11, 1] = -1e30
    rows = pygpu.tensor(x)
    cols = pygpu.tensor(np.ascontiguousarray(x.T))
    for op in ("softmax", "log_softmax", "logsumexp"):
        a = getattr(rows, op)(1).numpy()
        b = getattr(cols, op)(0).numpy()
        b = b.T if b.ndim == 2 else b
        same = (a.view(np.uint32) == b.view(np.uint32)) | (
            np.isnan(a) & np.isnan(b))
        assert same.all(), (op, np.argwhere(~same)[:5])


@pytest.mark.parametrize("shape,dim", [((5, 37), 1), ((37, 5), 0),
                                       ((3, 4, 6), 1), ((0, 3), 1)])
def test_bfloat16_reads_its_own_dtype_with_float32_bits(device, shape, dim):
    """bfloat16 has a softmax row of its own, computing in float: the
    result is the float32 one rounded once, bit for bit."""
    rng = np.random.default_rng(11)
    x = pygpu.tensor(rng.standard_normal(shape) * 3,
                     device=device).bfloat16()
    wide = x.float()
    for op in ("softmax", "log_softmax", "logsumexp"):
        got = getattr(x, op)(dim)
        assert got.dtype == pygpu.bfloat16
        want = getattr(wide, op)(dim).bfloat16()
        assert got.float().cpu().numpy().tobytes() == \
            want.float().cpu().numpy().tobytes(), op
