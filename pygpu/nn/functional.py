"""pygpu.nn.functional: the activations and linear with torch's
signatures."""
from .. import _C

__all__ = ["relu", "sigmoid", "tanh", "silu", "gelu", "linear",
           "linear_relu"]


def relu(input, inplace=False):
    """max(input, 0) elementwise; NaN stays NaN."""
    return _C.relu(input, inplace)


def sigmoid(input):
    """1 / (1 + exp(-input)) elementwise."""
    return _C.sigmoid(input)


def tanh(input):
    """The hyperbolic tangent, elementwise."""
    return _C.tanh(input)


def silu(input, inplace=False):
    """input * sigmoid(input) elementwise; in place with inplace=True."""
    return input.silu_() if inplace else _C.silu(input)


def gelu(input, approximate="none"):
    """input * Phi(input): the exact (erf-based) form, or with
    approximate='tanh' torch's tanh approximation."""
    if approximate == "tanh":
        return _C._gelu_tanh(input)
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or "
                           "tanh.")
    return _C.gelu(input)


def linear(input, weight, bias=None):
    """input @ weight.T + bias, over any number of leading dims; one
    cuBLASLt call with the bias epilogue on CUDA."""
    return _C._linear(input, weight, bias)


def linear_relu(input, weight, bias=None):
    """relu(linear(input, weight, bias)) in one call (on CUDA cuBLASLt's
    bias epilogue then the relu kernel, so NaN stays NaN as in torch's
    relu): what a Linear directly followed by a ReLU runs."""
    return _C._linear_relu(input, weight, bias)


# ------------------------------------------------ softmax and log_softmax

__all__ += ["softmax", "log_softmax", "one_hot"]


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape (*tensor.shape, num_classes): 1 at each
    value's class, 0 elsewhere; num_classes=-1 takes the largest value + 1
    (torch's checks and messages)."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of "
                           "type LongTensor.")
    n = tensor.numel()
    if num_classes == -1:
        if n == 0:
            raise RuntimeError("Can not infer total number of classes from "
                               "empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if n > 0:
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than "
                               "num_classes.")
    shape = tuple(tensor.shape) + (num_classes,)
    out = _C.zeros(shape, dtype=_C.int64, device=tensor.device)
    if n == 0 or num_classes == 0:
        return out
    index = tensor.unsqueeze(-1)
    return out.scatter_add_(-1, index, _C.ones(tuple(index.shape),
                                               dtype=_C.int64,
                                               device=tensor.device))


def _softmax_dim(fname, dim):
    if dim is None:
        raise TypeError(f"{fname}(): dim is required (pygpu does not choose "
                        "one implicitly, as torch's deprecated form does)")
    return dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(input) / sum(exp(input)) along dim, with the maximum subtracted
    first; dtype converts the input first.  dim is required."""
    return _C.softmax(input, _softmax_dim("softmax", dim), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """input - logsumexp(input) along dim, with the maximum subtracted
    first; dtype converts the input first.  dim is required."""
    return _C.log_softmax(input, _softmax_dim("log_softmax", dim), dtype)


# Losses live in losses.py; their functional forms are here, as in torch.
from .losses import (binary_cross_entropy_with_logits,  # noqa: E402
                     cross_entropy, l1_loss, mse_loss, nll_loss)
__all__ += ["mse_loss", "l1_loss", "nll_loss", "cross_entropy",
            "binary_cross_entropy_with_logits"]

# torch's names pygpu lacks say so (pygpu/_missing.py)
from .._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr(__name__, "torch.nn.functional")
from .dropout import (alpha_dropout, dropout, dropout1d,  # noqa: E402
                      dropout2d)
__all__ += ["dropout", "dropout1d", "dropout2d", "alpha_dropout"]

# the layer families' functional forms, one file each (pygpu/nn/_functional/)
from ._functional import (activation as _activation,  # noqa: E402
                          adaptive_pooling as _adaptive_pooling,
                          attention as _attention, conv as _conv,
                          normalization as _normalization,
                          pooling as _pooling, sparse as _sparse,
                          upsampling as _upsampling)
for _family in (_conv, _pooling, _adaptive_pooling, _upsampling,
                _normalization, _activation, _sparse, _attention):
    globals().update({_n: getattr(_family, _n) for _n in _family.__all__})
    __all__ += _family.__all__
del _family
