"""isclose, allclose and equal, over the comparison ops: everything runs
on the tensors' device; only the final answer of allclose and equal (one
element) comes back to the host."""
import builtins

from ._C import Tensor, abs, isfinite, isnan

__all__ = ["isclose", "allclose", "equal"]


def _check_tensors(fname, input, other):
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fname}(): argument '{name}' must be Tensor, "
                            f"not {type(x).__name__}")


def _all(mask):
    """Whether every element of a bool tensor is true (True when empty)."""
    return mask.all().item()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise, as a bool
    tensor; infinities are close only to themselves, NaN to NaN only with
    equal_nan.  Both tensors must have the same dtype, as in torch."""
    _check_tensors("isclose", input, other)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_scalar_name(input.dtype)} did not match "
                           f"{_scalar_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, "
                           f"but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, "
                           f"but got {atol}")
    close = input == other
    if input.dtype.is_floating_point:
        if equal_nan:
            close = close | (isnan(input) & isnan(other))
        diff = abs(input - other)
        within = diff <= atol + rtol * abs(other)
        close = close | (isfinite(diff) & within)
    elif rtol != 0 or atol != 0:
        diff = abs(input.double() - other.double())
        close = close | (diff <= atol + rtol * abs(other.double()))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when isclose is true everywhere (a Python bool)."""
    return _all(isclose(input, other, rtol, atol, equal_nan))


def equal(input, other):
    """True if the two tensors have the same size and equal elements (NaN
    equals nothing), as torch.equal: a Python bool, computed on the
    tensors' device."""
    _check_tensors("equal", input, other)
    if input.device != other.device:
        raise RuntimeError("Expected all tensors to be on the same device, "
                           "but found at least two devices, "
                           f"{input.device} and {other.device}!")
    if input.shape != other.shape:
        return False
    return builtins.bool(_all(input == other))


_SCALAR_NAMES = {"float32": "Float", "float16": "Half", "float64": "Double",
                 "int64": "Long", "bool": "Bool", "uint8": "Byte",
                 "int32": "Int", "bfloat16": "BFloat16"}


def _scalar_name(dtype):
    return _SCALAR_NAMES[repr(dtype).split(".")[-1]]
