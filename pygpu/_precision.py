"""Matmul precision switch (torch.set_float32_matmul_precision)."""
from . import _C

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """'highest': true FP32 products (the default); 'high' or 'medium':
    TF32 tensor cores for float32 products on CUDA."""
    if precision not in _PRECISIONS:
        raise ValueError(
            f"Invalid precision {precision!r}: expected one of {_PRECISIONS}")
    _C._set_allow_tf32(precision != "highest")


def get_float32_matmul_precision() -> str:
    """'highest' (true FP32 products) or 'high' (TF32 allowed), as set by
    set_float32_matmul_precision."""
    return "high" if _C._get_allow_tf32() else "highest"
