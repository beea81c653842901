"""Losses against NumPy float64, their reductions, gradients and errors."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck

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
    with pytest.raises(RuntimeError, match="expected scalar type Long"):
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
