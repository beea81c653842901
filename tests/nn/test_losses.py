"""Losses against NumPy float64, their reductions, gradients and errors."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from conftest import rel_err

F = nn.functional

REFS = {"mse": lambda d: d * d, "l1": np.abs}


@pytest.mark.parametrize("name", ["mse", "l1"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 0), ()])
def test_loss_values(device, name, reduction, shape):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    x, y = (pygpu.tensor(v.astype(np.float32), device=device) for v in (a, b))
    fn = getattr(F, name + "_loss")
    mod = {"mse": nn.MSELoss, "l1": nn.L1Loss}[name](reduction=reduction)
    ref = REFS[name](a.astype(np.float32).astype(np.float64) -
                     b.astype(np.float32))
    ref = {"mean": np.mean, "sum": np.sum, "none": lambda r: r}[reduction](
        ref) if ref.size or reduction != "mean" else np.nan
    for got in (fn(x, y, reduction=reduction), mod(x, y)):
        np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_loss_gradcheck(device, name):
    rng = np.random.default_rng(2)
    x = pygpu.tensor(rng.standard_normal((3, 4)), device=device,
                     requires_grad=True)
    y = pygpu.tensor(rng.standard_normal((3, 4)), device=device)
    assert gradcheck(lambda t: getattr(F, name)(t, y), (x,))


def test_loss_errors_and_repr():
    x = pygpu.ones(3)
    with pytest.raises(ValueError, match="avg is not a valid value for "
                       "reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(TypeError, match="argument 'target' must be Tensor"):
        F.l1_loss(x, [1, 2, 3])
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(pygpu.ones(3, 1), pygpu.ones(3))
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction=sum)"


# ------------------------------------------------- cross-entropy and friends
def np_log_softmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - (np.log(np.exp(x - m).sum(axis, keepdims=True)) + m)


def np_cross_entropy(x, t, w=None, ignore=-100, reduction="mean", ls=0.0):
    """torch's documented formulas, classes in axis 1."""
    logp = np.moveaxis(np_log_softmax(x, 1), 1, -1)
    c = logp.shape[-1]
    w = np.ones(c) if w is None else w
    if t.dtype.kind == "f":
        p = np.moveaxis(t, 1, -1) * (1 - ls) + ls / c
        loss = -(logp * p * w).sum(-1)
        return {"mean": loss.mean(), "sum": loss.sum(),
                "none": loss}[reduction]
    keep = t != ignore
    idx = np.where(keep, t, 0)
    picked = np.take_along_axis(logp, idx[..., None], -1)[..., 0]
    wt = w[idx] * keep
    nll = -picked * wt
    smooth = -(logp * w).sum(-1) * keep
    loss = (1 - ls) * nll + ls / c * smooth
    if reduction == "mean":
        with np.errstate(invalid="ignore"):  # no samples: 0 / 0
            return loss.sum() / wt.sum()
    return loss.sum() if reduction == "sum" else loss


CE_CASES = [dict(), dict(weight=True), dict(label_smoothing=0.2),
            dict(weight=True, label_smoothing=0.3, reduction="sum"),
            dict(reduction="none", weight=True), dict(ignore=True),
            dict(ignore=True, weight=True, label_smoothing=0.2),
            dict(ignore=True, reduction="none"),
            dict(probs=True), dict(probs=True, label_smoothing=0.1,
                                   weight=True)]


@pytest.mark.parametrize("kw", CE_CASES)
@pytest.mark.parametrize("shape", [(6, 5), (2, 5, 3)])
def test_cross_entropy_against_numpy(device, kw, shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    c = shape[1]
    tshape = (shape[0],) + shape[2:]
    if kw.get("probs"):
        t = rng.random(shape)
        t /= t.sum(1, keepdims=True)
    else:
        t = rng.integers(0, c, tshape)
        if kw.get("ignore"):
            t.reshape(-1)[1] = -100
    w = rng.random(c) + 0.5 if kw.get("weight") else None
    red, ls = kw.get("reduction", "mean"), kw.get("label_smoothing", 0.0)
    want = np_cross_entropy(x, t, w, -100, red, ls)
    X = pygpu.tensor(x, device=device, requires_grad=True)
    args = dict(reduction=red, label_smoothing=ls)
    if w is not None:
        args["weight"] = pygpu.tensor(w, device=device)
    got = F.cross_entropy(X, pygpu.tensor(t, device=device), **args)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want,
                               rtol=1e-10, atol=1e-12)
    mod = nn.CrossEntropyLoss(weight=args.get("weight"), reduction=red,
                              label_smoothing=ls)
    np.testing.assert_allclose(
        mod(X, pygpu.tensor(t, device=device)).detach().cpu().numpy(), want,
        rtol=1e-10, atol=1e-12)
    tt = pygpu.tensor(t, device=device)
    assert gradcheck(lambda v: F.cross_entropy(v, tt, **args), (X,))


def test_nll_and_bce_with_logits_against_numpy(device):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    t = rng.integers(0, 4, 5)
    logp = np_log_softmax(x, 1)
    X = pygpu.tensor(logp, device=device, requires_grad=True)
    got = F.nll_loss(X, pygpu.tensor(t, device=device))
    np.testing.assert_allclose(got.item(), -logp[np.arange(5), t].mean(),
                               rtol=1e-12)
    z = rng.standard_normal((4, 3)) * 4
    y = (rng.random((4, 3)) > 0.5).astype(np.float64)
    pw = rng.random(3) + 0.5
    sig = 1 / (1 + np.exp(-z))
    want = -(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig)).mean()
    Z = pygpu.tensor(z, device=device, requires_grad=True)
    Y = pygpu.tensor(y, device=device)
    PW = pygpu.tensor(pw, device=device)
    got = nn.BCEWithLogitsLoss(pos_weight=PW)(Z, Y)
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    assert gradcheck(lambda v: F.binary_cross_entropy_with_logits(
        v, Y, pos_weight=PW), (Z,))


def test_cross_entropy_errors():
    x = pygpu.randn(3, 4)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, pygpu.tensor([0, 7, 1]))
    with pytest.raises(ValueError, match="label_smoothing must be between"):
        F.cross_entropy(x, pygpu.tensor([0, 1, 1]), label_smoothing=1.5)
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        F.nll_loss(x, pygpu.tensor([0, -3, -100]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long "
                       "or Byte, but got Bool"):
        F.cross_entropy(x, pygpu.tensor([True, False, True]))


def test_cross_entropy_target_kinds(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3))
    t = np.array([2, 0, 1, 1])
    want = np_cross_entropy(x, t, None, -100, "mean", 0.0)
    X = pygpu.tensor(x, device=device)
    for tt in (pygpu.tensor(t, device=device).int(),
               pygpu.tensor(t, device=device).expand(2, 4)[1]):
        np.testing.assert_allclose(F.cross_entropy(X, tt).item(), want,
                                   rtol=1e-12)
    # one sample as a 1-d input and a 0-d target
    one = F.cross_entropy(X[1], pygpu.tensor(0, device=device))
    np.testing.assert_allclose(one.item(), -np_log_softmax(x[1:2], 1)[0, 0],
                               rtol=1e-12)
    # no samples: the mean is 0 / 0
    empty = F.cross_entropy(X[:0], pygpu.tensor(t[:0], device=device))
    assert np.isnan(empty.item())
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


# ------------------------------------------- cross-entropy as one fused op
def np_ce_grad(x, t, w=None, ignore=-100, reduction="mean", ls=0.0,
               g=None):
    """d loss / d x of np_cross_entropy (class indices), times the
    incoming gradient g (per sample for 'none', else one number)."""
    logp = np.moveaxis(np_log_softmax(x, 1), 1, -1)
    p, c = np.exp(logp), logp.shape[-1]
    w = np.ones(c) if w is None else w
    keep = t != ignore
    idx = np.where(keep, t, 0)
    wt = w[idx] * keep
    onehot = np.eye(c)[idx]
    d = (1 - ls) * wt[..., None] * (p - onehot) + \
        ls / c * (w.sum() * p - w) * keep[..., None]
    scale = np.ones(t.shape) if g is None else np.broadcast_to(g, t.shape)
    if reduction == "mean":
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = scale / wt.sum()
    return np.moveaxis(d * scale[..., None], -1, 1)


XENT_CASES = [dict(), dict(reduction="sum"), dict(reduction="none"),
              dict(weight=True), dict(ignore=True),
              dict(label_smoothing=0.25),
              dict(weight=True, ignore=True, label_smoothing=0.3),
              dict(weight=True, ignore=True, label_smoothing=0.1,
                   reduction="none"),
              dict(weight=True, label_smoothing=1.0, reduction="sum"),
              dict(ignore_index=2, weight=True)]
XENT_SHAPES = [(6, 5), (5,), (2, 4, 3, 2), (0, 5), (1, 1)]
XENT_RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2,
             "bfloat16": 1e-2}


def xent_inputs(rng, shape, kw):
    """Logits, targets (with an ignored one when asked), the weight and
    the incoming gradient for one case, all NumPy float64 / int64."""
    x = rng.standard_normal(shape) * 2
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = rng.integers(0, c, tshape)
    ignore = kw.get("ignore_index", -100)
    if kw.get("ignore") and t.size > 1:
        t.reshape(-1)[1] = ignore
    w = rng.random(c) + 0.5 if kw.get("weight") else None
    g = rng.standard_normal(tshape) if kw.get("reduction") == "none" \
        else np.float64(rng.random() + 0.5)
    return x, t, w, g, ignore


def check_xent(device, dtype, shape, kw, rng, transpose=False):
    x, t, w, g, ignore = xent_inputs(rng, shape, kw)
    red, ls = kw.get("reduction", "mean"), kw.get("label_smoothing", 0.0)
    pdt = getattr(pygpu, dtype)
    base = x.T.copy() if transpose else x
    X = pygpu.tensor(base, dtype=pdt, device=device, requires_grad=True)
    xin = X.t() if transpose else X
    xr = xin.detach().double().cpu().numpy()
    W = None if w is None else pygpu.tensor(w, dtype=pdt, device=device)
    wr = None if w is None else W.double().cpu().numpy()
    one = xr.ndim == 1  # one sample: the references take it as a batch
    xr, tr = (xr[None], t[None]) if one else (xr, t)
    want = np_cross_entropy(xr, tr, wr, ignore, red, ls)
    want = want[0] if one and red == "none" else want
    loss = F.cross_entropy(xin, pygpu.tensor(t, device=device), weight=W,
                           ignore_index=ignore, reduction=red,
                           label_smoothing=ls)
    assert loss.dtype == pdt and loss.device.type == device
    assert tuple(loss.shape) == (t.shape if red == "none" else ())
    got = loss.detach().double().cpu().numpy()
    rtol = XENT_RTOL[dtype]
    assert rel_err(got, want) <= rtol, (got, want)
    G = pygpu.tensor(g, dtype=pdt, device=device)
    loss.backward(G)
    gr = G.double().cpu().numpy()
    gwant = np_ce_grad(xr, tr, wr, ignore, red, ls, gr)
    gwant = gwant[0] if one else gwant
    ggot = X.grad.double().cpu().numpy()
    if transpose:
        ggot = ggot.T
    assert rel_err(ggot, gwant) <= rtol


@pytest.mark.parametrize("kw", XENT_CASES)
@pytest.mark.parametrize("shape", XENT_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_fused(device, rng, dtype, shape, kw):
    check_xent(device, dtype, shape, kw, rng)


@pytest.mark.parametrize("kw", XENT_CASES[:3] + XENT_CASES[6:8])
@pytest.mark.parametrize("shape", [(6, 5), (2, 4, 3, 2), (7,)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cross_entropy_fused_half(device, rng, dtype, shape, kw):
    check_xent(device, dtype, shape, kw, rng)


@pytest.mark.parametrize("kw", XENT_CASES[5:8])
def test_cross_entropy_fused_layouts(device, rng, kw):
    # a transposed (non-contiguous) input, and long rows and columns
    check_xent(device, "float32", (5, 7), kw, rng, transpose=True)
    check_xent(device, "float64", (3, 300, 2), kw, rng)
    check_xent(device, "float32", (2, 3, 300), kw, rng)
    check_xent(device, "float32", (4, 3000), kw, rng)


@pytest.mark.parametrize("kw", [dict(), dict(weight=True, ignore=True,
                                             label_smoothing=0.2),
                                dict(reduction="none", weight=True,
                                     label_smoothing=0.4)])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2)])
def test_cross_entropy_fused_gradcheck(device, rng, shape, kw):
    x, t, w, _, ignore = xent_inputs(rng, shape, kw)
    X = pygpu.tensor(x, device=device, requires_grad=True)
    args = dict(reduction=kw.get("reduction", "mean"),
                label_smoothing=kw.get("label_smoothing", 0.0))
    if w is not None:
        args["weight"] = pygpu.tensor(w, device=device)
    tt = pygpu.tensor(t, device=device)
    assert gradcheck(lambda v: F.cross_entropy(v, tt, **args), (X,))


def test_cross_entropy_fused_graph(device):
    x = pygpu.randn(3, 4, device=device, requires_grad=True)
    t = pygpu.tensor([0, 3, 1], device=device)
    loss = F.cross_entropy(x, t)
    assert loss.grad_fn.name() == "NllLossBackward0"
    (nxt, _), = loss.grad_fn.next_functions
    assert nxt.name() == "AccumulateGrad"
    x4 = pygpu.randn(2, 4, 3, device=device, requires_grad=True)
    loss4 = F.cross_entropy(x4, pygpu.zeros(2, 3, dtype=pygpu.int64,
                                            device=device))
    assert loss4.grad_fn.name() == "NllLoss2DBackward0"
    with pygpu.no_grad():
        assert F.cross_entropy(x, t).grad_fn is None
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a "
                       "second time"):
        loss.backward()
    with pytest.raises(NotImplementedError, match="create_graph"):
        pygpu.autograd.grad(F.cross_entropy(x, t), x, create_graph=True)


def test_cross_entropy_fused_special_values(device):
    inf, nan = float("inf"), float("nan")
    x = pygpu.tensor([[0.0, -inf], [nan, 1.0], [1000.0, 0.0], [3.0, 1.0]],
                     device=device)
    t = pygpu.tensor([0, 1, 1, -100], device=device)
    got = F.cross_entropy(x, t, reduction="none").cpu().numpy()
    np.testing.assert_allclose(got, [0.0, nan, 1000.0, 0.0])
    got = F.cross_entropy(x, t, reduction="none",
                          label_smoothing=0.3).cpu().numpy()
    np.testing.assert_allclose(got, [inf, nan, 850.0, 0.0])
    # every sample ignored: the mean is 0 / 0, the gradient 0 (as torch)
    xg = pygpu.randn(3, 4, device=device, requires_grad=True)
    loss = F.cross_entropy(xg, pygpu.full((3,), -100, dtype=pygpu.int64,
                                          device=device),
                           label_smoothing=0.2)
    assert np.isnan(loss.item())
    loss.backward()
    assert not xg.grad.cpu().numpy().any()
    # one sample of a 1-d input: a 0-d loss, its target 0-d or (1,)
    for one in (t[2], t[2:3]):
        got = F.cross_entropy(x[2], one, reduction="none")
        assert got.shape == () and got.item() == pytest.approx(1000.0)
    # no classes: only ignored samples are allowed
    none = F.cross_entropy(pygpu.empty(2, 0, device=device),
                           pygpu.full((2,), -100, dtype=pygpu.int64,
                                      device=device), reduction="sum")
    assert none.item() == 0.0


def test_cross_entropy_fused_errors(device):
    x = pygpu.randn(3, 4, device=device)
    t = pygpu.tensor([0, 1, 2], device=device)

    def tgt(*v):
        return pygpu.tensor(list(v), device=device)
    for bad, first in (([0, 4, 1], 4), ([0, -1, 5], -1), ([-100, 2, 9], 9)):
        with pytest.raises(IndexError, match=f"Target {first} is out of "
                           "bounds."):
            F.cross_entropy(x, tgt(*bad), label_smoothing=0.1)
    with pytest.raises(IndexError, match="Target -100 is out of bounds"):
        F.cross_entropy(x, tgt(0, -100, 1), ignore_index=1)
    with pytest.raises(IndexError, match="Target 0 is out of bounds"):
        F.cross_entropy(pygpu.empty(2, 0, device=device), tgt(0, 0))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) "
                       r"to match target batch_size \(2\)\."):
        F.cross_entropy(x, tgt(0, 1))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cross_entropy(x, t.reshape(3, 1))
    with pytest.raises(ValueError, match="For 1D input, 1D target must have "
                       "size 1, but got target size: 2"):
        F.cross_entropy(x[0], tgt(0, 1))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 3\], "
                       r"got \[2, 4\]"):
        F.cross_entropy(pygpu.randn(2, 4, 3, device=device),
                        pygpu.zeros(2, 4, dtype=pygpu.int64, device=device))
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined "
                       r"either for all 4 classes or no classes but got "
                       r"weight tensor of shape: \[3\]"):
        F.cross_entropy(x, t, weight=pygpu.ones(3, device=device))
    with pytest.raises(RuntimeError, match="not differentiable with respect "
                       "to argument 'weight'"):
        F.cross_entropy(x, t, weight=pygpu.ones(4, device=device,
                                                requires_grad=True))
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.cross_entropy(x.long(), t)
    with pytest.raises(RuntimeError, match="Expected floating point type for "
                       "target with class probabilities, got Long"):
        F.cross_entropy(x[0, 0], t[0])
    with pytest.raises(ValueError, match="avg is not a valid value for "
                       "reduction"):
        F.cross_entropy(x, t, reduction="avg")
    with pytest.raises(TypeError, match="'ignore_index' must be int"):
        F.cross_entropy(x, t, ignore_index=1.5)
    with pytest.raises(TypeError, match="argument 'weight' must be Tensor"):
        pygpu._C._cross_entropy(x, t, [1.0] * 4)
    if device == "cuda":
        with pytest.raises(RuntimeError, match="Expected all tensors to be "
                           "on the same device"):
            F.cross_entropy(x, t.cpu())
