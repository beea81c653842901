"""autocast: inside it, matrix products (matmul, mm, bmm, @, linear and the
fused linear_relu) cast float32 inputs to the autocast dtype (float16 or
bfloat16) and return that dtype; every other op runs as it would outside.

The state is per thread and per device type and lives in C (the @ operator
is a C slot), so that a product reads it with one thread-local load.  The
context manager saves the thread's state on entry and restores it on exit:
nesting and enabled=False inside work as in torch.

The defaults are torch's: float16 on CUDA, bfloat16 on the CPU.
"""
import functools
import warnings

from .. import _C

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype"]

_TYPES = ("cuda", "cpu")


def is_autocast_available(device_type):
    return device_type in _TYPES


def _check_type(device_type):
    if device_type not in _TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_"
                           f"type '{device_type}'")


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on in this thread (for CUDA when not given)."""
    _check_type(device_type)
    return _C._get_autocast_state(device_type)[0]


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on device_type (torch's defaults:
    float16 on CUDA, bfloat16 on the CPU)."""
    _check_type(device_type)
    return _C._get_autocast_state(device_type)[1]


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
    a context manager and a decorator.  cache_enabled is accepted for
    compatibility; pygpu keeps no cast cache."""

    def __init__(self, device_type, dtype=None, enabled=True,
                 cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        _check_type(device_type)
        self.device = device_type
        self._enabled = bool(enabled)
        self.fast_dtype = dtype
        self._cache_enabled = cache_enabled
        if dtype is None:
            self.fast_dtype = (_C.float16 if device_type == "cuda"
                               else _C.bfloat16)
        if not self._enabled:
            return
        if self.fast_dtype not in (_C.float16, _C.bfloat16):
            kind = "CUDA" if device_type == "cuda" else "CPU"
            warnings.warn(f"In {kind} autocast, but the target dtype "
                          f"{dtype} is not supported. Disabling autocast.")
            self._enabled = False

    def __enter__(self):
        prev = _C._get_autocast_state(self.device)
        self.__dict__.setdefault("_saved", []).append(prev)
        dtype = self.fast_dtype if self._enabled else prev[1]
        _C._set_autocast_state(self.device, self._enabled, dtype)
        return self

    def __exit__(self, exc_type, exc, tb):
        enabled, dtype = self._saved.pop()
        _C._set_autocast_state(self.device, enabled, dtype)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled,
                          self._cache_enabled):
                return func(*args, **kwargs)
        return run


class _CudaAutocast(autocast):
    """pygpu.cuda.amp.autocast (deprecated in torch, still widely used)."""

    def __init__(self, enabled=True, dtype=_C.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cuda', args...)` "
                      "instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype, enabled, cache_enabled)
