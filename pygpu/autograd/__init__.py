"""pygpu.autograd: reverse-mode automatic differentiation, torch's names.

The graph is recorded and run in C (see docs/autograd.md);
this package holds the Python entry points: backward, grad, gradcheck,
the grad-mode switches (per thread, restored on exit), custom Functions
(function.py) and Variable.
"""
from .. import _C
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import gradcheck
from . import function
from .function import Function, once_differentiable
from .variable import Variable

__all__ = ["backward", "grad", "gradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Function", "Variable", "function"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def backward(tensors, grad_tensors=None, retain_graph=None,
             create_graph=False, inputs=None):
    """Accumulate into the leaves' .grad the gradient of tensors (each
    weighted by its grad_tensors entry; None: ones for a one-element
    tensor)."""
    if create_graph:
        raise NotImplementedError("create_graph=True: pygpu's autograd does "
                                  "not record the backward pass")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...) is not supported; "
                                  "use pygpu.autograd.grad")
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors)
    _C._backward(tensors, grads if grads is not None else (None,) *
                 len(tensors), bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None,
         create_graph=False, allow_unused=None, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple (None
    for an input the outputs do not depend on, with allow_unused=True);
    the leaves' .grad is left alone."""
    if create_graph:
        raise NotImplementedError("create_graph=True: pygpu's autograd does "
                                  "not record the backward pass")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grads = _as_tuple(grad_outputs)
    unused = bool(allow_unused) or materialize_grads
    result = _C._grad(outputs, inputs,
                      grads if grads is not None else (None,) * len(outputs),
                      bool(retain_graph), unused)
    if materialize_grads:
        from .. import zeros_like
        result = tuple(zeros_like(x) if g is None else g
                       for g, x in zip(result, inputs))
    return result
