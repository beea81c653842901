"""Dropout: F.dropout / dropout1d / dropout2d / alpha_dropout and their
modules: train and eval, the p edges, torch's errors, the kept values and
the gradient (the saved mask times 1 / (1 - p)), in place, channels."""
import math
import warnings

import numpy as np
import pytest

import pygpu as torch
import pygpu.nn.functional as F
from pygpu import nn


def away_from_zero(shape, device, dtype=torch.float32, seed=0):
    """Fresh random numbers with |x| >= 0.5, so a zero output is a drop."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return torch.tensor(v, dtype=dtype, device=device)


def test_dropout_values_and_rate(device):
    torch.manual_seed(0)
    p = 0.3
    x = away_from_zero((200, 150), device)
    y = F.dropout(x, p)
    xv, yv = x.cpu().numpy(), y.cpu().numpy()
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], xv[kept] / (1 - p), rtol=1e-6)
    n = kept.size
    assert abs(kept.mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)


def test_dropout_gradient_is_scaled_mask(device):
    torch.manual_seed(1)
    p = 0.4
    x = away_from_zero((64, 33), device).requires_grad_(True)
    y = F.dropout(x, p, training=True)
    g = away_from_zero((64, 33), device, seed=1)
    y.backward(g)
    mask = (y.detach().cpu().numpy() != 0).astype(np.float64)
    expected = g.cpu().numpy().astype(np.float64) * mask / (1 - p)
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, rtol=1e-6)


def test_dropout_eval_and_edges(device):
    x = away_from_zero((10, 10), device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    assert (z.cpu().numpy() == 0).all()
    e = torch.zeros(0, 4, device=device)
    assert F.dropout(e, 0.5).shape == (0, 4)
    one = away_from_zero((1,), device)
    v = F.dropout(one, 0.5).cpu().numpy()[0]
    assert v == 0 or abs(v - 2 * one.cpu().numpy()[0]) < 1e-6
    # p = 1: zeros with a zero gradient
    w = away_from_zero((4,), device).requires_grad_(True)
    F.dropout(w, 1.0).sum().backward()
    assert (w.grad.cpu().numpy() == 0).all()


def test_dropout_module_train_eval(device):
    m = nn.Dropout(0.5)
    assert repr(m) == "Dropout(p=0.5, inplace=False)"
    x = away_from_zero((100, 100), device)
    torch.manual_seed(2)
    y = m(x)
    assert (y.cpu().numpy() == 0).any()
    m.eval()
    np.testing.assert_array_equal(m(x).cpu().numpy(), x.cpu().numpy())
    m.train()
    torch.manual_seed(2)
    np.testing.assert_array_equal(m(x).cpu().numpy(), y.cpu().numpy())


def test_dropout_errors():
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be "
                           f"between 0 and 1, but got {bad}"):
            F.dropout(torch.ones(3), bad)
        with pytest.raises(ValueError, match="dropout probability"):
            nn.Dropout(bad)
        with pytest.raises(ValueError, match="dropout probability"):
            F.dropout2d(torch.ones(2, 2, 2, 2), bad)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D "
                       "input, but received a 4D input"):
        F.dropout1d(torch.ones(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Feature dropout requires at "
                       "least 2 dimensions"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F.dropout2d(torch.ones(5))


def test_dropout_inplace(device):
    torch.manual_seed(3)
    x = away_from_zero((50, 40), device)
    before = x.cpu().numpy().copy()
    y = F.dropout(x, 0.25, inplace=True)
    assert y is x
    v = x.cpu().numpy()
    kept = v != 0
    assert (~kept).any()
    np.testing.assert_allclose(v[kept], before[kept] / 0.75, rtol=1e-6)
    # in place on a non-leaf: the gradient flows through the mask
    a = away_from_zero((30,), device).requires_grad_(True)
    b = a * 1.0
    nn.Dropout(0.5, inplace=True)(b)
    b.sum().backward()
    mask = b.detach().cpu().numpy() != 0
    np.testing.assert_allclose(a.grad.cpu().numpy(), mask * 2.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64,
                                   torch.bfloat16])
def test_dropout_dtypes(device, dtype):
    torch.manual_seed(4)
    x = away_from_zero((100, 10), device, dtype)
    y = F.dropout(x, 0.5)
    assert y.dtype == dtype
    xv = x.float().cpu().numpy()
    yv = y.float().cpu().numpy()
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], 2 * xv[kept], rtol=1e-2)
    assert 0.35 < kept.mean() < 0.65


def channel_state(y, x, scale):
    """Per leading (N, C) slice: True kept whole, False dropped whole."""
    yv, xv = y.cpu().numpy(), x.cpu().numpy()
    lead = yv.shape[:2] if yv.ndim > 2 else yv.shape[:1]
    yv = yv.reshape(lead + (-1,))
    xv = xv.reshape(lead + (-1,))
    kept = np.all(np.isclose(yv, xv * scale, rtol=1e-6), axis=-1)
    dropped = np.all(yv == 0, axis=-1)
    assert np.all(kept | dropped), "a channel was partly dropped"
    return kept


def test_dropout2d_channels(device):
    torch.manual_seed(5)
    x = away_from_zero((40, 30, 3, 4), device)
    y = F.dropout2d(x, 0.4)
    kept = channel_state(y, x, 1 / 0.6)
    assert abs(kept.mean() - 0.6) < 5 * math.sqrt(0.24 / kept.size)
    m = nn.Dropout2d(0.4)
    m.eval()
    assert m(x) is x


def test_dropout2d_3d_input_warns(device):
    x = away_from_zero((8, 6, 5), device)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y = F.dropout2d(x, 0.5)
    channel_state(y, x, 2.0)


def test_dropout1d_channels(device):
    torch.manual_seed(6)
    x = away_from_zero((30, 20, 7), device)
    kept = channel_state(nn.Dropout1d(0.5)(x), x, 2.0)
    assert 0.35 < kept.mean() < 0.65
    u = away_from_zero((50, 9), device)  # unbatched (C, L)
    kept = channel_state(F.dropout1d(u, 0.5), u, 2.0)
    assert kept.shape == (50,)


def test_dropout2d_gradient(device):
    torch.manual_seed(7)
    x = away_from_zero((6, 5, 2, 2), device).requires_grad_(True)
    y = F.dropout2d(x, 0.5)
    y.sum().backward()
    mask = (y.detach().cpu().numpy() != 0) * 2.0
    np.testing.assert_allclose(x.grad.cpu().numpy(), mask, rtol=1e-6)


def test_alpha_dropout(device):
    torch.manual_seed(8)
    x = torch.randn(200000, device=device)
    m = nn.AlphaDropout(0.2)
    y = m(x).cpu().numpy().astype(np.float64)
    # keeps a standard normal input's mean and variance
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1.0) < 0.02
    m.eval()
    assert m(x) is x
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False


def test_dropout_reproducible(device):
    x = away_from_zero((64,), device)
    torch.manual_seed(9)
    a = F.dropout(x, 0.5).cpu().numpy()
    torch.manual_seed(9)
    b = F.dropout(x, 0.5).cpu().numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.cuda
def test_dropout_cpu_cuda_same_mask():
    x = away_from_zero((33, 17), "cpu")
    torch.manual_seed(10)
    a = F.dropout(x, 0.3).numpy()
    torch.manual_seed(10)
    b = F.dropout(x.cuda(), 0.3).cpu().numpy()
    np.testing.assert_array_equal(a, b)
    y = away_from_zero((4, 6, 3, 3), "cpu")
    torch.manual_seed(11)
    c = F.dropout2d(y, 0.5).numpy()
    torch.manual_seed(11)
    d = F.dropout2d(y.cuda(), 0.5).cpu().numpy()
    np.testing.assert_array_equal(c, d)
