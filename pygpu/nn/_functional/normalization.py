"""pygpu.nn.functional: batch, layer, group and RMS normalisation, normalize."""

__all__ = []
