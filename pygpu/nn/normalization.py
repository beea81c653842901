"""pygpu.nn: Normalisation layers (BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d,
LayerNorm, GroupNorm, RMSNorm) with torch's arguments, defaults, buffers
(running_mean, running_var, num_batches_tracked) and reprs."""
import numbers
import warnings

from .. import _C
from . import init
from ._functional import normalization as F
from .module import Module
from .parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "GroupNorm",
           "RMSNorm"]



def _affine_parameters(module, shape, affine, bias, kw):
    """weight (and bias, unless bias=False) of the given shape, or None
    for both without affine; registered on module, uninitialised."""
    if affine:
        module.weight = Parameter(_C.empty(shape, **kw))
        if bias:
            module.bias = Parameter(_C.empty(shape, **kw))
            return
    else:
        module.register_parameter("weight", None)
    module.register_parameter("bias", None)

class _NormBase(Module):
    """What batch and instance norm share: the per-channel weight and bias,
    the running statistics and their reset."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        kw = {"device": device, "dtype": dtype}
        _affine_parameters(self, num_features, affine, bias, kw)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, **kw))
            self.register_buffer("running_var", _C.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 _C.tensor(0, dtype=_C.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, "
                f"momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = ()

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.dim()}D "
                             f"input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and \
                self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        # the batch's statistics when training, or when there are none
        bn_training = self.training or (self.running_mean is None and
                                        self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        return F.batch_norm(
            input, self.running_mean if use_buffers else None,
            self.running_var if use_buffers else None, self.weight,
            self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input over N (and L)."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input over N, H and W."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) input over N, D, H and W."""
    _dims = (5,)


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats, device, dtype, bias=bias)

    def _apply_instance_norm(self, input):
        return F.instance_norm(
            input, self.running_mean, self.running_var, self.weight,
            self.bias, self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        nb = self._no_batch_dim
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got "
                             f"{input.dim()}D input)")
        feature_dim = input.dim() - nb
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match "
                    f"num_features ({self.num_features}), but got: "
                    f"{input.size(feature_dim)}.")
            warnings.warn(
                f"input's size at dim={feature_dim} does not match "
                f"num_features. You can silence this warning by not passing "
                f"in num_features, which is not used because affine=False",
                stacklevel=2)
        if input.dim() == nb:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) input over L."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input over H, W."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input over
    D, H and W."""
    _no_batch_dim = 4


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Layer normalisation over the trailing dims normalized_shape names;
    weight (ones) and bias (zeros) of that shape when elementwise_affine."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        kw = {"device": device, "dtype": dtype}
        _affine_parameters(self, self.normalized_shape, elementwise_affine,
                           bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight,
                            self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Group normalisation: the channels in num_groups groups, each
    normalised over its channels and spatial dims; per-channel weight and
    bias when affine."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be "
                             f"divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        kw = {"device": device, "dtype": dtype}
        _affine_parameters(self, num_channels, affine, bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias,
                            self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing dims
    normalized_shape names; eps=None is the compute type's epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.empty(self.normalized_shape,
                                             device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
