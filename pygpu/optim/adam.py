"""Adam and AdamW (torch's rules, bias-corrected moments)."""
import math

from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with
    g = grad + weight_decay * p (Adam's L2 penalty). With amsgrad=True
    the denominator uses the running maximum of v (torch's rule)."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, amsgrad=False, *, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g in self.param_groups:
            lr, (b1, b2), eps = g["lr"], g["betas"], g["eps"]
            wd = g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if g["maximize"] else p.grad
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = p.detach().mul(0)
                    st["exp_avg_sq"] = p.detach().mul(0)
                st["step"] += 1
                t = st["step"]
                if wd != 0:
                    if self._decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.mul_(b1).add_(grad, alpha=1 - b1)
                v.mul_(b2).add_(grad * grad, alpha=1 - b2)
                step_size = lr / (1 - b1 ** t)
                if g["amsgrad"]:
                    vmax = st.get("max_exp_avg_sq")
                    if vmax is None:
                        vmax = st["max_exp_avg_sq"] = p.detach().mul(0)
                    _C.maximum(vmax, v, out=vmax)
                    v = vmax
                denom = v.sqrt().div_(math.sqrt(1 - b2 ** t)).add_(eps)
                p.sub_(m / denom * step_size)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before
    the Adam step (default weight_decay 1e-2, as torch's)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False, *, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         maximize=maximize)
