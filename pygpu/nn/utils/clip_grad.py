"""clip_grad_norm_ and clip_grad_value_ (torch's rules): the gradients of
the given parameters scaled or clamped in place, grad mode off."""
import types
import warnings

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _as_list(parameters):
    if isinstance(parameters, _C.Tensor):
        return [parameters]
    return list(parameters)


def _grads(parameters):
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0,
                    error_if_nonfinite=False, foreach=None):
    """Scales the gradients of `parameters` (a tensor or an iterable of
    them; those without a gradient are skipped) so that their total norm,
    the norm_type-norm of the vector of each gradient's norm_type-norm, is
    at most max_norm: each is multiplied by
    min(1, max_norm / (total + 1e-6)). Returns the total norm before
    clipping, a tensor (0.0 when no parameter has a gradient).
    error_if_nonfinite=True raises RuntimeError when the total is NaN or
    infinite. norm_type takes any float, inf included. foreach is accepted
    for torch's signature: every setting computes the same per-tensor
    norms."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient "
                      "clipping will occur.", stacklevel=3)
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return _C.tensor(0.0)
    first = grads[0].device
    # An empty gradient adds nothing to the total (torch's CUDA rule; its
    # CPU path refuses the infinity norm of one).
    norms = [g.norm(norm_type).to(first) for g in grads if g.numel()]
    if norms:
        total = _C.stack(norms).norm(norm_type)
    else:
        total = _C.zeros((), dtype=grads[0].dtype, device=first)
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            f"`parameters` is non-finite, so it cannot be clipped. To "
            f"disable this error and scale the gradients by the non-finite "
            f"norm anyway, set `error_if_nonfinite=False`")
    coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.device))
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps the gradients of `parameters` (a tensor or an iterable of
    them) to [-clip_value, clip_value] in place. foreach is accepted for
    torch's signature."""
    clip_value = float(clip_value)
    for g in _grads(_as_list(parameters)):
        g.clamp_(min=-clip_value, max=clip_value)
