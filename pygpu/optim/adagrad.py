"""Adagrad (torch's rule, with learning-rate decay)."""
from .. import _C
from ._perop import PerOpOptimizer, check_nonneg

__all__ = ["Adagrad"]


class Adagrad(PerOpOptimizer):
    """s = s + g^2, p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)
    at step t, with g = grad (+ weight_decay p), negated first with
    maximize=True. The state (step 0, s = initial_accumulator_value) is
    made when the optimizer is, as torch's."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *,
                 maximize=False):
        check_nonneg("learning rate", lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value",
                     initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        super().__init__(params, dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach, maximize=maximize))
        for g in self.param_groups:
            for p in g["params"]:
                if p not in self.state:
                    self.state[p] = self._init_state(p, g)

    @staticmethod
    def _init_state(p, g):
        return {"step": 0, "sum": _C.full_like(
            p, g["initial_accumulator_value"])}

    @staticmethod
    def _update(p, grad, st, g):
        if g["weight_decay"] != 0:
            grad = grad.add(p, alpha=g["weight_decay"])
        clr = g["lr"] / (1 + (st["step"] - 1) * g["lr_decay"])
        s = st["sum"]
        s.add_(grad * grad)
        p.sub_(grad / s.sqrt().add_(g["eps"]), alpha=clr)
