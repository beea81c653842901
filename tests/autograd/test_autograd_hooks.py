"""Tensor hooks: register_hook and register_post_accumulate_grad_hook, with
torch's semantics (order, removal, replacement, autograd.grad, errors)."""
import gc
import sys

import numpy as np
import pytest

import pygpu


def leaf(values, device="cpu"):
    return pygpu.tensor(values, dtype=pygpu.float64,
                        device=device).requires_grad_()


def test_leaf_hook_sees_grad_before_accumulation(device):
    x = leaf([1.0, 2.0, 3.0], device)
    seen = []

    def hook(g):
        seen.append((g.cpu().numpy().copy(), x.grad))
    x.register_hook(hook)
    (x * 2).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0][0], [2.0, 2.0, 2.0])
    assert seen[0][1] is None  # before accumulation
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 2.0, 2.0])


def test_hooks_run_in_order_and_replace(device):
    x = leaf([1.0, -1.0], device)
    order = []

    def double(g):
        order.append("double")
        return g * 2

    def plus_one(g):
        order.append("plus_one")
        return g + 1

    def look(g):
        order.append(("look", g.cpu().numpy().tolist()))
    x.register_hook(double)
    x.register_hook(plus_one)
    x.register_hook(look)
    (x * 3).sum().backward()
    assert order == ["double", "plus_one", ("look", [7.0, 7.0])]
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [7.0, 7.0])


def test_nonleaf_hook_changes_upstream_and_retained_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    # dL/dy = 2y, replaced by 20y; dL/dx = 3 * 20y
    yv = np.array([3.0, 6.0])
    np.testing.assert_allclose(y.grad.cpu().numpy(), 20 * yv)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 60 * yv)


def test_nonleaf_hook_outlives_tensor(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(1))
    z = y.sum()
    del y
    gc.collect()
    z.backward()
    assert calls == [1]


def test_remove(device):
    x = leaf([1.0], device)
    calls = []
    h1 = x.register_hook(lambda g: calls.append("a"))
    h2 = x.register_hook(lambda g: calls.append("b"))
    assert isinstance(h1, pygpu._C.RemovableHandle)
    assert h1.id != h2.id
    h1.remove()
    h1.remove()  # twice: nothing
    (x * 1).sum().backward()
    assert calls == ["b"]
    with h2:
        pass
    (x * 1).sum().backward()
    assert calls == ["b"]


def test_hook_removing_itself_while_running(device):
    x = leaf([1.0], device)
    calls = []
    handles = []

    def once(g):
        calls.append("once")
        handles[0].remove()
    handles.append(x.register_hook(once))
    x.register_hook(lambda g: calls.append("other"))
    (x * 1).sum().backward()
    (x * 1).sum().backward()
    assert calls == ["once", "other", "other"]


def test_accumulation_across_two_backwards(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    post = []
    x.register_hook(lambda g: seen.append(g.cpu().numpy().tolist()))
    x.register_post_accumulate_grad_hook(
        lambda t: post.append(t.grad.cpu().numpy().tolist()))
    (x * 2).sum().backward()
    (x * 5).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]
    assert post == [[2.0, 2.0], [7.0, 7.0]]


def test_post_accumulate_hook_gets_the_tensor(device):
    x = leaf([1.0, 2.0, 3.0], device)
    got = []

    def hook(t):
        got.append(t)
        # the optimizer-in-backward pattern: update in place under no_grad
        with pygpu.no_grad():
            t.sub_(t.grad)
    x.register_post_accumulate_grad_hook(hook)
    (x * x).sum().backward()
    assert got == [x] and got[0] is x
    np.testing.assert_allclose(x.detach().cpu().numpy(), [-1.0, -2.0, -3.0])


def test_post_hook_order_and_remove(device):
    x = leaf([1.0], device)
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(2))
    (x * 1).sum().backward()
    h.remove()
    (x * 1).sum().backward()
    assert calls == [1, 2, 2]


def test_hooks_with_autograd_grad(device):
    x = leaf([1.0, 2.0], device)
    pre, post = [], []
    x.register_hook(lambda g: g * 3)
    x.register_hook(lambda g: pre.append(g.cpu().numpy().tolist()))
    x.register_post_accumulate_grad_hook(lambda t: post.append(1))
    y = x * 2
    y.register_hook(lambda g: g + 1)
    g, = pygpu.autograd.grad(y.sum(), x)
    # (1 + 1) * 2 = 4, then * 3 = 12
    np.testing.assert_array_equal(g.cpu().numpy(), [12.0, 12.0])
    assert pre == [[12.0, 12.0]]
    assert post == []  # nothing accumulates
    assert x.grad is None


def test_hook_on_shared_leaf_sees_the_summed_grad(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    x.register_hook(lambda g: seen.append(g.cpu().numpy().tolist()))
    (x * 2 + x * 3).sum().backward()
    assert seen == [[5.0, 5.0]]


def test_hook_raising_propagates_cleanly(device):
    x = leaf([1.0, 2.0], device)
    w = leaf([3.0, 4.0], device)

    class Boom(Exception):
        pass

    def bad(g):
        raise Boom("no")
    h = x.register_hook(bad)
    loss = (x * w).sum()
    with pytest.raises(Boom):
        loss.backward(retain_graph=True)
    assert x.grad is None
    x.grad = w.grad = None  # w's may have been accumulated, as in torch
    h.remove()
    loss.backward()  # the graph is intact and runs again
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [1.0, 2.0])


def test_post_hook_raising_and_returning(device):
    x = leaf([1.0], device)
    h = x.register_post_accumulate_grad_hook(lambda t: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0])
    h.remove()
    x.register_post_accumulate_grad_hook(lambda t: t)
    with pytest.raises(RuntimeError, match="should return None"):
        (x * 1).sum().backward()


def test_bad_hook_results(device):
    x = leaf([1.0, 2.0], device)
    h = x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Tensor or None"):
        (x * 1).sum().backward()
    h.remove()

    def shrink(g):
        return g[:1]
    h = x.register_hook(shrink)
    with pytest.raises(RuntimeError, match="hook 'shrink' has changed the "
                                           "size of value"):
        (x * 1).sum().backward()
    h.remove()
    h = x.register_hook(lambda g: g.to(pygpu.float32))
    with pytest.raises(RuntimeError, match="changed the type of value"):
        (x * 1).sum().backward()
    h.remove()
    with pytest.raises(TypeError, match="callable"):
        x.register_hook(5)


def test_registration_errors():
    t = pygpu.tensor([1.0])
    with pytest.raises(RuntimeError, match="cannot register a hook on a "
                                           "tensor that doesn't require "
                                           "gradient"):
        t.register_hook(lambda g: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a "
                                           "tensor that doesn't require "
                                           "gradient"):
        t.register_post_accumulate_grad_hook(lambda t: None)
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks "
                                           "cannot be registered on "
                                           "non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_backward_inside_a_hook():
    """A hook may run a backward pass of its own (torch's reentrant
    backward): it runs inside the outer pass, which then goes on."""
    x = leaf([1.0])
    other = leaf([2.0])

    def hook(g):
        with pygpu.enable_grad():
            (other * 2).sum().backward()
    x.register_hook(hook)
    (x * 1).sum().backward()
    assert other.grad.item() == 2.0
    assert x.grad.item() == 1.0
    (other * 2).sum().backward()
    assert other.grad.item() == 4.0


def test_parameter_hooks_and_no_leak():
    p = pygpu.nn.Parameter(pygpu.ones(3, dtype=pygpu.float64))
    calls = []
    p.register_post_accumulate_grad_hook(lambda t: calls.append(t is p))
    (p * 2).sum().backward()
    assert calls == [True]
    x = leaf([1.0, 2.0])
    before = sys.getrefcount(x)
    for _ in range(3):
        h = x.register_hook(lambda g: g * 1)
        (x * 2).sum().backward()
        h.remove()
    assert sys.getrefcount(x) == before
