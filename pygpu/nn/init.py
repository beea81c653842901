"""nn.init: in-place initialisers with torch's fan and gain rules, drawn
from pygpu's seeded generator on the tensor's own device.  As in torch,
they write with grad mode off (parameters require grad)."""
import math
import warnings

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "zeros_", "ones_",
           "constant_", "kaiming_uniform_", "kaiming_normal_",
           "xavier_uniform_", "xavier_normal_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d",
                        "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor "
                         "with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of "
                         f"fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


@no_grad()
def _fill_from(tensor, draw, scale, shift):
    """tensor <- draw(...) * scale + shift, drawn on tensor's device."""
    if tensor.numel() == 0:
        return tensor
    r = draw(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    r.mul_(scale).add_(shift)
    return tensor.copy_(r)


def uniform_(tensor, a=0.0, b=1.0):
    """Fill with U(a, b)."""
    return _fill_from(tensor, _C.rand, b - a, a)


def normal_(tensor, mean=0.0, std=1.0):
    """Fill with N(mean, std^2)."""
    return _fill_from(tensor, _C.randn, std, mean)


@no_grad()
def constant_(tensor, val):
    return tensor.fill_(val)


@no_grad()
def zeros_(tensor):
    return tensor.zero_()


@no_grad()
def ones_(tensor):
    return tensor.fill_(1.0)


def _zero_element_no_op(tensor):
    """As in torch, a He initialiser leaves a tensor with a zero in its
    shape alone (its fan may be 0) and says so."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """U(-bound, bound), bound = gain * sqrt(3 / fan) (He et al.)."""
    if _zero_element_no_op(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """N(0, std^2), std = gain / sqrt(fan) (He et al.)."""
    if _zero_element_no_op(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def xavier_uniform_(tensor, gain=1.0):
    """U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std)
