"""pygpu.utils: torch.utils names pygpu has (dlpack)."""
from . import dlpack

__all__ = ["dlpack"]
