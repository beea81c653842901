"""pygpu.nn: the functional ops (pygpu.nn.functional)."""
from . import functional

__all__ = ["functional"]
