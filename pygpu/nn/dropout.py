"""Dropout: F.dropout, dropout1d, dropout2d, alpha_dropout and their
modules, with torch's arguments, checks and messages.

In training, a keep mask is drawn from the input device's generator in
one pass: 1 / (1 - p) (rounded to the input's dtype) with probability
1 - p, else 0; the input is multiplied by it, and that one product is
what autograd records, so the gradient is the incoming gradient times the same scaled
mask.  The channel forms draw one number per (sample, channel) and
broadcast it over the rest.  p = 0 and eval return the input itself; p = 1
multiplies by zero (a zero gradient, as torch).
"""
import math
import warnings

from .. import _C
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout",
           "dropout", "dropout1d", "dropout2d", "alpha_dropout"]

_SELU_ALPHA = 1.7580993408473766  # selu's alpha times its scale
_BERNOULLI = 5  # enum pygpu_dist


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, "
                         f"but got {p}")


def _keep(input, shape, p, value):
    """value with probability 1 - p, else 0: one draw of shape in input's
    dtype (the Bernoulli kind of _C._sample)."""
    noise = _C.empty(shape, dtype=input.dtype, device=input.device)
    return _C._sample(noise, _BERNOULLI, 1.0 - p, value, None, None)


def _apply(input, p, training, inplace, shape, alpha=False):
    _check_p(p)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if p == 1.0:
        zero = _C.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    if not alpha:
        noise = _keep(input, shape, p, 1.0 / (1.0 - p))
        return input.mul_(noise) if inplace else input * noise
    noise = _keep(input, shape, p, 1.0)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = (noise - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    noise.mul_(a)
    out = input.mul_(noise) if inplace else input * noise
    return out.add_(b)


def _channel_shape(input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions "
                           "in the input")
    shape = tuple(input.shape)
    return shape[:2] + (1,) * (len(shape) - 2)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by
    1 / (1 - p) (training only)."""
    return _apply(input, p, training, inplace, tuple(input.shape))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability
    p, scaling the rest by 1 / (1 - p)."""
    _check_p(p)
    d = input.dim()
    if d not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {d}D "
            "input. Note that dropout1d exists to provide channel-wise "
            "dropout on inputs with 1 spatial dimension, a channel "
            "dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    shape = (input.shape[0], 1) if d == 2 else _channel_shape(input)
    return _apply(input, p, training, inplace, shape)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p,
    scaling the rest by 1 / (1 - p).  A 3-D input is read as (N, C, L),
    with torch's warning."""
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {d}-D input to dropout2d, which is "
            "deprecated and will result in an error in a future release. To "
            "retain the behavior and silence this warning, please use "
            "dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a "
            "channel dimension, and an optional batch dimension (i.e. 3D or "
            "4D inputs).")
    if d == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that "
            "channel-wise 1D dropout behavior is desired - input is "
            "interpreted as shape (N, C, L), where C is the channel dim. "
            "This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, "
            "W). To maintain the 1D channel-wise dropout behavior, please "
            "switch to using dropout1d instead.")
    return _apply(input, p, training, inplace, _channel_shape(input))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps selu's mean and variance: dropped elements take
    selu's negative saturation, then an affine map restores the
    moments."""
    return _apply(input, p, training, inplace, tuple(input.shape),
                  alpha=True)


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        _check_p(p)
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """F.dropout in training mode, the identity in eval mode."""

    def forward(self, input):
        return dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """F.dropout1d: whole channels of (N, C, L) or (C, L) inputs."""

    def forward(self, input):
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """F.dropout2d: whole channels of (N, C, H, W) inputs."""

    def forward(self, input):
        return dropout2d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """F.alpha_dropout, for selu networks."""

    def forward(self, input):
        return alpha_dropout(input, self.p, self.training)
