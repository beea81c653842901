"""pygpu.nn: Module, Parameter, the layers, Sequential, DataParallel,
init and functional, with torch's names."""
from . import functional, init, parallel
from .container import Sequential
from .layers import (GELU, Flatten, Identity, Linear, ReLU, Sigmoid, SiLU,
                     Tanh)
from .module import Module
from .parallel import DataParallel
from .parameter import Parameter
from .softmax import LogSoftmax, Softmax

__all__ = ["functional", "init", "parallel", "Module", "Parameter",
           "Linear", "ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "Identity", "Flatten", "Sequential",
           "DataParallel", "Softmax", "LogSoftmax"]
