"""Custom autograd Functions (pygpu.autograd.Function) against torch's
semantics: the tutorials' examples checked against float64 NumPy
gradients, ctx's methods, the errors torch raises, and no leaks."""
import gc
import math
import weakref

import numpy as np
import pytest

import pygpu
from pygpu.autograd import Function, Variable
from pygpu.autograd.function import once_differentiable

from conftest import assert_no_leak, rel_err

F32, F64 = pygpu.float32, pygpu.float64
TOL = {F32: 1e-5, F64: 1e-12}


def leaf(a, device, dtype=F32):
    return pygpu.tensor(np.asarray(a), dtype=dtype,
                        device=device).requires_grad_()


def host(t):
    return t.detach().cpu().numpy().astype(np.float64)


# ------------------------------------------------- the tutorials' Functions

class LegendrePolynomial3(Function):
    """P3(x) = (5x^3 - 3x) / 2 ("Learning PyTorch with Examples")."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class Exp(Function):
    """Saves its output."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class MulConstant(Function):
    """A non-tensor argument, kept on ctx."""

    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


class SplitSign(Function):
    """Two outputs, the second (the signs) not differentiable."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        sign = (x > 0).to(x.dtype) * 2 - 1
        ctx.mark_non_differentiable(sign)
        return x * sign, sign

    @staticmethod
    def backward(ctx, g_abs, g_sign):
        ctx.seen = g_sign
        x, = ctx.saved_tensors
        return g_abs * ((x > 0).to(x.dtype) * 2 - 1)


class AddOneInPlace(Function):
    """Writes its input in place (mark_dirty)."""

    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class Pair(Function):
    """Two outputs (2x, x^2); materialization as ctx says."""

    @staticmethod
    def forward(ctx, x, materialize=True):
        ctx.set_materialize_grads(materialize)
        ctx.save_for_backward(x)
        return x * 2, x * x

    @staticmethod
    def backward(ctx, ga, gb):
        ctx.got = (ga, gb)
        x, = ctx.saved_tensors
        out = None
        if ga is not None:
            out = ga * 2
        if gb is not None:
            out = gb * 2 * x if out is None else out + gb * 2 * x
        return out, None


@pytest.mark.parametrize("dtype", [F32, F64])
def test_legendre_against_numpy(device, rng, dtype):
    a = rng.standard_normal((4, 5))
    x = leaf(a, device, dtype)
    y = LegendrePolynomial3.apply(x)
    assert y.grad_fn.name() == "LegendrePolynomial3Backward"
    assert y.requires_grad and not y.is_leaf
    assert rel_err(host(y), 0.5 * (5 * a ** 3 - 3 * a)) < TOL[dtype] * 10
    g = rng.standard_normal((4, 5))
    y.backward(pygpu.tensor(g, dtype=dtype, device=device))
    assert x.grad.dtype is dtype
    assert rel_err(host(x.grad), g * 1.5 * (5 * a ** 2 - 1)) < TOL[dtype] * 10


def test_exp_saving_its_output(device, rng):
    a = rng.standard_normal(7)
    x = leaf(a, device, F64)
    y = Exp.apply(x)
    (y * y).sum().backward()
    assert rel_err(host(x.grad), 2 * np.exp(2 * a)) < 1e-12


def test_saved_output_comes_back_with_its_history(device):
    seen = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.save_for_backward(out, x, None)
            return out

        @staticmethod
        def backward(ctx, g):
            out, x, none = ctx.saved_tensors
            seen.update(out=out, x=x, none=none)
            return g * 2

    x = leaf([1.0, 2.0], device)
    y = Keep.apply(x)
    out, x_saved, _ = y.grad_fn.saved_tensors
    assert x_saved is x and out.grad_fn is y.grad_fn
    y.sum().backward()
    assert seen["x"] is x and seen["none"] is None
    assert seen["out"].grad_fn is y.grad_fn
    assert host(seen["out"]).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 4)])
def test_exp_degenerate_and_strided_inputs(device, rng, shape):
    a = rng.standard_normal(shape)
    base = leaf(a.T.copy(), device, F64)
    x = base.t() if len(shape) == 2 else base  # non-contiguous
    y = Exp.apply(x)
    assert tuple(y.shape) == shape
    g = rng.standard_normal(shape)
    y.backward(pygpu.tensor(g, dtype=F64, device=device))
    assert rel_err(host(base.grad), (g * np.exp(a)).T) < 1e-12


def test_mul_constant_non_tensor_argument(device, rng):
    a = rng.standard_normal((3, 2))
    x = leaf(a, device)
    y = MulConstant.apply(x, 2.5)
    assert y.grad_fn.constant == 2.5  # the Node shows its ctx's attributes
    with pytest.raises(AttributeError):
        y.grad_fn.no_such_attribute
    y.backward(pygpu.ones(3, 2, device=device))
    assert rel_err(host(x.grad), np.full((3, 2), 2.5)) < 1e-6
    assert y.grad_fn.next_functions[1] == (None, 0)


def test_needs_input_grad(device):
    seen = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, a, k, b):
            seen.append(ctx.needs_input_grad)
            return a * k + b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, None, None

    a = leaf([1.0], device)
    b = pygpu.tensor([2.0], device=device)
    Spy.apply(a, 3, b).sum().backward()
    assert seen == [(True, False, False)] * 2
    assert a.grad.tolist() == [1.0]


def test_two_outputs_one_non_differentiable(device, rng):
    a = rng.standard_normal(6)
    x = leaf(a, device, F64)
    ab, sign = SplitSign.apply(x)
    assert ab.requires_grad and not sign.requires_grad
    assert sign.grad_fn is None and ab.grad_fn.name() == "SplitSignBackward"
    g = rng.standard_normal(6)
    ab.backward(pygpu.tensor(g, dtype=F64, device=device))
    assert rel_err(host(x.grad), g * np.sign(a)) < 1e-12


def test_two_outputs_both_used(device, rng):
    a = rng.standard_normal(5)
    x = leaf(a, device, F64)
    two, sq = Pair.apply(x)
    assert two.grad_fn is sq.grad_fn
    node = two.grad_fn
    assert (sq * 5).grad_fn.next_functions[0] == (node, 1)
    assert (two * 5).grad_fn.next_functions[0] == (node, 0)
    (two * 3 + sq * 5).sum().backward()
    assert rel_err(host(x.grad), 6 + 10 * a) < 1e-12


def test_materialize_grads_false_gives_none(device):
    got = []

    class P(Pair):
        @staticmethod
        def backward(ctx, ga, gb):
            got.append((ga, gb))
            return Pair.backward(ctx, ga, gb)

    for materialize in (True, False):
        got.clear()
        x = leaf([1.0, 3.0], device)
        two, sq = P.apply(x, materialize)
        sq.sum().backward()
        ga, gb = got[0]
        if materialize:
            assert ga is not None and ga.tolist() == [0.0, 0.0]
            assert ga.dtype is F32 and ga.shape == (2,)
        else:
            assert ga is None
        assert gb.tolist() == [1.0, 1.0]
        assert x.grad.tolist() == [2.0, 6.0]


def test_grad_of_one_output_among_several(device):
    x = leaf([2.0, 5.0], device)
    two, sq = Pair.apply(x)
    g, = pygpu.autograd.grad(sq.sum(), x)
    assert g.tolist() == [4.0, 10.0]
    two, sq = Pair.apply(x)
    gx, = pygpu.autograd.grad([two.sum(), sq.sum()], [x])
    assert gx.tolist() == [6.0, 12.0]


def test_grad_with_respect_to_an_output(device):
    x = leaf([2.0, 5.0], device)
    two, sq = Pair.apply(x)
    loss = (two * 3).sum() + (sq * 7).sum()
    g_two, g_sq = pygpu.autograd.grad(loss, [two, sq])
    assert g_two.tolist() == [3.0, 3.0] and g_sq.tolist() == [7.0, 7.0]
    # The second output as the root itself.
    two, sq = Pair.apply(x)
    sq.backward(pygpu.tensor([1.0, 10.0], device=device))
    assert x.grad.tolist() == [4.0, 100.0]


def test_hooks_and_retain_grad_per_output(device):
    x = leaf([1.0, 2.0], device)
    two, sq = Pair.apply(x)
    seen = []
    two.register_hook(lambda g: seen.append(("two", g.tolist())))
    h = sq.register_hook(lambda g: g * 100)
    sq.register_hook(lambda g: seen.append(("sq", g.tolist())))
    two.retain_grad()
    sq.retain_grad()
    assert two.retains_grad and sq.retains_grad
    (two * 3 + sq * 5).sum().backward(retain_graph=True)
    assert sorted(seen) == [("sq", [500.0, 500.0]), ("two", [3.0, 3.0])]
    assert two.grad.tolist() == [3.0, 3.0]
    assert sq.grad.tolist() == [500.0, 500.0]
    assert x.grad.tolist() == [6 + 1000.0, 6 + 2000.0]
    # Removed: the other output's hooks and gradients are unchanged.
    h.remove()
    x.grad = None
    seen.clear()
    sq.sum().backward()
    assert seen == [("sq", [1.0, 1.0])]
    assert sq.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [2.0, 4.0]


def test_hooks_on_a_single_output(device):
    x = leaf([1.0, 2.0], device)
    y = Exp.apply(x)
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [10.0, 10.0]
    assert rel_err(host(x.grad), 10 * np.exp([1.0, 2.0])) < 1e-6


def test_mark_dirty_in_place(device):
    x = leaf([1.0, 2.0, 3.0], device)
    h = x * 2
    v0 = h._version
    out = AddOneInPlace.apply(h)
    assert out is h and h._version > v0
    assert h.grad_fn.name() == "AddOneInPlaceBackward"
    assert h.tolist() == [3.0, 5.0, 7.0]
    (h * h).sum().backward()
    assert x.grad.tolist() == [12.0, 20.0, 28.0]  # 2 * (2x + 1) * 2


def test_mark_dirty_of_a_leaf_is_refused(device):
    x = leaf([1.0], device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires "
                       "grad has been used in an in-place operation"):
        AddOneInPlace.apply(x)


def test_mark_dirty_must_be_an_output(device):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="marked as dirty"):
        Bad.apply(leaf([1.0], device) * 1)


def test_returning_an_input_keeps_the_graph(device):
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf([1.0, 2.0], device)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and x.grad_fn is None
    assert y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    # Without recording, still a new tensor over the same memory.
    with pygpu.no_grad():
        z = Identity.apply(x)
    assert z is not x and z.grad_fn is None and not z.requires_grad


def test_nothing_recorded_without_grad(device):
    x = pygpu.tensor([1.0], device=device)
    y = Exp.apply(x)
    assert y.grad_fn is None and not y.requires_grad
    with pygpu.no_grad():
        y = Exp.apply(leaf([1.0], device))
    assert y.grad_fn is None and not y.requires_grad


def test_setup_context_form(device, rng):
    class Cube(Function):
        @staticmethod
        def forward(x, scale=2.0):
            return x ** 3 * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, scale = inputs
            ctx.save_for_backward(x)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.scale, None

    a = rng.standard_normal(4)
    x = leaf(a, device, F64)
    Cube.apply(x).sum().backward()
    assert rel_err(host(x.grad), 6 * a ** 2) < 1e-12
    x.grad = None
    Cube.apply(x, scale=5.0).sum().backward()
    assert rel_err(host(x.grad), 15 * a ** 2) < 1e-12


def test_forward_runs_without_grad_and_backward_too(device):
    modes = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(pygpu.is_grad_enabled())
            return x * 1

        @staticmethod
        def backward(ctx, g):
            modes.append(pygpu.is_grad_enabled())
            return g

    Spy.apply(leaf([1.0], device)).sum().backward()
    assert modes == [False, False]


def test_gradient_broadcast_and_dtype(device):
    class Wide(Function):
        @staticmethod
        def forward(ctx, x):
            return x.expand(2, 3) * 1

        @staticmethod
        def backward(ctx, g):
            return g.to(pygpu.float64)  # [2, 3] for an input of [1, 3]

    x = leaf([[1.0, 2.0, 3.0]], device)
    Wide.apply(x).sum().backward()
    assert x.grad.dtype is F32 and x.grad.shape == (1, 3)
    assert x.grad.tolist() == [[2.0, 2.0, 2.0]]


def test_gradcheck(device, rng):
    x = leaf(rng.standard_normal((2, 3)), device, F64)
    assert pygpu.autograd.gradcheck(LegendrePolynomial3.apply, (x,))
    assert pygpu.autograd.gradcheck(lambda t: MulConstant.apply(t, -1.5),
                                    (x,))
    assert pygpu.autograd.gradcheck(lambda t: Pair.apply(t)[1], (x,))


# ----------------------------------------------------------------- errors

def _returning(fn):
    class Returning(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return fn(g)
    return Returning


def test_wrong_number_of_gradients(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match=r"function ReturningBackward "
                       r"returned an incorrect number of gradients "
                       r"\(expected 1, got 2\)"):
        _returning(lambda g: (g, g)).apply(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"\(expected 1, got 0\)"):
        _returning(lambda g: ()).apply(x).sum().backward()
    # Trailing Nones beyond the inputs are dropped, as torch drops them.
    _returning(lambda g: (g, None, None)).apply(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_wrong_gradient_shape(device):
    x = leaf([1.0, 2.0, 3.0], device)
    with pytest.raises(RuntimeError, match=r"Function ReturningBackward "
                       r"returned an invalid gradient at index 0 - got "
                       r"\[2\] but expected shape compatible with \[3\]"):
        _returning(lambda g: g[:2]).apply(x).sum().backward()
    assert x.grad is None


def test_gradient_for_a_non_tensor_input(device):
    x = leaf([1.0], device)
    with pytest.raises(RuntimeError, match="returned a gradient different "
                       "than None at position 2, but the corresponding "
                       "forward input was not a Variable"):
        MulConstant_bad = type("Bad", (MulConstant,), {
            "backward": staticmethod(lambda ctx, g: (g, g))})
        MulConstant_bad.apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match=r"expected Variable or None "
                       r"\(got int\)"):
        _returning(lambda g: 3).apply(x).sum().backward()


def test_exception_in_backward_propagates(device):
    class Boom(ValueError):
        pass

    def fail(g):
        raise Boom("backward failed: 42")

    x = leaf([1.0], device)
    with pytest.raises(Boom, match="^backward failed: 42$"):
        _returning(fail).apply(x).sum().backward()
    assert x.grad is None


def test_saved_tensor_modified_in_place(device):
    x = leaf([1.0, 2.0], device)
    h = x * 1
    y = LegendrePolynomial3.apply(h)
    with pygpu.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for "
                       "gradient computation has been modified by an "
                       "inplace operation: .* which is needed by "
                       "LegendrePolynomial3Backward, is at version 1; "
                       "expected version 0 instead"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward(device):
    x = leaf([1.0, 2.0], device)
    y = Exp.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert rel_err(host(x.grad), 2 * np.exp([1.0, 2.0])) < 1e-6
    with pytest.raises(RuntimeError, match="backward through the graph a "
                       "second time"):
        y.sum().backward()


def test_save_for_backward_takes_tensors_only(device):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save "
                       "variables, but argument 1 is of type int"):
        Bad.apply(leaf([1.0], device))


def test_legacy_call_and_missing_methods(device):
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        Exp()(leaf([1.0], device))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

    with pytest.raises(NotImplementedError, match="backward or vjp"):
        NoBackward.apply(leaf([1.0], device)).sum().backward()
    with pytest.raises(NotImplementedError, match="forward function"):
        Function.apply(leaf([1.0], device))


def test_double_backward_is_refused_as_elsewhere(device):
    x = leaf([1.0], device)
    with pytest.raises(NotImplementedError, match="create_graph"):
        LegendrePolynomial3.apply(x).sum().backward(create_graph=True)


# ------------------------------------------------- once_differentiable

class ExpOnce(Exp):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        assert not pygpu.is_grad_enabled()
        return grad_output * result


def test_once_differentiable(device):
    x = leaf([0.5, 1.5], device, F64)
    ExpOnce.apply(x).sum().backward()
    assert rel_err(host(x.grad), np.exp([0.5, 1.5])) < 1e-12


def test_once_differentiable_under_grad_mode(device):
    # Called with grad mode on and a gradient that requires grad (as a
    # create_graph pass would), the results carry a Node that refuses.
    @once_differentiable
    def bwd(ctx, g):
        return g * 2

    g = leaf([1.0, 2.0], device)
    out = bwd(None, g)
    assert out.requires_grad and out.grad_fn.name() == "_DelayedErrorBackward"
    assert out.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="trying to differentiate twice a "
                       "function that was marked with @once_differentiable"):
        out.sum().backward()
    with pygpu.no_grad():
        assert bwd(None, g).grad_fn is None


# --------------------------------------------------------------- Variable

def test_variable(device):
    t = pygpu.tensor([1.0, 2.0], device=device)
    v = Variable(t, requires_grad=True)
    assert isinstance(v, pygpu.Tensor) and isinstance(t, Variable)
    assert v.requires_grad and v.is_leaf and not t.requires_grad
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    assert not Variable(t).requires_grad
    assert not isinstance(3, Variable)


# ------------------------------------------------------------------ leaks

def test_node_freed_with_the_graph_without_gc(device):
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out, x)
            return out, out * 2

        @staticmethod
        def backward(ctx, g1, g2):
            out, x = ctx.saved_tensors
            return (g1 + 2 * g2) * out

    x = leaf([1.0, 2.0], device)
    gc.disable()
    try:
        a, b = Keep.apply(x)
        node = weakref.ref(a.grad_fn)
        del a, b
        assert node() is None  # no cycle: freed by reference counts alone
        a, b = Keep.apply(x)
        node = weakref.ref(a.grad_fn)
        (a + b).sum().backward()
        del a, b
        assert node() is None
    finally:
        gc.enable()


def test_no_leaks():
    x = leaf([1.0, 2.0, 3.0], "cpu")
    bad = _returning(lambda g: (g, g))

    def cycle():
        y = Exp.apply(x)
        a, b = Pair.apply(y)
        (a + b).sum().backward()
        LegendrePolynomial3.apply(x)
        AddOneInPlace.apply(x * 1)
        try:
            bad.apply(x).sum().backward()
        except RuntimeError:
            pass
        x.grad = None

    # Calling into Python from the pass fills some of the interpreter's
    # caches over the first ten thousand cycles or so (a few hundred
    # blocks in all, then flat); a leak of one object per cycle would
    # leave 2000 in each half.
    assert_no_leak(cycle, blocks=500)


def test_no_leaks_with_ctx_holding_outputs():
    # A ctx that keeps an output makes a cycle (ctx -> output -> Node ->
    # ctx), which the garbage collector frees.
    class Holder(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.out = out
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0], "cpu")

    def cycle():
        Holder.apply(x).sum().backward()
        x.grad = None

    # As above: a bound far below one leaked object per cycle.
    assert_no_leak(cycle, blocks=500)


# ------------------------------------- "Learning PyTorch with Examples"

def test_polynomial_fit_with_a_custom_function(device):
    """The tutorial's flow: y = a + b P3(c + d x) fitted to sin(x) by
    gradient descent, P3 a custom Function; the loss goes down."""
    import pygpu as torch
    dtype = torch.float32
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype, device=device)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    for t in range(300):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]
    assert all(later <= earlier * (1 + 1e-6)
               for earlier, later in zip(losses, losses[1:]))


@pytest.mark.cuda
def test_gradient_on_another_device_is_refused():
    class ToCpu(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.cpu()

    x = leaf([1.0, 2.0], "cuda")
    with pytest.raises(RuntimeError, match="Function ToCpuBackward returned "
                       "an invalid gradient at index 0 - expected device "
                       "cuda:0 but got cpu"):
        ToCpu.apply(x).sum().backward()


class LinearFunction(Function):
    """The example of torch's "Extending torch.autograd" (own code):
    setup_context, needs_input_grad, an optional bias."""

    @staticmethod
    def forward(input, weight, bias=None):
        output = input.matmul(weight.t())
        if bias is not None:
            output = output + bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.matmul(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().matmul(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_function(device, rng, with_bias):
    a, w, b = (rng.standard_normal(s) for s in ((4, 3), (5, 3), (5,)))
    x, wt = leaf(a, device, F64), leaf(w, device, F64)
    bt = leaf(b, device, F64) if with_bias else None
    y = LinearFunction.apply(x, wt, bt)
    ref = a @ w.T + (b if with_bias else 0)
    assert rel_err(host(y), ref) < 1e-12
    g = rng.standard_normal((4, 5))
    y.backward(pygpu.tensor(g, dtype=F64, device=device))
    assert rel_err(host(x.grad), g @ w) < 1e-12
    assert rel_err(host(wt.grad), g.T @ a) < 1e-12
    if with_bias:
        assert rel_err(host(bt.grad), g.sum(0)) < 1e-12
    args = (x, wt, bt) if with_bias else (x, wt)
    assert pygpu.autograd.gradcheck(LinearFunction.apply, args)
