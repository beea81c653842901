"""pygpu.nn: Module, Parameter, the layers, Sequential, DataParallel,
init and functional, with torch's names."""
from . import functional, init, parallel
from .container import Sequential
from .layers import Flatten, Identity, Linear, ReLU
from .module import Module
from .parallel import DataParallel
from .parameter import Parameter

__all__ = ["functional", "init", "parallel", "Module", "Parameter",
           "Linear", "ReLU", "Identity", "Flatten", "Sequential",
           "DataParallel"]
