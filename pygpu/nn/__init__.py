"""pygpu.nn: Module, Parameter, the layers, Sequential, DataParallel,
init and functional, with torch's names."""
from . import functional, init, parallel
from .container import Sequential
from .layers import (GELU, Flatten, Identity, Linear, ReLU, Sigmoid, SiLU,
                     Tanh)
from .losses import (BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss,
                     NLLLoss)
from .module import Module
from .parallel import DataParallel
from .parameter import Parameter
from .softmax import LogSoftmax, Softmax

__all__ = ["functional", "init", "parallel", "Module", "Parameter",
           "Linear", "ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "Identity", "Flatten", "Sequential",
           "DataParallel", "Softmax", "LogSoftmax", "MSELoss", "L1Loss",
           "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss"]
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d  # noqa: E402
__all__ += ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout"]
