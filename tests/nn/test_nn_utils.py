"""pygpu.nn.utils: clip_grad_norm_ and clip_grad_value_ against float64
NumPy (every norm order, non-finite totals, zero gradients, parameters
without one) and parameters_to_vector / vector_to_parameters; against
torch where it is installed."""
import math
import types

import numpy as np
import pytest

import pygpu
from pygpu.nn.utils import (clip_grad_norm_, clip_grad_value_,
                            parameters_to_vector, vector_to_parameters)

from conftest import rel_err

SHAPES = [(3, 4), (7,), (), (0, 2), (4, 3)]


def params(device, rng, dtype=np.float32, scale=1.0):
    """Parameters with random gradients: a matrix, a vector, a scalar, an
    empty one and a transposed (non-contiguous) gradient, plus one
    parameter without a gradient. Returns (tensors, float64 gradients)."""
    ps, gs = [], []
    for i, s in enumerate(SHAPES):
        g = (rng.standard_normal(s) * scale).astype(dtype)
        p = pygpu.nn.Parameter(pygpu.tensor(np.zeros(s, dtype),
                                            device=device))
        if i == len(SHAPES) - 1:
            p.grad = pygpu.tensor(np.ascontiguousarray(g.T),
                                  device=device).t()
            assert not p.grad.is_contiguous()
        else:
            p.grad = pygpu.tensor(g, device=device)
        ps.append(p)
        gs.append(np.asarray(g, dtype=np.float64))
    ps.append(pygpu.nn.Parameter(pygpu.ones(2, device=device)))  # no grad
    return ps, gs


def np_norm(gs, order):
    flat = np.concatenate([g.ravel() for g in gs])
    if order == math.inf:
        return np.abs(flat).max()
    if order == -math.inf:
        return min(np.abs(g).min() for g in gs if g.size)
    if order == 0:
        return float(np.count_nonzero(flat))  # of one gradient
    return (np.abs(flat) ** order).sum() ** (1 / order)


@pytest.mark.parametrize("order", [2, 1, 3.5, 0.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_against_numpy(device, rng, order, max_norm):
    ps, gs = params(device, rng)
    order_f = float(order)
    total = clip_grad_norm_(ps, max_norm, norm_type=order)
    want = np_norm(gs, order_f)
    assert isinstance(total, pygpu.Tensor) and total.shape == ()
    assert total.device == ps[0].device
    assert rel_err(total.item(), want) <= 1e-5
    coef = min(1.0, max_norm / (want + 1e-6))
    for p, g in zip(ps, gs):
        assert p.grad.shape == g.shape
        assert rel_err(p.grad.cpu().numpy(), g * coef) <= 1e-5
    assert ps[-1].grad is None
    if max_norm < want:  # clipped: the new total is max_norm
        again = clip_grad_norm_(ps, max_norm, order)
        assert rel_err(again.item(), max_norm) <= 1e-5


def test_zero_norm_order_and_float64(device, rng):
    ps, gs = params(device, rng, np.float64)
    with pygpu.no_grad():
        ps[1].grad.mul_(0.0)
    gs[1] = gs[1] * 0
    # The total is the norm of the gradients' norms: for order 0, the
    # number of nonzero gradients (the zeroed and the empty one are not).
    total = clip_grad_norm_(ps, 1e9, norm_type=0)
    assert total.item() == 3 == sum(np_norm([g], 0) > 0 for g in gs)
    total = clip_grad_norm_(ps, 0.25)
    assert total.dtype == pygpu.float64
    assert rel_err(total.item(), np_norm(gs, 2)) <= 1e-12
    coef = 0.25 / (np_norm(gs, 2) + 1e-6)
    for p, g in zip(ps, gs):
        assert rel_err(p.grad.cpu().numpy(), g * coef) <= 1e-12


def test_single_tensor_and_generator(device):
    p = pygpu.nn.Parameter(pygpu.zeros(2, device=device))
    p.grad = pygpu.tensor([3.0, 4.0], device=device)
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    assert p.grad.cpu().tolist() == pytest.approx([0.6, 0.8], rel=1e-5)
    total = clip_grad_norm_((q for q in [p]), 10.0)
    assert total.item() == pytest.approx(1.0, rel=1e-5)
    with pytest.warns(UserWarning, match="`parameters` is an empty "
                      "generator, no gradient clipping will occur."):
        total = clip_grad_norm_((q for q in []), 1.0)
    assert total.item() == 0.0


def test_zero_gradients_and_no_gradients(device):
    p = pygpu.nn.Parameter(pygpu.ones(3, device=device))
    p.grad = pygpu.zeros(3, device=device)
    assert clip_grad_norm_([p], 1.0).item() == 0.0
    assert p.grad.cpu().tolist() == [0.0, 0.0, 0.0]
    q = pygpu.nn.Parameter(pygpu.ones(3, device=device))
    total = clip_grad_norm_([q], 1.0)
    assert total.item() == 0.0 and total.dtype == pygpu.float32
    assert q.grad is None
    clip_grad_value_([q], 1.0)
    assert q.grad is None


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_nonfinite(device, bad):
    p = pygpu.nn.Parameter(pygpu.zeros(3, device=device))
    p.grad = pygpu.tensor([1.0, bad, 2.0], device=device)
    with pytest.raises(RuntimeError) as e:
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert str(e.value) == (
        "The total norm of order 2.0 for gradients from `parameters` is "
        "non-finite, so it cannot be clipped. To disable this error and "
        "scale the gradients by the non-finite norm anyway, set "
        "`error_if_nonfinite=False`")
    assert p.grad.cpu().tolist()[0] == 1.0  # left alone
    # Without the check the gradients are scaled all the same (by NaN, or
    # by 0 for an infinite total, which makes inf * 0 = NaN), as torch's.
    total = clip_grad_norm_([p], 1.0)
    got = p.grad.cpu().numpy()
    if bad != bad:
        assert math.isnan(total.item()) and np.isnan(got).all()
    else:
        assert total.item() == math.inf
        assert got[0] == 0 and np.isnan(got[1]) and got[2] == 0
    # An infinity norm of finite gradients is finite.
    p.grad = pygpu.tensor([1.0, -7.0, 2.0], device=device)
    assert clip_grad_norm_([p], 1.0, math.inf, True).item() == 7.0


def test_half_gradients_mix(device, rng):
    """Gradients of two dtypes: the total is promoted (float32), each
    gradient keeps its dtype."""
    a = pygpu.nn.Parameter(pygpu.zeros(4, device=device))
    b = pygpu.nn.Parameter(pygpu.zeros(4, device=device).half())
    ga = rng.standard_normal(4).astype(np.float32)
    gb = rng.standard_normal(4).astype(np.float16)
    a.grad = pygpu.tensor(ga, device=device)
    b.grad = pygpu.tensor(gb, device=device)
    total = clip_grad_norm_([a, b], 0.1)
    assert total.dtype == pygpu.float32 and b.grad.dtype == pygpu.float16
    want = np_norm([ga.astype(np.float64), gb.astype(np.float64)], 2)
    assert rel_err(total.item(), want) <= 1e-3
    assert rel_err(b.grad.cpu().numpy(), gb * 0.1 / want) <= 1e-2


def test_clip_grad_value(device, rng):
    ps, gs = params(device, rng, scale=3.0)
    assert clip_grad_value_(ps, 1.5) is None
    for p, g in zip(ps, gs):
        assert rel_err(p.grad.cpu().numpy(), np.clip(g, -1.5, 1.5)) <= 1e-6
    assert ps[-1].grad is None
    p = pygpu.nn.Parameter(pygpu.zeros(3, device=device))
    p.grad = pygpu.tensor([-5.0, 0.25, 5.0], device=device)
    clip_grad_value_(p, 1)
    assert p.grad.cpu().tolist() == [-1.0, 0.25, 1.0]


def test_grad_mode_off_inside():
    """The clipping is not recorded, even with grad mode on and gradients
    that require grad."""
    p = pygpu.nn.Parameter(pygpu.zeros(2))
    p.grad = pygpu.tensor([3.0, 4.0])
    total = clip_grad_norm_([p], 1.0)
    assert total.grad_fn is None and not total.requires_grad


def test_parameters_to_vector_and_back(device, rng):
    shapes = [(2, 3), (4,), (), (0,)]
    vals = [rng.standard_normal(s) for s in shapes]
    ps = [pygpu.nn.Parameter(pygpu.tensor(v, device=device)) for v in vals]
    vec = parameters_to_vector(ps)
    want = np.concatenate([v.ravel() for v in vals])
    assert vec.shape == (11,)
    np.testing.assert_array_equal(vec.detach().cpu().numpy(), want)
    new = rng.standard_normal(11)
    target = pygpu.tensor(new, device=device)
    vector_to_parameters(target, ps)
    start = 0
    for p, s in zip(ps, shapes):
        n = int(np.prod(s, dtype=np.int64))
        np.testing.assert_array_equal(p.detach().cpu().numpy(),
                                      new[start:start + n].reshape(s))
        assert p.shape == s and p.requires_grad
        start += n
    # The parameters now view the vector, as torch's.
    with pygpu.no_grad():
        target.mul_(2.0)
    assert ps[0].detach().cpu().numpy()[0, 0] == new[0] * 2


def test_vector_errors():
    p = pygpu.nn.Parameter(pygpu.zeros(2))
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: "
                       "list$"):
        vector_to_parameters([1.0, 2.0], [p])
    with pytest.raises(TypeError, match="but got: numpy.ndarray"):
        vector_to_parameters(np.zeros(2), [p])
    with pytest.raises(RuntimeError):
        parameters_to_vector([pygpu.zeros(2, 3).t()])  # as torch's view


@pytest.mark.cuda
def test_devices_mixed_refused():
    a = pygpu.nn.Parameter(pygpu.zeros(2))
    b = pygpu.nn.Parameter(pygpu.zeros(2, device="cuda"))
    with pytest.raises(TypeError, match="Found two parameters on different "
                       "devices, this is currently not supported."):
        parameters_to_vector([a, b])
    with pytest.raises(TypeError, match="Found two parameters on different"):
        vector_to_parameters(pygpu.zeros(4), [a, b])
    # clip_grad_norm_ gathers the norms on the first gradient's device.
    a.grad = pygpu.tensor([3.0, 0.0])
    b.grad = pygpu.tensor([0.0, 4.0], device="cuda")
    total = clip_grad_norm_([a, b], 1.0)
    assert total.device.type == "cpu" and total.item() == pytest.approx(5.0)
    assert b.grad.cpu().tolist() == pytest.approx([0.0, 0.8], rel=1e-5)


def test_module_attribute_access():
    assert pygpu.nn.utils.clip_grad_norm_ is clip_grad_norm_
    assert isinstance(pygpu.nn.utils.clip_grad, types.ModuleType)
    from pygpu.nn.utils.clip_grad import clip_grad_value_ as v
    assert v is clip_grad_value_


@pytest.mark.parametrize("order", [2.0, 1.0, 3.0, 0.0, math.inf])
def test_against_torch(rng, order):
    torch = pytest.importorskip("torch")
    gs = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    ours = [pygpu.nn.Parameter(pygpu.zeros(*g.shape)) for g in gs]
    theirs = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in gs]
    for p, t, g in zip(ours, theirs, gs):
        p.grad = pygpu.tensor(g)
        t.grad = torch.tensor(g)
    a = clip_grad_norm_(ours, 0.3, order)
    b = torch.nn.utils.clip_grad_norm_(theirs, 0.3, order)
    assert rel_err(a.item(), b.item()) <= 1e-6
    for p, t in zip(ours, theirs):
        assert rel_err(p.grad.numpy(), t.grad.numpy()) <= 1e-6
    clip_grad_value_(ours, 0.01)
    torch.nn.utils.clip_grad_value_(theirs, 0.01)
    for p, t in zip(ours, theirs):
        assert rel_err(p.grad.numpy(), t.grad.numpy()) <= 1e-6
