"""torch.cuda's memory API over pygpu's caching allocator.

Every figure comes from the allocator of one CUDA device
(``pygpu._C._cuda_allocator(index)``), under the names torch.cuda uses.
Without CUDA, as in torch, the figures are 0, memory_stats() is empty and
empty_cache() does nothing.

The table of memory_summary() is built by ``_summary_from_stats`` from a
stats dict alone, so it works for any ``pygpu._C.Allocator`` (the tests use
host-memory ones).
"""
import collections

from .. import _C

__all__ = [
    "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "empty_cache", "memory_stats", "memory_summary",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction",
]


def _allocator(device):
    """The allocator of `device` (None, int, "cuda:N" or a device), or None
    when there is no CUDA device at all."""
    if _C._cuda_device_count() == 0:
        return None
    return _C._cuda_allocator(_C._cuda_device_index(device))


def _require_allocator(device):
    """As _allocator, but raises where there is no CUDA."""
    return _C._cuda_allocator(_C._cuda_device_index(device))


def memory_stats(device=None):
    """The allocator's figures as an OrderedDict sorted by key, with
    torch's names ("allocated_bytes.all.current", "num_ooms", ...)."""
    a = _allocator(device)
    stats = a.stats() if a is not None else {}
    return collections.OrderedDict(sorted(stats.items()))


def _figure(device, key):
    a = _allocator(device)
    return a.stats()[key] if a is not None else 0


def memory_allocated(device=None):
    """Bytes held by live tensors (block sizes, rounded up to 512)."""
    return _figure(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None):
    """Peak of memory_allocated() since the start or the last reset."""
    return _figure(device, "allocated_bytes.all.peak")


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the device."""
    return _figure(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None):
    """Peak of memory_reserved() since the start or the last reset."""
    return _figure(device, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device=None):
    """Set every peak figure of the device to its current value."""
    a = _allocator(device)
    if a is not None:
        a.reset_peak_memory_stats()


def reset_max_memory_allocated(device=None):
    """As in torch, now the same as reset_peak_memory_stats()."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    """Zero the allocated/freed totals, num_alloc_retries and num_ooms."""
    a = _allocator(device)
    if a is not None:
        a.reset_accumulated_memory_stats()


def empty_cache():
    """Give the unused cached memory of every device back to CUDA."""
    for index in range(_C._cuda_device_count()):
        _C._cuda_allocator(index).empty_cache()


def set_per_process_memory_fraction(fraction, device=None):
    """Cap what the caching allocator may reserve on the device at
    `fraction` of its total memory; beyond it allocations raise
    OutOfMemoryError."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(
            f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _require_allocator(device).set_memory_fraction(fraction)


def get_per_process_memory_fraction(device=None):
    """The fraction set by set_per_process_memory_fraction (1.0 if none)."""
    a = _require_allocator(device)
    limit = a.get_limit()
    if limit == 0:
        return 1.0
    if limit <= 1:  # how a fraction of 0 is stored
        return 0.0
    return limit / a.mem_get_info()[1]


# ------------------------------------------------------------- the summary
_WIDTH = 75
_ROWS = [
    ("allocated_bytes", "Allocated memory", "bytes"),
    ("active_bytes", "Active memory", "bytes"),
    ("requested_bytes", "Requested memory", "bytes"),
    ("reserved_bytes", "GPU reserved memory", "bytes"),
    ("inactive_split_bytes", "Non-releasable memory", "bytes"),
    ("allocation", "Allocations", "count"),
    ("active", "Active allocs", "count"),
    ("segment", "GPU reserved segments", "count"),
    ("inactive_split", "Non-releasable allocs", "count"),
]
_FLAVOURS = ("current", "peak", "allocated", "freed")


def _unit_for(reference, base, limit, names):
    """Pick the unit of a row from its peak: the first unit in which the
    peak is below `limit`, so the four figures of the row share one unit
    and keep at most six digits."""
    scale = 1
    for name in names[:-1]:
        if reference < limit * scale:
            return name, scale
        scale *= base
    return names[-1], scale


def _cells(values, kind):
    if kind == "bytes":
        unit, scale = _unit_for(values[1], 1024, 768 * 1024,
                                ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB"))
        return [f"{v // scale:6d} {unit}" for v in values]
    unit, scale = _unit_for(values[1], 1000, 750 * 1000, (" ", "K", "M"))
    return [f"{v // scale:7d} {unit} " for v in values]


def _summary_from_stats(stats, device=0, abbreviated=False):
    """The memory_summary() table for a stats dict (missing keys read as
    0).  `abbreviated` is accepted for torch's signature; pygpu keeps no
    per-pool breakdown, so both forms are the same."""
    del abbreviated

    def get(key):
        return int(stats.get(key, 0))

    rule, double = "-" * _WIDTH, "=" * _WIDTH
    title = f"pygpu CUDA memory summary, device ID {device}"
    half = (_WIDTH - 1) // 2
    counters = (f"{'CUDA OOMs: ' + str(get('num_ooms')):^{half}}|"
                f"{'cudaMalloc retries: ' + str(get('num_alloc_retries')):^{_WIDTH - 1 - half}}")
    lines = [double, f"{title:^{_WIDTH}}", rule, counters, double,
             f"{'Metric':^23}| Cur Usage  | Peak Usage | Tot Alloc  "
             f"| Tot Freed  "]
    for key, name, kind in _ROWS:
        values = [get(f"{key}.all.{f}") for f in _FLAVOURS]
        lines.append(rule)
        lines.append(f" {name:<21} | " + " | ".join(_cells(values, kind)) +
                     " ")
    lines.append(double)
    return "".join(f"|{line}|\n" for line in lines)


def memory_summary(device=None, abbreviated=False):
    """A human-readable table of the allocator's figures, laid out as
    torch.cuda.memory_summary() lays out its own."""
    a = _allocator(device)
    if a is None:
        return _summary_from_stats({}, 0, abbreviated)
    return _summary_from_stats(a.stats(), a.device, abbreviated)
