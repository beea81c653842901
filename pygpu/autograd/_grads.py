"""Gradients of many tensors at once (Module.zero_grad and
Optimizer.zero_grad)."""


def zero_grads(params, set_to_none=True):
    """Reset each parameter's .grad: to None (set_to_none=True, as torch
    does by default), else to zeros in place.  Those without a grad are
    left alone."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            p.grad.zero_()
