"""pygpu.cuda: devices, synchronization and memory, with torch's names.

Without a driver or a device, is_available() is False, device_count() is 0,
the memory figures are 0, and the rest raise RuntimeError saying why.
"""
import sys

from .. import _C
from ..amp import _cuda_amp as amp
from .._C import OutOfMemoryError
from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
    get_per_process_memory_fraction,
)
from .graphs import (
    CUDAGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)
from .streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "is_available", "device_count", "current_device", "set_device",
    "get_device_name", "get_device_capability", "get_device_properties",
    "synchronize", "mem_get_info", "manual_seed", "manual_seed_all",
    "is_initialized", "OutOfMemoryError", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated", "empty_cache", "memory_stats",
    "memory_summary", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "amp",
    "Stream", "ExternalStream", "Event", "StreamContext", "stream",
    "current_stream", "default_stream", "set_stream",
    "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
    "make_graphed_callables",
]

sys.modules[__name__ + ".amp"] = amp  # import pygpu.cuda.amp


def is_available():
    """True when a CUDA device can be used."""
    return _C._cuda_is_available()


def device_count():
    """The number of usable CUDA devices (0 without a driver or GPU)."""
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def _index(device):
    return _C._cuda_device_index(device)


def current_device():
    """The index of the current CUDA device."""
    return _C._cuda_current_device()


def set_device(device):
    """Make a device current: an int, 'cuda:N' or a device."""
    _C._cuda_set_device(_index(device))


class _CudaDeviceProperties:
    """What get_device_properties returns (torch's attribute names)."""

    def __init__(self, props):
        self.__dict__.update(props)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', "
                f"major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    """Name, total_memory, major, minor, multi_processor_count, ..."""
    return _CudaDeviceProperties(
        _C._cuda_get_device_properties(_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device=None):
    """Wait for all work on a device to finish."""
    _C._cuda_synchronize(_index(device))


def mem_get_info(device=None):
    """(free, total) bytes of a device, from the driver."""
    return _C._cuda_mem_get_info(_index(device))


def manual_seed(seed):
    """Seed the generator of the current CUDA device."""
    if is_available():
        _C._cuda_manual_seed(seed, current_device())


def manual_seed_all(seed):
    """Seed the generators of all CUDA devices."""
    _C._cuda_manual_seed(seed, -1)


# The CUDA devices' default generators (csrc/ops/ops_generator.c).
def _default_generator(device):
    return _C._default_generator(f"cuda:{_index(device)}")


def get_rng_state(device="cuda"):
    """The state of a CUDA device's default generator (a uint8 tensor)."""
    return _default_generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    """Restore a CUDA device's default generator from get_rng_state."""
    _default_generator(device).set_state(new_state)


def get_rng_state_all():
    """The states of every CUDA device's default generator."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    """Restore every CUDA device's default generator."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def seed():
    """Seed the current CUDA device's generator from the operating
    system."""
    if is_available():
        _default_generator(None).seed()


def seed_all():
    """Seed every CUDA device's generator with one seed from the operating
    system."""
    s = _C.Generator().seed()
    _C._cuda_manual_seed(s, -1)


def initial_seed():
    """The seed of the current CUDA device's generator."""
    return _default_generator(None).initial_seed()


__all__ += ["get_rng_state", "set_rng_state", "get_rng_state_all",
            "set_rng_state_all", "seed", "seed_all", "initial_seed"]
