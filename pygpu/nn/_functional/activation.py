"""pygpu.nn.functional: the activations beyond relu/sigmoid/tanh/silu/gelu."""

__all__ = []
