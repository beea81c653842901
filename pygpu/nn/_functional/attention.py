"""pygpu.nn.functional: scaled dot-product attention."""

__all__ = []
