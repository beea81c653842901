"""The CPU thread pool: set/get_num_threads, results independent of the
thread count (bit for bit), fork and spawn after threaded ops, concurrent
callers."""
import multiprocessing
import os
import threading

import numpy as np
import pytest

import pygpu

# Above the size at which the CPU loops split over threads.
BIG = (1 << 21) + 37


@pytest.fixture
def restore_threads():
    n = pygpu.get_num_threads()
    yield
    pygpu.set_num_threads(n)


def by_threads(fn, counts=(1, 2, 3)):
    """fn() under each thread count, as NumPy arrays."""
    out = []
    for n in counts:
        pygpu.set_num_threads(n)
        r = fn()
        out.append([t.numpy().copy() for t in
                    (r if isinstance(r, tuple) else (r,))])
    return out


def assert_same_bits(results):
    first = results[0]
    for other in results[1:]:
        for a, b in zip(first, other):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()


def test_default_and_set(restore_threads):
    assert pygpu.get_num_threads() >= 1
    pygpu.set_num_threads(3)
    assert pygpu.get_num_threads() == 3
    pygpu.set_num_threads(1)
    assert pygpu.get_num_threads() == 1


def test_default_is_affinity():
    code = ("import os, pygpu; "
            "assert pygpu.get_num_threads() == len(os.sched_getaffinity(0))")
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=exec, args=(code,))
    p.start()
    p.join(60)
    assert p.exitcode == 0


@pytest.mark.parametrize("bad, msg", [
    (0, "set_num_threads expects a positive integer"),
    (-3, "set_num_threads expects a positive integer"),
    (-2**70, "set_num_threads expects a positive integer"),
    (1.5, "set_num_threads expects an int, but got float"),
    ("2", "set_num_threads expects an int, but got str"),
    (True, "set_num_threads expects an int, but got bool"),
])
def test_set_errors(bad, msg, restore_threads):
    with pytest.raises(RuntimeError, match=msg):
        pygpu.set_num_threads(bad)


def rnd(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_elementwise_same_bits(dtype, restore_threads):
    a, b = rnd(BIG, dtype, 1), rnd(BIG, dtype, 2)
    ta, tb = pygpu.from_numpy(a), pygpu.from_numpy(b)
    res = by_threads(lambda: (ta + tb, ta * 3.0, pygpu.relu(ta),
                              pygpu.exp(ta), ta.to(pygpu.float64)))
    assert_same_bits(res)
    np.testing.assert_array_equal(res[-1][0], a + b)
    np.testing.assert_array_equal(res[-1][2], np.maximum(a, 0))


def test_strided_and_broadcast_geometries(restore_threads):
    # 2 x 3 x BIG//3 with a broadcast operand, a transposed copy, a
    # strided view: the split cuts inner dims when outer ones are short
    a = rnd((2, 3, BIG // 3))
    b = rnd((3, 1))
    ta, tb = pygpu.from_numpy(a), pygpu.from_numpy(b)
    m = rnd((1500, 1500))
    tm = pygpu.from_numpy(m)
    res = by_threads(lambda: (ta - tb, tm.t() + 0.0,
                              pygpu.relu(ta[:, :, ::2]),
                              tm.t().contiguous()))
    assert_same_bits(res)
    np.testing.assert_array_equal(res[-1][0], a - b)
    np.testing.assert_array_equal(res[-1][1], m.T)
    np.testing.assert_array_equal(res[-1][2], np.maximum(a[:, :, ::2], 0))
    np.testing.assert_array_equal(res[-1][3], m.T)


def test_inplace_copy_fill(restore_threads):
    src = rnd(BIG)
    for n in (1, 2, 3):
        pygpu.set_num_threads(n)
        t = pygpu.empty(BIG)
        t.copy_(pygpu.from_numpy(src))
        np.testing.assert_array_equal(t.numpy(), src)
        pygpu.relu_(t)
        np.testing.assert_array_equal(t.numpy(), np.maximum(src, 0))
        f = pygpu.full((BIG,), 2.5)
        assert (f.numpy() == 2.5).all()
        z = pygpu.zeros(BIG, dtype=pygpu.int64)
        assert not z.numpy().any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16,
                                   np.int64])
@pytest.mark.parametrize("n", [BIG, (1 << 22) + 5])
def test_full_reductions_same_bits(dtype, n, restore_threads):
    if dtype == np.int64:
        a = np.random.default_rng(3).integers(-2**40, 2**40, n)
    else:
        a = rnd(n, dtype, 3)
    t = pygpu.from_numpy(a)
    res = by_threads(lambda: (t.sum(), t.mean() if dtype != np.int64
                              else t.sum(), t.max()) + t.max(0))
    assert_same_bits(res)
    ref = a.astype(np.float64)
    tol = {np.float16: 1e-2, np.float32: 1e-5}.get(dtype, 1e-12)
    got = res[-1]
    np.testing.assert_allclose(float(got[0]), ref.sum(), rtol=tol,
                               atol=tol * np.abs(ref).sum())
    assert float(got[2]) == ref.max()
    assert int(got[4]) == int(np.argmax(a))


def test_reductions_over_dims_same_bits(restore_threads):
    a = rnd((64, 40000))
    t = pygpu.from_numpy(a)
    res = by_threads(lambda: (t.sum(1), t.sum(0), t.mean(1)) + t.max(1))
    assert_same_bits(res)
    np.testing.assert_allclose(res[-1][0], a.sum(1, dtype=np.float64),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(res[-1][4], a.argmax(1))


def test_max_nan_and_ties_across_pieces(restore_threads):
    n = (1 << 22) + 3
    a = np.zeros(n, np.float32)
    a[70000] = 5.0
    a[1900000] = 5.0         # a tie in a later piece: the first wins
    res = by_threads(lambda: pygpu.from_numpy(a).max(0))
    assert all(int(r[1]) == 70000 for r in res)
    a[1800000] = np.nan      # the first NaN wins over everything
    a[2000000] = np.nan
    res = by_threads(lambda: pygpu.from_numpy(a).max(0))
    assert all(np.isnan(r[0]) and int(r[1]) == 1800000 for r in res)


def test_random_same_bits(restore_threads):
    def draw():
        pygpu.manual_seed(7)
        return (pygpu.rand(BIG), pygpu.randn(BIG),
                pygpu.randn(BIG, dtype=pygpu.float64))
    assert_same_bits(by_threads(draw))


def test_concurrent_callers(restore_threads):
    pygpu.set_num_threads(2)
    a = rnd(BIG)
    t = pygpu.from_numpy(a)
    ref = (a * 2.0).astype(np.float32)
    errors = []

    def work():
        for _ in range(20):
            if not np.array_equal((t * 2.0).numpy(), ref):
                errors.append("wrong result")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


def _child_work(q):
    a = pygpu.ones(BIG)
    q.put(float((a + a).sum()))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_threaded_op_in_child(method, restore_threads):
    pygpu.set_num_threads(2)
    a = pygpu.ones(BIG)
    assert float((a + a).sum()) == 2 * BIG      # the pool has run
    ctx = multiprocessing.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=_child_work, args=(q,))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        pytest.fail(f"child ({method}) hung in a threaded op")
    assert p.exitcode == 0
    assert q.get(timeout=5) == 2 * BIG


def test_fork_keeps_setting_and_parent_pool(restore_threads):
    pygpu.set_num_threads(2)
    pygpu.relu(pygpu.ones(BIG))
    pid = os.fork()
    if pid == 0:
        ok = pygpu.get_num_threads() == 2
        s = float(pygpu.ones(BIG).sum()) == BIG
        os._exit(0 if ok and s else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert float(pygpu.ones(BIG).sum()) == BIG   # the parent's pool works


def test_large_rows_of_every_kind(restore_threads):
    """Loops past the split size whose kinds do not split over one
    geometry (softmax by ranges of lines; scans, comparisons, masks,
    gathers, index rows whole) give the same bits on any thread count,
    and NumPy's results."""
    a = rnd((1500, 1400))  # 2.1M elements: past the split size
    t = pygpu.from_numpy(a)
    m = pygpu.from_numpy(a > 0)
    idx = pygpu.tensor(np.arange(1400)[::-1].copy())
    res = by_threads(lambda: (
        t.softmax(1), t.log_softmax(0), t.cumsum(1), t > 0,
        t.masked_fill(m, 0.0), pygpu.where(m, t, -t),
        t.index_select(1, idx), t.gather(1, idx.expand(1500, 1400)),
        t[m], t.logsumexp(1), t.reshape(30, 50, 1400).log_softmax(1)))
    assert_same_bits(res)
    got = res[-1]
    x = a.astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got[0], e / e.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[2], np.cumsum(x, 1), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_array_equal(got[3], a > 0)
    np.testing.assert_array_equal(got[4], np.where(a > 0, 0, a))
    np.testing.assert_array_equal(got[6], a[:, ::-1])
    np.testing.assert_array_equal(got[8], a[a > 0])
    mx = x.max(1)
    np.testing.assert_allclose(
        got[9], mx + np.log(np.exp(x - mx[:, None]).sum(1)), rtol=1e-5)
    y = x.reshape(30, 50, 1400)
    ym = y.max(1, keepdims=True)
    np.testing.assert_allclose(
        got[10], y - ym - np.log(np.exp(y - ym).sum(1, keepdims=True)),
        rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3000, 70), (40, 60, 90)],
                         ids=["rows", "columns"])
def test_cross_entropy_split_by_lines(shape, restore_threads):
    """Cross-entropy over class indices splits into ranges of lines: the
    loss and the gradient are the same bits on any thread count, and the
    target out of range that is raised is the first in sample order."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(np.float32)
    tshape = (shape[0],) + shape[2:]
    tgt = rng.integers(0, shape[1], tshape)
    tgt.flat[::7] = -100  # ignored
    w = rng.random(shape[1]).astype(np.float32) + 0.5

    def run():
        x = pygpu.from_numpy(a).requires_grad_()
        loss = pygpu.nn.functional.cross_entropy(
            x, pygpu.from_numpy(tgt), weight=pygpu.from_numpy(w),
            label_smoothing=0.1)
        loss.backward()
        return loss.detach(), x.grad

    res = by_threads(run)
    assert_same_bits(res)
    bad = tgt.copy()
    bad.flat[-5] = shape[1] + 4
    bad.flat[10] = -3  # the first one out of range
    for n in (1, 2):
        pygpu.set_num_threads(n)
        with pytest.raises(IndexError, match="Target -3 is out of bounds"):
            pygpu.nn.functional.cross_entropy(pygpu.from_numpy(a),
                                              pygpu.from_numpy(bad))


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_fused_optimizer_split_by_chunks(opt, restore_threads):
    """A fused optimizer step over more than one chunk of 64K elements
    splits over the pool by chunks: the same bits on any thread count."""
    rng = np.random.default_rng(4)
    shapes = [(300, 700), (70001,), (3,)]
    ps = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def run():
        params = [pygpu.from_numpy(p.copy()).requires_grad_() for p in ps]
        for p, g in zip(params, gs):
            p.grad = pygpu.from_numpy(g)
        if opt == "adam":
            o = pygpu.optim.Adam(params, lr=1e-2, weight_decay=0.1,
                                 amsgrad=True)
        else:
            o = pygpu.optim.SGD(params, lr=1e-2, momentum=0.9,
                                nesterov=True)
        for _ in range(2):
            o.step()
        return tuple(p.detach() for p in params)

    assert_same_bits(by_threads(run))


@pytest.mark.parametrize("threads", [2, 5, 7, 16])
@pytest.mark.parametrize("n", [(1 << 17) + 3, (1 << 18) + 77, 1 << 21])
def test_each_task_runs_once(threads, n, restore_threads):
    # more threads than cores and, at the smaller sizes, fewer tasks than
    # threads: a range may be empty, and a thread that comes late finds
    # its range taken by the others.  add_ is not idempotent, so a task
    # run twice or skipped shows.
    pygpu.set_num_threads(threads)
    base = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    t = pygpu.tensor(base)
    want = base.copy()
    for _ in range(3):
        t.add_(1.0)
        want += np.float32(1.0)
    np.testing.assert_array_equal(t.numpy(), want)
    pygpu.set_num_threads(1)
    one = pygpu.tensor(base).sum().numpy().tobytes()
    pygpu.set_num_threads(threads)
    assert pygpu.tensor(base).sum().numpy().tobytes() == one
