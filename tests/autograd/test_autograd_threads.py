"""Backward passes and threads: passes run concurrently, each with its own
bookkeeping (so a hook may wait for another thread's pass), passes over a
shared graph accumulate as torch's do, and a child forked while a thread
is inside backward runs backward of its own.

Every wait has a timeout, and what could hang the process (a fork) runs in
a child process, so that a regression fails instead of hanging the run.
Barriers inside hooks make the passes meet mid-pass: with passes run one
at a time the barrier times out and the pass raises."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pygpu

WAIT = 10  # seconds any thread or barrier is given


def leaf(a, device="cpu"):
    return pygpu.tensor(a, dtype=pygpu.float64, device=device) \
        .requires_grad_()


def host(t):
    return t.detach().cpu().numpy()


def run_threads(targets):
    """Runs each callable in a thread of its own; their results in order,
    an exception raised by one re-raised here; fails when one is still
    running after WAIT seconds."""
    results = [None] * len(targets)
    errors = [None] * len(targets)

    def run(i):
        try:
            results[i] = targets[i]()
        except BaseException as e:  # re-raised in the test's thread
            errors[i] = e

    threads = [threading.Thread(target=run, args=(i,), daemon=True)
               for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads), "a backward pass hung"
    return results, errors


def raise_first(errors):
    for e in errors:
        if e is not None:
            raise e


def meet(barrier):
    """A hook that waits until every pass of the barrier is at it."""
    def hook(g):
        barrier.wait()
        return g
    return hook


def run_script(code, timeout=60):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:],
                               r.stderr[-2000:])
    return r.stdout


# ----------------------------------------------------- independent graphs

def test_passes_over_independent_graphs_run_concurrently(device, rng):
    """Eight threads, each its own graph (a transposed view, matmul, tanh,
    broadcasting mul, sum; 0, 1 and more rows): every pass waits in a hook
    until all eight are inside, and each gets NumPy's float64 gradients."""
    rows = [16, 0, 1, 5, 16, 3, 2, 9]
    n = len(rows)
    barrier = threading.Barrier(n, timeout=WAIT)
    xts = [rng.standard_normal((8, r)) for r in rows]  # used transposed
    ws = [rng.standard_normal((8, 5)) for _ in range(n)]
    cs = [rng.standard_normal(5) for _ in range(n)]

    def one(i):
        def run():
            xt, w = leaf(xts[i], device), leaf(ws[i], device)
            h = (xt.T @ w).tanh()
            h.register_hook(meet(barrier))
            (h * pygpu.tensor(cs[i], device=device)).sum().backward()
            return host(xt.grad), host(w.grad)
        return run

    results, errors = run_threads([one(i) for i in range(n)])
    raise_first(errors)
    for i, (gxt, gw) in enumerate(results):
        th = np.tanh(xts[i].T @ ws[i])
        gh = (1 - th * th) * cs[i]
        np.testing.assert_allclose(gxt, (gh @ ws[i].T).T, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(gw, xts[i] @ gh, rtol=1e-12, atol=1e-12)


def test_a_hook_waits_for_another_threads_backward(device, rng):
    """A hook starts a thread that runs backward over another graph and
    joins it: the pass waiting in the hook does not stop the other."""
    a_np, b_np = rng.standard_normal(6), rng.standard_normal(6)
    a, b = leaf(a_np, device), leaf(b_np, device)

    def other():
        (b * b).sum().backward()

    def hook(g):
        t = threading.Thread(target=other, daemon=True)
        t.start()
        t.join(WAIT)
        assert not t.is_alive(), "the other thread's backward hung"
        return g

    def main():
        y = a * 3
        y.register_hook(hook)
        y.sum().backward()

    _, errors = run_threads([main])
    raise_first(errors)
    np.testing.assert_allclose(host(a.grad), np.full(6, 3.0))
    np.testing.assert_allclose(host(b.grad), 2 * b_np, rtol=1e-15)


def test_backward_inside_a_hook_in_the_same_thread(rng):
    """A hook's own backward and autograd.grad run inside the pass, each a
    pass of its own, as torch's reentrant backward; the inner backward
    goes through the outer pass's graph, which it shares."""
    x_np, o_np = rng.standard_normal(3), rng.standard_normal(3)
    x, other = leaf(x_np), leaf(o_np)
    y = x * other  # shared: the outer pass and the inner backward
    inner = []

    def hook(g):
        with pygpu.enable_grad():
            (y * 2).sum().backward(retain_graph=True)
            inner.append(pygpu.autograd.grad((other * other).sum(),
                                             other)[0])
        return g
    z = y * 5
    z.register_hook(hook)  # runs before y's Node in the outer pass
    _, errors = run_threads([lambda: z.sum().backward()])
    raise_first(errors)
    np.testing.assert_allclose(host(x.grad), 7 * o_np, rtol=1e-15)
    np.testing.assert_allclose(host(other.grad), 7 * x_np, rtol=1e-15)
    np.testing.assert_allclose(host(inner[0]), 2 * o_np, rtol=1e-15)


# ----------------------------------------------------------- shared graphs

def test_shared_graph_from_two_threads_accumulates(device, rng):
    """Two passes over one retained graph, inside it at the same time:
    the leaf gets both gradients (torch's result), and autograd.grad over
    the same graph meanwhile gets its own."""
    x_np, w_np = rng.standard_normal((4, 3)), rng.standard_normal(3)
    x, w = leaf(x_np, device), leaf(w_np, device)
    h = (x * w).exp()
    barrier = threading.Barrier(3, timeout=WAIT)
    h.register_hook(meet(barrier))
    loss = h.sum()
    back = lambda: loss.backward(retain_graph=True)  # noqa: E731
    grad = lambda: pygpu.autograd.grad(loss, w, retain_graph=True)[0]  # noqa
    results, errors = run_threads([back, back, grad])
    raise_first(errors)
    e = np.exp(x_np * w_np)
    np.testing.assert_allclose(host(x.grad), 2 * e * w_np, rtol=1e-13)
    np.testing.assert_allclose(host(w.grad), 2 * (e * x_np).sum(0),
                               rtol=1e-13)
    np.testing.assert_allclose(host(results[2]), (e * x_np).sum(0),
                               rtol=1e-13)


def test_shared_graph_without_retain_graph(device, rng):
    """Two passes over one graph that is not retained, of 2^17 elements
    (the rules' loops release the GIL, so both may be inside one rule):
    each either runs (its gradient accumulated) or raises torch's error
    for a graph already freed; never a crash, a hang or a half gradient."""
    for _ in range(5):
        x_np = rng.standard_normal(1 << 17)
        x = leaf(x_np, device)
        loss = (x * x * 3).sum()
        barrier = threading.Barrier(2, timeout=WAIT)
        loss.register_hook(meet(barrier))  # before any Node runs
        _, errors = run_threads([loss.backward, loss.backward])
        failed = [e for e in errors if e is not None]
        for e in failed:
            assert isinstance(e, RuntimeError), e
            assert "backward through the graph a second time" in str(e)
        ran = 2 - len(failed)
        assert ran >= 1
        np.testing.assert_allclose(host(x.grad), ran * 6 * x_np, rtol=1e-14)


def test_concurrent_adds_into_one_leaf_lose_nothing(device, rng):
    """Four passes over graphs of their own that meet at one leaf of 2^20
    elements (the add runs without the GIL), and wait in the leaf's hook
    until all four are about to add into its .grad: from none, then in
    place, nothing is lost."""
    n, size, rounds = 4, 1 << 20, 4
    w = leaf(rng.standard_normal(size), device)
    cs = [rng.standard_normal(size) for _ in range(n)]
    ct = [pygpu.tensor(c, device=device) for c in cs]
    for _ in range(rounds):
        barrier = threading.Barrier(n, timeout=WAIT)
        handle = w.register_hook(meet(barrier))

        def one(i):
            return lambda: (w * ct[i]).sum().backward()

        _, errors = run_threads([one(i) for i in range(n)])
        handle.remove()
        raise_first(errors)
    np.testing.assert_allclose(host(w.grad), rounds * np.sum(cs, axis=0),
                               rtol=1e-12, atol=1e-12)


def test_retain_graph_and_create_graph_with_concurrent_passes(rng):
    """Two threads each run two retained passes over their own graph and
    then a last one, meeting in the first: the gradients add up, a fourth
    pass is refused as torch refuses it, and create_graph=True still
    raises its NotImplementedError beside the other thread's passes."""
    barrier = threading.Barrier(2, timeout=WAIT)
    data = [rng.standard_normal(4) for _ in range(2)]

    def one(i):
        def run():
            x = leaf(data[i])
            y = x.exp()
            handle = y.register_hook(meet(barrier))
            loss = y.sum()
            loss.backward(retain_graph=True)
            handle.remove()
            if i == 1:
                with pytest.raises(NotImplementedError, match="create_graph"):
                    loss.backward(create_graph=True)
                with pytest.raises(NotImplementedError, match="create_graph"):
                    pygpu.autograd.grad(loss, x, create_graph=True)
            loss.backward(retain_graph=True)
            loss.backward()
            with pytest.raises(RuntimeError, match="a second time"):
                loss.backward()
            return host(x.grad)
        return run

    results, errors = run_threads([one(0), one(1)])
    raise_first(errors)
    for i in range(2):
        np.testing.assert_allclose(results[i], 3 * np.exp(data[i]),
                                   rtol=1e-14)


# -------------------------------------------------------------------- fork

FORK_DURING_BACKWARD = r"""
import os, signal, sys, threading, time, traceback, warnings
import numpy as np
import pygpu

warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
rng = np.random.default_rng(7)


def backward_here():
    # A fresh graph, and one through the leaf the parent's threads use.
    x_np = rng.standard_normal(5)
    x = pygpu.tensor(x_np, dtype=pygpu.float64).requires_grad_()
    (x * x).sum().backward()
    assert np.allclose(x.grad.numpy(), 2 * x_np, rtol=1e-14, atol=0)
    before = None if big.grad is None else big.grad.numpy().copy()
    (big * 2).sum().backward()
    if before is not None:
        assert np.allclose(big.grad.numpy() - before, 2)


def fork_and_check():
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            backward_here()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            print("the child's backward hung")
            sys.exit(3)
        time.sleep(0.005)
    assert os.waitstatus_to_exitcode(status) == 0, status


big = pygpu.zeros(1 << 17, dtype=pygpu.float64).requires_grad_()

# A thread waits in a hook, in the middle of its pass, while we fork.
for _ in range(5):
    inside, go = threading.Event(), threading.Event()
    w = pygpu.tensor(rng.standard_normal(4)).requires_grad_()
    y = w * 2

    def hook(g):
        inside.set()
        go.wait(10)
        return g
    y.register_hook(hook)
    t = threading.Thread(target=lambda: y.sum().backward(), daemon=True)
    t.start()
    assert inside.wait(10)
    fork_and_check()
    go.set()
    t.join(10)
    assert not t.is_alive()
    assert np.allclose(w.grad.numpy(), 2)

# Threads run backward into one large leaf without pause (its adds without
# the GIL) while we fork at whatever point they are.
stop = threading.Event()


def churn():
    c = pygpu.ones(1 << 17, dtype=pygpu.float64)
    while not stop.is_set():
        (big * c).sum().backward()


threads = [threading.Thread(target=churn, daemon=True) for _ in range(2)]
for t in threads:
    t.start()
for _ in range(5):
    time.sleep(0.01)
    fork_and_check()
stop.set()
for t in threads:
    t.join(10)
    assert not t.is_alive()
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_is_in_backward():
    """Five forks while a thread waits in a hook mid-pass, five while two
    threads add into one leaf without pause: each child runs backward
    (a fresh graph and one through the shared leaf) and exits 0."""
    assert run_script(FORK_DURING_BACKWARD).split() == ["ok"]
