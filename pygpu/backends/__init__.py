"""pygpu.backends: torch.backends' switches that pygpu honours."""
from . import cpu, cuda, mps

__all__ = ["cpu", "cuda", "mps"]
