"""RAdam (torch's rule: Adam with the variance rectification)."""
import math

from .. import _C
from ._perop import PerOpOptimizer, check_betas, check_nonneg

__all__ = ["RAdam"]


class RAdam(PerOpOptimizer):
    """m and v as Adam's; at step t, rho_inf = 2 / (1 - b2) - 1 and
    rho_t = rho_inf - 2 t b2^t / (1 - b2^t). When rho_t > 5,
    p -= lr r_t m / (1 - b1^t) * sqrt(1 - b2^t) / (sqrt(v) + eps) with
    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf /
    ((rho_inf - 4)(rho_inf - 2) rho_t)); else p -= lr m / (1 - b1^t).
    g = grad (+ weight_decay p), or with decoupled_weight_decay
    p *= 1 - lr weight_decay first; negated first with maximize=True."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, decoupled_weight_decay=False, *,
                 foreach=None, maximize=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        betas = check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            foreach=foreach, maximize=maximize))

    @staticmethod
    def _init_state(p, g):
        return {"step": 0, "exp_avg": _C.zeros_like(p),
                "exp_avg_sq": _C.zeros_like(p)}

    @staticmethod
    def _update(p, grad, st, g):
        lr, (b1, b2), wd, t = g["lr"], g["betas"], g["weight_decay"], \
            st["step"]
        if wd != 0:
            if g["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).add_(grad * grad, alpha=1 - b2)
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                             ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p.sub_(m / v.sqrt().add_(g["eps"]),
                   alpha=lr * rect * math.sqrt(bc2) / bc1)
        else:
            p.sub_(m, alpha=lr / bc1)
