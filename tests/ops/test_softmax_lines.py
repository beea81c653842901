"""The float path of the softmax family and cross-entropy on the CPU
(cpu/cpu_softmax.c, cpu/cpu_xent.c): exponentials summed a chunk of 256
at a time in float lanes, chunks added in double.  Long lines (a million
elements) against float64 NumPy; every layout and dtype of a line giving
the float32 row's bits (float16 and bfloat16: rounded once); the same
under each CPU capability this machine has (PYGPU_CPU_CAPABILITY, in a
child process)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F

from conftest import ROOT, rel_err

OPS = ("softmax", "log_softmax", "logsumexp")


def np_lse(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m


def elementwise_rel(got, ref):
    """max |got - ref| / |ref| over the elements where ref is normal."""
    got = np.asarray(got, np.float64)
    ok = np.abs(ref) > 1e-37
    return float(np.max(np.abs(got[ok] - ref[ok]) / np.abs(ref[ok])))


def softmax_err(got, x64):
    """Each probability's relative error over what float32 allows it: x - m
    rounded to float is off by up to |x - m| 2^-24, and exp passes that
    on as a relative error; a few roundings more (exp, 1 / s, the
    product, the sum's own) are allowed on top, 6e-7.  A single float
    accumulator for the sum would be 10 to 1000 times over."""
    m = x64.max(1, keepdims=True)
    lse = np_lse(x64, 1)
    ref = np.exp(x64 - lse)
    ok = ref > 1e-37
    allowed = 6e-7 + np.abs(x64 - m) * 2.0 ** -24
    err = np.abs(np.asarray(got, np.float64) - ref) / ref
    return float(np.max(err[ok] / allowed[ok]))


@pytest.mark.parametrize("n", [1_000_003, 4097])
def test_long_line_against_float64(n):
    """One line of a million floats: a single float accumulator would be
    off by ~1e-4 here; chunked float lanes added in double stay within a
    few float roundings of the float64 result, element by element."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) * 4).astype(np.float32)
    x[1, ::7] += 20  # a second line where a seventh of the terms dominate
    t = pygpu.tensor(x)
    x64 = x.astype(np.float64)
    lse = np_lse(x64, 1)
    s = t.softmax(1).numpy()
    assert softmax_err(s, x64) <= 1
    ls = t.log_softmax(1).numpy()
    # x - (m + log s): a rounding of each term and of the difference
    err = np.abs(ls - (x64 - lse)) / (np.abs(x64 - lse) + np.abs(lse))
    assert err.max() < 2.0 ** -23
    got = t.logsumexp(1).numpy()
    assert elementwise_rel(got, lse[:, 0]) < 3e-7
    # the probabilities sum to 1
    assert abs(s.astype(np.float64).sum(1) - 1).max() < 1e-6


def np_rows(x):
    return np.ascontiguousarray(x)


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 255, 256, 257, 600])
def test_every_layout_gives_the_rows_bits(n):
    """A line read in place (contiguous float32 row), through the tile
    (columns of a transposed input, 20 of them so that two tiles of 16
    are used; a line in the middle of [outer, n, inner]): the same bits,
    NaN and infinities included."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((20, n)) * 6).astype(np.float32)
    x[1, n // 2] = np.nan
    x[2, :] = -np.inf
    x[3, n - 1] = np.inf
    x[4, ::2] = -np.inf
    x[5] = -1e30
    x[5, 0] = 0.0
    x[6] = rng.uniform(-110, -80, n).astype(np.float32)  # subnormal exps
    x[6, 0] = 0.0
    rows = pygpu.tensor(x)
    cols = pygpu.tensor(np.ascontiguousarray(x.T))
    mid = pygpu.tensor(np.ascontiguousarray(
        x.reshape(4, 5, n).transpose(0, 2, 1)))  # [4, n, 5]
    for op in OPS:
        a = getattr(rows, op)(1).numpy()
        b = getattr(cols, op)(0).numpy()
        b = b.T if b.ndim == 2 else b
        c = getattr(mid, op)(1).numpy()
        c = (c.transpose(0, 2, 1) if c.ndim == 3 else c).reshape(a.shape)
        for other in (b, c):
            same = (a.view(np.uint32) == other.view(np.uint32)) | (
                np.isnan(a) & np.isnan(other))
            assert same.all(), (op, np.argwhere(~same)[:5])


@pytest.mark.parametrize("dt", ["half", "bfloat16"])
@pytest.mark.parametrize("shape,dim", [((3, 600), 1), ((600, 3), 0),
                                       ((2, 300, 20), 1), ((4, 1), 1)])
def test_half_types_are_float32_rounded_once(dt, shape, dim):
    rng = np.random.default_rng(7)
    x = getattr(pygpu.tensor(rng.standard_normal(shape) * 5), dt)()
    wide = x.float()
    for op in OPS:
        got = getattr(x, op)(dim)
        want = getattr(getattr(wide, op)(dim), dt)()
        assert got.dtype == x.dtype
        assert got.float().numpy().tobytes() == \
            want.float().numpy().tobytes(), op


def np_xent(x, t, w=None, eps=0.0):
    """Mean cross-entropy and its gradient in float64."""
    x = x.astype(np.float64)
    n, c = x.shape
    w = np.ones(c) if w is None else w.astype(np.float64)
    lsm = x - np_lse(x, 1)
    wt = w[t]
    nll = -lsm[np.arange(n), t] * wt
    smooth = -(lsm * w).sum(1)
    loss = ((1 - eps) * nll + eps / c * smooth).sum() / wt.sum()
    p = np.exp(lsm)
    onehot = np.zeros_like(x)
    onehot[np.arange(n), t] = 1
    g = (1 - eps) * wt[:, None] * (p - onehot) + \
        eps / c * (w.sum() * p - w)
    return loss, g / wt.sum()


@pytest.mark.parametrize("n,c", [(3, 1_000_003), (64, 1000), (5, 33)])
@pytest.mark.parametrize("smooth", [0.0, 0.1])
def test_cross_entropy_rows_against_float64(n, c, smooth):
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((n, c)) * 4).astype(np.float32)
    t = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    for weight in (None, w):
        ref, gref = np_xent(x, t, weight, smooth)
        xt = pygpu.tensor(x, requires_grad=True)
        loss = F.cross_entropy(
            xt, pygpu.tensor(t), label_smoothing=smooth,
            weight=None if weight is None else pygpu.tensor(weight))
        assert abs(loss.item() - ref) <= 2e-6 * abs(ref)
        loss.backward()
        assert rel_err(xt.grad.numpy(), gref) < 1e-5


def test_cross_entropy_rows_and_columns_agree():
    """[N, C] rows and the same logits as [1, C, N] columns (the K-dim
    form, read through per-column buffers) agree to float precision."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((40, 700)) * 5).astype(np.float32)
    t = rng.integers(0, 700, 40)
    rows = F.cross_entropy(pygpu.tensor(x), pygpu.tensor(t),
                           reduction="none").numpy()
    cols = F.cross_entropy(pygpu.tensor(np.ascontiguousarray(x.T)[None]),
                           pygpu.tensor(t[None]), reduction="none").numpy()
    assert rel_err(cols[0], rows) < 1e-6


CHILD = textwrap.dedent("""
    import numpy as np, pygpu, sys
    want = sys.argv[1]
    assert pygpu._C._cpu_capability() == want, pygpu._C._cpu_capability()
    rng = np.random.default_rng(5)
    for n in (33, 257, 1000):
        x = (rng.standard_normal((18, n)) * 6).astype(np.float32)
        x[1, 3] = np.nan
        x[2] = -np.inf
        rows = pygpu.tensor(x)
        cols = pygpu.tensor(np.ascontiguousarray(x.T))
        for op in ("softmax", "log_softmax", "logsumexp"):
            a = getattr(rows, op)(1).numpy()
            b = getattr(cols, op)(0).numpy()
            b = b.T if b.ndim == 2 else b
            same = (a.view(np.uint32) == b.view(np.uint32)) | (
                np.isnan(a) & np.isnan(b))
            assert same.all(), (want, op, n)
    x = (rng.standard_normal((2, 300_001)) * 4).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.max(1, keepdims=True)
    lse = np.log(np.exp(x64 - m).sum(1, keepdims=True)) + m
    s = pygpu.tensor(x).softmax(1).numpy().astype(np.float64)
    err = np.abs(s - np.exp(x64 - lse)) / np.exp(x64 - lse)
    assert np.max(err / (6e-7 + np.abs(x64 - m) * 2.0 ** -24)) <= 1
    v = np.linspace(-120, 40, 100_001).astype(np.float32)
    sg = pygpu.tensor(v).sigmoid().numpy().astype(np.float64)
    ref = 1 / (1 + np.exp(-v.astype(np.float64)))
    ok = ref > 1e-37
    binade = np.exp2(np.floor(np.log2(ref[ok])))
    assert np.max(np.abs(sg[ok] - ref[ok]) / (binade * 2.0 ** -23)) <= 2.5
    print("ok", want)
""")


def capabilities():
    """The capabilities this CPU can run, from the one picked when nothing
    lowers the choice."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYGPU_CPU_CAPABILITY"}
    out = subprocess.run([sys.executable, "-c",
                          "import pygpu; print(pygpu._C._cpu_capability())"],
                         capture_output=True, text=True,
                         check=True, env=env)
    best = out.stdout.strip()
    order = ["DEFAULT", "AVX2", "AVX512"]
    return order[:order.index(best) + 1]


@pytest.mark.parametrize("cap", ["DEFAULT", "AVX2", "AVX512"])
def test_each_capability(cap):
    """Rows and columns agree bit for bit, and long lines and sigmoid stay
    within their bounds, in each vector build the CPU can run (bits may
    differ from one capability to the next: the wide ones fuse
    multiply-adds)."""
    if cap not in capabilities():
        pytest.skip(f"this CPU cannot run the {cap} loops")
    env = dict(os.environ, PYGPU_CPU_CAPABILITY=cap.lower())
    out = subprocess.run([sys.executable, "-c", CHILD, cap],
                         capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == f"ok {cap}"
