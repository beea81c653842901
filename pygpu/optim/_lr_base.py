"""LRScheduler, the base of the learning-rate schedulers: initial_lr and
base_lrs, the epoch count, the step that writes the groups' lrs, torch's
warnings and the state dict."""
import warnings
import weakref
from functools import wraps

from .optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is "
    "being deprecated where possible. Please use `scheduler.step()` to step "
    "the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where "
    "available. Please open an issue if you are unable to replicate your use "
    "case: https://github.com/pytorch/pytorch/issues/new/choose.")

_HOW_TO = ("See more details at https://pytorch.org/docs/stable/optim.html"
           "#how-to-adjust-learning-rate")


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _format_param(name, optimizer, param):
    """One value per parameter group: a list or tuple of as many, or one
    value for all (torch's wording when the count differs)."""
    n = len(optimizer.param_groups)
    if isinstance(param, (list, tuple)):
        if len(param) != n:
            raise ValueError(f"{name} must have the same length as "
                             f"optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {n}.")
        return list(param)
    return [param] * n


def _track_step_calls(optimizer):
    """Wraps optimizer.step (once) so that a call marks the optimizer as
    stepped: the check behind the "before `optimizer.step()`" warning."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    func = optimizer.step.__func__
    ref = weakref.ref(optimizer)

    @wraps(func)
    def step(*args, **kwargs):
        opt = ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    step._wrapped_by_lr_sched = True
    optimizer.step = step


class _InStep:
    """Marks get_lr() calls made by step() (others warn, as torch's)."""

    def __init__(self, sched):
        self.sched = sched

    def __enter__(self):
        self.sched._get_lr_called_within_step = True

    def __exit__(self, *exc):
        self.sched._get_lr_called_within_step = False


class _Initial:
    """Marks the constructor's step: chainable schedulers keep the lrs as
    they are then (a resumed scheduler does not move one step ahead)."""

    def __init__(self, sched):
        self.sched = sched

    def __enter__(self):
        self.sched._is_initial = True

    def __exit__(self, *exc):
        self.sched._is_initial = False


class LRScheduler:
    """The base: records each group's "initial_lr" (base_lrs), counts
    epochs in last_epoch (-1 before the first step; the constructor takes
    step 0) and writes the lrs get_lr() gives into the groups."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in "
                        f"param_groups[{i}] when resuming scheduler with "
                        f"last_epoch >= 0.\nThis typically happens when:\n"
                        f"1. You're trying to resume training from a "
                        f"checkpoint but haven't properly loaded the "
                        f"optimizer state\n2. You're using last_epoch >= 0 "
                        f"for a fresh training run (not recommended)")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_step_calls(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        with _Initial(self):
            self.step()

    def state_dict(self):
        """Every attribute but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The lrs the last step set, one per group."""
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the "
                          "scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def step(self, epoch=None):
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after "
                    "learning rate scheduler initialization. Please, make "
                    "sure to call `optimizer.step()` before "
                    "`lr_scheduler.step()`. " + _HOW_TO, UserWarning,
                    stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before "
                    "`optimizer.step()`. In PyTorch 1.1.0 and later, you "
                    "should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  "
                    "Failure to do this will result in PyTorch skipping the "
                    "first value of the learning rate schedule. " + _HOW_TO,
                    UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning,
                          stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        """Moves to the next epoch (or to epoch, by the closed form where
        there is one) and sets the groups' lrs."""
        with _InStep(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for g, lr in zip(self.optimizer.param_groups, values):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


class _LRScheduler(LRScheduler):
    """The former name of LRScheduler."""
