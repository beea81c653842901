"""pygpu.backends: torch.backends' switches that pygpu honours."""
from . import cuda, mps

__all__ = ["cuda", "mps"]
