"""pygpu.nn: Convolution, unfold/fold and padding layers."""

__all__ = []
