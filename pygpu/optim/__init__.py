"""pygpu.optim: optimizers with torch's names, update rules and state.

Each step updates the parameters in place with grad mode off.  On CUDA
every term is one elementwise launch per parameter (not yet one fused
launch over all parameters)."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
