"""The layers: Linear, the activations (ReLU, Sigmoid, Tanh, SiLU, GELU),
Identity, Flatten."""
import math

from .. import _C
from . import functional, init
from .module import Module
from .parameter import Parameter

__all__ = ["Linear", "ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "Identity",
           "Flatten"]

_linear, _linear_relu, _relu = _C._linear, _C._linear_relu, _C.relu


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features) and bias
    drawn from U(-1/sqrt(in_features), 1/sqrt(in_features)) as in torch."""

    def __init__(self, in_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_C.empty((out_features, in_features),
                                         device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_features, device=device,
                                           dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a = sqrt(5) is U(+-1/sqrt(fan_in)).
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return _linear(input, self.weight, self.bias)

    def _forward_relu(self, input):
        """relu(forward(input)) in one fused call (Sequential uses it)."""
        return _linear_relu(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    """max(x, 0) elementwise; NaN stays NaN."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _relu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input):
        return functional.sigmoid(input)


class Tanh(Module):
    """tanh(x) elementwise."""

    def forward(self, input):
        return functional.tanh(input)


class SiLU(Module):
    """x * sigmoid(x) elementwise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return functional.silu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x) elementwise: the exact form (approximate='none') or
    torch's tanh approximation (approximate='tanh')."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return functional.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Identity(Module):
    """Returns its input; takes (and ignores) any arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """input.flatten(start_dim, end_dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
