"""The softmax layers: Softmax and LogSoftmax over a dim."""
from . import functional
from .module import Module

__all__ = ["Softmax", "LogSoftmax"]


class Softmax(Module):
    """softmax(x) along dim; a dim of None raises TypeError when called
    (torch would pick one with a deprecation warning)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return functional.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log_softmax(x) along dim; a dim of None raises TypeError when
    called."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return functional.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
