"""pygpu.nn: Convolution, unfold/fold and padding layers, over the
functional forms of pygpu/nn/_functional/conv.py, with torch's arguments,
initialisation and repr."""
import math
from collections.abc import Iterable

from .. import _C
from . import init
from ._functional import conv as F
from .module import Module
from .parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
           "Unfold", "Fold", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d",
           "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d",
           "CircularPad2d"]


def _ntuple(n):
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n
    return parse


_single, _pair, _quadruple = _ntuple(1), _ntuple(2), _ntuple(4)


class _ConvNd(Module):
    """What the convolutions share: checks, parameters, initialisation and
    repr, as torch's _ConvNd."""

    def __init__(self, in_channels, out_channels, kernel_size, stride,
                 padding, dilation, transposed, output_padding, groups, bias,
                 padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_strings:
                raise ValueError(f"Invalid padding string {padding!r}, "
                                 f"should be one of {valid_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for "
                                 "strided convolutions")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, "
                             f"but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order (last dim first) for the non-zero padding modes
        if isinstance(padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size,
                                   range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups))
        self.weight = Parameter(_C.empty(shape + tuple(kernel_size),
                                         device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, device=device,
                                           dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a = sqrt(5) is U(+-1/sqrt(fan_in)), torch's.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, "
             f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _nd, _tuple, _fn = 2, staticmethod(_pair), staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size),
                         t(stride),
                         padding if isinstance(padding, str) else t(padding),
                         t(dilation), False, t(0), groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return self._fn(F.pad(input,
                                  self._reversed_padding_repeated_twice,
                                  mode=self.padding_mode),
                            weight, bias, self.stride, self._tuple(0),
                            self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding,
                        self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L) inputs: weight
    (out_channels, in_channels / groups, k), bias (out_channels), both
    U(+-1/sqrt(fan_in)) as torch's; padding an int, 'valid' or 'same';
    padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    _nd, _tuple, _fn = 1, staticmethod(_single), staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs: weight
    (out_channels, in_channels / groups, kh, kw), bias (out_channels), both
    U(+-1/sqrt(fan_in)) as torch's; padding an int, a pair, 'valid' or
    'same'; padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""


class _ConvTranspose(_ConvNd):
    _nd, _tuple, _fn = 2, staticmethod(_pair), \
        staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size),
                         t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode,
                         device, dtype)

    def _output_padding(self, input, output_size):
        """output_padding, or the one that gives output_size (torch's)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        non_spatial = 2 if input.ndim == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.ndim}D input, output_size "
                f"must have {nd} or {non_spatial + nd} elements (got "
                f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(nd):
            size = ((input.shape[d + non_spatial] - 1) * self.stride[d]
                    - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + self.stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid "
                    f"sizes range from {min_sizes} to {max_sizes} (for an "
                    f"input of {input.shape[non_spatial:]})")
        return tuple(s - lo for s, lo in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._fn(input, self.weight, self.bias, self.stride,
                        self.padding, output_padding, self.groups,
                        self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution (conv1d's gradient with respect to its
    input) over (N, C_in, L) or (C_in, L) inputs: weight (in_channels,
    out_channels / groups, k); forward(input, output_size=None)."""
    _nd, _tuple, _fn = 1, staticmethod(_single), \
        staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution (conv2d's gradient with respect to its
    input) over (N, C_in, H, W) or (C_in, H, W) inputs: weight
    (in_channels, out_channels / groups, kh, kw);
    forward(input, output_size=None)."""


class Unfold(Module):
    """The sliding blocks of (N, C, H, W) inputs as columns
    (N, C * kh * kw, L): F.unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding,
                        self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns (N, C * kh * kw, L) summed into (N, C, *output_size) images:
    F.fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0,
                 stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size,
                      self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, "
                f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


# ------------------------------------------------------------- padding

class _ConstantPadNd(Module):
    _tuple = staticmethod(_pair)

    def __init__(self, padding, value):
        super().__init__()
        self.padding = self._tuple(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with value: padding an int or (left, right)."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with value: padding an int or (left, right,
    top, bottom)."""
    _tuple = staticmethod(_quadruple)


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros: padding an int or (left, right)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dims with zeros: padding an int or (left, right,
    top, bottom)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePadNd(Module):
    _tuple, _mode = staticmethod(_pair), "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = self._tuple(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dim with its reflection (the edge not repeated)."""


class ReflectionPad2d(_ModePadNd):
    """Pads the last two dims with their reflection (the edge not
    repeated); padding an int or (left, right, top, bottom)."""
    _tuple = staticmethod(_quadruple)


class ReplicationPad1d(_ModePadNd):
    """Pads the last dim by repeating its edge elements."""
    _mode = "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pads the last two dims by repeating their edge elements; padding an
    int or (left, right, top, bottom)."""
    _tuple, _mode = staticmethod(_quadruple), "replicate"


class CircularPad1d(_ModePadNd):
    """Pads the last dim by wrapping it around."""
    _mode = "circular"


class CircularPad2d(_ModePadNd):
    """Pads the last two dims by wrapping them around; padding an int or
    (left, right, top, bottom)."""
    _tuple, _mode = staticmethod(_quadruple), "circular"
