"""RMSprop (torch's rule: plain or centered, with or without momentum)."""
from .. import _C
from ._perop import PerOpOptimizer, check_nonneg

__all__ = ["RMSprop"]


class RMSprop(PerOpOptimizer):
    """v = alpha v + (1 - alpha) g^2; centered: a = alpha a + (1 - alpha) g
    and v~ = v - a^2, else v~ = v; with momentum > 0
    b = momentum b + g / (sqrt(v~) + eps) and p -= lr b, else
    p -= lr g / (sqrt(v~) + eps); g = grad (+ weight_decay p), negated
    first with maximize=True."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8,
                 weight_decay=0, momentum=0, centered=False, *,
                 foreach=None, maximize=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps,
                                      weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      foreach=foreach, maximize=maximize))

    @staticmethod
    def _init_state(p, g):
        st = {"step": 0, "square_avg": _C.zeros_like(p)}
        if g["momentum"] > 0:
            st["momentum_buffer"] = _C.zeros_like(p)
        if g["centered"]:
            st["grad_avg"] = _C.zeros_like(p)
        return st

    @staticmethod
    def _update(p, grad, st, g):
        alpha, eps, mom = g["alpha"], g["eps"], g["momentum"]
        if g["weight_decay"] != 0:
            grad = grad.add(p, alpha=g["weight_decay"])
        v = st["square_avg"]
        v.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if g["centered"]:
            a = st["grad_avg"]
            a.mul_(alpha).add_(grad, alpha=1 - alpha)
            denom = v.sub(a * a).sqrt_().add_(eps)
        else:
            denom = v.sqrt().add_(eps)
        if mom > 0:
            buf = st["momentum_buffer"]
            buf.mul_(mom).add_(grad / denom)
            p.sub_(buf, alpha=g["lr"])
        else:
            p.sub_(grad / denom, alpha=g["lr"])
