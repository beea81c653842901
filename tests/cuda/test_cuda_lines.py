"""Long lines and short rows, on every device (the CUDA kernels choose their
layout by shape: lines of a few million elements are cut in chunks and
scanned in three passes, rows of a few classes get a group of lanes
each).  cumsum and cumprod of long lines against NumPy float64 (exactly
where the sums are exact), across the sizes where the kernels change
layout, several lines, columns and strided inputs; softmax, log_softmax,
logsumexp and cross-entropy (forward and backward) over short rows and
many of them; and two calls giving the same bits."""
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F

from conftest import rel_err

U32 = 2.0 ** -24  # float32's unit roundoff


def same_bits(a, b):
    a, b = a.cpu(), b.cpu()
    if a.dtype is pygpu.bfloat16:
        a, b = a.float(), b.float()
    return a.numpy().tobytes() == b.numpy().tobytes()


def small_ints(rng, shape, low=-3, high=4):
    """Integers whose running sums stay exact in float32 (and float16 or
    bfloat16 before the output's rounding)."""
    return rng.integers(low, high, size=shape)


def as_bf16(a, device):
    """Exact integers as bfloat16 (rounded to nearest even), as float64."""
    t = pygpu.tensor(np.asarray(a, dtype=np.float32), device=device)
    return t.bfloat16().float().cpu().numpy().astype(np.float64)


# ------------------------------------------------------------- scans
# Sizes around the places where the CUDA scan changes layout: groups of 2,
# 8 and 32 lanes (n <= 16, 64, 1024), warps of 256 elements, tiles of 2048,
# chunks of whole tiles once n > 4096 (a last chunk of a single element).
BOUNDARY_N = [1, 2, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025,
              2047, 2048, 2049, 4095, 4096, 4097, 8191, 8193, 16383, 16385,
              32769, 3 * 16384 + 1, 2 ** 20 + 3]


@pytest.mark.parametrize("n", BOUNDARY_N)
@pytest.mark.parametrize("rows", [1, 3])
def test_scan_boundaries_exact(device, rng, n, rows):
    """Integer-valued inputs: every partial sum is exact, so any element
    taken twice or left out shows."""
    a = small_ints(rng, (rows, n))
    ref = np.cumsum(a, axis=1)
    f = pygpu.tensor(a.astype(np.float32), device=device)
    assert np.array_equal(f.cumsum(1).cpu().numpy(), ref)
    i = pygpu.tensor(a, device=device)
    assert np.array_equal(i.cumsum(1).cpu().numpy(), ref)
    signs = np.where(a >= 0, 1, -1)
    p = pygpu.tensor(signs.astype(np.float32), device=device).cumprod(1)
    assert np.array_equal(p.cpu().numpy(), np.cumprod(signs, axis=1))


@pytest.mark.parametrize("n", [2 ** 20 + 3, 2 ** 24 + 1])
def test_long_cumsum_float32(device, rng, n):
    """A float32 sum of n normal numbers against float64.  The CUDA scan
    rounds each output through a few dozen additions of partial sums (the
    tiles of a chunk, the warps, the chunk totals): its error stays below
    a few hundred roundings of sqrt(n) in size; the CPU loop rounds through
    all n.  One element taken twice or left out is an error of about 1."""
    a = rng.standard_normal(n).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    got = t.cumsum(0).cpu().numpy().astype(np.float64)
    ref = np.cumsum(a.astype(np.float64))
    steps = 256 * np.sqrt(n) if device == "cuda" else 4.0 * n
    assert np.max(np.abs(got - ref)) <= steps * U32
    assert same_bits(t.cumsum(0), t.cumsum(0))


@pytest.mark.parametrize("n", [2 ** 20 + 3, 2 ** 24 + 1])
def test_long_cumsum_exact_dtypes(device, rng, n):
    """int64 (wrapping as NumPy does), float16 and bfloat16 inputs summed
    in float32 and rounded once, bool and int32 inputs giving int64."""
    big = rng.integers(-2 ** 62, 2 ** 62, size=n)
    got = pygpu.tensor(big, device=device).cumsum(0)
    assert got.dtype is pygpu.int64
    assert np.array_equal(got.cpu().numpy(), np.cumsum(big))
    a = small_ints(rng, n, -1, 2)
    exact = np.cumsum(a)
    h = pygpu.tensor(a.astype(np.float16), device=device).cumsum(0)
    assert h.dtype is pygpu.float16
    assert np.array_equal(h.cpu().numpy(), exact.astype(np.float16))
    b = pygpu.tensor(a.astype(np.float32), device=device).bfloat16()
    got = b.cumsum(0)
    assert got.dtype is pygpu.bfloat16
    assert np.array_equal(got.float().cpu().numpy(), as_bf16(exact, device))
    flags = a > 0
    got = pygpu.tensor(flags, device=device).cumsum(0)
    assert got.dtype is pygpu.int64
    assert np.array_equal(got.cpu().numpy(), np.cumsum(flags))
    got = pygpu.tensor(a.astype(np.int32), device=device).cumsum(0)
    assert np.array_equal(got.cpu().numpy(), exact)


def test_long_cumprod(device, rng):
    """Products of numbers near 1 (each rounding is relative, so the error
    grows with the number of roundings on an output's path: at most about
    sqrt(n) of them at random); int64 products wrap as NumPy's do."""
    n = 2 ** 20 + 3
    a = np.exp(rng.standard_normal(n) * 3e-3).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    got = t.cumprod(0).cpu().numpy().astype(np.float64)
    ref = np.cumprod(a.astype(np.float64))
    assert np.max(np.abs(got / ref - 1)) <= 8 * np.sqrt(n) * U32
    assert same_bits(t.cumprod(0), t.cumprod(0))
    d = pygpu.tensor(a.astype(np.float64), device=device).cumprod(0)
    assert rel_err(d.cpu().numpy() / ref, np.ones(n)) < 1e-12
    i = small_ints(rng, n, -3, 4)
    i[i == 0] = 1
    got = pygpu.tensor(i, device=device).cumprod(0).cpu().numpy()
    assert np.array_equal(got, np.cumprod(i))


@pytest.mark.parametrize("shape,dim", [
    ((3, 2 ** 20 + 3), 1),         # several long rows
    ((17, 100_001), 1),
    ((2 ** 20 + 3, 3), 0),         # few long columns
    ((2, 2 ** 18 + 1, 5), 1),
    ((2 ** 16 + 1, 40), 0),
    ((5, 2 ** 17 + 7, 1), 1)])
def test_several_long_lines(device, rng, shape, dim):
    a = small_ints(rng, shape)
    ref = np.cumsum(a, axis=dim)
    f = pygpu.tensor(a.astype(np.float32), device=device)
    got = f.cumsum(dim)
    assert np.array_equal(got.cpu().numpy(), ref)
    assert same_bits(got, f.cumsum(dim))
    x = rng.standard_normal(shape)
    d = pygpu.tensor(x, device=device)
    assert rel_err(d.cumsum(dim).cpu().numpy(), np.cumsum(x, axis=dim)) \
        < 1e-12


def test_long_strided_inputs(device, rng):
    a = small_ints(rng, (3, 2 ** 19 + 11))
    t = pygpu.tensor(a.astype(np.float32), device=device)
    step = t[:, ::3]
    assert not step.is_contiguous()
    assert np.array_equal(step.cumsum(1).cpu().numpy(),
                          np.cumsum(a[:, ::3], axis=1))
    tt = t.t()
    assert np.array_equal(tt.cumsum(0).cpu().numpy(),
                          np.cumsum(a.T, axis=0))
    assert np.array_equal(tt.cumsum(1).cpu().numpy(),
                          np.cumsum(a.T, axis=1))
    flat = pygpu.tensor(a.reshape(-1), device=device)[1::2]
    assert np.array_equal(flat.cumsum(0).cpu().numpy(),
                          np.cumsum(a.reshape(-1)[1::2]))


# --------------------------------------------------------- short rows
SHORT_N = [1, 2, 3, 10, 31, 32, 33]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-5,
        "float64": 1e-12}
# backward through autograd's composite rule: a few more roundings
GRAD_RTOL = {"float16": 3e-2, "bfloat16": 3e-2, "float32": 1e-5,
             "float64": 1e-12}


def np_log_softmax(x):
    m = x.max(1, keepdims=True)
    return x - (np.log(np.exp(x - m).sum(1, keepdims=True)) + m)


def logits(rng, shape, dtype, device, requires_grad=False):
    """Logits of dtype and their float64 values as the kernels read them."""
    x = pygpu.tensor(rng.standard_normal(shape) * 3, dtype=getattr(
        pygpu, dtype), device=device, requires_grad=requires_grad)
    return x, x.detach().double().cpu().numpy()


@pytest.mark.parametrize("n", SHORT_N)
@pytest.mark.parametrize("dtype", FLOATS)
def test_short_rows_softmax(device, rng, dtype, n):
    x, x64 = logits(rng, (1007, n), dtype, device)
    ref = np_log_softmax(x64)
    for got, want in ((x.softmax(1), np.exp(ref)),
                      (x.log_softmax(1), ref),
                      (F.softmax(x, -1), np.exp(ref)),
                      (x.logsumexp(1), x64[:, 0] - ref[:, 0])):
        assert got.dtype is x.dtype
        assert rel_err(got.double().cpu().numpy(), want) <= RTOL[dtype]
    assert same_bits(x.softmax(1), x.softmax(1))
    assert same_bits(x.log_softmax(1), x.log_softmax(1))


@pytest.mark.parametrize("n", SHORT_N)
@pytest.mark.parametrize("dtype", FLOATS)
def test_short_rows_softmax_backward(device, rng, dtype, n):
    g64 = rng.standard_normal((513, n))
    for op in ("softmax", "log_softmax"):
        x, x64 = logits(rng, (513, n), dtype, device, requires_grad=True)
        g = pygpu.tensor(g64, dtype=x.dtype, device=device)
        getattr(x, op)(1).backward(g)
        gr = g.double().cpu().numpy()
        ls = np_log_softmax(x64)
        y = np.exp(ls)
        if op == "softmax":
            want = y * (gr - (gr * y).sum(1, keepdims=True))
        else:
            want = gr - y * gr.sum(1, keepdims=True)
        got = x.grad.double().cpu().numpy()
        assert rel_err(got, want) <= GRAD_RTOL[dtype], op


def test_many_short_rows(device, rng):
    """100003 rows of 10 classes (not a whole number of rows per warp)."""
    x, x64 = logits(rng, (100_003, 10), "float32", device)
    ref = np_log_softmax(x64)
    s = x.softmax(1)
    assert rel_err(s.cpu().numpy(), np.exp(ref)) <= 1e-5
    assert rel_err(x.log_softmax(-1).cpu().numpy(), ref) <= 1e-5
    assert same_bits(s, x.softmax(1))
    t = rng.integers(0, 10, 100_003)
    loss = F.cross_entropy(x, pygpu.tensor(t, device=device),
                           reduction="none")
    want = -ref[np.arange(100_003), t]
    assert rel_err(loss.cpu().numpy(), want) <= 1e-5


def np_xent(x, t, w, ignore, ls):
    """Per-sample losses, their w[t] (0 where ignored) and d loss_s / d x,
    torch's formulas with classes along axis 1."""
    logp = np_log_softmax(x)
    p, c = np.exp(logp), x.shape[1]
    keep = t != ignore
    idx = np.where(keep, t, 0)
    wt = w[idx] * keep
    loss = (1 - ls) * -logp[np.arange(len(t)), idx] * wt + \
        ls / c * -(logp * w).sum(1) * keep
    onehot = np.eye(c)[idx]
    grad = (1 - ls) * wt[:, None] * (p - onehot) + \
        ls / c * (w.sum() * p - w) * keep[:, None]
    return loss, wt, grad


XENT_KW = [dict(), dict(weight=True, label_smoothing=0.2),
           dict(reduction="none", weight=True),
           dict(reduction="sum", label_smoothing=0.1)]


@pytest.mark.parametrize("kw", XENT_KW, ids=str)
@pytest.mark.parametrize("n", SHORT_N)
@pytest.mark.parametrize("dtype", FLOATS)
def test_short_rows_cross_entropy(device, rng, dtype, n, kw):
    """Forward and backward over 1003 samples of n classes, with ignored
    samples scattered among them (neighbours in one warp)."""
    rows = 1003
    X, x64 = logits(rng, (rows, n), dtype, device, requires_grad=True)
    t = rng.integers(0, n, rows)
    t[rng.random(rows) < 0.2] = -100
    w64 = rng.random(n) + 0.5 if kw.get("weight") else np.ones(n)
    W = pygpu.tensor(w64, dtype=X.dtype, device=device) \
        if kw.get("weight") else None
    w64 = W.double().cpu().numpy() if W is not None else w64
    red, ls = kw.get("reduction", "mean"), kw.get("label_smoothing", 0.0)
    loss = F.cross_entropy(X, pygpu.tensor(t, device=device), weight=W,
                           reduction=red, label_smoothing=ls)
    each, wt, grad = np_xent(x64, t, w64, -100, ls)
    want = {"none": each, "sum": each.sum(),
            "mean": each.sum() / wt.sum()}[red]
    got = loss.detach().double().cpu().numpy()
    assert rel_err(got, want) <= RTOL[dtype]
    g64 = rng.standard_normal(rows) if red == "none" else np.float64(1.5)
    G = pygpu.tensor(g64, dtype=X.dtype, device=device)
    loss.backward(G)
    scale = G.double().cpu().numpy()
    if red == "mean":
        scale = scale / wt.sum()
    gwant = grad * np.broadcast_to(scale, (rows,))[:, None]
    assert rel_err(X.grad.double().cpu().numpy(), gwant) <= RTOL[dtype]
    again = F.cross_entropy(X, pygpu.tensor(t, device=device), weight=W,
                            reduction=red, label_smoothing=ls)
    assert same_bits(loss.detach(), again.detach())


@pytest.mark.parametrize("n", [3, 10, 33])
def test_short_rows_bad_target(device, rng, n):
    """The first target out of range in sample order is the one reported,
    wherever the samples fall among the groups of lanes."""
    x = pygpu.randn(1000, n, device=device)
    t = rng.integers(0, n, 1000)
    t[613], t[611], t[900] = n + 7, -100, -5
    with pytest.raises(IndexError, match=f"Target {n + 7} is out of bounds."):
        F.cross_entropy(x, pygpu.tensor(t, device=device))
    t[613] = 0
    with pytest.raises(IndexError, match="Target -5 is out of bounds."):
        F.cross_entropy(x, pygpu.tensor(t, device=device),
                        label_smoothing=0.1)


def test_short_rows_special_values(device):
    """-inf, +inf and NaN inside rows that share a warp with ordinary ones:
    each row keeps its own."""
    inf, nan = float("inf"), float("nan")
    rows = [[0.0, -inf, 1.0], [nan, 1.0, 2.0], [-inf, -inf, -inf],
            [inf, 0.0, 1.0], [1.0, 2.0, 3.0]] * 13
    x = pygpu.tensor(rows, device=device)
    cpu = pygpu.tensor(rows)
    for op in ("softmax", "log_softmax", "logsumexp"):
        got = getattr(x, op)(1).cpu().numpy()
        want = getattr(cpu, op)(1).numpy()
        assert np.array_equal(np.isnan(got), np.isnan(want)), op
        ok = ~np.isnan(want)
        assert np.allclose(got[ok], want[ok], rtol=1e-6, atol=0), op
    t = pygpu.tensor([0, 1, 2, 1, 2] * 13, device=device)
    got = F.cross_entropy(x, t, reduction="none").cpu().numpy()
    want = F.cross_entropy(cpu, t.cpu(), reduction="none").numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=1e-6, atol=0)
