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
from . import utils  # noqa: E402
__all__ += ["utils"]

# containers, and torch's names pygpu lacks saying so (pygpu/_missing.py)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList  # noqa: E402,E501
from .._missing import module_getattr as _module_getattr  # noqa: E402
__all__ += ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
__getattr__ = _module_getattr(__name__, "torch.nn")
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d  # noqa: E402
__all__ += ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout"]

# the layer families, one file each
from . import (activation as _activation, conv as _conv,  # noqa: E402
               normalization as _normalization, pooling as _pooling,
               sparse as _sparse, transformer as _transformer)
for _family in (_conv, _pooling, _normalization, _activation, _sparse,
                _transformer):
    globals().update({_n: getattr(_family, _n) for _n in _family.__all__})
    __all__ += _family.__all__
del _family
