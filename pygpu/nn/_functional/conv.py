"""pygpu.nn.functional: convolutions, unfold/fold and padding."""

__all__ = []
