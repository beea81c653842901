"""Adam and AdamW (torch's rules, bias-corrected moments)."""
import math

from .. import _C
from ..autograd.grad_mode import no_grad
from ._fused import check_switches, fusable, use_fused
from ._perop import check_betas, check_nonneg
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with
    g = grad + weight_decay * p (Adam's L2 penalty). With amsgrad=True
    the denominator uses the running maximum of v (torch's rule).

    By default a step is one fused update per device and dtype
    (_C._foreach_adam_: one pass over each tensor, one kernel launch on
    CUDA); foreach=False keeps the per-op path."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, fused=None):
        # `not 0.0 <= x` also refuses NaN, which `x < 0.0` lets through.
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        betas = check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_switches(foreach, fused)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      amsgrad=amsgrad, foreach=foreach,
                                      maximize=maximize, fused=fused))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g in self.param_groups:
            fused = use_fused(g)
            batches = {}  # step number -> [(p, grad, state)]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self._state_of(p, g["amsgrad"])
                st["step"] += 1
                grad = p.grad
                if fused:
                    grad = grad if grad.is_contiguous() else \
                        grad.contiguous()
                    if fusable(p, grad, self._tensors(st, g["amsgrad"])):
                        batches.setdefault(st["step"], []).append(
                            (p, grad, st))
                        continue
                self._single(p, grad, st, g)
            for t, items in batches.items():
                self._fused(t, items, g)
        return loss

    def _state_of(self, p, amsgrad):
        st = self.state.setdefault(p, {})
        if not st:
            st["step"] = 0
            st["exp_avg"] = _C.zeros_like(p)
            st["exp_avg_sq"] = _C.zeros_like(p)
        if amsgrad and st.get("max_exp_avg_sq") is None:
            st["max_exp_avg_sq"] = _C.zeros_like(p)
        return st

    @staticmethod
    def _tensors(st, amsgrad):
        ts = [st["exp_avg"], st["exp_avg_sq"]]
        return ts + [st["max_exp_avg_sq"]] if amsgrad else ts

    def _fused(self, t, items, g):
        """One fused step over the parameters at step number t."""
        ps, grads, sts = zip(*items)
        b1, b2 = g["betas"]
        vmax = [st["max_exp_avg_sq"] for st in sts] if g["amsgrad"] \
            else None
        _C._foreach_adam_(list(ps), list(grads),
                          [st["exp_avg"] for st in sts],
                          [st["exp_avg_sq"] for st in sts], vmax, t,
                          g["lr"], b1, b2, g["eps"], g["weight_decay"],
                          g["amsgrad"], self._decoupled, g["maximize"])

    def _single(self, p, grad, st, g):
        """The per-op step of one parameter (state's step already
        counted)."""
        lr, (b1, b2), eps = g["lr"], g["betas"], g["eps"]
        wd, t = g["weight_decay"], st["step"]
        if g["maximize"]:
            grad = -grad
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
            vmax = st["max_exp_avg_sq"]
            _C.maximum(vmax, v, out=vmax)
            v = vmax
        denom = v.sqrt().div_(math.sqrt(1 - b2 ** t)).add_(eps)
        p.sub_(m / denom * step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before
    the Adam step (default weight_decay 1e-2, as torch's)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False, *, foreach=None,
                 maximize=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         foreach=foreach, maximize=maximize, fused=fused)
