"""pygpu.nn.functional: pooling, interpolation and pixel shuffling."""

__all__ = []
