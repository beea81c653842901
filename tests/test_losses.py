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
