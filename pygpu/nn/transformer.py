"""pygpu.nn: MultiheadAttention and the transformer encoder."""

__all__ = []
