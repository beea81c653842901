"""pygpu.nn.functional: embedding."""

__all__ = []
