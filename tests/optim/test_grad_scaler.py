"""GradScaler: scaling, unscaling, skipped steps on inf/NaN, growth and
backoff, state dicts, the deprecated pygpu.cuda.amp alias."""
import math

import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.amp import GradScaler


def setup(device, seed=0):
    pygpu.manual_seed(seed)
    model = nn.Linear(3, 2).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = pygpu.randn(4, 3, device=device)
    return model, opt, x


def test_scaled_step_equals_unscaled_step(device):
    m1, o1, x = setup(device)
    m2, o2, _ = setup(device)
    scaler = GradScaler(device, init_scale=1024.0)
    scaler.scale(m1(x).sum()).backward()
    g = m1.weight.grad.detach().cpu().numpy() / 1024.0
    scaler.step(o1)
    scaler.update()
    m2(x).sum().backward()
    np.testing.assert_allclose(m2.weight.grad.cpu().numpy(), g, rtol=1e-6)
    o2.step()
    for a, b in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(a.detach().cpu().numpy(),
                                   b.detach().cpu().numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert scaler.get_scale() == 1024.0


def test_inf_gradient_skips_the_step_and_backs_off(device):
    model, opt, x = setup(device)
    scaler = GradScaler(device, init_scale=8.0, growth_interval=2)
    before = model.weight.detach().cpu().numpy().copy()
    scaler.scale((model(x) * math.inf).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    np.testing.assert_array_equal(model.weight.detach().cpu().numpy(), before)
    assert scaler.get_scale() == 4.0
    for _ in range(2):  # two clean steps: the scale doubles
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 8.0
    assert not np.array_equal(model.weight.detach().cpu().numpy(), before)


def test_unscale_then_step_and_errors(device):
    model, opt, x = setup(device)
    scaler = GradScaler(device, init_scale=16.0)
    scaler.scale(model(x).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already"):
        scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    other = GradScaler(device)
    other.load_state_dict(sd)
    assert other.get_scale() == 16.0 and other.state_dict() == sd
    off = GradScaler(device, enabled=False)
    assert off.scale(x) is x and off.get_scale() == 1.0
    with pytest.raises(ValueError, match="growth factor"):
        GradScaler(device, growth_factor=1.0)


def test_cuda_amp_alias_warns():
    with pytest.warns(FutureWarning, match="deprecated"):
        s = pygpu.cuda.amp.GradScaler(init_scale=2.0)
    assert s.get_scale() == 2.0
