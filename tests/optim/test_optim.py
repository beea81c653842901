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


def adam_ref(ps, gs, lr, b1, b2, eps, wd, decoupled, amsgrad=False,
             maximize=False, states=None):
    """torch's Adam / AdamW in float64 over the steps gs; states, a dict,
    receives the moments."""
    ps = [p.copy() for p in ps]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    vmax = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(gs, 1):
        for i, g in enumerate(step):
            g = -g if maximize else g
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
    if states is not None:
        states.update(exp_avg=m, exp_avg_sq=v, max_exp_avg_sq=vmax)
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


# -- the fused step (_C._foreach_adam_ / _foreach_sgd_) ------------------------

FLOATS = {"float32": (pygpu.float32, 1e-5), "float64": (pygpu.float64, 1e-12),
          "float16": (pygpu.float16, 1e-2), "bfloat16": (pygpu.bfloat16, 1e-2)}
SHAPES = [(3, 4), (5,), (), (1, 1), (0,), (2, 0, 3)]


def lowp(x, dtype):
    """x rounded to dtype (a tensor on the CPU) and its exact values."""
    t = pygpu.tensor(np.asarray(x, np.float32)).to(dtype) \
        if dtype is pygpu.bfloat16 else pygpu.tensor(x).to(dtype)
    return t, t.to(pygpu.float64).numpy().copy()


def host(t):
    return t.detach().to(pygpu.float64).cpu().numpy()


def fused_setup(device, dtype, seed, steps=3, shapes=SHAPES):
    """Parameters of dtype on device (their float64 values), and `steps`
    rounds of gradients (tensors, float64 values)."""
    rng = np.random.default_rng(seed)
    ps, tp = [], []
    for s in shapes:
        t, v = lowp(rng.standard_normal(s), dtype)
        tp.append(pygpu.nn.Parameter(t.to(device)))
        ps.append(v)
    gs, tg = [], []
    for _ in range(steps):
        pairs = [lowp(rng.standard_normal(s), dtype) for s in shapes]
        tg.append([t.to(device) for t, _ in pairs])
        gs.append([v for _, v in pairs])
    return ps, tp, gs, tg


def run_steps(opt, tp, tg):
    for step in tg:
        for p, g in zip(tp, step):
            p.grad = g
        opt.step()


def assert_close(got, ref, rtol):
    """max |got - ref| / max(|ref|, 1): the values are of order 1, and a
    single small element (a 1x1 parameter) is not held to more than its
    neighbours would be."""
    got = host(got)
    assert got.shape == np.shape(ref)
    err = np.max(np.abs(got - ref), initial=0) / max(
        np.max(np.abs(ref), initial=0), 1)
    assert err <= rtol, (err, rtol)


ADAM_OPTIONS = [dict(amsgrad=a, maximize=m, weight_decay=wd, decoupled=d)
                for a in (False, True) for m in (False, True)
                for wd in (0, 0.1) for d in (False, True)
                if not (d and wd == 0)]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("o", ADAM_OPTIONS, ids=lambda o: "-".join(
    k for k, v in o.items() if v) or "plain")
def test_fused_adam_against_numpy(device, dt, o):
    dtype, rtol = FLOATS[dt]
    ps, tp, gs, tg = fused_setup(device, dtype, 11)
    cls = optim.AdamW if o["decoupled"] else optim.Adam
    opt = cls(tp, lr=0.02, betas=(0.8, 0.95), eps=1e-6,
              weight_decay=o["weight_decay"], amsgrad=o["amsgrad"],
              maximize=o["maximize"])
    run_steps(opt, tp, tg)
    states = {}
    ref = adam_ref(ps, gs, 0.02, 0.8, 0.95, 1e-6, o["weight_decay"],
                   o["decoupled"], o["amsgrad"], o["maximize"], states)
    for i, p in enumerate(tp):
        assert p.dtype is dtype
        assert_close(p, ref[i], rtol)
        st = opt.state[p]
        assert st["step"] == 3
        for k in ("exp_avg", "exp_avg_sq") + (
                ("max_exp_avg_sq",) if o["amsgrad"] else ()):
            assert st[k].dtype is dtype
            assert_close(st[k], states[k][i], rtol)
        assert o["amsgrad"] or "max_exp_avg_sq" not in st


SGD_OPTIONS = [dict(momentum=mo, dampening=da, nesterov=ne, weight_decay=wd,
                    maximize=ma)
               for mo in (0, 0.9) for da in (0, 0.3) for ne in (False, True)
               for wd in (0, 0.1) for ma in (False, True)
               if (mo or not (da or ne)) and not (ne and da)]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("o", SGD_OPTIONS, ids=lambda o: "-".join(
    f"{k}{v}" for k, v in o.items() if v) or "plain")
def test_fused_sgd_against_numpy(device, dt, o):
    dtype, rtol = FLOATS[dt]
    ps, tp, gs, tg = fused_setup(device, dtype, 12)
    opt = optim.SGD(tp, lr=0.05, **o)
    run_steps(opt, tp, tg)
    ref = sgd_ref(ps, gs, 0.05, o["momentum"], o["dampening"],
                  o["weight_decay"], o["nesterov"], o["maximize"])
    for i, p in enumerate(tp):
        assert_close(p, ref[i], rtol)
        assert ("momentum_buffer" in opt.state.get(p, {})) == bool(
            o["momentum"])


@pytest.mark.parametrize("make", [
    lambda tp, **kw: optim.Adam(tp, lr=0.01, amsgrad=True, **kw),
    lambda tp, **kw: optim.AdamW(tp, lr=0.01, maximize=True, **kw),
    lambda tp, **kw: optim.SGD(tp, lr=0.1, momentum=0.9, nesterov=True,
                               weight_decay=0.01, **kw)],
    ids=["adam", "adamw", "sgd"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_fused_matches_per_op_path(device, make, dt):
    dtype, rtol = FLOATS[dt]
    _, tp, _, tg = fused_setup(device, dtype, 13, steps=4)
    _, tp2, _, _ = fused_setup(device, dtype, 13, steps=4)
    fused, per_op = make(tp), make(tp2, foreach=False)
    run_steps(fused, tp, tg)
    run_steps(per_op, tp2, tg)
    for a, b in zip(tp, tp2):
        assert_close(a, host(b), 10 * rtol)
    sd, sd2 = fused.state_dict(), per_op.state_dict()
    assert sd["param_groups"][0]["foreach"] is None
    assert sd2["param_groups"][0]["foreach"] is False
    for i, st in sd["state"].items():
        assert sorted(st) == sorted(sd2["state"][i])
        for k, v in st.items():
            if k == "step":
                assert v == sd2["state"][i][k] == 4
            else:
                assert_close(v, host(sd2["state"][i][k]), 10 * rtol)


def test_fused_mixed_dtypes_late_grads_and_skips(device):
    """float32, float64 and float16 parameters in one group (a launch per
    dtype); a parameter whose gradient starts later (its own step count)
    and one never given a gradient, against the per-op path."""
    rng = np.random.default_rng(14)
    dts = [pygpu.float32, pygpu.float64, pygpu.float16, pygpu.float32]
    vals = [rng.standard_normal((3, 2)) for _ in dts]

    def make(**kw):
        tp = [pygpu.nn.Parameter(pygpu.tensor(v, dtype=d, device=device))
              for v, d in zip(vals, dts)]
        return tp, optim.Adam(tp, lr=0.05, **kw), optim.SGD(
            tp, lr=0.05, momentum=0.5, **kw)

    for which in (1, 2):
        (tp, *opts), (tp2, *opts2) = make(), make(foreach=False)
        for step in range(3):
            grads = [rng.standard_normal((3, 2)) for _ in dts]
            for ps in (tp, tp2):
                for i, (p, d) in enumerate(zip(ps, dts)):
                    late = i == 3 and step == 0
                    p.grad = None if i == 2 or late else pygpu.tensor(
                        grads[i], dtype=d, device=device)
            opts[which - 1].step()
            opts2[which - 1].step()
        for p, q, d in zip(tp, tp2, dts):
            assert p.dtype is d
            assert_close(p, host(q), 1e-2 if d is pygpu.float16 else 1e-5)
        np.testing.assert_array_equal(host(tp[2]), vals[2].astype(np.float16))
        assert tp[2] not in opts[which - 1].state
        if which == 1:
            assert [opts[0].state[tp[i]]["step"] for i in (0, 1, 3)] == \
                [3, 3, 2]


def test_fused_layouts_fall_back(device):
    """An expanded (stride 0) gradient is made contiguous; a transposed
    parameter takes the per-op path; both as the reference."""
    rng = np.random.default_rng(15)
    v = rng.standard_normal((4, 3))
    p = pygpu.nn.Parameter(pygpu.tensor(v, device=device))
    base = pygpu.tensor(rng.standard_normal((3, 4)), device=device)
    q = pygpu.nn.Parameter(base.T)
    assert not q.is_contiguous()
    w = base.T.cpu().numpy().copy()
    opt = optim.Adam([p, q], lr=0.1)
    g = rng.standard_normal(3)
    p.grad = pygpu.tensor(g, device=device).expand(4, 3)
    q.grad = pygpu.tensor(g, device=device).expand(4, 3)
    opt.step()
    ref = adam_ref([v, w], [[np.broadcast_to(g, (4, 3))] * 2], 0.1, 0.9,
                   0.999, 1e-8, 0, False)
    assert_close(p, ref[0], 1e-12)
    assert_close(q, ref[1], 1e-12)


def test_fused_versions_and_grad_mode(device):
    p = pygpu.nn.Parameter(pygpu.ones(2, 3, device=device))
    p.grad = pygpu.ones(2, 3, device=device)
    opt = optim.Adam([p], lr=0.1)
    v = p._version
    opt.step()
    st = opt.state[p]
    assert p._version == v + 1
    versions = st["exp_avg"]._version, st["exp_avg_sq"]._version
    opt.step()
    assert p._version == v + 2
    assert (st["exp_avg"]._version, st["exp_avg_sq"]._version) == tuple(
        x + 1 for x in versions)
    assert p.grad_fn is None and p.requires_grad
    with pytest.raises(RuntimeError, match="leaf Variable that requires"):
        pygpu._C._foreach_sgd_([p], [p.grad], None, 0.1, 0, 0, 0, False,
                               False, False)


def test_fused_errors(device):
    def t(*shape, dtype=pygpu.float32):
        return pygpu.zeros(*shape, dtype=dtype, device=device)

    adam = pygpu._C._foreach_adam_
    sgd = pygpu._C._foreach_sgd_
    ps = [t(2, 3), t(4)]

    def call(params=ps, grads=None, m=None, v=None, vmax=None, step=1,
             amsgrad=False):
        grads = [t(*p.shape, dtype=p.dtype) for p in params] \
            if grads is None else grads
        m = [t(*p.shape, dtype=p.dtype) for p in params] if m is None else m
        v = [t(*p.shape, dtype=p.dtype) for p in params] if v is None else v
        adam(params, grads, m, v, vmax, step, 0.1, 0.9, 0.99, 1e-8, 0.0,
             amsgrad, False, False)

    call()
    call(params=[])
    with pytest.raises(RuntimeError, match="Tensor lists must have the same "
                       "number of tensors, got 2 and 1"):
        call(grads=[t(2, 3)])
    with pytest.raises(RuntimeError, match=r"expected grads\[1\] to have the "
                       "dtype of params\\[1\\], Float, but got Double"):
        call(grads=[t(2, 3), t(4, dtype=pygpu.float64)])
    with pytest.raises(RuntimeError, match=r"expected exp_avgs\[0\] to have "
                       r"the shape of params\[0\], \[2, 3\], but got \[3, 2\]"):
        call(m=[t(3, 2), t(4)])
    with pytest.raises(RuntimeError, match=r"exp_avg_sqs\[0\] is not "
                       "contiguous"):
        call(v=[t(3, 2).T, t(4)])
    with pytest.raises(RuntimeError, match=r"exp_avgs\[1\] and "
                       r"exp_avg_sqs\[1\] share memory"):
        shared = t(4)
        call(m=[t(2, 3), shared], v=[t(2, 3), shared])
    with pytest.raises(RuntimeError, match=r"params\[0\] and grads\[0\] "
                       "share memory"):
        call(grads=[ps[0], t(4)])
    with pytest.raises(RuntimeError, match="expected floating point "
                       r"parameters, but params\[0\] has dtype Long"):
        call(params=[t(2, dtype=pygpu.int64)])
    with pytest.raises(TypeError, match="argument 'grads' must be a list of "
                       "Tensors, but item 0 is int"):
        call(grads=[1, 2])
    with pytest.raises(TypeError, match="argument 'params' must be a list"):
        call(params=ps[0])
    with pytest.raises(ValueError, match="step must be at least 1, got 0"):
        call(step=0)
    with pytest.raises(ValueError, match="amsgrad needs max_exp_avg_sqs"):
        call(amsgrad=True)
    with pytest.raises(ValueError, match="momentum needs momentum_buffers"):
        sgd(ps, ps, None, 0.1, 0.9, 0, 0, False, False, False)
    with pytest.raises(TypeError):
        sgd(ps, ps, None, 0.1)
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        optim.Adam(ps, foreach=True, fused=True)
    q = pygpu.ones(2, device=device)
    pygpu._C._foreach_sgd_([q], [q.clone()], None, 0.5, 0, 0, 0, False, False,
                           False)
    np.testing.assert_array_equal(q.cpu().numpy(), [0.5, 0.5])


@pytest.mark.cuda
def test_fused_device_mismatch():
    p = pygpu.zeros(3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the "
                       "same device, but found at least two devices"):
        pygpu._C._foreach_sgd_([p], [pygpu.zeros(3)], None, 0.1, 0, 0, 0,
                               False, False, False)


def test_fused_many_chunks(device):
    """A parameter past one CUDA chunk (64K elements) next to small ones,
    enough in all for the CPU to run without the GIL."""
    dtype, rtol = FLOATS["float32"]
    ps, tp, gs, tg = fused_setup(device, dtype, 16, steps=2,
                                 shapes=[(300, 250), (7,), (1 << 16,)])
    opt = optim.AdamW(tp, lr=0.01, amsgrad=True)
    run_steps(opt, tp, tg)
    ref = adam_ref(ps, gs, 0.01, 0.9, 0.999, 1e-8, 1e-2, True, True)
    for p, r in zip(tp, ref):
        assert_close(p, r, rtol)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_fused_parameter_listed_twice(name):
    """A parameter listed twice in a group is updated twice, one update
    after the other (never two at once over the same memory), as the
    per-op path does."""
    import warnings
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal((300, 500)).astype(np.float32)
    g0 = rng.standard_normal((300, 500)).astype(np.float32)
    out = []
    for foreach in (None, False):
        p = pygpu.from_numpy(p0.copy()).requires_grad_()
        p.grad = pygpu.from_numpy(g0)
        kw = dict(momentum=0.9) if name == "SGD" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = getattr(pygpu.optim, name)([p, p], lr=0.1,
                                             foreach=foreach, **kw)
        for _ in range(3):
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)
