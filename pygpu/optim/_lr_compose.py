"""ReduceLROnPlateau (driven by a metric) and the schedulers made of
others, SequentialLR and ChainedScheduler."""
import math
import warnings
from bisect import bisect_right

from ._lr_base import (EPOCH_DEPRECATION_WARNING, LRScheduler,
                       _check_optimizer)

__all__ = ["ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"]


class ReduceLROnPlateau(LRScheduler):
    """lr *= factor (not below min_lr) once the metric given to step() has
    not improved for more than patience epochs; improvement by more than
    threshold (relative or absolute), in mode "min" or "max"; cooldown
    epochs after a reduction count no bad epochs; a change below eps is
    skipped."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10,
                 threshold=1e-4, threshold_mode="rel", cooldown=0, min_lr=0,
                 eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.best = None
        self.num_bad_epochs = None
        self.mode_worse = None
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning,
                          stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` "
                    f"({len(groups)}) differs from when `ReduceLROnPlateau` "
                    f"was initialized ({len(self.min_lrs)}), usually due to "
                    f"a new param group being added to the optimizer. "
                    f"Please modify the `min_lrs` field to match the length "
                    f"of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for g, low in zip(groups, self.min_lrs):
            old = float(g["lr"])
            new = max(old * self.factor, low)
            if old - new > self.eps:
                g["lr"] = new

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode +
                             " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def _check_schedulers(owner, optimizer, schedulers, what):
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler{what}, "
                         f"but got no scheduler.")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` "
                            f"as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as "
                f"it requires additional kwargs to be specified when calling "
                f"`step`, but got one at index {i} in the given schedulers "
                f"sequence.")
        if optimizer != s.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same "
                f"optimizer, but got scheduler {type(s).__name__} at index "
                f"{i} has {s.optimizer}, which is different from "
                f"{type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """The state dict of a scheduler made of others: its own attributes
    and each member's state dict."""

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        members = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = members
        for s, saved in zip(self._schedulers, members):
            s.load_state_dict(saved)


def _undo_initial_steps(sched):
    """Takes back the step each member (members of members included) took
    when it was made."""
    if hasattr(sched, "_schedulers"):
        for s in sched._schedulers:
            _undo_initial_steps(s)
    elif hasattr(sched, "last_epoch"):
        sched.last_epoch -= 1


class SequentialLR(_Composite):
    """schedulers[i] drives the lr from milestone i - 1 (each started
    afresh at its milestone) until milestone i."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        _check_optimizer(optimizer)
        owner = type(self).__name__
        _check_schedulers(owner, optimizer, schedulers, "")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"Sequential Schedulers expects number of schedulers "
                f"provided to be one more than the number of milestone "
                f"points, but got number of schedulers {len(schedulers)} and "
                f"the number of milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        _undo_initial_steps(self)
        i = bisect_right(self._milestones, 0)
        self._schedulers[i]._initial_step()
        self._last_lr = self._schedulers[i].get_last_lr()

    def step(self):
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s._update_lr(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite):
    """Steps every scheduler of the list at each step (their factors
    compound on the lr)."""

    def __init__(self, schedulers, optimizer=None):
        owner = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{owner} expects at least one scheduler to be "
                             f"chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(owner, optimizer, schedulers, " to be chained")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in
                         self._schedulers[-1].optimizer.param_groups]

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in
                         self._schedulers[-1].optimizer.param_groups]
