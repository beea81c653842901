"""RMSprop, Adagrad, Adamax, NAdam and RAdam: several steps against float64
NumPy implementations of torch's documented update rules (every option
that changes the arithmetic), float32 and float64 parameters, state dicts
and torch's refusals of bad hyper-parameters."""
import math
import zlib

import numpy as np
import pytest

import pygpu
from pygpu import optim

from conftest import rel_err

SHAPES = [(3, 4), (5,), (), (0, 3)]
STEPS = 8


def setup(device, seed, dtype=np.float32):
    """Parameters (float64 copies of the values the tensors hold), a list of
    gradient sets, and the tensors: a matrix, a vector, a scalar and an
    empty one."""
    rng = np.random.default_rng(seed)
    ps = [rng.standard_normal(s).astype(dtype).astype(np.float64)
          for s in SHAPES]
    gs = [[rng.standard_normal(p.shape).astype(dtype).astype(np.float64)
           for p in ps] for _ in range(STEPS)]
    tp = [pygpu.nn.Parameter(pygpu.tensor(p.astype(dtype), device=device))
          for p in ps]
    return ps, gs, tp


def run(opt, tp, gs, device, dtype):
    for step in gs:
        for p, g in zip(tp, step):
            p.grad = pygpu.tensor(g.astype(dtype), device=device)
        opt.step()


# float64 references of torch's rules: each takes a parameter's value, its
# gradients and the settings, and gives the value after every step.

def rmsprop_ref(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0,
                momentum=0, centered=False, maximize=False):
    v = np.zeros_like(p)
    a = np.zeros_like(p)
    b = np.zeros_like(p)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            a = alpha * a + (1 - alpha) * g
            avg = np.sqrt(v - a * a) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            b = momentum * b + g / avg
            p = p - lr * b
        else:
            p = p - lr * g / avg
    return p, dict(square_avg=v, momentum_buffer=b, grad_avg=a)


def adagrad_ref(p, grads, lr=1e-2, lr_decay=0, weight_decay=0,
                initial_accumulator_value=0, eps=1e-10, maximize=False):
    s = np.full_like(p, initial_accumulator_value)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
    return p, dict(sum=s)


def adamax_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
               weight_decay=0, maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    u = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
    return p, dict(exp_avg=m, exp_inf=u)


def nadam_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
              weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    prod = 1.0
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod *= mu
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        d = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - prod) * g / d \
            - lr * mu_next / (1 - prod * mu_next) * m / d
    return p, dict(exp_avg=m, exp_avg_sq=v, mu_product=prod)


def radam_ref(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
              weight_decay=0, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho > 5:
            r = math.sqrt((rho - 4) * (rho - 2) * rho_inf /
                          ((rho_inf - 4) * (rho_inf - 2) * rho))
            p = p - lr * mhat * r * math.sqrt(1 - b2 ** t) / \
                (np.sqrt(v) + eps)
        else:
            p = p - lr * mhat
    return p, dict(exp_avg=m, exp_avg_sq=v)


REFS = {"RMSprop": rmsprop_ref, "Adagrad": adagrad_ref,
        "Adamax": adamax_ref, "NAdam": nadam_ref, "RAdam": radam_ref}

CASES = [
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9)),
    ("RMSprop", dict(lr=1e-2, centered=True, alpha=0.8)),
    ("RMSprop", dict(lr=1e-2, momentum=0.5, centered=True,
                     weight_decay=0.05, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.2, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6,
                     maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.2)),
    ("Adamax", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("NAdam", dict(lr=0.01, betas=(0.7, 0.95))),
    # rho_t is about t for the first steps: over 8 steps both branches run
    # (b2 = 0.9: rho_6 = 5.4, rectified from step 6).
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1,
                   decoupled_weight_decay=True, maximize=True)),
]


def case_id(case):
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("dt", [np.float32, np.float64],
                         ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_against_numpy(device, case, dt):
    name, kw = case
    ps, gs, tp = setup(device, zlib.crc32(case_id(case).encode()), dt)
    opt = getattr(optim, name)(tp, **kw)
    run(opt, tp, gs, device, dt)
    tol = 1e-5 if dt is np.float32 else 1e-12
    for i, (p, t) in enumerate(zip(ps, tp)):
        ref, state = REFS[name](p, [g[i] for g in gs], **kw)
        got = t.detach().cpu().numpy()
        assert t.dtype == (pygpu.float32 if dt is np.float32
                           else pygpu.float64)
        assert rel_err(got, ref) <= tol, (i, rel_err(got, ref))
        st = opt.state[t]
        assert st["step"] == STEPS
        for k, v in st.items():
            if k == "step":
                continue
            if k == "mu_product":
                assert abs(v - state[k]) <= 1e-12
                continue
            assert rel_err(v.cpu().numpy(), state[k]) <= tol, k
    assert sum(p.numel() for p in tp) > 0


def test_parameter_moves_when_its_gradient_is_new(device):
    """A parameter with no gradient is left alone and its state not made
    (Adagrad's is made with the optimizer, as torch's)."""
    for name in REFS:
        p = pygpu.nn.Parameter(pygpu.tensor([1.0, -2.0], device=device))
        q = pygpu.nn.Parameter(pygpu.tensor([3.0], device=device))
        opt = getattr(optim, name)([p, q], lr=0.1)
        p.grad = pygpu.tensor([0.5, 0.25], device=device)
        opt.step()
        assert q.tolist() == [3.0], name
        assert p.tolist() != [1.0, -2.0], name
        if name == "Adagrad":
            assert opt.state[q]["step"] == 0
        else:
            assert q not in opt.state, name


STATE_KEYS = {
    "RMSprop": ({"momentum": 0.9, "centered": True},
                {"step", "square_avg", "momentum_buffer", "grad_avg"}),
    "Adagrad": ({}, {"step", "sum"}),
    "Adamax": ({}, {"step", "exp_avg", "exp_inf"}),
    "NAdam": ({}, {"step", "mu_product", "exp_avg", "exp_avg_sq"}),
    "RAdam": ({}, {"step", "exp_avg", "exp_avg_sq"}),
}


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_dict_round_trip(device, name):
    kw, keys = STATE_KEYS[name]
    ps, gs, tp = setup(device, 7, np.float64)
    opt = getattr(optim, name)(tp, lr=0.01, **kw)
    run(opt, tp, gs[:2], device, np.float64)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == list(range(len(tp)))
    assert set(sd["state"][0]) == keys
    assert sd["param_groups"][0]["params"] == list(range(len(tp)))
    assert sd["param_groups"][0]["lr"] == 0.01
    # A second optimizer over copies, loaded from the first's state dict,
    # then both take the same steps: they must agree exactly.
    _, _, tp2 = setup(device, 7, np.float64)
    for a, b in zip(tp2, tp):
        with pygpu.no_grad():
            a.copy_(b)
    opt2 = getattr(optim, name)(tp2, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    run(opt, tp, gs[2:], device, np.float64)
    run(opt2, tp2, gs[2:], device, np.float64)
    for a, b in zip(tp, tp2):
        np.testing.assert_array_equal(a.detach().cpu().numpy(),
                                      b.detach().cpu().numpy())
    assert opt2.state[tp2[0]]["step"] == STEPS
    # The state dict holds copies: the optimizer's steps did not change it.
    assert sd["state"][0]["step"] == 2


def bad(cls, **kw):
    p = pygpu.nn.Parameter(pygpu.zeros(2))
    return lambda: getattr(optim, cls)([p], **kw)


@pytest.mark.parametrize("cls,kw,msg", [
    ("RMSprop", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("RMSprop", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("RMSprop", dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    ("RMSprop", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RMSprop", dict(alpha=-0.1), "Invalid alpha value: -0.1"),
    ("RMSprop", dict(lr=float("nan")), "Invalid learning rate: nan"),
    ("Adagrad", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    ("Adagrad", dict(eps=-1), "Invalid epsilon value: -1"),
    ("Adamax", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adamax", dict(eps=-1), "Invalid epsilon value: -1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: "
     "1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: "
     "-0.1"),
    ("Adamax", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("NAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("NAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("NAdam", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: "
     "1.0"),
    ("NAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("RAdam", dict(betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: "
     "-0.1"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
])
def test_bad_hyper_parameters(cls, kw, msg):
    with pytest.raises(ValueError) as e:
        bad(cls, **kw)()
    assert str(e.value) == msg


@pytest.mark.parametrize("name", sorted(REFS))
def test_common_refusals_and_closure(name):
    cls = getattr(optim, name)
    with pytest.raises(ValueError, match="empty parameter list"):
        cls([])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        cls(pygpu.nn.Parameter(pygpu.zeros(2)))
    p = pygpu.nn.Parameter(pygpu.tensor([1.0, 2.0]))
    opt = cls([p], lr=0.1)
    calls = []

    def closure():
        calls.append(pygpu.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert calls == [True] and loss.item() == 5.0
    assert p.tolist() != [1.0, 2.0]
    assert p.grad is not None and p.grad_fn is None


@pytest.mark.parametrize("name", sorted(REFS))
def test_groups_take_their_own_settings(device, name):
    """Two groups, the second with its own lr and weight decay: each
    matches its reference."""
    ps, gs, tp = setup(device, 11, np.float64)
    opt = getattr(optim, name)([
        {"params": tp[:2]},
        {"params": tp[2:], "lr": 0.05, "weight_decay": 0.1}], lr=0.01)
    run(opt, tp, gs, device, np.float64)
    for i, t in enumerate(tp):
        kw = dict(lr=0.01) if i < 2 else dict(lr=0.05, weight_decay=0.1)
        ref, _ = REFS[name](ps[i], [g[i] for g in gs], **kw)
        assert rel_err(t.detach().cpu().numpy(), ref) <= 1e-12


def test_noncontiguous_gradient(device):
    """A transposed gradient is read by its strides."""
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((3, 4))
    gs = [rng.standard_normal((4, 3)) for _ in range(3)]
    for name in REFS:
        t = pygpu.nn.Parameter(pygpu.tensor(p0, device=device))
        opt = getattr(optim, name)([t], lr=0.01)
        for g in gs:
            t.grad = pygpu.tensor(g, device=device).t()
            assert not t.grad.is_contiguous()
            opt.step()
        ref, _ = REFS[name](p0, [g.T for g in gs], lr=0.01)
        assert rel_err(t.detach().cpu().numpy(), ref) <= 1e-12, name


def test_foreach_kept_in_groups():
    p = pygpu.nn.Parameter(pygpu.zeros(2))
    for name in REFS:
        opt = getattr(optim, name)([p], foreach=False)
        assert opt.param_groups[0]["foreach"] is False
        assert opt.defaults["maximize"] is False


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_against_torch(case):
    """The same steps through torch's own optimizer (float64, CPU). torch
    keeps NAdam's mu_product as a float32 tensor, hence 1e-8 rather than
    float64's 1e-12."""
    torch = pytest.importorskip("torch")
    name, kw = case
    ps, gs, tp = setup("cpu", zlib.crc32(case_id(case).encode()),
                       np.float64)
    ref = [torch.tensor(p, requires_grad=True) for p in ps]
    opt = getattr(optim, name)(tp, **kw)
    topt = getattr(torch.optim, name)(ref, **kw)
    for step in gs:
        for p, r, g in zip(tp, ref, step):
            p.grad = pygpu.tensor(g)
            r.grad = torch.tensor(g)
        opt.step()
        topt.step()
        for p, r in zip(tp, ref):
            assert rel_err(p.detach().numpy(), r.detach().numpy()) <= 1e-8
    for p, r in zip(tp, ref):
        got, want = opt.state[p], topt.state[r]
        assert set(got) == set(want)
        for k, v in want.items():
            if k == "step" or k == "mu_product":
                assert abs(float(got[k]) - float(v)) <= 1e-7 * abs(float(v))
            else:
                assert rel_err(got[k].numpy(), v.numpy()) <= 1e-8, k


HALF_CASES = [c for c in CASES if not c[1].get("centered")]


@pytest.mark.parametrize("case", HALF_CASES,
                         ids=[case_id(c) for c in HALF_CASES])
def test_half_parameters(device, case):
    """float16 parameters keep float16 state; their values follow the
    float64 reference to float16's tolerance."""
    name, kw = case
    ps, gs, tp = setup(device, zlib.crc32(case_id(case).encode()),
                       np.float16)
    opt = getattr(optim, name)(tp, **kw)
    run(opt, tp, gs, device, np.float16)
    for i, (p, t) in enumerate(zip(ps, tp)):
        ref, _ = REFS[name](p, [g[i] for g in gs], **kw)
        assert t.dtype == pygpu.float16
        assert rel_err(t.detach().cpu().numpy(), ref) <= 1e-2, i
        for k, v in opt.state[t].items():
            if k not in ("step", "mu_product"):
                assert v.dtype == pygpu.float16, k
