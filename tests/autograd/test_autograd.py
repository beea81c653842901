"""Autograd: every recorded op's gradient against finite differences in
float64 (gradcheck), the engine's accumulation, retain_graph, grad of
non-leaves, grad modes, version counters and views, against torch's
behaviour and messages."""
import gc
import os
import sys

import numpy as np
import pytest

import pygpu
from pygpu.autograd import gradcheck, grad


def leaf(shape, device, seed, lo=None, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if lo is not None:  # keep away from a singular point (log, sqrt, ...)
        a = np.abs(a) + lo
    return pygpu.tensor(a.astype(dtype), device=device, requires_grad=True)


UNARY = [
    ("neg", None), ("relu", None), ("abs", 0.1), ("exp", None),
    ("log", 0.2), ("log1p", 0.2), ("expm1", None), ("sqrt", 0.2),
    ("rsqrt", 0.2), ("sin", None), ("cos", None), ("tanh", None),
    ("sigmoid", None), ("reciprocal", 0.3), ("silu", None),
]


@pytest.mark.parametrize("name,lo", UNARY)
def test_unary_gradcheck(device, name, lo):
    x = leaf((3, 4), device, 1, lo)
    if name == "relu":  # away from the kink
        x = pygpu.tensor(np.where(np.abs(x.detach().cpu().numpy()) < 0.1,
                                  0.5, x.detach().cpu().numpy()),
                         device=device, requires_grad=True)
    assert gradcheck(lambda t: getattr(t, name)(), (x,))
    y = getattr(pygpu, name)(x)
    assert y.grad_fn.name().lower().startswith(name.replace("_", ""))


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sign"])
def test_piecewise_constant_ops_give_zero_gradients(device, name):
    x = leaf((5,), device, 2)
    getattr(x, name)().sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.zeros(5))


BINARY = [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b),
    ("add_alpha", lambda a, b: pygpu.add(a, b, alpha=2.5)),
    ("rsub_scalar", lambda a, b: 3.0 - a + b),
    ("rdiv_scalar", lambda a, b: 2.0 / a + b * 3),
]


@pytest.mark.parametrize("name,fn", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("sa,sb", [((3, 4), (3, 4)), ((2, 3, 4), (4,)),
                                   ((3, 1), (1, 5)), ((), (2, 2))])
def test_binary_gradcheck_with_broadcasting(device, name, fn, sa, sb):
    a = leaf(sa, device, 3, 0.5)
    b = leaf(sb, device, 4, 0.5)
    assert gradcheck(fn, (a, b))


def test_only_one_input_requires_grad(device):
    a = leaf((3,), device, 5)
    b = pygpu.tensor([1.0, 2.0, 3.0], dtype=pygpu.float64, device=device)
    (a * b).sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), [1, 2, 3])
    assert b.grad is None and not b.requires_grad


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)),
                                   ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 2)), ((3, 4), (2, 4, 5)),
                                   ((2, 1, 3, 4), (3, 4, 2))])
def test_matmul_gradcheck(device, sa, sb):
    a, b = leaf(sa, device, 6), leaf(sb, device, 7)
    assert gradcheck(lambda x, y: x @ y, (a, b))


def test_matmul_of_transposed_views(device):
    a, b = leaf((4, 3), device, 8), leaf((5, 4), device, 9)
    assert gradcheck(lambda x, y: x.t() @ y.T, (a, b))


@pytest.mark.parametrize("xs", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_linear_gradcheck(device, xs, bias, relu):
    F = pygpu.nn.functional
    x, w = leaf(xs, device, 10), leaf((3, 4), device, 11)
    b = leaf((3,), device, 12) if bias else None
    f = F.linear_relu if relu else F.linear
    args = (x, w, b) if bias else (x, w)
    assert gradcheck(lambda *t: f(t[0], t[1], t[2] if bias else None),
                     args)


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False),
                                         (1, True), (-1, False), (2, True)])
def test_reduce_gradcheck(device, op, dim, keepdim):
    x = leaf((2, 3, 4), device, 13)
    if dim is None:
        assert gradcheck(lambda t: getattr(t, op)(), (x,))
    else:
        assert gradcheck(lambda t: getattr(t, op)(dim, keepdim=keepdim),
                         (x,))


VIEWS = [
    ("t", lambda t: t.t()), ("T", lambda t: t.T),
    ("transpose", lambda t: t.transpose(0, 1)),
    ("permute", lambda t: t.permute(1, 0)),
    ("reshape", lambda t: t.reshape(4, 3)), ("view", lambda t: t.view(-1)),
    ("flatten", lambda t: t.flatten()),
    ("unsqueeze", lambda t: t.unsqueeze(1)),
    ("squeeze", lambda t: t.unsqueeze(0).squeeze(0)),
    ("expand", lambda t: t[:, :1].expand(3, 5)),
    ("index", lambda t: t[1]), ("slice", lambda t: t[::2, 1:3]),
    ("none_ellipsis", lambda t: t[None, ..., 0]),
    ("contiguous", lambda t: t.t().contiguous()),
    ("clone", lambda t: t.clone()),
]


@pytest.mark.parametrize("name,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_gradcheck(device, name, fn):
    x = leaf((3, 4), device, 14)
    assert gradcheck(lambda t: fn(t) * 2, (x,))


def test_to_other_dtype_gives_gradient_in_input_dtype(device):
    x = leaf((3,), device, 15, dtype=np.float32)
    y = x.double() * 3
    y.sum().backward()
    assert x.grad.dtype == pygpu.float32
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3, 3, 3])


def test_half_gradients(device):
    x = leaf((4,), device, 16, dtype=np.float16)
    (x * x).sum().backward()
    assert x.grad.dtype == pygpu.float16
    np.testing.assert_allclose(x.grad.cpu().numpy().astype(np.float64),
                               2 * x.detach().cpu().numpy(), rtol=1e-3)


# ------------------------------------------------------------- the engine
def test_accumulation_and_diamond(device):
    x = leaf((3,), device, 20)
    y = x * 2
    z = y * y + y  # two paths from y
    z.sum().backward()
    xv = x.detach().cpu().numpy()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 8 * xv + 2)
    z2 = (x * 3).sum()
    z2.backward()  # accumulates
    np.testing.assert_allclose(x.grad.cpu().numpy(), 8 * xv + 5)


def test_same_leaf_twice_and_grad_is_not_an_alias(device):
    x = leaf((3,), device, 21)
    (x + x).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2, 2, 2])
    y = leaf((3,), device, 22)
    s = x + y
    s.sum().backward()
    x.grad.add_(100)  # must not reach y.grad
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [1, 1, 1])


def test_retain_graph_and_second_backward_error(device):
    x = leaf((3,), device, 23)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad.cpu().numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * g1)
    with pytest.raises(RuntimeError, match="Trying to backward through the "
                       "graph a second time"):
        y.backward()


def test_backward_needs_a_gradient_for_non_scalars(device):
    x = leaf((3,), device, 24)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created "
                       "only for scalar outputs"):
        y.backward()
    y.backward(pygpu.tensor([1.0, 0.0, 2.0], dtype=pygpu.float64,
                            device=device))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2, 0, 4])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(pygpu.ones(2, dtype=pygpu.float64, device=device))


def test_backward_of_a_tensor_without_grad(device):
    x = pygpu.ones(3, device=device)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not "
                       "require grad and does not have a grad_fn"):
        x.sum().backward()


def test_autograd_grad_leaves_dot_grad_alone(device):
    x, w = leaf((3,), device, 25), leaf((3,), device, 26)
    y = (x * w).sum()
    gx, gw = grad(y, (x, w))
    np.testing.assert_array_equal(gx.cpu().numpy(), w.detach().cpu().numpy())
    np.testing.assert_array_equal(gw.cpu().numpy(), x.detach().cpu().numpy())
    assert x.grad is None and w.grad is None
    z = leaf((2,), device, 27)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        grad((x * 2).sum(), (x, z))
    gx2, gz = grad((x * 2).sum(), (x, z), allow_unused=True)
    assert gz is None
    gx3, gz3 = grad((x * 2).sum(), (x, z), materialize_grads=True)
    np.testing.assert_array_equal(gz3.cpu().numpy(), [0, 0])


def test_grad_of_a_non_leaf_and_retain_grad(device):
    x = leaf((3,), device, 28)
    h = x * 3
    h.retain_grad()
    assert h.retains_grad and not h.is_leaf
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.cpu().numpy(),
                               2 * h.detach().cpu().numpy())
    gh, = grad((h * 2).sum(), h)
    np.testing.assert_array_equal(gh.cpu().numpy(), [2, 2, 2])


def test_no_grad_and_enable_grad(device):
    x = leaf((3,), device, 29)
    with pygpu.no_grad():
        y = x * 2
        with pygpu.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None
    with pygpu.inference_mode():
        assert not (x * 2).requires_grad


def test_grad_mode_is_per_thread(device):
    import threading
    x = leaf((3,), device, 30)
    seen = []
    with pygpu.no_grad():
        t = threading.Thread(target=lambda: seen.append((x * 2).requires_grad))
        t.start()
        t.join()
    assert seen == [True]


def test_leaf_flags_and_messages(device):
    x = pygpu.ones(3, device=device)
    assert not x.requires_grad and x.is_leaf and x.grad_fn is None
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change "
                       "requires_grad flags of leaf variables"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="only Tensors of floating point "
                       "and complex dtype can require gradients"):
        pygpu.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor "
                       "that requires grad"):
        x.numpy() if device == "cpu" else x.cpu().numpy()
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    assert "grad_fn=<MulBackward0>" in repr(y)
    assert "requires_grad=True" in repr(x)
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_in_place_on_a_leaf_and_version_counter(device):
    x = leaf((3,), device, 31)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires "
                       "grad is being used in an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that "
                       "requires grad is being used in an in-place"):
        x[0] = 2.0
    with pygpu.no_grad():
        x.add_(1)  # allowed, as in an optimizer step
    y = x.exp()  # saves its output
    v = y._version
    y.add_(1)
    assert y._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace "
                       "operation"):
        y.sum().backward()


def test_in_place_ops_on_non_leaves(device):
    x = leaf((4,), device, 32)
    h = x * 2
    h.add_(3)
    h.mul_(5)
    h.relu_()
    h.sum().backward()
    mask = (2 * x.detach().cpu().numpy() + 3) > 0
    np.testing.assert_allclose(x.grad.cpu().numpy(), 10 * mask)
    # relu_ saved its output: changing it again breaks the graph, as in
    # torch.
    g = x * 2
    g.relu_()
    g.mul_(5)
    with pytest.raises(RuntimeError, match="needed by ReluBackward0"):
        g.sum().backward()
    with pytest.raises(RuntimeError, match="does not record in-place exp_"
                       "|does not record"):
        (x * 1).log_()


def test_views_share_the_version_counter(device):
    x = leaf((3, 4), device, 33)
    h = x * 1
    v = h[1]
    w = (h * h).sum()  # saves h
    with pygpu.no_grad():
        v.fill_(0)  # writes through the view
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        w.backward()


def test_parameters_require_grad_and_model_trains(device):
    nn = pygpu.nn
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    model.to(device)
    assert all(p.requires_grad and p.is_leaf for p in model.parameters())
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 4)).astype(np.float32)
    ys = (xs @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    x, y = pygpu.tensor(xs, device=device), pygpu.tensor(ys, device=device)
    losses = []
    for _ in range(150):
        loss = ((model(x) - y) * (model(x) - y)).mean()
        model.zero_grad()
        loss.backward()
        with pygpu.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 0.05)
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_graph_is_freed(device):
    """Nothing of a graph outlives its tensors (no reference cycles)."""
    x = leaf((100,), device, 34)
    base = sys.getrefcount(x)
    for _ in range(3):
        y = (x.exp() * x).relu().sum()
        y.backward()
        del y
    assert sys.getrefcount(x) == base
    gc.collect()
    assert sys.getrefcount(x) == base


def test_out_argument_refused_with_grad(device):
    x = leaf((3,), device, 35)
    out = pygpu.empty(3, dtype=pygpu.float64, device=device)
    with pytest.raises(RuntimeError, match="don't support automatic "
                       "differentiation"):
        pygpu.add(x, x, out=out)


# ---------------------------------------- binary math, clamp, joins, softmax
@pytest.mark.parametrize("fn", [
    lambda a, b: a ** b, lambda a, b: a ** 3, lambda a, b: 2.0 ** b,
    lambda a, b: a ** 0.5 + b, lambda a, b: pygpu.maximum(a, b),
    lambda a, b: pygpu.minimum(a, b), lambda a, b: pygpu.fmod(a, b),
    lambda a, b: pygpu.remainder(a, b), lambda a, b: pygpu.fmod(a, 0.7) + b,
], ids=["pow", "pow_int", "rpow", "sqrt_pow", "maximum", "minimum", "fmod",
        "remainder", "fmod_scalar"])
def test_binary_math_gradcheck(device, fn):
    a = leaf((3, 4), device, 40, 0.5)
    b = leaf((4,), device, 41, 0.5)
    assert gradcheck(fn, (a, b))


def test_maximum_splits_ties_and_pow_zero_exponent(device):
    a = pygpu.tensor([1.0, 2.0, 3.0], dtype=pygpu.float64, device=device,
                     requires_grad=True)
    b = pygpu.tensor([1.0, 5.0, 0.0], dtype=pygpu.float64, device=device,
                     requires_grad=True)
    pygpu.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), [0.5, 0, 1])
    np.testing.assert_array_equal(b.grad.cpu().numpy(), [0.5, 1, 0])
    z = pygpu.zeros(2, dtype=pygpu.float64, device=device, requires_grad=True)
    (z ** 0).sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), [0, 0])


@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.2), (-0.1, None),
                                   ("t", "t")])
def test_clamp_gradcheck(device, lo, hi):
    x = leaf((4, 3), device, 42)
    if lo == "t":
        lo = leaf((3,), device, 43) * 0.1 - 0.5
        hi = leaf((4, 1), device, 44) * 0.1 + 0.5
        lo, hi = lo.detach().requires_grad_(), hi.detach().requires_grad_()
        assert gradcheck(lambda t, l, h: t.clamp(l, h), (x, lo, hi))
    else:
        assert gradcheck(lambda t: t.clamp(lo, hi), (x,))


def test_cat_stack_split_gradcheck(device):
    a, b = leaf((2, 3), device, 45), leaf((2, 2), device, 46)
    c = leaf((2, 3), device, 47)
    assert gradcheck(lambda x, y: pygpu.cat([x, y], 1), (a, b))
    assert gradcheck(lambda x, y: pygpu.stack([x, y], 1), (a, c))
    assert gradcheck(lambda x: pygpu.cat(list(x.split(2, 1))[::-1], 1), (a,))
    assert gradcheck(lambda x: x.chunk(2, 1)[1] * 2, (a,))
    assert gradcheck(lambda x: x.narrow(1, 1, 2), (a,))
    assert gradcheck(lambda x: x.unbind(1)[2], (a,))


@pytest.mark.parametrize("fn", [
    lambda t: t.softmax(1), lambda t: t.log_softmax(0),
    lambda t: t.logsumexp(1), lambda t: t.logsumexp((0, 1), keepdim=True),
    lambda t: t.cumsum(1), lambda t: t.var(1), lambda t: t.std(),
    lambda t: t.norm(), lambda t: t.norm(1, dim=0),
    lambda t: t.sum((0, 1)), lambda t: t.mean((1,), keepdim=True),
], ids=["softmax", "log_softmax", "logsumexp", "logsumexp_all", "cumsum",
        "var", "std", "norm", "norm1", "sum_tuple", "mean_tuple"])
def test_reduction_family_gradcheck(device, fn):
    x = leaf((3, 4), device, 48, 0.3)
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("fn,name", [
    (lambda t: pygpu.cat([t, t], out=pygpu.empty(6, 2, dtype=t.dtype,
                                                 device=t.device)),
     "out="),
])
def test_ops_without_a_rule_refuse(device, fn, name):
    x = leaf((3, 2), device, 49)
    with pytest.raises(RuntimeError, match=name):
        fn(x)
    with pygpu.no_grad():
        fn(x)  # fine when nothing is recorded


def test_where_and_masked_fill_gradcheck(device):
    x, y = leaf((3, 4), device, 50), leaf((4,), device, 51)
    cond = pygpu.tensor(np.random.default_rng(52).random((3, 4)) > 0.5,
                        device=device)
    assert gradcheck(lambda a, b: pygpu.where(cond, a, b), (x, y))
    assert gradcheck(lambda a: pygpu.where(cond, a, 0.5), (x,))
    assert gradcheck(lambda a: a.masked_fill(cond, 2.0), (x,))
    assert gradcheck(lambda a: a.masked_fill(cond[0], -1.0), (x,))


def test_comparisons_are_not_recorded(device):
    x = leaf((3,), device, 53)
    m = x > 0
    assert m.dtype == pygpu.bool and not m.requires_grad
    assert x[m].grad_fn.name() == "IndexBackward0"  # the mask is not


# ------------------------------------------------ graphs a million nodes deep

# Run in a child process, so that a crash (a C stack overflow) fails the
# test instead of ending the run, and in a thread of a 1 MiB stack, so that
# a C recursion per Node overflows it at a depth of some 10^4 whatever the
# build.  The cyclic GC is off while the chain is built: with a million
# tracked Nodes it would make building quadratic.
DEEP_GRAPH = r"""
import gc, sys, threading
import pygpu
kind, n = sys.argv[1], int(sys.argv[2])

def run():
    w = pygpu.ones(1, requires_grad=True)
    if kind == "sum":  # total = total + w * 1.0: two Nodes a step
        total = pygpu.zeros(1)
        for _ in range(n):
            total = total + w * 1.0
        want = float(n)
    else:  # -t: one Node a step
        total = w
        for _ in range(n):
            total = -total
        want = -1.0 if n % 2 else 1.0
    if kind != "free":
        total.backward()
        assert w.grad.item() == want, (w.grad.item(), want)
        assert total.grad_fn is not None
    del total  # frees every Node, one after another
    print("freed", n)

gc.disable()
threading.stack_size(1 << 20)
t = threading.Thread(target=run)
t.start()
t.join()
gc.enable()
gc.collect()
"""

# Under scripts/sanitize.sh the child runs sanitized too (some five times
# slower): a tenth of the depth.
DEEP = 10**5 if os.environ.get("PYGPU_SANITIZED") == "1" else 10**6


def run_deep_graph(kind, n, timeout=300):
    import subprocess
    r = subprocess.run([sys.executable, "-c", DEEP_GRAPH, kind, str(n)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split() == ["freed", str(n)]


def test_freeing_a_deep_graph_does_not_recurse():
    """A chain of a million Nodes is freed without a C recursion per Node
    (each Node's last reference is in the next one); a recursion per Node
    overflowed the C stack (8 MiB) at some 10^5 Nodes."""
    run_deep_graph("free", DEEP)


def test_backward_over_a_deep_graph_then_free():
    """The engine walks the chain with a stack of its own, and the graph
    is freed after it: 400,000 Nodes of total = total + w * 1.0 (a tenth
    under the sanitizers)."""
    run_deep_graph("sum", DEEP // 5)


@pytest.mark.skipif(os.environ.get("PYGPU_SLOW_TESTS") != "1",
                    reason="some minutes: set PYGPU_SLOW_TESTS=1")
def test_backward_over_ten_million_nodes_then_free():
    run_deep_graph("neg", 10**7, timeout=1800)
