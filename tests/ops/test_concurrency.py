"""Threads: eight threads creating tensors, running ops and freeing them at
once, each checking its results against NumPy; the memory figures agree
at the end; a long loop that runs without the GIL stays correct while other
threads write other tensors.  What is and is not thread-safe is in
docs/api.md ("Threads and processes")."""
import threading
import time

import numpy as np
import pytest

import pygpu

THREADS = 8
SECONDS = 1.0


def run_threads(fn, n=THREADS):
    errors = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            fn(i)
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def worker(device, seed, deadline):
    """Ops of every family on fresh random inputs, each checked."""
    rng = np.random.default_rng(seed)
    done = 0
    while time.monotonic() < deadline or done < 3:
        m, k, n = (int(v) for v in rng.integers(1, 40, 3))
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = rng.standard_normal((n,)).astype(np.float32)
        ta, tb, tc = (pygpu.from_numpy(v).to(device) for v in (a, b, c))
        prod = ta @ tb
        out = (prod + tc).relu()
        np.testing.assert_allclose(
            out.cpu().numpy(),
            np.maximum(a.astype(np.float64) @ b + c, 0), rtol=1e-4,
            atol=1e-4)
        s = ta.t().sum(0)
        np.testing.assert_allclose(s.cpu().numpy(), a.sum(1), rtol=1e-4,
                                   atol=1e-4)
        h = ta.half().exp()
        np.testing.assert_allclose(h.float().cpu().numpy(),
                                   np.exp(a.astype(np.float16)
                                          .astype(np.float64)),
                                   rtol=2e-2, atol=1e-3)
        ta[0] = 5.0
        assert float(ta[0, 0].item()) == 5.0
        ta.mul_(2)
        np.testing.assert_array_equal(ta[0].cpu().numpy(),
                                      np.full(k, 10, np.float32))
        big = pygpu.randn(int(rng.integers(1, 300_000)), device=device)
        assert big.max().item() < 10
        del ta, tb, tc, prod, out, s, h, big
        done += 1


def test_eight_threads_of_ops(device):
    if device == "cuda":
        pygpu.cuda.synchronize()
        base = pygpu.cuda.memory_allocated()
    deadline = time.monotonic() + SECONDS
    run_threads(lambda i: worker(device, 100 + i, deadline))
    if device == "cuda":
        pygpu.cuda.synchronize()
        assert pygpu.cuda.memory_allocated() == base
        stats = pygpu.cuda.memory_stats()
        for name in ("allocated_bytes", "active_bytes", "segment"):
            for f in ("current", "peak", "allocated", "freed"):
                assert stats[f"{name}.all.{f}"] >= 0
            assert stats[f"{name}.all.allocated"] - \
                stats[f"{name}.all.freed"] == stats[f"{name}.all.current"]


def test_long_loop_without_the_gil_while_others_write(device):
    """One thread sums and scales a large tensor (work done without the
    GIL) while the others keep writing tensors of their own; the large
    result is exact because nobody else touches its memory."""
    n = 1 << 22
    x = pygpu.ones(n, device=device)
    results = []

    def body(i):
        if i == 0:
            for _ in range(6):
                y = x * 3.0
                results.append(y.sum().item())
            return
        own = pygpu.zeros(1000, device=device)
        for j in range(300):
            own.fill_(j)
            own += 1
            assert own[999].item() == j + 1

    run_threads(body, 4)
    assert results == [3.0 * n] * 6
    assert x.sum().item() == n


def test_one_tensor_shared_by_readers(device):
    """Reading one tensor from many threads at once is safe."""
    a = np.random.default_rng(7).standard_normal((64, 64)).astype(np.float32)
    t = pygpu.from_numpy(a).to(device)
    want = a.astype(np.float64) @ a

    def body(i):
        for _ in range(20):
            np.testing.assert_allclose((t @ t).cpu().numpy(), want,
                                       rtol=1e-4, atol=1e-4)
            assert t.sum().item() == pytest.approx(float(a.sum()), rel=1e-4,
                                                   abs=1e-3)

    run_threads(body)


# ------------------------------------------------------------- processes
def _child_work(x):
    """Run in another process: ops on what it was given."""
    return ((x @ x.t()).relu() + 1).sum(1)


def test_cpu_work_after_fork():
    import os
    a = np.random.default_rng(3).standard_normal((50, 20)).astype(np.float32)
    x = pygpu.from_numpy(a)
    _child_work(x)  # the parent used everything first
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            got = _child_work(x).numpy()
            want = (np.maximum(a.astype(np.float64) @ a.T, 0) + 1).sum(1)
            y = pygpu.randn(1 << 20)
            code = 0 if np.allclose(got, want, rtol=1e-4) and \
                y.numel() == 1 << 20 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_spawned_workers_get_tensors_as_cpu_data(device):
    """multiprocessing with the spawn start method: tensors travel by
    pickle (their data as CPU bytes, their device kept) and come back."""
    import multiprocessing as mp
    a = np.random.default_rng(4).standard_normal((8, 5)).astype(np.float32)
    x = pygpu.from_numpy(a).to(device)
    with mp.get_context("spawn").Pool(2) as pool:
        got = pool.map(_child_work, [x, x * 2])
    want = (np.maximum(a.astype(np.float64) @ a.T, 0) + 1).sum(1)
    want2 = (np.maximum(4 * a.astype(np.float64) @ a.T, 0) + 1).sum(1)
    assert [g.device.type for g in got] == [device, device]
    np.testing.assert_allclose(got[0].cpu().numpy(), want, rtol=1e-4)
    np.testing.assert_allclose(got[1].cpu().numpy(), want2, rtol=1e-4)
