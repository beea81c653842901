"""Optimizers: one step of each kind against a NumPy float64
implementation of torch's documented update rules, several steps in a
row, parameter groups, zero_grad and state dicts."""
import numpy as np
import pytest

import pygpu
from pygpu import optim


def params_and_grads(device, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    ps = [rng.standard_normal(s) for s in [(3, 4), (4,), ()]]
    gs = [[rng.standard_normal(p.shape) for p in ps] for _ in range(4)]
    tp = [pygpu.nn.Parameter(pygpu.tensor(p.astype(dtype), device=device))
          for p in ps]
    return ps, gs, tp


def run(opt, tp, gs, device):
    for step in gs:
        for p, g in zip(tp, step):
            p.grad = pygpu.tensor(np.asarray(g, np.float64), device=device)
        opt.step()


def sgd_ref(ps, gs, lr, momentum=0, dampening=0, wd=0, nesterov=False,
            maximize=False):
    ps = [p.copy() for p in ps]
    bufs = [None] * len(ps)
    for step in gs:
        for i, g in enumerate(step):
            d = -g if maximize else g.copy()
            if wd:
                d = d + wd * ps[i]
            if momentum:
                bufs[i] = d.copy() if bufs[i] is None else \
                    momentum * bufs[i] + (1 - dampening) * d
                d = d + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = ps[i] - lr * d
    return ps


def adam_ref(ps, gs, lr, b1, b2, eps, wd, decoupled, amsgrad=False):
    ps = [p.copy() for p in ps]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    vmax = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(gs, 1):
        for i, g in enumerate(step):
            if wd and decoupled:
                ps[i] = ps[i] * (1 - lr * wd)
            elif wd:
                g = g + wd * ps[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = np.maximum(vmax[i], v[i])
            vhat = vmax[i] if amsgrad else v[i]
            denom = np.sqrt(vhat) / np.sqrt(1 - b2 ** t) + eps
            ps[i] = ps[i] - lr / (1 - b1 ** t) * m[i] / denom
    return ps


SGD_CASES = [dict(lr=0.1), dict(lr=0.05, momentum=0.9),
             dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
             dict(lr=0.05, momentum=0.8, nesterov=True),
             dict(lr=0.1, maximize=True, weight_decay=0.1)]


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_against_numpy(device, kw):
    ps, gs, tp = params_and_grads(device, 1)
    run(optim.SGD(tp, **kw), tp, gs, device)
    ref = sgd_ref(ps, gs, kw["lr"], kw.get("momentum", 0),
                  kw.get("dampening", 0), kw.get("weight_decay", 0),
                  kw.get("nesterov", False), kw.get("maximize", False))
    for p, r in zip(tp, ref):
        np.testing.assert_allclose(p.detach().cpu().numpy(), r, rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("cls,kw", [
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.02, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, weight_decay=0.3)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True))])
def test_adam_against_numpy(device, cls, kw):
    ps, gs, tp = params_and_grads(device, 2)
    opt = getattr(optim, cls)(tp, **kw)
    run(opt, tp, gs, device)
    b1, b2 = kw.get("betas", (0.9, 0.999))
    wd = kw.get("weight_decay", 1e-2 if cls == "AdamW" else 0)
    ref = adam_ref(ps, gs, kw["lr"], b1, b2, kw.get("eps", 1e-8), wd,
                   cls == "AdamW", kw.get("amsgrad", False))
    for p, r in zip(tp, ref):
        np.testing.assert_allclose(p.detach().cpu().numpy(), r, rtol=1e-10,
                                   atol=1e-12)
    assert opt.state[tp[0]]["step"] == 4


def test_float32_parameters(device):
    ps, gs, tp = params_and_grads(device, 3, np.float32)
    opt = optim.Adam(tp, lr=0.01)
    for step in gs:
        for p, g in zip(tp, step):
            p.grad = pygpu.tensor(g.astype(np.float32), device=device)
        opt.step()
    ref = adam_ref([p.astype(np.float32).astype(np.float64) for p in ps],
                   gs, 0.01, 0.9, 0.999, 1e-8, 0, False)
    for p, r in zip(tp, ref):
        assert p.dtype == pygpu.float32
        np.testing.assert_allclose(p.detach().cpu().numpy(), r, rtol=1e-4,
                                   atol=1e-5)


def test_groups_zero_grad_and_skipped_parameters(device):
    ps, gs, tp = params_and_grads(device, 4)
    opt = optim.SGD([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.5}],
                    lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    tp[0].grad = pygpu.ones(3, 4, dtype=pygpu.float64, device=device)
    before = tp[1].detach().cpu().numpy().copy()
    opt.step()  # tp[1] and tp[2] have no grad: left alone
    np.testing.assert_array_equal(tp[1].detach().cpu().numpy(), before)
    np.testing.assert_allclose(tp[0].detach().cpu().numpy(), ps[0] - 0.1)
    opt.zero_grad()
    assert tp[0].grad is None
    tp[0].grad = pygpu.ones(3, 4, dtype=pygpu.float64, device=device)
    opt.zero_grad(set_to_none=False)
    assert tp[0].grad.sum().item() == 0


def test_state_dict_round_trip(device):
    ps, gs, tp = params_and_grads(device, 5)
    opt = optim.Adam(tp, lr=0.01)
    run(opt, tp, gs[:2], device)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sd["param_groups"][0]["params"] == [0, 1, 2]
    _, _, tp2 = params_and_grads(device, 5)
    for a, b in zip(tp2, tp):
        with pygpu.no_grad():
            a.copy_(b)
    opt2 = optim.Adam(tp2, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    run(opt, tp, gs[2:], device)
    run(opt2, tp2, gs[2:], device)
    for a, b in zip(tp, tp2):
        np.testing.assert_array_equal(a.detach().cpu().numpy(),
                                      b.detach().cpu().numpy())


def test_bad_arguments():
    p = pygpu.nn.Parameter(pygpu.ones(2))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.Adam(p)
    with pytest.raises(ValueError, match="Invalid beta parameter"):
        optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    assert repr(optim.SGD([p], lr=0.1)).startswith("SGD (\nParameter Group 0")
