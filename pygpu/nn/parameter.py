"""nn.Parameter: a Tensor that a Module registers as one of its parameters.

pygpu has no autograd, so `requires_grad` is a flag a Parameter records
(True by default, as in torch) and reports, for code that freezes layers or
filters parameters by it; nothing is tracked and `.grad` stays None.
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
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad=True):
        self._requires_grad = bool(requires_grad)
        return self

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        from ..serialization import _rebuild_parameter
        return _rebuild_parameter, (self.detach(), self._requires_grad)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.clone(), self._requires_grad)
        return memo[id(self)]
