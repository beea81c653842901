"""NAdam (torch's rule: Nesterov momentum with momentum decay)."""
from .. import _C
from ._perop import PerOpOptimizer, check_betas, check_nonneg

__all__ = ["NAdam"]


class NAdam(PerOpOptimizer):
    """At step t, mu_t = b1 (1 - 0.96^(t psi) / 2) (psi: momentum_decay),
    P_t = mu_1 ... mu_t (the state's mu_product); m and v as Adam's, then
    p -= lr (1 - mu_t) / (1 - P_t) g / d
       + lr mu_{t+1} / (1 - P_t mu_{t+1}) m / d,
    d = sqrt(v / (1 - b2^t)) + eps. g = grad (+ weight_decay p), or with
    decoupled_weight_decay p *= 1 - lr weight_decay first; negated first
    with maximize=True."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None,
                 maximize=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        betas = check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("momentum_decay value", momentum_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            foreach=foreach, maximize=maximize))

    @staticmethod
    def _init_state(p, g):
        return {"step": 0, "mu_product": 1.0, "exp_avg": _C.zeros_like(p),
                "exp_avg_sq": _C.zeros_like(p)}

    @staticmethod
    def _update(p, grad, st, g):
        lr, (b1, b2), wd = g["lr"], g["betas"], g["weight_decay"]
        t, psi = st["step"], g["momentum_decay"]
        if wd != 0:
            if g["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        st["mu_product"] *= mu
        prod = st["mu_product"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).add_(grad * grad, alpha=1 - b2)
        denom = v.div(1 - b2 ** t).sqrt_().add_(g["eps"])
        p.sub_(grad / denom, alpha=lr * (1 - mu) / (1 - prod))
        p.sub_(m / denom, alpha=lr * mu_next / (1 - prod * mu_next))
