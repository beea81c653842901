"""pygpu.nn: Embedding."""

__all__ = []
