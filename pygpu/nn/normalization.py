"""pygpu.nn: Normalisation layers."""

__all__ = []
