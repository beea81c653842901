"""SGD with momentum, dampening, Nesterov and weight decay (torch's
rule)."""
from .. import _C
from ..autograd.grad_mode import no_grad
from ._fused import check_switches, fusable, use_fused
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * d, with d = g (+ weight_decay * p), through a momentum
    buffer b = momentum * b + (1 - dampening) * d when momentum > 0 (the
    first step sets b = d), and d = d + momentum * b with nesterov.

    By default a step is one fused update per device and dtype
    (_C._foreach_sgd_: one pass over each tensor, one kernel launch on
    CUDA); foreach=False keeps the per-op path."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0,
                 weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, fused=None):
        # `not 0.0 <= x` also refuses NaN, which `x < 0.0` lets through.
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if dampening != dampening:  # NaN (torch leaves dampening unchecked)
            raise ValueError(f"Invalid dampening value: {dampening}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero "
                             "dampening")
        check_switches(foreach, fused)
        super().__init__(params, dict(lr=lr, momentum=momentum,
                                      dampening=dampening,
                                      weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize,
                                      foreach=foreach, fused=fused))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g in self.param_groups:
            fused = use_fused(g)
            mom = g["momentum"]
            batches = ([], []), ([], [])  # (params, grads): old, new buffers
            seen, again = set(), []
            for p in g["params"]:
                if p.grad is None:
                    continue
                if id(p) in seen:  # listed twice: updated again after
                    again.append(p)  # the fused batches, not within one
                    continue
                seen.add(id(p))
                grad = p.grad
                buf = None
                if mom != 0:
                    buf = self.state.setdefault(p, {}).get("momentum_buffer")
                if fused:
                    grad = grad if grad.is_contiguous() else \
                        grad.contiguous()
                    if fusable(p, grad, [] if buf is None else [buf]):
                        batch = batches[mom != 0 and buf is None]
                        batch[0].append(p)
                        batch[1].append(grad)
                        continue
                self._single(p, grad, g)
            for first, (ps, grads) in enumerate(batches):
                if ps:
                    self._fused(ps, grads, g, first)
            for p in again:
                self._single(p, p.grad, g)
        return loss

    def _fused(self, ps, grads, g, first):
        """One fused step; first: the parameters' buffers are new."""
        bufs = None
        if g["momentum"] != 0:
            for p in ps:
                st = self.state[p]
                if first:
                    st["momentum_buffer"] = _C.empty_like(p)
            bufs = [self.state[p]["momentum_buffer"] for p in ps]
        _C._foreach_sgd_(ps, grads, bufs, g["lr"], g["momentum"],
                         g["dampening"], g["weight_decay"], g["nesterov"],
                         g["maximize"], bool(first))

    def _single(self, p, grad, g):
        """The per-op step of one parameter."""
        lr, mom, damp = g["lr"], g["momentum"], g["dampening"]
        d = -grad if g["maximize"] else grad
        if g["weight_decay"] != 0:
            d = d.add(p, alpha=g["weight_decay"])
        if mom != 0:
            st = self.state.setdefault(p, {})
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = st["momentum_buffer"] = d.clone()
            else:
                buf.mul_(mom).add_(d, alpha=1 - damp)
            d = d.add(buf, alpha=mom) if g["nesterov"] else buf
        p.add_(d, alpha=-lr)
