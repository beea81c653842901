"""SGD with momentum, dampening, Nesterov and weight decay (torch's
rule)."""
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * d, with d = g (+ weight_decay * p), through a momentum
    buffer b = momentum * b + (1 - dampening) * d when momentum > 0 (the
    first step sets b = d), and d = d + momentum * b with nesterov."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0,
                 weight_decay=0, nesterov=False, *, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero "
                             "dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum,
                                      dampening=dampening,
                                      weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g in self.param_groups:
            lr, mom, damp = g["lr"], g["momentum"], g["dampening"]
            wd, nesterov = g["weight_decay"], g["nesterov"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                d = -p.grad if g["maximize"] else p.grad
                if wd != 0:
                    d = d.add(p, alpha=wd)
                if mom != 0:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = d.clone()
                    else:
                        buf.mul_(mom).add_(d, alpha=1 - damp)
                    d = d.add(buf, alpha=mom) if nesterov else buf
                p.add_(d, alpha=-lr)
        return loss

