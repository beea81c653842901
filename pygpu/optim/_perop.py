"""The shared frame of the optimizers whose steps are composed of tensor
ops (RMSprop, Adagrad, Adamax, NAdam, RAdam): torch's hyper-parameter
checks in its words, and a step that walks each group's parameters with
gradients and hands each one to the optimizer's own update."""
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer

__all__ = ["PerOpOptimizer", "check_nonneg", "check_betas"]


def check_nonneg(what, value):
    """torch's `not 0.0 <= x` check (NaN refused too), e.g.
    "Invalid learning rate: -1"."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas):
    """A pair with each beta in [0, 1), in torch's words; the pair as a
    tuple."""
    betas = tuple(betas)
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), but got "
                         f"{len(betas)} values")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return betas


class PerOpOptimizer(Optimizer):
    """An optimizer whose step is one op per term: subclasses give
    `_init_state(p, group)` (the state of a parameter's first step) and
    `_update(p, grad, state, group)` (one parameter's update; the step
    count is already advanced). `foreach` is kept in the groups as torch
    keeps it; every setting takes the same per-op path."""

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state.get(p)
                if not st:
                    st = self.state[p] = self._init_state(p, g)
                st["step"] += 1
                grad = -p.grad if g["maximize"] else p.grad
                self._update(p, grad, st, g)
        return loss
