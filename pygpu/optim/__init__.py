"""pygpu.optim: optimizers with torch's names, update rules and state.

Each step updates the parameters in place with grad mode off. SGD, Adam
and AdamW are fused by default: one pass over each parameter on the CPU,
one kernel launch per device and dtype on CUDA; foreach=False takes one op
per term instead. RMSprop, Adagrad, Adamax, NAdam and RAdam take one op
per term. lr_scheduler holds torch's learning-rate schedulers."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "Adamax", "NAdam", "RAdam", "lr_scheduler"]
