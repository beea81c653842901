"""nn.Parameter: a Tensor that a Module registers as one of its parameters.

A Parameter is a leaf that requires grad by default, as in torch:
backward() accumulates into its `.grad`.
"""
from .._C import Tensor, empty

__all__ = ["Parameter"]


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): a view of data's memory
    that a Module registers when assigned as an attribute."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        self = Tensor.__new__(cls, data)
        self.requires_grad_(bool(requires_grad))
        return self

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        from ..serialization import _rebuild_parameter
        return _rebuild_parameter, (self.detach(), self.requires_grad)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.clone(), self.requires_grad)
        return memo[id(self)]
