"""pygpu: a small, fast GPU tensor library with PyTorch's names.

Everyday torch code runs with ``import pygpu as torch``: devices, tensors,
moving data, matrix products, relu/linear, GPU memory figures.  Everything
also runs on the CPU.
"""
try:
    from . import _C
except ImportError as _err:
    import importlib.util as _util
    if _util.find_spec(__name__ + "._C") is not None:
        raise  # built, but it would not load: that error says why
    raise ImportError(
        "pygpu's C extension pygpu._C is not built: build it with "
        "`python -m pip install -e .` in the source tree (or install "
        "pygpu with `python -m pip install .` and import it from "
        "elsewhere)", name=__name__ + "._C") from _err
from ._C import (
    Size,
    Tensor,
    add,
    all,
    any,
    bfloat16,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    bmm,
    device,
    div,
    dtype,
    empty,
    empty_like,
    eq,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    ge,
    gt,
    initial_seed,
    int32,
    int64,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    masked_fill,
    manual_seed,
    matmul,
    max,
    mean,
    mm,
    mul,
    ne,
    neg,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    relu,
    relu_,
    sub,
    sum,
    tensor,
    uint8,
    where,
    zeros,
    zeros_like,
)
from ._C import bool  # noqa: A004 - torch.bool shadows the builtin here too
from ._C import OutOfMemoryError, CudaError
# reductions, scans and softmax
from ._C import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax,
                 logsumexp, min, norm, prod, softmax, std, var)
from . import _C
from .version import __version__
from . import backends, cuda, nn
from ._precision import (get_float32_matmul_precision,
                         set_float32_matmul_precision)

half = float16
double = float64
long = int64
float = float32  # noqa: A001 - torch.float is float32
int = int32  # noqa: A001 - torch.int is int32

__all__ = [
    "Size", "Tensor", "device", "dtype", "float16", "float32", "float64",
    "int64", "half", "double", "long", "float", "bool", "uint8", "int32",
    "int", "bfloat16", "tensor", "from_numpy",
    "empty", "zeros", "ones", "full", "rand", "randn", "empty_like",
    "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "manual_seed", "initial_seed", "matmul", "mm", "bmm", "add", "sub",
    "mul", "div", "neg", "relu", "relu_", "sum", "mean", "max", "cuda",
    "nn", "backends", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "OutOfMemoryError", "CudaError",
    "is_tensor", "numel", "equal", "amp", "autocast", "is_autocast_enabled",
    "get_autocast_dtype", "save", "load", "autograd", "no_grad",
    "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "finfo", "iinfo", "promote_types",
    "result_type", "can_cast", "get_default_dtype", "is_floating_point",
    "optim",
    "set_default_dtype",
    "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
    "isclose", "allclose", "logical_not", "logical_and", "logical_or",
    "logical_xor", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "where", "masked_fill", "any", "all",
]

__all__ += ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum",
            "log_softmax", "logsumexp", "min", "norm", "prod", "softmax",
            "std", "var"]
# Binary math and clamp (csrc/tensor/tensor_math.c).
from ._C import (clamp, clip, floor_divide, fmod, maximum, minimum,  # noqa: E402,E501
                 pow, remainder)
__all__ += ["pow", "maximum", "minimum", "clamp", "clip", "fmod",
            "remainder", "floor_divide"]

# The unary ops of csrc/ops/op_list.h, each pygpu.<name>.
globals().update((name, getattr(_C, name)) for name in _C._unary_ops)
__all__ += _C._unary_ops

# creation, joining and splitting (tensor_range.c, ops_join.c, ops_split.c)
from ._C import (arange, cat, chunk, concat, concatenate, eye,  # noqa: E402
                 flip, gather, index_select, linspace, narrow, split, stack,
                 unbind)
__all__ += ["arange", "linspace", "eye", "cat", "concat", "concatenate",
            "stack", "split", "chunk", "unbind", "narrow", "flip",
            "index_select", "gather"]
from ._C import index_add, scatter_add  # noqa: E402
__all__ += ["scatter_add", "index_add"]


def is_tensor(obj: object) -> bool:
    """True if obj is a pygpu Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of a tensor."""
    return input.numel()


from . import amp  # noqa: E402
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402,E501
from .serialization import load, save  # noqa: E402
from ._compare import allclose, equal, isclose  # noqa: E402
from . import autograd  # noqa: E402
from . import optim  # noqa: E402
from .autograd import (enable_grad, inference_mode, is_grad_enabled,  # noqa: E402,E501
                       is_inference_mode_enabled, no_grad, set_grad_enabled)
from ._type_info import (can_cast, finfo, get_default_dtype, iinfo,  # noqa: E402,E501
                         is_floating_point, promote_types, result_type,
                         set_default_dtype)

# threads of the CPU loops
from ._C import get_num_threads, set_num_threads  # noqa: E402
__all__ += ["get_num_threads", "set_num_threads"]

# torch.distributed's API (mpi4py is imported only by an MPI group)
from . import distributed  # noqa: E402
from . import utils  # noqa: E402
from .utils.dlpack import from_dlpack  # noqa: E402
from ._interop import as_tensor  # noqa: E402
__all__ += ["from_dlpack", "as_tensor"]

# sorting and selection, einsum (pygpu/_sorting.py, pygpu/_einsum.py)
from . import return_types  # noqa: E402
from ._sorting import (argsort, kthvalue, median, mode, sort,  # noqa: E402
                       topk, unique)
from ._einsum import einsum  # noqa: E402
for _name in ("sort", "argsort", "topk", "kthvalue", "median", "mode",
              "unique"):
    setattr(Tensor, _name, globals()[_name])
del _name
__all__ += ["sort", "argsort", "topk", "kthvalue", "median", "mode",
            "unique", "einsum"]

# random sampling and generators (pygpu/_random.py, csrc/ops/ops_generator.c)
from ._random import (Generator, bernoulli, default_generator,  # noqa: E402
                      get_rng_state, multinomial, normal, poisson, randint,
                      randint_like, randperm, seed, set_rng_state)
__all__ += ["Generator", "randint", "randint_like", "randperm",
            "multinomial", "bernoulli", "normal", "poisson",
            "default_generator", "seed", "get_rng_state", "set_rng_state"]

# scatter (pygpu/_scatter.py)
from ._scatter import scatter  # noqa: E402
from ._scatter import scatter_ as _scatter_  # noqa: E402
Tensor.scatter = scatter
Tensor.scatter_ = _scatter_
__all__ += ["scatter"]

# The default device (per thread, `with pygpu.device(...)` too),
# pygpu.accelerator, and torch's names pygpu lacks saying so (_missing.py).
from ._default_device import get_default_device, set_default_device  # noqa: E402,E501
from . import accelerator  # noqa: E402
from ._missing import install_tensor_names as _install_tensor_names  # noqa: E402,E501
from ._missing import module_getattr as _module_getattr  # noqa: E402
__all__ += ["set_default_device", "get_default_device", "accelerator"]
__getattr__ = _module_getattr(__name__, "torch")
_install_tensor_names(Tensor)
