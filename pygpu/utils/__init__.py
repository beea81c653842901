"""pygpu.utils: torch.utils names pygpu has (dlpack, data), and
safetensors (the names of safetensors.torch)."""
from . import dlpack
from . import data
from . import safetensors

__all__ = ["dlpack", "data", "safetensors"]
