"""pygpu.nn.functional: the activations beyond relu/sigmoid/tanh/silu/gelu.

Each is composed of ops that have gradients (where, clamp, exp, expm1,
log1p, tanh, sigmoid, ...), so autograd records the steps and the
gradient is theirs; the compositions are chosen so that torch's
derivative comes out at the kinks too (where(x > 0, ...) sends x = 0 to
the negative side, as torch's backward formulas do; hardtanh's gradient
passes only strictly inside (min_val, max_val), and so does that of
hardsigmoid's and hardswish's clamps).

Stability: softplus and logsigmoid never take exp of a positive number
(softplus(x) = max(x, 0) + log1p(exp(-|x|))), so large |x| gives no
overflow and no NaN gradient; elu's exp reads min(x, 0) for the same
reason.  float16 and bfloat16 inputs of the multi-step formulas are
computed in float32 and rounded once at the end, as torch computes them.

inplace=True writes the result into input and returns input.  When
autograd records the call, the result is computed from a copy of input
and then assigned (``input[...] = result``), which records the write;
a leaf that requires grad is refused with torch's message.
"""
from ... import _C
from ...autograd.grad_mode import is_grad_enabled

__all__ = ["leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
           "celu", "celu_", "softplus", "hardtanh", "hardtanh_", "relu6",
           "mish", "hardswish", "hardsigmoid", "logsigmoid", "softsign",
           "tanhshrink", "glu", "prelu", "softmin"]

_FLOATS = (_C.float32, _C.float64, _C.float16, _C.bfloat16)
_HALF = (_C.float16, _C.bfloat16)
_SCALAR_NAME = {_C.float32: "Float", _C.float64: "Double",
                _C.float16: "Half", _C.bfloat16: "BFloat16",
                _C.int64: "Long", _C.int32: "Int", _C.uint8: "Byte",
                _C.bool: "Bool"}
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float_only(input, kernel):
    """torch's message for an activation without integer kernels."""
    if input.dtype not in _FLOATS:
        raise NotImplementedError(
            f'"{kernel}_{input.device.type}" not implemented for '
            f"'{_SCALAR_NAME[input.dtype]}'")


def _apply(input, inplace, fn):
    """fn(input), or with inplace=True fn's result written into input."""
    if not inplace:
        return fn(input)
    if is_grad_enabled() and input.requires_grad:
        if input.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being "
                               "used in an in-place operation.")
        input[...] = fn(input.clone())
        return input
    return input.copy_(fn(input))


def _wide(fn):
    """fn computed in float32 for float16/bfloat16 input, the result
    rounded back to the input's dtype."""
    def run(x):
        if x.dtype in _HALF:
            return fn(x.float()).to(x.dtype)
        return fn(x)
    return run


def _below_zero(x):
    """min(x, 0), with NaN kept."""
    return _C.where(x > 0, 0.0, x)


def _log1p_exp_neg_abs(x):
    """log(1 + exp(-|x|)); the x = 0 case differentiates as x < 0."""
    return _C.log1p(_C.exp(_C.where(x > 0, -x, x)))


# ------------------------------------------------------------ leaky_relu

def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where input > 0, else negative_slope * input."""
    _float_only(input, "leaky_relu")
    return _apply(input, inplace,
                  lambda x: _C.where(x > 0, x, x * negative_slope))


def leaky_relu_(input, negative_slope=0.01):
    """leaky_relu in place."""
    return leaky_relu(input, negative_slope, True)


# ------------------------------------------------------ elu, selu, celu

def _elu(x, alpha, scale, input_scale):
    """scale * (x where x > 0, else alpha * (exp(x * input_scale) - 1))."""
    neg = _C.expm1(_below_zero(x) * input_scale) * alpha
    out = _C.where(x > 0, x, neg)
    return out * scale if scale != 1.0 else out


def elu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input) - 1)."""
    _float_only(input, "elu")
    return _apply(input, inplace,
                  _wide(lambda x: _elu(x, alpha, 1.0, 1.0)))


def elu_(input, alpha=1.0):
    """elu in place."""
    return elu(input, alpha, True)


def selu(input, inplace=False):
    """scale * elu(input, alpha) with SELU's fixed alpha and scale."""
    _float_only(input, "elu")
    return _apply(input, inplace,
                  _wide(lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE, 1.0)))


def selu_(input):
    """selu in place."""
    return selu(input, True)


def celu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _float_only(input, "elu")
    return _apply(input, inplace,
                  _wide(lambda x: _elu(x, alpha, 1.0, 1.0 / alpha)))


def celu_(input, alpha=1.0):
    """celu in place."""
    return celu(input, alpha, True)


# ----------------------------------------- softplus, logsigmoid, mish

def _softplus(x, beta=1.0):
    """log(1 + exp(beta * x)) / beta as max(bx, 0) + log1p(exp(-|bx|))."""
    bx = x * beta if beta != 1.0 else x
    out = _C.where(bx > 0, bx, 0.0) + _log1p_exp_neg_abs(bx)
    return out / beta if beta != 1.0 else out


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * input)) / beta, and input itself where
    beta * input > threshold."""
    _float_only(input, "softplus")

    def fn(x):
        out = _softplus(x, beta)
        return _C.where(x * beta > threshold, x, out)
    return _wide(fn)(input)


def logsigmoid(input):
    """log(sigmoid(input)) as min(input, 0) - log1p(exp(-|input|))."""
    _float_only(input, "log_sigmoid")
    return _wide(lambda x: _C.where(x < 0, x, 0.0)
                 - _log1p_exp_neg_abs(-x))(input)


def mish(input, inplace=False):
    """input * tanh(softplus(input))."""
    _float_only(input, "mish")
    return _apply(input, inplace,
                  _wide(lambda x: x * _C.tanh(_softplus(x))))


# ------------------------------------------- hardtanh, relu6, hard*

def _clamp_inside(x, lo, hi):
    """clamp(x, lo, hi) whose gradient passes only where lo < x < hi."""
    inside = (x > lo) & (x < hi)
    return _C.where(inside, x, x.detach().clamp(lo, hi))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """input clamped to [min_val, max_val]; the gradient is 1 strictly
    between them, 0 elsewhere."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, inplace,
                  lambda x: _clamp_inside(x, min_val, max_val))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """hardtanh in place."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(input, 0), 6): hardtanh(input, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardswish(input, inplace=False):
    """input * relu6(input + 3) / 6; the gradient is 0 for input <= -3 and
    1 for input >= 3."""
    _float_only(input, "hardswish")
    return _apply(input, inplace,
                  lambda x: x * ((_clamp_inside(x, -3.0, 3.0) + 3.0) / 6.0))


def hardsigmoid(input, inplace=False):
    """relu6(input + 3) / 6; the gradient is 1/6 strictly inside
    (-3, 3)."""
    _float_only(input, "hardsigmoid")
    return _apply(input, inplace,
                  lambda x: _clamp_inside(x, -3.0, 3.0) / 6.0 + 0.5)


# ----------------------------------------------- softsign, tanhshrink

def softsign(input):
    """input / (1 + |input|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """input - tanh(input)."""
    return input - _C.tanh(input)


# ------------------------------------------------------ glu, prelu

def glu(input, dim=-1):
    """a * sigmoid(b), a and b the two halves of input along dim."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving "
                           "size must be even")
    d = dim + input.dim() if dim < 0 else dim
    if d < 0 or d >= input.dim():
        raise IndexError(
            f"Dimension out of range (expected to be in range of "
            f"[{-input.dim()}, {input.dim() - 1}], but got {dim})")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{d} is size {n}")
    _float_only(input, "glu")
    h = n // 2
    return input.narrow(d, 0, h) * _C.sigmoid(input.narrow(d, h, h))


def prelu(input, weight):
    """input where input > 0, else weight * input; weight holds one slope,
    or one per channel (dim 1 of input)."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D "
                           f"tensor, but got: ndim = {weight.dim()}")
    _float_only(input, "prelu")
    slopes = weight.numel()
    if slopes != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if slopes != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. "
                f"Found parameter numbers = {slopes} and channel size = "
                f"{channels}.")
        weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    elif weight.dim() == 1 and input.dim() == 0:
        weight = weight.reshape(())
    return _C.where(input > 0, input, input * weight)


# ---------------------------------------------------------------- softmin

def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim; dtype converts the input first.  dim is
    required."""
    if dim is None:
        raise TypeError("softmin(): dim is required (pygpu does not choose "
                        "one implicitly, as torch's deprecated form does)")
    if dtype is not None:
        input = input.to(dtype)
    return _C.softmax(-input, dim, None)
