"""pygpu.nn: Activation layers beyond ReLU/Sigmoid/Tanh/SiLU/GELU."""

__all__ = []
