"""pygpu.nn: Pooling, upsampling and pixel-shuffle layers, each a thin
module over its functional form (pygpu/nn/_functional/pooling.py,
adaptive_pooling.py and upsampling.py), with torch's arguments, defaults
and extra_repr."""
from ._functional import adaptive_pooling as _adaptive
from ._functional import pooling as F
from ._functional import upsampling as _up
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle"]


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation",
                     "return_indices", "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """F.max_pool1d over (N, C, L) or (C, L) inputs."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride,
                            self.padding, self.dilation,
                            ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """F.max_pool2d over (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride,
                            self.padding, self.dilation,
                            ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


def _single(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class AvgPool1d(Module):
    """F.avg_pool1d over (N, C, L) or (C, L) inputs."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode",
                     "count_include_pad"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride,
                            self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class AvgPool2d(Module):
    """F.avg_pool2d over (N, C, H, W) or (C, H, W) inputs."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode",
                     "count_include_pad", "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride,
                            self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """F.adaptive_max_pool1d over (N, C, L) or (C, L) inputs."""

    def forward(self, input):
        return _adaptive.adaptive_max_pool1d(input, self.output_size,
                                     self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """F.adaptive_max_pool2d over (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        return _adaptive.adaptive_max_pool2d(input, self.output_size,
                                     self.return_indices)


class _AdaptiveAvgPoolNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool1d over (N, C, L) or (C, L) inputs."""

    def forward(self, input):
        return _adaptive.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """F.adaptive_avg_pool2d over (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        return _adaptive.adaptive_avg_pool2d(input, self.output_size)


class Upsample(Module):
    """F.interpolate with the size or scale_factor, mode, align_corners
    and recompute_scale_factor given at construction."""
    __constants__ = ["size", "scale_factor", "mode", "align_corners",
                     "name", "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode="nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return _up.interpolate(
            input, self.size, self.scale_factor, self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Upsample with mode='nearest'."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode='bilinear' and align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear",
                         align_corners=True)


class PixelShuffle(Module):
    """F.pixel_shuffle: (*, C * r * r, H, W) -> (*, C, H * r, W * r)."""
    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return _up.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """F.pixel_unshuffle: (*, C, H * r, W * r) -> (*, C * r * r, H, W)."""
    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return _up.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
