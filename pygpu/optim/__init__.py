"""pygpu.optim: optimizers with torch's names, update rules and state.

Each step updates the parameters in place with grad mode off, by default
fused: one pass over each parameter on the CPU, one kernel launch per
device and dtype on CUDA; foreach=False takes one op per term instead."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
