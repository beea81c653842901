"""The per-batch cycling schedulers, OneCycleLR and CyclicLR, which move
the momentum (or beta1) against the lr."""
import math
import types

from ._lr_base import LRScheduler, _check_optimizer, _format_param

__all__ = ["OneCycleLR", "CyclicLR"]


def _set_momentum(group, use_beta1, value):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _check_momentum(optimizer):
    """Whether the optimizer's momentum is beta1 (betas) rather than
    momentum; refused when it has neither."""
    if "momentum" not in optimizer.defaults and \
            "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with "
                         "`cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from max_lr / div_factor up to max_lr over
    pct_start of total_steps, then down to initial_lr / final_div_factor
    (three_phase: back to the initial lr first, then down), cosine or
    linear; momentum (or beta1) cycles the other way between max_momentum
    and base_momentum. Stepped once per batch."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None,
                 steps_per_epoch=None, pct_start=0.3, anneal_strategy="cos",
                 cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, "
                                 f"but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got "
                                 f"{epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch,"
                                 f" but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs "
                             "AND steps_per_epoch)")
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr",
                     end_lr="max_lr", start_momentum="max_momentum",
                     end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * n) - 2,
                     start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum",
                     end_momentum="max_momentum"),
                dict(end_step=n - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum",
                     end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr",
                     end_lr="max_lr", start_momentum="max_momentum",
                     end_momentum="base_momentum"),
                dict(end_step=n - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum",
                     end_momentum="max_momentum")]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but "
                             f"got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or "
                             f"'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, g in zip(max_lrs, optimizer.param_groups):
                g["initial_lr"] = top / div_factor
                g["max_lr"] = top
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _check_momentum(optimizer)
            tops = _format_param("max_momentum", optimizer, max_momentum)
            bases = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for top, base, g in zip(tops, bases, optimizer.param_groups):
                    _set_momentum(g, self.use_beta1, top)
                    g["max_momentum"] = top
                    g["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        self._warn_outside_step()
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"Tried to step {t} times. The specified number "
                             f"of total steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if t <= end or i == last:
                    pct = (t - start) / (end - start)
                    lr = self._anneal(g[ph["start_lr"]], g[ph["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[ph["start_momentum"]],
                                           g[ph["end_momentum"]], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(g, self.use_beta1, mom)
        return lrs


class CyclicLR(LRScheduler):
    """The cyclical learning-rate policy: lr between base_lr and max_lr in
    cycles of step_size_up + step_size_down steps, the amplitude scaled by
    the mode's function (triangular: 1, triangular2: halved each cycle,
    exp_range: gamma^step) or scale_fn; momentum cycles the other way.
    Stepped once per batch."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000,
                 step_size_down=None, mode="triangular", gamma=1.0,
                 scale_fn=None, scale_mode="cycle", cycle_momentum=True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups):
                g["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and \
                scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _check_momentum(optimizer)
            self.base_momentums = _format_param("base_momentum", optimizer,
                                                base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer,
                                               max_momentum)
            if last_epoch == -1:
                for top, base, g in zip(self.max_momentums,
                                        self.base_momentums,
                                        optimizer.param_groups):
                    _set_momentum(g, self.use_beta1, top)
                    g["max_momentum"] = top
                    g["base_momentum"] = base
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = _triangular
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = _triangular2
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = _ExpRange(self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self):
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            factor = x / self.step_ratio
        else:
            factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle"
                              else self.last_epoch)
        lrs = [base + (top - base) * factor * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, base, top in zip(self.optimizer.param_groups,
                                    self.base_momentums, self.max_momentums):
                _set_momentum(g, self.use_beta1,
                              top - (top - base) * factor * scale)
        return lrs

    def state_dict(self):
        """As the base's, less the mode's scale function; a custom
        scale_fn is kept by its __dict__ when it is a callable object
        (None for a function or lambda)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _triangular(x):
    return 1.0


def _triangular2(x):
    return 1 / (2.0 ** (x - 1))


class _ExpRange:
    def __init__(self, gamma):
        self.gamma = gamma

    def __call__(self, x):
        return self.gamma ** x
