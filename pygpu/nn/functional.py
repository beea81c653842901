"""pygpu.nn.functional: relu and linear with torch's signatures."""
from .. import _C

__all__ = ["relu", "linear", "linear_relu"]


def relu(input, inplace=False):
    """max(input, 0) elementwise; NaN stays NaN."""
    return _C.relu(input, inplace)


def linear(input, weight, bias=None):
    """input @ weight.T + bias, over any number of leading dims; one
    cuBLASLt call with the bias epilogue on CUDA."""
    return _C._linear(input, weight, bias)


def linear_relu(input, weight, bias=None):
    """relu(linear(input, weight, bias)) in one call (cuBLASLt's RELU_BIAS
    epilogue on CUDA): what a Linear directly followed by a ReLU runs."""
    return _C._linear_relu(input, weight, bias)
