"""Type information and promotion: finfo, iinfo, promote_types,
result_type, can_cast, get_default_dtype, is_floating_point.

The promotion rule is torch's and the C ops' (csrc: pygpu_promote and the
binary ops): bool < uint8 < int32 < int64 < the floating types, the wider
float winning, and float16 with bfloat16 giving float32.  For result_type
an operand also has a priority: a tensor with dimensions, then a 0-d
tensor, then a Python number; a lower-priority operand decides the type
only when it is of a higher category (bool < integer < floating point), a
Python float then giving the default dtype, a Python int int64 and a
Python bool bool.
"""
import builtins
import math

from . import _C
from ._C import (Tensor, bfloat16, dtype, float16, float32, float64, int32,
                 int64, uint8)
from ._C import bool as _bool

__all__ = ["finfo", "iinfo", "promote_types", "result_type", "can_cast",
           "get_default_dtype", "set_default_dtype", "is_floating_point"]

# dtype -> (category, rank): the promotion table.  The larger pair wins;
# equal pairs of different dtypes (float16, bfloat16) give float32.
_PROMOTION = {
    _bool: (0, 0),
    uint8: (1, 1),
    int32: (1, 2),
    int64: (1, 3),
    float16: (2, 4),
    bfloat16: (2, 4),
    float32: (2, 5),
    float64: (2, 6),
}

# Binary formats of the floating types: (mantissa bits, exponent bits).
_FLOAT_FORMAT = {float16: (10, 5), bfloat16: (7, 8), float32: (23, 8),
                 float64: (52, 11)}

# The integer types: (bits, signed).
_INT_FORMAT = {uint8: (8, False), int32: (32, True), int64: (64, True)}


def get_default_dtype():
    """The dtype of floating-point tensors made without a dtype: float32
    unless set_default_dtype changed it."""
    return _C.get_default_dtype()


def set_default_dtype(d):
    """Make d (a floating dtype) the default dtype, process-wide: of
    factories given no dtype, Python floats in tensor() and promotion, true
    division and the floating functions of integer tensors.  TypeError for
    other dtypes, as torch."""
    _C.set_default_dtype(d)


def is_floating_point(input):
    """True if the tensor's dtype is a floating-point type."""
    if not isinstance(input, Tensor):
        raise TypeError("is_floating_point(): argument 'input' (position 1) "
                        f"must be Tensor, not {type(input).__name__}")
    return input.dtype.is_floating_point


def _check_dtype(func, arg, value):
    if not isinstance(value, dtype):
        raise TypeError(f"{func}(): argument '{arg}' must be pygpu.dtype, "
                        f"not {type(value).__name__}")


def _category(d):
    return _PROMOTION[d][0]


def _promote(a, b):
    if a is not b and _PROMOTION[a] == _PROMOTION[b]:
        return float32  # float16 and bfloat16
    return builtins.max(a, b, key=_PROMOTION.__getitem__)


def promote_types(type1, type2):
    """The smallest dtype that both type1 and type2 convert to, as torch's:
    bool < uint8 < int32 < int64 < float16, bfloat16 < float32 < float64,
    with float16 and bfloat16 giving float32."""
    _check_dtype("promote_types", "type1", type1)
    _check_dtype("promote_types", "type2", type2)
    return _promote(type1, type2)


def can_cast(from_, to):
    """Whether torch's casting rules allow from_ to to: not to a lower
    category (float to an integer, an integer to bool: False), any width
    within a category."""
    _check_dtype("can_cast", "from_", from_)
    _check_dtype("can_cast", "to", to)
    return _category(from_) <= _category(to)


def _operand(x, arg):
    """(dtype, priority) of a result_type operand: 2 for a tensor with
    dimensions, 1 for a 0-d tensor, 0 for a Python number."""
    if isinstance(x, Tensor):
        return x.dtype, 1 if x.ndim == 0 else 2
    if isinstance(x, builtins.bool):
        return _bool, 0
    if isinstance(x, builtins.int):
        return int64, 0
    if isinstance(x, float):
        return get_default_dtype(), 0
    raise TypeError(f"result_type(): argument '{arg}' must be Tensor or "
                    f"Number, not {type(x).__name__}")


def result_type(tensor1, tensor2):
    """The dtype of an arithmetic op on the two operands (tensors or Python
    numbers), as torch.result_type: see the module notes."""
    operands = [_operand(tensor1, "tensor1"), _operand(tensor2, "tensor2")]
    best = {}
    for d, priority in operands:
        seen = best.get(priority)
        best[priority] = d if seen is None else _promote(seen, d)
    result = None
    for priority in sorted(best):  # lowest first
        result = _combine(best[priority], result)
    return result


def _combine(higher, lower):
    """torch's combination of a higher-priority operand type with the
    result of the lower-priority ones (None: there were none)."""
    if lower is None or _category(higher) == 2:
        return higher
    if higher is _bool or _category(lower) == 2:
        return _promote(higher, lower)
    return higher


class _TypeInfo:
    """Equal when of the same kind and dtype, as torch's."""

    def __eq__(self, other):
        return type(other) is type(self) and other.dtype == self.dtype

    def __hash__(self):
        return hash((type(self), self.dtype))


class finfo(_TypeInfo):
    """finfo(dtype=None): the numerical properties of a floating-point
    dtype (the default dtype when None): bits, eps, max, min, tiny (=
    smallest_normal), resolution, and dtype (its name, as torch's)."""

    def __init__(self, dtype=None):
        if dtype is None:
            dtype = get_default_dtype()
        _check_dtype("finfo", "dtype", dtype)
        if dtype not in _FLOAT_FORMAT:
            raise TypeError("pygpu.finfo() requires a floating point input "
                            "type. Use pygpu.iinfo to handle 'pygpu.finfo'")
        mantissa, exponent = _FLOAT_FORMAT[dtype]
        emax = 2 ** (exponent - 1) - 1
        self.bits = 1 + mantissa + exponent
        self.eps = 2.0 ** -mantissa
        self.max = (2.0 - self.eps) * 2.0 ** emax
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - emax)
        # 10 ** -(decimal digits the type always keeps)
        self.resolution = 10.0 ** -math.floor(mantissa * math.log10(2))
        self.dtype = repr(dtype).split(".")[-1]

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, "
                f"max={self.max:g}, eps={self.eps:g}, smallest_normal="
                f"{self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo(_TypeInfo):
    """iinfo(dtype): the numerical properties of an integer dtype: bits,
    max, min, and dtype (its name, as torch's)."""

    def __init__(self, dtype):
        _check_dtype("iinfo", "dtype", dtype)
        if dtype.is_floating_point:
            raise TypeError("pygpu.iinfo() requires an integer input type. "
                            "Use pygpu.finfo to handle 'pygpu.iinfo'")
        if dtype not in _INT_FORMAT:
            raise TypeError(f"{dtype} is not supported by pygpu.iinfo")
        self.bits, signed = _INT_FORMAT[dtype]
        if signed:
            self.max = 2 ** (self.bits - 1) - 1
            self.min = -2 ** (self.bits - 1)
        else:
            self.max = 2 ** self.bits - 1
            self.min = 0
        self.dtype = repr(dtype).split(".")[-1]

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
