"""Adamax (torch's rule: Adam with an infinity-norm second moment)."""
from .. import _C
from ._perop import PerOpOptimizer, check_betas, check_nonneg

__all__ = ["Adamax"]


class Adamax(PerOpOptimizer):
    """m = b1 m + (1 - b1) g, u = max(b2 u, |g| + eps),
    p -= lr / (1 - b1^t) * m / u at step t, with g = grad
    (+ weight_decay p), negated first with maximize=True."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, foreach=None, *, maximize=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        betas = check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps,
                                      weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    @staticmethod
    def _init_state(p, g):
        return {"step": 0, "exp_avg": _C.zeros_like(p),
                "exp_inf": _C.zeros_like(p)}

    @staticmethod
    def _update(p, grad, st, g):
        b1, b2 = g["betas"]
        if g["weight_decay"] != 0:
            grad = grad.add(p, alpha=g["weight_decay"])
        m, u = st["exp_avg"], st["exp_inf"]
        m.mul_(b1).add_(grad, alpha=1 - b1)
        u.mul_(b2)
        _C.maximum(u, grad.abs().add_(g["eps"]), out=u)
        p.sub_(m / u, alpha=g["lr"] / (1 - b1 ** st["step"]))
