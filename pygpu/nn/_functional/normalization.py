"""pygpu.nn.functional: batch, instance, layer, group and RMS
normalisation, normalize.

Layer norm, RMS norm and group norm (as layer norm over the rows of
(sample, group)) run as one op, _C._norm, and batch norm's training step as
_C._batch_norm_train: a pass for the statistics, one to apply them, and a
fused backward; instance norm takes the latter over the (sample, channel)
planes.  The rest (evaluation, the affine steps of group and instance
norm, empty inputs) is composed from pygpu's differentiable ops (mean,
sub, mul, rsqrt, reshape).  float16 and bfloat16 inputs are
normalised in float32 (statistics and the affine step) and the result is
cast back, as torch does; float32 and float64 compute in their own type.
Argument checks and messages follow torch's."""
from ... import _C
from ..._compare import _scalar_name
from ...autograd import no_grad

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm",
           "rms_norm", "normalize"]

_HALF = (_C.float16, _C.bfloat16)
_FLOAT = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _opmath(dtype):
    """The type a normalisation of `dtype` computes in."""
    return _C.float32 if dtype in _HALF else dtype


def _check_float(input, kernel):
    if input.dtype not in _FLOAT:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_scalar_name(input.dtype)}'")


def _check_params(input, *params):
    """torch's mixed-dtype rule: the parameters have the input's dtype, or
    (for a float16/bfloat16 input) all of them are float32."""
    dtypes = {p.dtype for p in params if p is not None}
    if not dtypes or dtypes == {input.dtype}:
        return
    if input.dtype in _HALF and dtypes == {_C.float32}:
        return
    tag = "CPU" if input.device.type == "cpu" else "CUDA"
    if input.dtype is _C.float64:
        raise RuntimeError(f"mixed dtype ({tag}): all inputs must share "
                           f"same datatype.")
    raise RuntimeError(f"mixed dtype ({tag}): expect parameter to have "
                       f"scalar type of Float")


def _up(t, dtype):
    """t in the compute type (no copy when it already is)."""
    return t if t is None or t.dtype is dtype else t.to(dtype)


def _shape_tuple(fname, normalized_shape):
    if isinstance(normalized_shape, int) or not hasattr(
            normalized_shape, "__iter__"):
        raise TypeError(f"{fname}(): argument 'normalized_shape' "
                        f"(position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return tuple(int(s) for s in normalized_shape)


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


def _verify_batch_size(size):
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when "
                         f"training, got input size {size}")


def _stats(x, dims):
    """(mean, x - mean, biased variance) over dims, kept for broadcasting;
    the variance from the centred values (two passes, no cancellation)."""
    mean = x.mean(dims, keepdim=True)
    xc = x - mean
    return mean, xc, (xc * xc).mean(dims, keepdim=True)


def _update_running(running, batch, momentum):
    """running <- (1 - momentum) * running + momentum * batch, in place."""
    running.mul_(1 - momentum).add_(
        batch.reshape(running.shape).to(running.dtype), alpha=momentum)


# ------------------------------------------------------------- batch norm

def batch_norm(input, running_mean, running_var, weight=None, bias=None,
               training=False, momentum=0.1, eps=1e-5):
    """Normalises each channel (dim 1) over the batch and spatial dims:
    with the batch's statistics when training (updating running_mean and
    running_var, the latter with the unbiased variance, when given), else
    with running_mean and running_var."""
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training,"
                         f" but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got "
                         f"{eps}")
    _check_float(input, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be "
                         "None or neither be None")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    c = input.size(1) if training or input.dim() > 1 else 0
    for name, t in (("running_mean", running_mean),
                    ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not "
                               f"{t.numel()}")
    _check_params(input, weight, bias, running_mean, running_var)
    ct = _opmath(input.dtype)
    shape = (1, c) + (1,) * (input.dim() - 2)
    if training and input.numel() > 0:
        # one op: each channel's statistics, the output, a fused backward
        y, mean, var = _C._batch_norm_train(input, weight, bias, float(eps))
        if running_mean is not None:
            n = input.numel() // c
            with no_grad():
                _update_running(running_mean, mean, momentum)
                _update_running(running_var, var * (n / (n - 1)), momentum)
        return y
    x = _up(input, ct)
    if training:
        dims = (0,) + tuple(range(2, input.dim()))
        mean, xc, var = _stats(x, dims)
        n = input.numel() // c if c else 0
        if running_mean is not None and n > 0:
            with no_grad():
                _update_running(running_mean, mean.detach(), momentum)
                _update_running(running_var, var.detach() * (n / (n - 1)),
                                momentum)
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * _up(weight, ct).reshape(shape)
        y = xc * scale
        if bias is not None:
            y = y + _up(bias, ct).reshape(shape)
        return _up(y, input.dtype)
    # evaluation: y = x * scale + shift with per-channel scale and shift
    scale = (_up(running_var, ct) + eps).rsqrt()
    if weight is not None:
        scale = scale * _up(weight, ct)
    shift = -_up(running_mean, ct) * scale
    if bias is not None:
        shift = shift + _up(bias, ct)
    y = x * scale.reshape(shape) + shift.reshape(shape)
    return _up(y, input.dtype)


# ---------------------------------------------------------- instance norm

def _verify_spatial_size(size):
    prod = 1
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 spatial element when "
                         f"training, got input size {size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None,
                  bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalises each (sample, channel) plane over its spatial dims (with
    use_input_stats=False: with running_mean and running_var); given running
    statistics, updates them with the batch's average of the planes'."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    _check_float(input, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be "
                         "None or neither be None")
    if not use_input_stats and running_mean is None:
        raise RuntimeError("Expected running_mean and running_var to be "
                           "defined when use_input_stats is false")
    n, c = input.size(0), input.size(1)
    # torch runs batch_norm on (1, N*C, ...), so its counts are N times C
    for name, t in (("running_mean", running_mean),
                    ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not "
                               f"{n * t.numel()}")
    _check_params(input, weight, bias, running_mean, running_var)
    ct = _opmath(input.dtype)
    shape = (1, c) + (1,) * (input.dim() - 2)
    x = input if use_input_stats else _up(input, ct)
    if use_input_stats:
        m = input.numel() // (n * c) if n * c else 0
        if m > 0:
            # each (sample, channel) plane is a channel of batch norm
            xin = input if weight is None and bias is None else \
                _up(input, ct)
            y, mean, var = _C._batch_norm_train(
                xin.reshape(1, n * c, m), None, None, float(eps))
            y = _up(y.reshape(tuple(input.shape)), ct)
            mean, var = mean.reshape(n, c), var.reshape(n, c)
        else:
            mean, xc, var = _stats(_up(x, ct), tuple(range(2, input.dim())))
            y = xc * (var + eps).rsqrt()
        if running_mean is not None and m > 0:
            with no_grad():
                _update_running(running_mean, mean.detach().mean(0),
                                momentum)
                _update_running(running_var,
                                var.detach().mean(0) * (m / (m - 1)),
                                momentum)
    else:
        y = (x - _up(running_mean, ct).reshape(shape)) * \
            (_up(running_var, ct) + eps).rsqrt().reshape(shape)
    if weight is not None:
        y = y * _up(weight, ct).reshape(shape)
    if bias is not None:
        y = y + _up(bias, ct).reshape(shape)
    return _up(y, input.dtype)


# ------------------------------------------------------------- layer norm

def _check_normalized(input, shape, star):
    """torch's checks of normalized_shape against the input's trailing
    dims; star is how torch writes the expected shape ("*, " or "*")."""
    if len(shape) == 0:
        raise RuntimeError("Expected normalized_shape to be at least "
                           "1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    k = len(shape)
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with "
            f"shape [{star}{str(list(shape))[1:-1]}], but got input of "
            f"size{list(input.shape)}")


def _check_affine(shape, name, t):
    if t is not None and tuple(t.shape) != shape:
        raise RuntimeError(f"Expected {name} to be of same shape as "
                           f"normalized_shape, but got {name} of shape "
                           f"{list(t.shape)} and normalized_shape = "
                           f"{list(shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(input - mean) / sqrt(var + eps) * weight + bias, the statistics
    over the trailing dims normalized_shape names."""
    shape = _shape_tuple("layer_norm", normalized_shape)
    _check_normalized(input, shape, "*, ")
    _check_affine(shape, "weight", weight)
    _check_affine(shape, "bias", bias)
    _check_float(input, "LayerNormKernelImpl")
    _check_params(input, weight, bias)
    n = _prod(shape)
    if n > 0 and input.numel() > 0:
        return _C._norm(input, weight, bias, n, float(eps), False)
    ct = _opmath(input.dtype)
    _, xc, var = _stats(_up(input, ct), tuple(range(-len(shape), 0)))
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * _up(weight, ct)
    if bias is not None:
        y = y + _up(bias, ct)
    return _up(y, input.dtype)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input**2) + eps) * weight over the trailing dims
    normalized_shape names; eps=None is the machine epsilon of the type
    the normalisation computes in (float32 for float16 and bfloat16)."""
    shape = _shape_tuple("rms_norm", normalized_shape)
    _check_normalized(input, shape, "*")
    _check_affine(shape, "weight", weight)
    _check_float(input, "rms_norm")
    ct = _opmath(input.dtype)
    if eps is None:
        from ... import finfo
        eps = finfo(ct).eps
    n = _prod(shape)
    if n > 0 and input.numel() > 0 and (
            weight is None or weight.dtype is input.dtype or
            (input.dtype in _HALF and weight.dtype is _C.float32)):
        return _C._norm(input, weight, None, n, float(eps), True)
    x = _up(input, ct)
    y = x * ((x * x).mean(tuple(range(-len(shape), 0)), keepdim=True)
             + eps).rsqrt()
    if weight is not None:
        y = y * _up(weight, ct)
    return _up(y, input.dtype)


# ------------------------------------------------------------- group norm

def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Splits the channels (dim 1) into num_groups groups and normalises
    each group of each sample over its channels and spatial dims; weight
    and bias are per channel."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input "
                           f"tensor but received {input.dim()}")
    n, c = input.size(0), input.size(1)
    _verify_batch_size([n * c // num_groups, num_groups] +
                       list(input.shape[2:]))
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be "
                           f"divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number"
                f" of channels in input, but got {name} of shape "
                f"{list(t.shape)} and input of shape {list(input.shape)}")
    hxw = input.numel() // (n * c) if n * c else 1
    if n * c and hxw == 0:
        raise RuntimeError("Expected HxW to be greater than 0, got 0")
    _check_float(input, "GroupNormKernelImpl")
    _check_params(input, weight, bias)
    ct = _opmath(input.dtype)
    shape = (1, c) + (1,) * (input.dim() - 2)
    if input.numel() > 0:
        # each (sample, group) is a row of layer norm without parameters
        # (in float32 when an affine step follows: one rounding, as torch)
        xin = input if weight is None and bias is None else _up(input, ct)
        y = _C._norm(xin.reshape(n * num_groups, -1), None, None,
                     input.numel() // (n * num_groups), float(eps), False)
        y = _up(y.reshape(tuple(input.shape)), ct)
        if weight is not None:
            y = y * _up(weight, ct).reshape(shape)
        if bias is not None:
            y = y + _up(bias, ct).reshape(shape)
        return _up(y, input.dtype)
    x = _up(input, ct).reshape(n, num_groups, -1)
    _, xc, var = _stats(x, (2,))
    y = (xc * (var + eps).rsqrt()).reshape(tuple(input.shape))
    if weight is not None:
        y = y * _up(weight, ct).reshape(shape)
    if bias is not None:
        y = y + _up(bias, ct).reshape(shape)
    return _up(y, input.dtype)


# -------------------------------------------------------------- normalize

def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps), the norm over dim (an int or a tuple
    of ints) kept for broadcasting; with out= the result is written there
    (not differentiable)."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps)
    if out is None:
        return input / denom.expand_as(input)
    return _C.div(input, denom.expand_as(input), out=out)
