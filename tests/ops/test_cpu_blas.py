"""The CPU products by the BLAS that NumPy loaded (cpu/cpu_blas.c,
cpu/cpu_gemm.c): matmul, bmm, linear (with bias and relu) and their
gradients against float64 NumPy, operands read in place through the
transpose flags, the NumPy fallback (_C._blas_enable(False) and
PYGPU_CPU_BLAS=numpy), and the threads: pygpu's count governs the
products, the BLAS's own count for the rest of the program is left as it
was."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pygpu
from pygpu.nn import functional as F
from conftest import rel_err

DTYPES = {"float32": (pygpu.float32, np.float32, 1e-5),
          "float64": (pygpu.float64, np.float64, 1e-12)}


@pytest.fixture(params=["blas", "numpy"])
def path(request):
    """Each test body through the direct BLAS and through NumPy's matmul."""
    old = pygpu._C._blas_enable(request.param == "blas")
    yield request.param
    pygpu._C._blas_enable(old)


@pytest.fixture
def restore_threads():
    n = pygpu.get_num_threads()
    yield
    pygpu.set_num_threads(n)


def rand(rng, shape, npdt):
    return rng.standard_normal(shape).astype(npdt)


def check(got, ref, tol):
    err = rel_err(got.numpy(), ref)
    assert err <= tol, err


def test_info():
    info = pygpu._C._blas_info()
    assert info["enabled"]
    assert "blas" in os.path.basename(info["library"])
    assert info["int_bits"] in (32, 64)
    assert info["sgemm"].endswith(("cblas_sgemm", "cblas_sgemm64_"))
    assert info["threads"] == pygpu.get_num_threads()
    assert info["threads_per_call"] == 1
    assert info["library_threads"] >= 1
    # OpenBLAS names its kernels' core (NumPy's wheels: "Haswell",
    # "SkylakeX", "Zen", ...); another BLAS gives ""
    assert isinstance(info["core"], str)


# (a's shape, b's shape): 1x1, 0-sized (m, k, n), vectors, non-square,
# large enough to split by columns (n) and by rows (m), batches with
# broadcasting.
MATMUL_SHAPES = [
    ((1, 1), (1, 1)), ((0, 5), (5, 3)), ((4, 0), (0, 3)), ((5, 7), (7, 0)),
    ((64,), (64, 33)), ((17, 64), (64,)), ((40,), (40,)),
    ((37, 300), (300, 129)), ((300, 64), (64, 520)),
    ((600, 500), (500, 40)), ((3, 64, 200), (200, 50)),
    ((2, 1, 40, 30), (5, 30, 20)), ((4, 300, 260), (4, 260, 270)),
    ((6, 3, 0), (6, 0, 2)),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(rng, path, dt, sa, sb):
    pdt, npdt, tol = DTYPES[dt]
    a, b = rand(rng, sa, npdt), rand(rng, sb, npdt)
    got = pygpu.matmul(pygpu.tensor(a), pygpu.tensor(b))
    assert got.dtype is pdt
    check(got, np.matmul(a.astype(np.float64), b.astype(np.float64)), tol)


def layouts(rng, shape, npdt):
    """(name, NumPy array, tensor) of the same values in several layouts:
    contiguous, transposed storage (read with the BLAS's flag), a strided
    slice and a broadcast (both copied first)."""
    a = rand(rng, shape, npdt)
    t = pygpu.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
    yield "contiguous", a, pygpu.tensor(a)
    yield "transposed", a, t.transpose(-1, -2)
    wide = rand(rng, shape[:-1] + (2 * shape[-1],), npdt)
    yield "sliced", wide[..., ::2], pygpu.tensor(wide)[..., ::2]
    row = rand(rng, (1, shape[-1]), npdt)
    yield ("expanded", np.broadcast_to(row, shape),
           pygpu.tensor(row).expand(*shape))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (9, 5, 1), (33, 70, 45),
                                   (300, 200, 300)])
def test_matmul_layouts(rng, path, dt, m, k, n):
    _, npdt, tol = DTYPES[dt]
    for na, a, ta in layouts(rng, (m, k), npdt):
        for nb_, b, tb in layouts(rng, (k, n), npdt):
            ref = a.astype(np.float64) @ b.astype(np.float64)
            err = rel_err((ta @ tb).numpy(), ref)
            assert err <= tol, (na, nb_, err)


# Products the BLAS runs as C^T = B^T A^T, transposed back block by block
# (cpu_gemm.c's swap_worth: fewer rows than columns, at most 64 rows, sums
# of 256 terms or more), beside shapes just outside that rule.
SWAP_SHAPES = [((1, 256), (256, 3)), ((64, 256), (256, 65)),
               ((65, 256), (256, 300)), ((20, 255), (255, 90)),
               ((2, 3, 20, 300), (3, 300, 90)), ((5, 1, 260), (260, 7))]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("sa,sb", SWAP_SHAPES)
def test_transposed_products(rng, dt, sa, sb):
    """matmul in every layout of both operands, and linear with a bias
    and relu, on both sides of the rule."""
    _, npdt, tol = DTYPES[dt]
    for na, a, ta in layouts(rng, sa, npdt):
        for nb_, b, tb in layouts(rng, sb, npdt):
            ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
            got = ta @ tb
            assert got.shape == ref.shape
            err = rel_err(got.numpy(), ref)
            assert err <= tol, (na, nb_, err)
    x = rand(rng, sa, npdt)
    w = rand(rng, (sb[-1], sa[-1]), npdt)
    bias = rand(rng, (sb[-1],), npdt)
    ref = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
    got = F.linear_relu(pygpu.tensor(x), pygpu.tensor(w), pygpu.tensor(bias))
    assert (got.numpy() == 0).any() or ref.min() > 0
    check(got, ref, tol)


@pytest.mark.parametrize("dt", DTYPES)
def test_bmm_transposed(rng, path, dt):
    pdt, npdt, tol = DTYPES[dt]
    a = rand(rng, (5, 48, 70), npdt)
    b = rand(rng, (5, 70, 60), npdt)
    ta = pygpu.tensor(np.ascontiguousarray(a.transpose(0, 2, 1)))
    tb = pygpu.tensor(np.ascontiguousarray(b.transpose(0, 2, 1)))
    got = pygpu.bmm(ta.mT, tb.mT)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    check(got, ref, tol)
    # a batch dim of stride 0 (expand) over transposed matrices
    got = pygpu.matmul(ta.mT[:1].expand(5, 48, 70), tb.mT)
    check(got, np.matmul(a[:1].astype(np.float64), b.astype(np.float64)),
          tol)


# (x's shape, out_f): 1x1, no rows, no in_f (the result is the bias),
# 3-D x, the tutorial model's layers, one large enough to split by rows.
LINEAR_SHAPES = [((1, 1), 1), ((0, 20), 7), ((6, 0), 5), ((3, 4, 20), 9),
                 ((32, 784), 512), ((32, 512), 10), ((700, 300), 130)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("xs,out_f", LINEAR_SHAPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_linear(rng, path, dt, xs, out_f, bias, relu):
    pdt, npdt, tol = DTYPES[dt]
    x = rand(rng, xs, npdt)
    w = rand(rng, (out_f, xs[-1]), npdt)
    b = rand(rng, (out_f,), npdt) if bias else None
    fn = F.linear_relu if relu else F.linear
    got = fn(pygpu.tensor(x), pygpu.tensor(w),
             pygpu.tensor(b) if bias else None)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    if bias:
        ref = ref + b
    if relu:
        ref = np.maximum(ref, 0)
        assert (got.numpy() == 0).any() or ref.size == 0 or ref.min() > 0
    assert got.dtype is pdt
    check(got, ref, tol)


@pytest.mark.parametrize("dt", DTYPES)
def test_linear_layouts(rng, path, dt):
    """x transposed, w stored transposed (w = u.t()), both sliced, and a
    bias given as one value."""
    _, npdt, tol = DTYPES[dt]
    x = rand(rng, (64, 200), npdt)
    w = rand(rng, (150, 200), npdt)
    b = rand(rng, (150,), npdt)
    tx = pygpu.tensor(np.ascontiguousarray(x.T)).t()
    tw = pygpu.tensor(np.ascontiguousarray(w.T)).t()
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    check(F.linear(tx, tw, pygpu.tensor(b)), ref, tol)
    wide = rand(rng, (150, 400), npdt)
    check(F.linear(pygpu.tensor(x), pygpu.tensor(wide)[:, ::2]),
          x.astype(np.float64) @ wide[:, ::2].T.astype(np.float64), tol)
    one = rand(rng, (1,), npdt)
    check(F.linear(tx, tw, pygpu.tensor(one)),
          x.astype(np.float64) @ w.T.astype(np.float64) + one[0], tol)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("rows,in_f,out_f", [(1, 1, 1), (32, 784, 512),
                                              (300, 40, 260)])
def test_linear_backward(rng, path, dt, relu, rows, in_f, out_f):
    pdt, npdt, tol = DTYPES[dt]
    x, w = rand(rng, (rows, in_f), npdt), rand(rng, (out_f, in_f), npdt)
    b, g = rand(rng, (out_f,), npdt), rand(rng, (rows, out_f), npdt)
    tx, tw, tb = (pygpu.tensor(v, requires_grad=True) for v in (x, w, b))
    y = (F.linear_relu if relu else F.linear)(tx, tw, tb)
    (y * pygpu.tensor(g)).sum().backward()
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    gy = g.astype(np.float64)
    if relu:
        gy = gy * (x64 @ w64.T + b > 0)
    check(tx.grad, gy @ w64, tol)
    check(tw.grad, gy.T @ x64, tol)
    check(tb.grad, gy.sum(0), tol)


@pytest.mark.parametrize("dt", DTYPES)
def test_matmul_backward_transposed(rng, path, dt):
    _, npdt, tol = DTYPES[dt]
    a, b = rand(rng, (3, 40, 70), npdt), rand(rng, (70, 50), npdt)
    g = rand(rng, (3, 40, 50), npdt)
    ta = pygpu.tensor(np.ascontiguousarray(a.transpose(0, 2, 1)),
                      requires_grad=True)
    tb = pygpu.tensor(b, requires_grad=True)
    (pygpu.matmul(ta.mT, tb) * pygpu.tensor(g)).sum().backward()
    a64, b64, g64 = (v.astype(np.float64) for v in (a, b, g))
    check(ta.grad, (g64 @ b64.T).transpose(0, 2, 1), tol)
    check(tb.grad, np.einsum("bik,bij->kj", a64, g64), tol)


@pytest.mark.parametrize("dt", [pygpu.float16, pygpu.bfloat16, pygpu.int64])
def test_other_dtypes(rng, dt):
    """Other dtypes keep NumPy's path (float16 and bfloat16 through
    float32)."""
    a = rng.integers(-4, 5, (20, 30))
    b = rng.integers(-4, 5, (30, 10))
    got = pygpu.tensor(a).to(dt) @ pygpu.tensor(b).to(dt)
    assert got.dtype is dt
    assert np.array_equal(got.to(pygpu.float64).numpy(), a @ b)


def test_thread_counts(rng, restore_threads):
    """1 and 2 threads: right results, the same bits (the cut of a product
    depends on its shape only), and the count reported follows."""
    a, b = rand(rng, (300, 500), np.float32), rand(rng, (500, 400),
                                                     np.float32)
    x, w = rand(rng, (64, 500), np.float32), rand(rng, (300, 500),
                                                     np.float32)
    bias = rand(rng, (300,), np.float32)
    out = []
    for n in (1, 2):
        pygpu.set_num_threads(n)
        assert pygpu._C._blas_info()["threads"] == n
        r = pygpu.tensor(a) @ pygpu.tensor(b)
        y = F.linear_relu(pygpu.tensor(x), pygpu.tensor(w),
                          pygpu.tensor(bias))
        check(r, a.astype(np.float64) @ b, 1e-5)
        out.append((r.numpy().tobytes(), y.numpy().tobytes()))
    assert out[0] == out[1]


@pytest.mark.parametrize("rows,cols,k", [(1280, 32, 256), (2600, 16, 256),
                                         (24, 2600, 256)])
def test_thread_counts_wide_blocks(rng, restore_threads, rows, cols, k):
    """Products whose long dim is cut into a few wide blocks (four of 320,
    five of 528 with a short last one, by rows and by columns): right
    results, with bias and relu, and the same bits on 1 and 2 threads."""
    x, w = rand(rng, (rows, k), np.float32), rand(rng, (cols, k), np.float32)
    bias = rand(rng, (cols,), np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    out = []
    for n in (1, 2):
        pygpu.set_num_threads(n)
        y = F.linear_relu(pygpu.tensor(x), pygpu.tensor(w),
                          pygpu.tensor(bias))
        r = pygpu.tensor(x) @ pygpu.tensor(w).mT
        check(y, np.maximum(ref, 0), 1e-5)
        check(r, ref - bias, 1e-5)
        out.append((y.numpy().tobytes(), r.numpy().tobytes()))
    assert out[0] == out[1]


def test_library_threads_kept(rng, restore_threads):
    """The BLAS's own count, which NumPy's products use, is the same after
    pygpu's products, also when two Python threads run them at once."""
    before = pygpu._C._blas_info()["library_threads"]
    a, b = rand(rng, (400, 300), np.float32), rand(rng, (300, 400),
                                                     np.float32)
    ref = a.astype(np.float64) @ b
    errors = []

    def work():
        for _ in range(20):
            err = rel_err((pygpu.tensor(a) @ pygpu.tensor(b)).numpy(), ref)
            if err > 1e-5:
                errors.append(err)

    pygpu.set_num_threads(2)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pygpu._C._blas_info()["library_threads"] == before


def test_disabled_by_environment():
    code = """
import numpy as np, pygpu
info = pygpu._C._blas_info()
assert not info["enabled"], info
assert info["library"]
rng = np.random.default_rng(5)
x = rng.standard_normal((32, 100)).astype(np.float32)
w = rng.standard_normal((20, 100)).astype(np.float32)
b = rng.standard_normal(20).astype(np.float32)
y = pygpu.nn.functional.linear(pygpu.tensor(x), pygpu.tensor(w).t().t(),
                               pygpu.tensor(b)).numpy()
ref = x.astype(np.float64) @ w.T + b
assert np.abs(y - ref).max() <= 1e-5 * np.abs(ref).max()
print("ok")
"""
    env = dict(os.environ, PYGPU_CPU_BLAS="numpy")
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_enable_switch():
    old = pygpu._C._blas_enable(False)
    try:
        assert not pygpu._C._blas_info()["enabled"]
        assert pygpu._C._blas_enable(True) is False
        assert pygpu._C._blas_info()["enabled"]
    finally:
        pygpu._C._blas_enable(old)


def test_fork_during_products(rng, restore_threads):
    """A child forked while another thread's products run gets right
    products and, after its first, the parent's own BLAS count."""
    import multiprocessing
    before = pygpu._C._blas_info()["library_threads"]
    a, b = rand(rng, (300, 300), np.float32), rand(rng, (300, 300),
                                                     np.float32)
    ta, tb = pygpu.tensor(a), pygpu.tensor(b)
    ref = a.astype(np.float64) @ b
    stop = threading.Event()

    def work():
        while not stop.is_set():
            ta @ tb

    def child(q):
        err = rel_err((ta @ tb).numpy(), ref)
        q.put((err, pygpu._C._blas_info()["library_threads"]))

    t = threading.Thread(target=work)
    t.start()
    try:
        ctx = multiprocessing.get_context("fork")
        for _ in range(3):
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start()
            err, threads = q.get(timeout=60)
            p.join(60)
            assert p.exitcode == 0
            assert err <= 1e-5
            assert threads == before
    finally:
        stop.set()
        t.join()
    assert pygpu._C._blas_info()["library_threads"] == before


# A stand-in for a plain (32-bit integer) OpenBLAS: cblas_sgemm and
# cblas_dgemm by the definition, the thread count a variable.
SHIM = r"""
#define GEMM(NAME, T)                                                       \
void NAME(int order, int ta, int tb, int m, int n, int k, T alpha,          \
          const T *a, int lda, const T *b, int ldb, T beta, T *c, int ldc)  \
{                                                                           \
    calls++;                                                                \
    for (int i = 0; i < m; i++)                                             \
        for (int j = 0; j < n; j++) {                                       \
            double s = 0;                                                   \
            for (int p = 0; p < k; p++)                                     \
                s += (double)(ta == 112 ? a[p * lda + i] : a[i * lda + p]) *\
                     (tb == 112 ? b[j * ldb + p] : b[p * ldb + j]);         \
            c[i * ldc + j] = (T)(alpha * s +                                \
                                 (beta == 0 ? 0 : beta * c[i * ldc + j]));  \
        }                                                                   \
}
int calls, threads = 3;
GEMM(cblas_sgemm, float)
GEMM(cblas_dgemm, double)
void openblas_set_num_threads(int n) { threads = n; }
int openblas_get_num_threads(void) { return threads; }
int shim_calls(void) { return calls; }
"""


def test_plain_32bit_library(tmp_path):
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src, lib = tmp_path / "shim.c", tmp_path / "libopenblas_shim.so"
    src.write_text(SHIM)
    # the compiler without a sanitizer's preloaded runtime
    plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True, env=plain)
    code = """
import ctypes, numpy as np, pygpu
from pygpu.nn import functional as F
info = pygpu._C._blas_info()
assert info["sgemm"] == "cblas_sgemm" and info["int_bits"] == 32, info
assert info["library_threads"] == 3, info
rng = np.random.default_rng(3)
for dt in (np.float32, np.float64):
    x = rng.standard_normal((70, 300)).astype(dt)
    w = rng.standard_normal((260, 300)).astype(dt)
    b = rng.standard_normal(260).astype(dt)
    y = F.linear_relu(pygpu.tensor(x), pygpu.tensor(w), pygpu.tensor(b))
    ref = np.maximum(x.astype(np.float64) @ w.T + b, 0)
    assert np.abs(y.numpy() - ref).max() <= 1e-5 * np.abs(ref).max()
    m = pygpu.tensor(np.ascontiguousarray(x.T)).t() @ pygpu.tensor(w.T)
    ref = x.astype(np.float64) @ w.T
    assert np.abs(m.numpy() - ref).max() <= 1e-5 * np.abs(ref).max()
assert ctypes.CDLL(info["library"]).shim_calls() > 0
assert pygpu._C._blas_info()["library_threads"] == 3
print("ok")
"""
    # after what is preloaded already (a sanitizer's runtime must stay
    # first)
    pre = [p for p in (os.environ.get("LD_PRELOAD"), str(lib)) if p]
    env = dict(os.environ, LD_PRELOAD=" ".join(pre))
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_no_leak(rng):
    """Products through the BLAS, with an operand copied first and a
    linear with bias, leave no references or memory behind."""
    from conftest import assert_no_leak
    wide = pygpu.tensor(rand(rng, (40, 80), np.float32))
    b = pygpu.tensor(rand(rng, (40, 40), np.float32))
    bias = pygpu.tensor(rand(rng, (40,), np.float32))

    def cycle():
        wide[:, ::2] @ b
        F.linear_relu(b, wide[:, ::2], bias)

    assert_no_leak(cycle)


def test_failed_copy_raises(rng):
    """An operand the BLAS cannot read is copied; when that allocation
    fails the product raises the allocator's error (no crash), and the
    next product works."""
    wide = rand(rng, (40, 80), np.float32)
    b = rand(rng, (40, 40), np.float32)
    tw, tb = pygpu.tensor(wide), pygpu.tensor(b)
    pygpu._C._fail_allocation_in(2)  # 1: the result, 2: the copy
    try:
        with pytest.raises(RuntimeError, match="can't allocate memory"):
            tw[:, ::2] @ tb
    finally:
        pygpu._C._fail_allocation_in(0)
    check(tw[:, ::2] @ tb, wide[:, ::2].astype(np.float64) @ b, 1e-5)
