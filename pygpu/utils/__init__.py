"""pygpu.utils: torch.utils names pygpu has (dlpack, data)."""
from . import dlpack
from . import data

__all__ = ["dlpack", "data"]
