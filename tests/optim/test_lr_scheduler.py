"""pygpu.optim.lr_scheduler: each scheduler's lr sequence against values
worked out by hand and, where torch is installed, against torch's
schedulers step by step (lrs, momentum and betas); torch's warnings and
errors; state dicts."""
import math
import warnings

import pytest

import pygpu
from pygpu import optim
from pygpu.optim import lr_scheduler as L


def make_opt(cls="SGD", lrs=(1.0,), **kw):
    """An optimizer over one parameter per group, group i with lr lrs[i];
    SGD gets momentum (for the cycling schedulers)."""
    if cls == "SGD":
        kw.setdefault("momentum", 0.9)
    groups = [{"params": [pygpu.nn.Parameter(pygpu.zeros(2))], "lr": lr}
              for lr in lrs]
    return getattr(optim, cls)(groups, lr=lrs[0], **kw)


def walk(opt, sched, n, metrics=None):
    """The lrs of the first group: at construction, then after each of n
    (optimizer step, scheduler step) pairs."""
    out = [opt.param_groups[0]["lr"]]
    for i in range(n):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return out


def close(got, want, tol=1e-12):
    assert len(got) == len(want), (got, want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert abs(a - b) <= tol * max(1.0, abs(b)), (i, got, want)


# Hand-derived sequences (lr 1.0 unless said).

def test_step_multistep_exponential():
    opt = make_opt()
    close(walk(opt, L.StepLR(opt, step_size=2, gamma=0.1), 5),
          [1, 1, 0.1, 0.1, 0.01, 0.01])
    opt = make_opt()
    close(walk(opt, L.MultiStepLR(opt, [2, 4, 4], gamma=0.5), 5),
          [1, 1, 0.5, 0.5, 0.125, 0.125])
    opt = make_opt()
    close(walk(opt, L.ExponentialLR(opt, 0.5), 3), [1, 0.5, 0.25, 0.125])


def test_lambda_multiplicative_linear_constant():
    opt = make_opt(lrs=(2.0,))
    close(walk(opt, L.LambdaLR(opt, lambda e: 1 / (e + 1)), 3),
          [2, 1, 2 / 3, 0.5])
    opt = make_opt()
    close(walk(opt, L.MultiplicativeLR(opt, lambda e: 0.5), 3),
          [1, 0.5, 0.25, 0.125])
    opt = make_opt()
    close(walk(opt, L.LinearLR(opt, 0.5, 1.0, total_iters=2), 4),
          [0.5, 0.75, 1, 1, 1])
    opt = make_opt()
    close(walk(opt, L.ConstantLR(opt, factor=0.5, total_iters=2), 3),
          [0.5, 0.5, 1, 1])
    opt = make_opt()
    close(walk(opt, L.PolynomialLR(opt, total_iters=4, power=2.0), 5),
          [1, 0.5625, 0.25, 0.0625, 0, 0])


def test_cosine_annealing_recursive_form():
    opt = make_opt()
    c = (1 + math.cos(math.pi / 4)) / 2
    seq = walk(opt, L.CosineAnnealingLR(opt, T_max=4, eta_min=0.0), 8)
    # Down to 0 at T_max, then back up along the same curve.
    close(seq, [1, c, 0.5, 1 - c, 0, 1 - c, 0.5, c, 1])
    # The recursive form carries a change made to the lr between steps.
    opt = make_opt()
    s = L.CosineAnnealingLR(opt, T_max=4)
    opt.step()
    s.step()
    opt.param_groups[0]["lr"] = c / 2
    s.step()
    close([opt.param_groups[0]["lr"]], [0.25])


def test_warm_restarts_and_fractional_epochs():
    opt = make_opt()
    s = L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    q = (1 + math.cos(math.pi / 4)) / 2
    close(walk(opt, s, 6), [1, 0.5, 1, q, 0.5, 1 - q, 1])
    assert (s.T_i, s.T_cur) == (8, 0)
    s.step(2.5)  # in the second period (epochs 2..6): T_cur 0.5 of 4
    assert (s.T_i, s.T_cur, s.last_epoch) == (4, 0.5, 2)
    close(s.get_last_lr(), [(1 + math.cos(math.pi * 0.5 / 4)) / 2])
    s.step(1.5)
    assert (s.T_i, s.T_cur) == (2, 1.5)
    opt = make_opt()
    s = L.CosineAnnealingWarmRestarts(opt, T_0=3, eta_min=0.1)
    s.step(7.5)  # T_mult 1: T_cur = 7.5 % 3
    close(s.get_last_lr(), [0.1 + 0.9 * (1 + math.cos(math.pi * 1.5 / 3)) / 2])
    with pytest.raises(ValueError, match="Expected non-negative epoch, but "
                       "got -1"):
        s.step(-1)


def test_one_cycle_linear_and_momentum():
    opt = make_opt()
    s = L.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3,
                     anneal_strategy="linear", div_factor=10.0,
                     final_div_factor=100.0)
    g = opt.param_groups[0]
    assert (g["initial_lr"], g["max_lr"], g["min_lr"]) == (0.1, 1.0, 0.001)
    moms = [g["momentum"]]
    seq = [g["lr"]]
    for _ in range(9):
        opt.step()
        s.step()
        seq.append(g["lr"])
        moms.append(g["momentum"])
    # Up from 0.1 to 1 at step 2, then down to 0.001 at step 9.
    want = [0.1, 0.55, 1.0] + [1 + (0.001 - 1) * (t - 2) / 7
                               for t in range(3, 10)]
    close(seq, want)
    close(moms, [0.95, 0.9, 0.85] + [0.85 + 0.1 * (t - 2) / 7
                                      for t in range(3, 10)])
    opt.step()
    s.step()  # step 10 = total_steps is allowed, the next is not
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 11 times. The "
                       "specified number of total steps is 10"):
        s.step()


def test_one_cycle_cos_three_phase_betas():
    opt = make_opt("Adam")
    s = L.OneCycleLR(opt, max_lr=1.0, epochs=2, steps_per_epoch=5,
                     three_phase=True, div_factor=4.0)
    g = opt.param_groups[0]
    assert g["betas"] == (0.95, 0.999)
    seq = walk(opt, s, 9)
    # Phases end at steps 2 (up), 4 (back to 0.25) and 9 (down to 2.5e-5).
    close(seq[:5], [0.25, 0.625, 1.0, 0.625, 0.25])
    close([seq[9]], [0.25 / 1e4])
    assert g["betas"][1] == 0.999 and abs(g["betas"][0] - 0.95) < 1e-12


def test_cyclic_modes():
    opt = make_opt()
    s = L.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
    g = opt.param_groups[0]
    assert g["initial_lr"] == 0.1 and g["momentum"] == 0.9
    close(walk(opt, s, 6), [0.1, 0.55, 1, 0.55, 0.1, 0.55, 1])
    close([g["momentum"]], [0.8])
    opt = make_opt()
    s = L.CyclicLR(opt, 0.1, 1.0, step_size_up=2, mode="triangular2",
                   cycle_momentum=False)
    close(walk(opt, s, 7), [0.1, 0.55, 1, 0.55, 0.1, 0.325, 0.55, 0.325])
    assert opt.param_groups[0]["momentum"] == 0.9
    opt = make_opt()
    s = L.CyclicLR(opt, 0.1, 1.0, step_size_up=1, step_size_down=3,
                   mode="exp_range", gamma=0.5)
    close(walk(opt, s, 3), [0.1, 0.1 + 0.9 * 0.5, 0.1 + 0.9 * 2 / 3 * 0.25,
                            0.1 + 0.9 / 3 * 0.125])
    opt = make_opt()
    s = L.CyclicLR(opt, 0.1, 1.0, step_size_up=2,
                   scale_fn=lambda x: 0.5, scale_mode="iterations")
    close(walk(opt, s, 2), [0.1, 0.325, 0.55])


def test_reduce_on_plateau():
    opt = make_opt(lrs=(1.0, 0.01))
    s = L.ReduceLROnPlateau(opt, factor=0.5, patience=1, min_lr=[0, 0.008])
    seq = walk(opt, s, 7, [1, 1, 1, 0.5, 0.5, 0.5, 0.5])
    close(seq, [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25])
    # The second group stops at its min_lr.
    assert opt.param_groups[1]["lr"] == 0.008
    # A gain below the relative threshold is no gain; cooldown counts none.
    opt = make_opt()
    s = L.ReduceLROnPlateau(opt, factor=0.1, patience=0, threshold=0.1,
                            cooldown=2)
    close(walk(opt, s, 5, [10, 9.5, 5, 5, 5]), [1, 1, 0.1, 0.1, 0.1, 0.01])
    opt = make_opt()
    s = L.ReduceLROnPlateau(opt, mode="max", patience=0,
                            threshold_mode="abs", threshold=1.0)
    close(walk(opt, s, 3, [1, 1.5, 3]), [1, 1, 0.1, 0.1])
    # A change smaller than eps is skipped.
    opt = make_opt(lrs=(1e-9,))
    s = L.ReduceLROnPlateau(opt, patience=0)
    walk(opt, s, 3, [1, 1, 1])
    assert opt.param_groups[0]["lr"] == 1e-9
    assert s.last_epoch == 3


def test_sequential_and_chained():
    opt = make_opt()
    s = L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.1, total_iters=5),
                             L.ExponentialLR(opt, 0.5)], milestones=[2])
    close(walk(opt, s, 4), [0.1, 0.1, 1, 0.5, 0.25])
    opt = make_opt()
    s = L.ChainedScheduler([L.ConstantLR(opt, factor=0.5, total_iters=2),
                            L.ExponentialLR(opt, 0.9)])
    close(walk(opt, s, 3), [0.5, 0.45, 0.81, 0.729])


def test_initial_lr_and_resume():
    opt = make_opt(lrs=(1.0, 0.5))
    s = L.StepLR(opt, 1, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.5]
    assert s.base_lrs == [1.0, 0.5] and s.last_epoch == 0
    opt.step()
    s.step()
    # A second scheduler keeps the recorded initial_lr.
    s2 = L.ExponentialLR(opt, 0.9)
    assert s2.base_lrs == [1.0, 0.5]
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not "
                       r"specified in param_groups\[0\] when resuming"):
        L.StepLR(make_opt(), 1, last_epoch=3)
    # Resumed with last_epoch: the lr stays where it is at construction.
    opt = make_opt()
    opt.param_groups[0]["initial_lr"] = 1.0
    opt.param_groups[0]["lr"] = 0.25
    s = L.ExponentialLR(opt, 0.5, last_epoch=2)
    assert s.last_epoch == 3 and opt.param_groups[0]["lr"] == 0.25


# Warnings.

def test_step_order_warning():
    opt = make_opt()
    s = L.StepLR(opt, 1)
    with pytest.warns(UserWarning, match=r"Detected call of "
                      r"`lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt = make_opt()
    s = L.StepLR(opt, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        s.step()
        opt.step()
        s.step()
    # The wrapped step still steps and returns the closure's loss.
    p = opt.param_groups[0]["params"][0]
    assert opt.step(lambda: 3.0) == 3.0 and p.shape == (2,)


def test_overridden_step_and_get_lr_warnings():
    opt = make_opt()
    s = L.StepLR(opt, 1)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` "
                      "has been overridden"):
        s.step()
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        s.get_lr()
    with pytest.warns(UserWarning, match="The epoch parameter in "
                      r"`scheduler.step\(\)` was not necessary"):
        s.step(5)
    assert s.get_last_lr() == [0.1 ** 5]  # the closed form


def test_wrapping_once():
    opt = make_opt()
    L.StepLR(opt, 1)
    wrapped = opt.step
    L.ExponentialLR(opt, 0.5)
    assert opt.step is wrapped


# State dicts.

def test_state_dict_round_trip():
    opt = make_opt(lrs=(1.0, 0.5))
    s = L.MultiStepLR(opt, [2, 3], gamma=0.5)
    walk(opt, s, 2)
    sd = s.state_dict()
    assert "optimizer" not in sd
    assert sd["last_epoch"] == 2 and sd["base_lrs"] == [1.0, 0.5]
    assert sd["_last_lr"] == [0.5, 0.25]
    opt2 = make_opt(lrs=(1.0, 0.5))
    s2 = L.MultiStepLR(opt2, [7], gamma=0.1)
    s2.load_state_dict(sd)
    opt2.load_state_dict(opt.state_dict())
    assert walk(opt2, s2, 3) == walk(opt, s, 3)
    assert s2.last_epoch == 5


class Decay:
    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** epoch


def test_lambda_state_dict():
    opt = make_opt(lrs=(1.0, 1.0))
    s = L.LambdaLR(opt, [lambda e: 1.0, Decay(0.5)])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [None, {"rate": 0.5}]
    opt2 = make_opt(lrs=(1.0, 1.0))
    fn = Decay(0.9)
    s2 = L.LambdaLR(opt2, [lambda e: 2.0, fn])
    s2.load_state_dict(sd)
    assert fn.rate == 0.5 and callable(s2.lr_lambdas[0])
    assert sd["lr_lambdas"] == [None, {"rate": 0.5}]  # left as it was


def test_composite_and_plateau_state_dicts():
    opt = make_opt()
    s = L.SequentialLR(opt, [L.ConstantLR(opt, 0.5, 2),
                             L.StepLR(opt, 2)], [3])
    walk(opt, s, 4)
    sd = s.state_dict()
    assert [type(x) for x in sd["_schedulers"]] == [dict, dict]
    assert sd["_schedulers"][1]["last_epoch"] == 1
    opt2 = make_opt()
    s2 = L.SequentialLR(opt2, [L.ConstantLR(opt2, 0.5, 2),
                               L.StepLR(opt2, 2)], [3])
    s2.load_state_dict(sd)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    assert walk(opt2, s2, 4) == walk(opt, s, 4)
    opt = make_opt()
    p = L.ReduceLROnPlateau(opt, patience=0)
    walk(opt, p, 2, [1, 2])
    sd = p.state_dict()
    assert sd["best"] == 1 and sd["num_bad_epochs"] == 0
    p2 = L.ReduceLROnPlateau(make_opt(), mode="max")
    p2.load_state_dict(sd)
    assert p2.mode == "min" and p2.mode_worse == math.inf
    assert p2.is_better(0.5, 1) and not p2.is_better(1, 1)


def test_cyclic_state_dict_drops_functions():
    opt = make_opt()
    s = L.CyclicLR(opt, 0.1, 1.0, mode="exp_range", gamma=0.9)
    sd = s.state_dict()
    assert "_scale_fn_ref" not in sd and sd["_scale_fn_custom"] is None
    s2 = L.CyclicLR(make_opt(), 0.1, 1.0)
    s2.load_state_dict(sd)
    assert s2.mode == "exp_range" and s2.scale_fn(2) == pytest.approx(0.81)
    fn = Decay(0.5)
    s3 = L.CyclicLR(make_opt(), 0.1, 1.0, scale_fn=fn)
    assert s3.state_dict()["_scale_fn_custom"] == {"rate": 0.5}


# Errors in torch's words.

@pytest.mark.parametrize("make,exc,msg", [
    (lambda o: L.StepLR(object(), 1), TypeError, "object is not an "
     "Optimizer"),
    (lambda o: L.LambdaLR(o, [lambda e: 1, lambda e: 1]), ValueError,
     "Expected 1 lr_lambdas, but got 2"),
    (lambda o: L.MultiplicativeLR(o, 0.5), TypeError,
     "lr_lambda should be a function, but got float"),
    (lambda o: L.ConstantLR(o, factor=2), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: L.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less "
     "or equal to 1."),
    (lambda o: L.LinearLR(o, end_factor=1.5), ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, T_mult=1.5), ValueError,
     "Expected integer T_mult >= 1, but got 1.5"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, eta_min="0"), ValueError,
     "Expected float or int eta_min, but got 0 of type <class 'str'>"),
    (lambda o: L.OneCycleLR(o, 1.0), ValueError, "You must define either "
     "total_steps OR (epochs AND steps_per_epoch)"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=0), ValueError,
     "Expected positive integer total_steps, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=2),
     ValueError, "Expected positive integer epochs, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=1.0),
     ValueError, "Expected positive integer steps_per_epoch, but got 1.0"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda o: L.OneCycleLR(o, [1.0, 2.0], 10), ValueError,
     "max_lr must have the same length as optimizer.param_groups. max_lr "
     "has 2 values, param_groups has 1."),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, mode="sine"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda o: L.ReduceLROnPlateau(o, factor=1.0), ValueError,
     "Factor should be < 1.0."),
    (lambda o: L.ReduceLROnPlateau(o, mode="mid"), ValueError,
     "mode mid is unknown!"),
    (lambda o: L.ReduceLROnPlateau(o, threshold_mode="x"), ValueError,
     "threshold mode x is unknown!"),
    (lambda o: L.ReduceLROnPlateau(o, min_lr=[0, 0]), ValueError,
     "expected 1 min_lrs, got 2"),
    (lambda o: L.SequentialLR(o, [], []), ValueError,
     "SequentialLR expects at least one scheduler, but got no scheduler."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 1)], [1]), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one "
     "more than the number of milestone points, but got number of "
     "schedulers 1 and the number of milestones to be equal to 1"),
    (lambda o: L.ChainedScheduler([]), ValueError, "ChainedScheduler "
     "expects at least one scheduler to be chained, but got no scheduler."),
    (lambda o: L.ChainedScheduler([L.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
    (lambda o: L.SequentialLR(o, [L.StepLR(make_opt(), 1)], []), ValueError,
     "SequentialLR expects all schedulers to belong to the same optimizer"),
    (lambda o: L.ChainedScheduler([object()]), AttributeError, "optimizer"),
])
def test_errors(make, exc, msg):
    with pytest.raises(exc) as e:
        make(make_opt())
    assert msg in str(e.value)


def test_cycle_momentum_needs_momentum():
    opt = make_opt("Adagrad")
    with pytest.raises(ValueError, match="optimizer must support momentum "
                       "or beta1 with `cycle_momentum` option enabled"):
        L.CyclicLR(opt, 0.1, 1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        L.OneCycleLR(opt, 1.0, 10)
    opt = make_opt("Adagrad")
    L.CyclicLR(opt, 0.1, 1.0, cycle_momentum=False)
    assert opt.param_groups[0]["lr"] == 0.1


# Against torch (skipped without it): the same settings, step by step.

TORCH_CASES = {
    "step": ("SGD", lambda L, o: L.StepLR(o, 3, gamma=0.5)),
    "multistep": ("SGD", lambda L, o: L.MultiStepLR(o, [2, 5, 5, 9], 0.3)),
    "exponential": ("SGD", lambda L, o: L.ExponentialLR(o, 0.8)),
    "cosine": ("SGD", lambda L, o: L.CosineAnnealingLR(o, 5, eta_min=0.01)),
    "warm_restarts": ("SGD", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001)),
    "warm_restarts_1": ("SGD", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=4)),
    "lambda": ("SGD", lambda L, o: L.LambdaLR(
        o, [lambda e: 0.9 ** e, lambda e: 1 / (1 + e)])),
    "multiplicative": ("SGD", lambda L, o: L.MultiplicativeLR(
        o, lambda e: 0.95)),
    "linear": ("SGD", lambda L, o: L.LinearLR(o, 0.25, 0.9, total_iters=4)),
    "constant": ("SGD", lambda L, o: L.ConstantLR(o, 0.3, 4)),
    "polynomial": ("SGD", lambda L, o: L.PolynomialLR(o, 6, power=2.0)),
    "one_cycle": ("SGD", lambda L, o: L.OneCycleLR(o, [1.0, 0.5], 30)),
    "one_cycle_linear_3": ("SGD", lambda L, o: L.OneCycleLR(
        o, 2.0, epochs=3, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, base_momentum=[0.8, 0.7], max_momentum=0.9)),
    "one_cycle_betas": ("Adam", lambda L, o: L.OneCycleLR(
        o, 1.0, 30, pct_start=0.4, div_factor=5.0)),
    "one_cycle_no_mom": ("Adagrad", lambda L, o: L.OneCycleLR(
        o, 1.0, 30, cycle_momentum=False)),
    "cyclic": ("SGD", lambda L, o: L.CyclicLR(o, 0.01, [1.0, 0.5], 4)),
    "cyclic_2": ("SGD", lambda L, o: L.CyclicLR(
        o, [0.1, 0.2], 1.0, 3, step_size_down=5, mode="triangular2")),
    "cyclic_exp_betas": ("Adam", lambda L, o: L.CyclicLR(
        o, 0.1, 1.0, 4, mode="exp_range", gamma=0.9)),
    "cyclic_scale_fn": ("SGD", lambda L, o: L.CyclicLR(
        o, 0.1, 1.0, 2, scale_fn=lambda x: 1 / (1 + x),
        scale_mode="iterations", base_momentum=0.5, max_momentum=0.6)),
    "sequential": ("SGD", lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, 0.1, total_iters=3), L.ExponentialLR(o, 0.9),
            L.StepLR(o, 2)], milestones=[3, 8])),
    "sequential_cos": ("SGD", lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, 0.5, 10), L.CosineAnnealingLR(o, 6)], [4])),
    "chained": ("SGD", lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, 0.5, 3), L.ExponentialLR(o, 0.9),
         L.MultiStepLR(o, [4, 6])])),
}

PLATEAU_CASES = {
    "min_rel": dict(factor=0.5, patience=2),
    "max_abs": dict(mode="max", threshold_mode="abs", threshold=0.05,
                    patience=1, cooldown=2),
    "min_lr": dict(factor=0.2, patience=0, min_lr=[0.01, 0.02], eps=1e-3),
}


def groups_of(opt):
    return [(g["lr"], g.get("momentum"), tuple(g.get("betas", ())))
            for g in opt.param_groups]


def torch_pair(cls):
    torch = pytest.importorskip("torch")
    ours = make_opt(cls, lrs=(0.3, 0.1))
    kw = {"momentum": 0.9} if cls == "SGD" else {}
    theirs = getattr(torch.optim, cls)(
        [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr}
         for lr in (0.3, 0.1)], lr=0.3, **kw)
    return torch, ours, theirs


def same_groups(ours, theirs, step):
    for a, b in zip(groups_of(ours), groups_of(theirs)):
        close([a[0]], [b[0]])
        if b[1] is not None:
            close([a[1]], [b[1]])
        if b[2]:
            close(list(a[2]), list(b[2]))


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name):
    cls, build = TORCH_CASES[name]
    torch, ours, theirs = torch_pair(cls)
    s, t = build(L, ours), build(torch.optim.lr_scheduler, theirs)
    same_groups(ours, theirs, 0)
    for i in range(30):
        ours.step()
        theirs.step()
        s.step()
        t.step()
        same_groups(ours, theirs, i + 1)
        close(s.get_last_lr(), t.get_last_lr())
        assert getattr(s, "last_epoch", None) == \
            getattr(t, "last_epoch", None)


@pytest.mark.parametrize("name", sorted(PLATEAU_CASES))
def test_plateau_against_torch(name):
    torch, ours, theirs = torch_pair("SGD")
    kw = PLATEAU_CASES[name]
    s = L.ReduceLROnPlateau(ours, **kw)
    t = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **kw)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.94, 1.2, 0.5, 0.5, 0.5, 0.51, 0.6,
               0.7, 0.71, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    for m in metrics:
        s.step(m)
        t.step(m)
        same_groups(ours, theirs, 0)
        close(s.get_last_lr(), t.get_last_lr())
        assert (s.best, s.num_bad_epochs, s.cooldown_counter) == \
            (t.best, t.num_bad_epochs, t.cooldown_counter)


@pytest.mark.parametrize("name", ["step", "multistep", "exponential",
                                  "cosine", "linear", "constant",
                                  "polynomial"])
def test_closed_forms_against_torch(name):
    """step(epoch) takes the closed form (with torch's deprecation
    warning), interleaved with plain steps."""
    cls, build = TORCH_CASES[name]
    torch, ours, theirs = torch_pair(cls)
    s, t = build(L, ours), build(torch.optim.lr_scheduler, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in [3, None, 7, 2, None, None, 11, 0, None]:
            ours.step()
            theirs.step()
            s.step(e)
            t.step(e)
            same_groups(ours, theirs, e)


def test_warm_restarts_fractional_against_torch():
    torch, ours, theirs = torch_pair("SGD")
    s = L.CosineAnnealingWarmRestarts(ours, T_0=2, T_mult=3, eta_min=0.01)
    t = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        theirs, T_0=2, T_mult=3, eta_min=0.01)
    for epoch in range(12):
        for i in range(4):
            ours.step()
            theirs.step()
            s.step(epoch + i / 4)
            t.step(epoch + i / 4)
            same_groups(ours, theirs, epoch)
            assert (s.T_i, s.T_cur, s.last_epoch) == \
                (t.T_i, t.T_cur, t.last_epoch)
    s.step()
    t.step()
    same_groups(ours, theirs, None)


def test_warnings_match_torch():
    torch, ours, theirs = torch_pair("SGD")
    seen = []
    for lib, opt in ((L, ours), (torch.optim.lr_scheduler, theirs)):
        s = lib.StepLR(opt, 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()
            s.get_lr()
            s.step(3)
        seen.append([(x.category, str(x.message)) for x in w])
    assert seen[0] == seen[1] and len(seen[0]) == 3


def test_state_dict_keys_match_torch():
    torch, ours, theirs = torch_pair("SGD")
    for name in ["step", "cosine", "one_cycle", "cyclic", "lambda",
                 "sequential", "chained"]:
        _, build = TORCH_CASES[name]
        s = build(L, ours)
        t = build(torch.optim.lr_scheduler, theirs)
        a, b = s.state_dict(), t.state_dict()
        assert set(a) == set(b), name


def test_custom_subclass():
    """A scheduler written by subclassing LRScheduler (or the former
    _LRScheduler) with its own get_lr."""

    class Halving(L._LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    assert issubclass(L._LRScheduler, L.LRScheduler)
    assert L._LRScheduler.__name__ == "_LRScheduler"
    opt = make_opt(lrs=(1.0, 4.0))
    s = Halving(opt)
    assert isinstance(s, L.LRScheduler)
    close(walk(opt, s, 3), [1, 0.5, 0.25, 0.125])
    assert opt.param_groups[1]["lr"] == 0.5
    with pytest.raises(NotImplementedError):
        L.LRScheduler(make_opt())
