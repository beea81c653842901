"""Variable: torch's old name for a tensor that takes part in autograd.

``Variable(t, requires_grad=False)`` returns a tensor sharing t's memory
without its history (``t.detach()``), requiring grad when asked, as torch's
does; every tensor is an instance of Variable."""
import warnings

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        from .. import Tensor
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False): a tensor
    (see the module)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from .. import Tensor, empty
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use "
                          "`with torch.no_grad():` instead.", UserWarning,
                          stacklevel=2)
        if data is None:
            t = empty(0)
        elif isinstance(data, Tensor):
            t = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        if requires_grad:
            t.requires_grad_(True)
        return t
