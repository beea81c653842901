"""pygpu.nn: Activation layers beyond ReLU/Sigmoid/Tanh/SiLU/GELU, over
the functional forms of pygpu/nn/_functional/activation.py, with torch's
arguments and reprs."""
import warnings

from .. import _C
from . import init
from ._functional import activation as F
from .module import Module
from .parameter import Parameter

__all__ = ["LeakyReLU", "ELU", "SELU", "CELU", "Softplus", "Hardtanh",
           "ReLU6", "Mish", "Hardswish", "Hardsigmoid", "LogSigmoid",
           "Softsign", "Tanhshrink", "GLU", "PReLU", "Softmax2d", "Softmin"]


def _inplace_str(inplace):
    return ", inplace=True" if inplace else ""


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return (f"negative_slope={self.negative_slope}"
                f"{_inplace_str(self.inplace)}")


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(Module):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class _InplaceOnly(Module):
    """An activation whose one argument is inplace (shown when True)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class SELU(_InplaceOnly):
    """scale * elu(x, alpha) with SELU's fixed constants."""

    def forward(self, input):
        return F.selu(input, self.inplace)


class Mish(_InplaceOnly):
    """x * tanh(softplus(x))."""

    def forward(self, input):
        return F.mish(input, self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta; x itself where beta * x >
    threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False,
                 min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and "
                          "renamed to `min_val`", FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and "
                          "renamed to `max_val`", FutureWarning, stacklevel=2)
            max_val = max_value
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                f"{_inplace_str(self.inplace)}")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LogSigmoid(Module):
    """log(sigmoid(x)), without overflow for large |x|."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class GLU(Module):
    """a * sigmoid(b), a and b the halves of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else weight * x, with a learnable weight of
    num_parameters slopes (1, or the number of channels), all init."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_C.empty(num_parameters, device=device,
                                         dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmax2d(Module):
    """softmax over the channels (dim -3) of (C, H, W) or (N, C, H, W)
    input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got "
                             f"{input.dim()}D instead")
        return _C.softmax(input, -3, None)


class Softmin(Module):
    """softmax(-x) along dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
