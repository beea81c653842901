"""Which parameters a fused step can take, and the foreach=/fused=
switch of the optimizers."""

__all__ = ["check_switches", "use_fused", "fusable"]


def check_switches(foreach, fused):
    """torch's refusal of both switches at once."""
    if foreach and fused:
        raise RuntimeError("`fused` and `foreach` cannot be `True` "
                           "together.")


def use_fused(group):
    """Whether a group's step takes the fused path: the default, unless
    foreach=False and fused is not True (fused=True or foreach=True ask for
    it; the per-op path stays for foreach=False)."""
    if group.get("fused"):
        return True
    return group.get("foreach") is not False


def fusable(p, grad, states):
    """Whether parameter p, its gradient and its state tensors fit the
    fused step: a contiguous floating p, and gradient and states of its
    device, dtype and shape (the gradient made contiguous by the caller).
    Others take the per-op path, which converts as it goes."""
    if not (p.dtype.is_floating_point and p.is_contiguous()):
        return False
    for t in (grad, *states):
        if (t.dtype != p.dtype or t.device != p.device
                or t.shape != p.shape):
            return False
    return all(t.is_contiguous() for t in states)
