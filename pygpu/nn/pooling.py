"""pygpu.nn: Pooling, upsampling and pixel-shuffle layers."""

__all__ = []
