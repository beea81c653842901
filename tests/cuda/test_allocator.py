"""The caching allocator: exact figures, reuse, split/merge, streams, limits,
out-of-memory, the gc retry and threads.

Everything runs on host-memory allocators (pygpu._C.Allocator), which share
the CUDA allocator's core; the cuda-marked class repeats the accounting on
the real allocator of cuda:0.
"""
import ctypes
import gc
import math
import random
import re
import threading

import pytest

import pygpu
from pygpu import _C
from pygpu.cuda import memory as cmem

from conftest import FLAVOURS, STATS, check_consistent, cur, new_allocator

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
HAS_CUDA = pygpu.cuda.is_available()

# (request, block handed out, segment created for it)
SIZES = [
    (1, 512, 2 * MiB),
    (511, 512, 2 * MiB),
    (512, 512, 2 * MiB),
    (513, 1024, 2 * MiB),
    (MiB - 1, MiB, 2 * MiB),
    (MiB, MiB, 2 * MiB),
    (MiB + 1, MiB + 512, 20 * MiB),
    (10 * MiB, 10 * MiB, 10 * MiB),
    (100 * MiB, 100 * MiB, 100 * MiB),
]


def accounting_case(a, size, block, segment, stream):
    """One allocation of `size` on a stream with nothing cached: exact deltas
    while it lives, exact return to the baseline after.  The garbage
    collector is held off, so that no other tensor dies in between."""
    gc.collect()
    gc.disable()
    try:
        _accounting_case(a, size, block, segment, stream)
    finally:
        gc.enable()


def _accounting_case(a, size, block, segment, stream):
    a.empty_cache()
    s0 = a.stats()
    st = a.malloc(size, stream=stream)
    s1 = check_consistent(a)

    def delta(name, s=s1):
        return s[f"{name}.all.current"] - s0[f"{name}.all.current"]

    assert (st.nbytes, st.size) == (size, block)
    assert st.ptr != 0 and st.ptr % 256 == 0
    assert delta("allocated_bytes") == block
    assert delta("active_bytes") == block
    assert delta("requested_bytes") == size
    assert delta("reserved_bytes") == segment
    assert delta("segment") == 1
    assert delta("allocation") == 1
    assert delta("active") == 1
    assert delta("inactive_split") == (1 if segment > block else 0)
    assert delta("inactive_split_bytes") == segment - block
    del st
    s2 = check_consistent(a)
    for name in STATS:
        want = segment if name == "reserved_bytes" else \
            1 if name == "segment" else 0
        assert delta(name, s2) == want, name
    a.empty_cache()
    s3 = check_consistent(a)
    for name in STATS:
        assert delta(name, s3) == 0, name


# ------------------------------------------------------------- accounting
@pytest.mark.parametrize("size,block,segment", SIZES)
def test_accounting(size, block, segment):
    a = new_allocator()
    accounting_case(a, size, block, segment, stream=0)
    s = a.stats()
    assert s["allocated_bytes.all.peak"] == block
    assert s["reserved_bytes.all.peak"] == segment
    assert s["requested_bytes.all.peak"] == size
    assert s["num_device_alloc"] == s["num_device_free"] == 1


def test_zero_bytes():
    a = new_allocator()
    before = a.stats()
    st = a.malloc(0)
    assert (st.ptr, st.nbytes, st.size, st.device) == (0, 0, 0, 0)
    assert a.stats() == before
    del st
    assert a.stats() == before


def test_storage_attributes_and_memory():
    a = new_allocator()
    st = a.malloc(3000, stream=7)
    assert a.device == 0 and st.device == 0
    assert "Storage" in repr(st) and "Allocator" in repr(a)
    ctypes.memset(st.ptr, 0xAB, st.nbytes)
    assert ctypes.string_at(st.ptr, st.nbytes) == b"\xab" * 3000
    for attr in ("ptr", "nbytes", "size", "device"):
        with pytest.raises(AttributeError):
            setattr(st, attr, 1)
    with pytest.raises(TypeError):
        type(st)()
    with pytest.raises(AttributeError):
        a.device = 1


# ------------------------------------------------------ reuse, split, merge
def test_reuse_without_new_segments():
    a = new_allocator()
    st = a.malloc(MiB)
    ptr = st.ptr
    del st
    for _ in range(10):
        st = a.malloc(MiB)
        assert st.ptr == ptr
        del st
    s = a.stats()
    assert s["num_device_alloc"] == 1 and s["segment.all.current"] == 1
    # Many small blocks share one 2 MiB segment.
    blocks = [a.malloc(4 * KiB) for _ in range(100)]
    assert cur(a, "segment") == 1
    assert cur(a, "allocated_bytes") == 100 * 4 * KiB
    del blocks
    assert cur(a, "allocated_bytes") == 0 and cur(a, "inactive_split") == 0


def test_split_and_merge_small_pool():
    a = new_allocator()
    b = [a.malloc(256 * KiB) for _ in range(8)]  # exactly one segment
    assert [x.ptr - b[0].ptr for x in b] == [i * 256 * KiB for i in range(8)]
    assert cur(a, "segment") == 1 and cur(a, "inactive_split") == 0
    hole = b[2].ptr
    b[2] = b[3] = b[4] = None  # one merged 768 KiB hole
    s = check_consistent(a)
    assert s["inactive_split.all.current"] == 1
    assert s["inactive_split_bytes.all.current"] == 768 * KiB
    big = a.malloc(700 * KiB)  # fits the hole: no new segment
    assert big.ptr == hole and big.size == 700 * KiB
    s = check_consistent(a)
    assert s["segment.all.current"] == 1
    assert s["inactive_split_bytes.all.current"] == 68 * KiB
    del big
    b.clear()
    s = check_consistent(a)
    assert s["inactive_split.all.current"] == 0
    assert a.segments()[0]["nblocks"] == 1
    assert s["num_device_alloc"] == 1


def test_best_fit_prefers_smallest_then_lowest_address():
    a = new_allocator()
    b = [a.malloc(64 * KiB) for _ in range(8)]
    # Holes of 64 KiB (at 1 and 6) and 128 KiB (at 3-4), and the tail
    ptrs = [x.ptr for x in b]
    b[1] = b[3] = b[4] = b[6] = None
    x = a.malloc(60 * KiB)
    assert x.ptr == ptrs[1]
    y = a.malloc(64 * KiB)
    assert y.ptr == ptrs[6]
    z = a.malloc(100 * KiB)
    assert z.ptr == ptrs[3]


def test_large_pool_split_and_unsplit_remainder():
    a = new_allocator()
    x = a.malloc(MiB + 1)  # 20 MiB segment, split
    y = a.malloc(5 * MiB)  # from the same segment
    assert cur(a, "segment") == 1 and y.ptr == x.ptr + x.size
    del x, y
    assert cur(a, "inactive_split") == 0
    a.empty_cache()
    # A remainder of at most 1 MiB stays with the block (large pool).
    z = a.malloc(19 * MiB + MiB // 2)
    assert z.size == 20 * MiB
    assert cur(a, "allocated_bytes") == 20 * MiB
    assert cur(a, "requested_bytes") == 19 * MiB + MiB // 2
    assert cur(a, "inactive_split") == 0
    del z
    assert cur(a, "allocated_bytes") == 0


def test_streams_are_separate():
    a = new_allocator()
    s1 = a.malloc(MiB, stream=1)
    p1 = s1.ptr
    del s1
    s2 = a.malloc(MiB, stream=2)  # the cached block is stream 1's
    assert s2.ptr != p1 and cur(a, "segment") == 2
    s1 = a.malloc(MiB, stream=1)
    assert s1.ptr == p1 and cur(a, "segment") == 2
    other = a.malloc(4, stream=1 << 62)  # any int is a handle
    assert other.size == 512 and cur(a, "segment") == 3


# -------------------------------------------------------- peaks and resets
def test_peaks_and_resets():
    a = new_allocator()
    x = a.malloc(10 * MiB)
    del x
    y = a.malloc(MiB)
    s = a.stats()
    assert s["allocated_bytes.all.peak"] == 10 * MiB
    assert s["allocated_bytes.all.current"] == MiB
    assert s["allocated_bytes.all.allocated"] == 11 * MiB
    assert s["allocated_bytes.all.freed"] == 10 * MiB
    a.reset_peak_memory_stats()
    s = a.stats()
    for name in STATS:
        assert s[f"{name}.all.peak"] == s[f"{name}.all.current"]
    a.reset_accumulated_memory_stats()
    s = a.stats()
    for name in STATS:
        assert s[f"{name}.all.allocated"] == s[f"{name}.all.freed"] == 0
    assert s["num_alloc_retries"] == s["num_ooms"] == 0
    del y
    s = a.stats()
    assert s["allocated_bytes.all.freed"] == MiB
    assert s["allocated_bytes.all.current"] == 0


def test_empty_cache_keeps_live_blocks():
    a = new_allocator()
    live_small = a.malloc(MiB)
    live_large = a.malloc(30 * MiB)
    dead = [a.malloc(n) for n in (5 * MiB, 64 * MiB, 4 * KiB)]
    ctypes.memset(live_small.ptr, 0x5A, live_small.nbytes)
    ctypes.memset(live_large.ptr, 0xA5, live_large.nbytes)
    del dead
    a.empty_cache()
    s = check_consistent(a)
    # The 4 KiB block shared live_small's segment, the 5 MiB block a 20 MiB
    # segment of its own: only the wholly free segments went.
    assert s["reserved_bytes.all.current"] == 2 * MiB + 30 * MiB
    assert ctypes.string_at(live_small.ptr, 64) == b"\x5a" * 64
    assert ctypes.string_at(live_large.ptr + 30 * MiB - 64, 64) == \
        b"\xa5" * 64
    del live_small, live_large
    a.empty_cache()
    assert cur(a, "reserved_bytes") == 0
    assert a.mem_get_info() == (1 << 40, 1 << 40)


def test_caching_off():
    a = new_allocator(caching=False)
    x = a.malloc(1)
    assert (x.size, cur(a, "reserved_bytes")) == (512, 512)
    y = a.malloc(3 * MiB + 1)
    assert cur(a, "reserved_bytes") == 512 + 3 * MiB + 512
    assert cur(a, "segment") == 2 and cur(a, "inactive_split") == 0
    del x
    assert cur(a, "reserved_bytes") == 3 * MiB + 512
    del y
    s = check_consistent(a)
    assert s["reserved_bytes.all.current"] == 0
    assert s["num_device_alloc"] == s["num_device_free"] == 2


# ----------------------------------------------------------- out of memory
def test_limit_and_out_of_memory_message():
    a = new_allocator(GiB)
    a.set_limit(64 * MiB)
    assert a.get_limit() == 64 * MiB
    x = a.malloc(32 * MiB)
    with pytest.raises(pygpu.cuda.OutOfMemoryError) as info:
        a.malloc(64 * MiB)
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith("CUDA out of memory. Tried to allocate 64.00 MiB.")
    assert "GPU 0 has a total capacity of 1024.00 MiB of which " \
           "992.00 MiB is free." in msg
    assert "memory cap of 64.00 MiB" in msg
    assert msg.endswith("Of the allocated memory 32.00 MiB is allocated by "
                        "pygpu, and 0 bytes is reserved by pygpu but "
                        "unallocated.")
    s = check_consistent(a)
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    assert s["allocated_bytes.all.current"] == 32 * MiB
    assert s["reserved_bytes.all.current"] == 32 * MiB
    assert s["allocation.all.current"] == 1
    del x
    y = a.malloc(64 * MiB)  # works again
    assert cur(a, "reserved_bytes") == 64 * MiB
    del y
    a.set_limit(0)
    assert a.malloc(512 * MiB).size == 512 * MiB


def test_impossible_request():
    """A request beyond any address space fails at once, not rounded down."""
    a = new_allocator(GiB)
    for n in (2**62 + 1, 2**64 - 1):
        with pytest.raises(pygpu.cuda.OutOfMemoryError,
                           match="Tried to allocate"):
            a.malloc(n)
    s = check_consistent(a)
    assert s["num_ooms"] == 2 and s["allocated_bytes.all.current"] == 0
    assert s["reserved_bytes.all.current"] == 0
    assert a.malloc(MiB).size == MiB


def test_out_of_capacity_message_and_recovery():
    a = new_allocator(100 * MiB)
    x = a.malloc(64 * MiB)
    small = a.malloc(10)
    with pytest.raises(pygpu.cuda.OutOfMemoryError) as info:
        a.malloc(64 * MiB)
    msg = str(info.value)
    assert msg.startswith("CUDA out of memory. Tried to allocate 64.00 MiB. "
                          "GPU 0 has a total capacity of 100.00 MiB of which "
                          "34.00 MiB is free. Of the allocated memory "
                          "64.00 MiB is allocated by pygpu, and 2.00 MiB is "
                          "reserved by pygpu but unallocated.")
    assert "memory cap" not in msg
    # A request reports the segment it needed, as torch does.
    filler = a.malloc(30 * MiB)
    with pytest.raises(pygpu.cuda.OutOfMemoryError, match=r"Tried to "
                       r"allocate 20\.00 MiB\. GPU 0 has a total capacity "
                       r"of 100\.00 MiB of which 4\.00 MiB is free\."):
        a.malloc(4 * MiB + 1)
    s = check_consistent(a)
    assert s["num_ooms"] == 2
    del x, small, filler
    # Cached but unused memory is given back when a request needs it.
    z = a.malloc(90 * MiB)
    s = check_consistent(a)
    assert s["num_alloc_retries"] == 3 and s["num_ooms"] == 2
    assert s["reserved_bytes.all.current"] == 90 * MiB
    del z
    assert cur(a, "allocated_bytes") == 0


def test_memory_fraction():
    a = new_allocator(100 * MiB)
    assert a.mem_get_info() == (100 * MiB, 100 * MiB)
    a.set_memory_fraction(0.5)
    assert a.get_limit() == 50 * MiB
    x = a.malloc(40 * MiB)
    assert a.mem_get_info() == (60 * MiB, 100 * MiB)
    with pytest.raises(pygpu.cuda.OutOfMemoryError, match="memory cap"):
        a.malloc(20 * MiB)
    del x
    a.set_memory_fraction(0.0)  # nothing may be reserved
    a.empty_cache()
    with pytest.raises(pygpu.cuda.OutOfMemoryError):
        a.malloc(1)
    assert a.malloc(0).size == 0
    a.set_memory_fraction(1)
    assert a.malloc(100 * MiB).size == 100 * MiB
    for bad in (-0.1, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError):
            a.set_memory_fraction(bad)
    with pytest.raises(TypeError):
        a.set_memory_fraction("0.5")


def test_gc_retry_frees_cycles():
    a = new_allocator(100 * MiB)

    class Holder:
        pass

    enabled = gc.isenabled()
    gc.disable()
    try:
        h = Holder()
        h.me = h
        h.storage = a.malloc(64 * MiB)
        del h  # only the cycle keeps the 64 MiB alive now
        assert cur(a, "allocated_bytes") == 64 * MiB
        y = a.malloc(64 * MiB)  # out of memory until gc runs
        s = check_consistent(a)
        assert s["allocated_bytes.all.current"] == 64 * MiB
        assert s["num_ooms"] == 0  # rescued: no error, no OOM counted
        assert s["num_alloc_retries"] == 1
        del y
    finally:
        if enabled:
            gc.enable()
    assert cur(a, "allocated_bytes") == 0


def test_out_of_memory_without_garbage_counts_once():
    a = new_allocator(10 * MiB)
    for n in range(1, 4):
        with pytest.raises(pygpu.cuda.OutOfMemoryError):
            a.malloc(11 * MiB)
        s = a.stats()
        assert (s["num_ooms"], s["num_alloc_retries"]) == (n, n)
    a.reset_accumulated_memory_stats()
    assert a.stats()["num_ooms"] == 0


# ------------------------------------------------------------------ threads
def run_threads(work, n):
    """work(seed) in n threads at once; any exception fails the test."""
    errors = []

    def guarded(seed):
        try:
            work(seed)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def check_drained(a, capacity):
    """Nothing live: empty_cache gives every byte back to the backend."""
    s = check_consistent(a)
    assert s["allocated_bytes.all.current"] == 0
    a.empty_cache()
    s = check_consistent(a)
    assert s["reserved_bytes.all.current"] == 0
    assert s["num_device_alloc"] == s["num_device_free"]
    assert a.mem_get_info() == (capacity, capacity)


def test_threads_stress():
    a = new_allocator(8 * GiB)

    def work(seed):
        rng = random.Random(seed)
        live = []
        for _ in range(1500):
            if len(live) >= 32 or (live and rng.random() < 0.45):
                live.pop(rng.randrange(len(live)))
            else:
                n = rng.choice((rng.randrange(1, 4 * KiB),
                                rng.randrange(1, 2 * MiB),
                                rng.randrange(1, 24 * MiB)))
                live.append(a.malloc(n, stream=rng.randrange(3)))
            if rng.random() < 0.01:
                a.empty_cache()

    run_threads(work, 4)
    s = check_consistent(a)
    for name in ("allocated_bytes", "active_bytes", "requested_bytes",
                 "allocation", "active", "inactive_split",
                 "inactive_split_bytes"):
        assert s[f"{name}.all.current"] == 0, name
    assert s["allocation.all.allocated"] == s["allocation.all.freed"] > 0
    check_drained(a, 8 * GiB)


def test_threads_backend_allocations_under_a_cap():
    """Every request makes a segment, so threads keep entering the backend
    (the core's lock and the GIL released) while others free, hit the cache
    and empty it; the cap on reserved bytes holds throughout and every
    figure stays exact."""
    a = new_allocator(8 * GiB)
    a.set_limit(400 * MiB)
    ooms = []

    def work(seed):
        rng = random.Random(seed)
        live = []
        for _ in range(300):
            if len(live) >= 4 or (live and rng.random() < 0.4):
                live.pop(rng.randrange(len(live)))
                continue
            try:
                live.append(a.malloc(rng.randrange(10, 40) * MiB))
            except pygpu.cuda.OutOfMemoryError:
                ooms.append(seed)
            if rng.random() < 0.05:
                a.empty_cache()

    run_threads(work, 6)
    s = check_consistent(a)
    assert s["reserved_bytes.all.peak"] <= 400 * MiB
    assert s["num_ooms"] == len(ooms)
    assert s["num_device_alloc"] > 0
    check_drained(a, 8 * GiB)


# ------------------------------------------------------------ bad arguments
def test_bad_arguments():
    a = new_allocator()
    with pytest.raises(ValueError):
        a.malloc(-1)
    for bad in (1.5, "1", None):
        with pytest.raises(TypeError):
            a.malloc(bad)
    with pytest.raises(TypeError):
        a.malloc(1, stream="s")
    with pytest.raises(TypeError):
        a.malloc(nbytes=1)  # positional only
    with pytest.raises(OverflowError):
        a.malloc(1 << 70)
    with pytest.raises(ValueError):
        _C.Allocator(-1)
    with pytest.raises(TypeError):
        _C.Allocator("1")
    with pytest.raises(ValueError):
        a.set_limit(-5)
    with pytest.raises(ValueError):
        _C._bench_allocator(a, 1, 0)
    with pytest.raises(TypeError):
        _C._bench_allocator("a", 1, 1)
    assert cur(a, "allocation") == 0


def test_huge_request_is_out_of_memory():
    a = new_allocator()
    with pytest.raises(pygpu.cuda.OutOfMemoryError):
        a.malloc((1 << 64) - 1)
    check_consistent(a)


def test_bench_allocator():
    a = new_allocator()
    ns = _C._bench_allocator(a, MiB, 1000)
    assert isinstance(ns, float) and 0 < ns < 1e6
    s = a.stats()
    assert s["allocation.all.current"] == 0
    assert s["allocation.all.allocated"] == 1001


# ------------------------------------------------------------------ summary
def test_memory_summary_format():
    a = new_allocator()
    keep = [a.malloc(3 * MiB), a.malloc(100)]
    gone = a.malloc(MiB)
    del gone
    text = cmem._summary_from_stats(a.stats(), device=0)
    lines = text.splitlines()
    assert text.endswith("|\n")
    assert all(len(line) == 77 and line[0] == line[-1] == "|"
               for line in lines)
    assert "memory summary, device ID 0" in text
    assert "CUDA OOMs: 0" in text and "cudaMalloc retries: 0" in text
    for col in ("Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"):
        assert col in text
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5:
            rows[cells[0]] = cells[1:]
    for name in ("Allocated memory", "Active memory", "Requested memory",
                 "GPU reserved memory", "Non-releasable memory",
                 "Allocations", "Active allocs", "GPU reserved segments",
                 "Non-releasable allocs"):
        assert name in rows
    # 3 MiB + 512 bytes live, peak 4 MiB + 512: KiB, rounded down.
    assert rows["Allocated memory"] == ["3072 KiB", "4096 KiB", "4096 KiB",
                                        "1024 KiB"]
    assert rows["Requested memory"][0] == "3072 KiB"
    assert rows["GPU reserved memory"][0] == "22528 KiB"
    assert rows["Allocations"] == ["2", "3", "3", "1"]
    assert rows["GPU reserved segments"] == ["2", "2", "2", "0"]
    empty = cmem._summary_from_stats({})
    assert "CUDA OOMs: 0" in empty and "Allocated memory" in empty
    del keep


def test_summary_units():
    big = {f"allocated_bytes.all.{f}": v for f, v in
           zip(FLAVOURS, (5 * GiB, 6 * GiB, 7 * GiB, 2 * GiB))}
    text = cmem._summary_from_stats(big)
    row = next(line for line in text.splitlines() if "Allocated memory" in
               line)
    assert re.search(r"\|\s+5120 MiB \|\s+6144 MiB \|\s+7168 MiB \|"
                     r"\s+2048 MiB \|", row)


# ------------------------------------------------------------ without CUDA
@pytest.mark.skipif(HAS_CUDA, reason="CUDA is available")
def test_cuda_entry_points_without_cuda():
    with pytest.raises(RuntimeError):
        _C._cuda_allocator(0)
    with pytest.raises(RuntimeError):
        _C._pinned_allocator()
    assert cmem.memory_allocated() == 0
    assert cmem.max_memory_allocated() == 0
    assert cmem.memory_reserved() == cmem.max_memory_reserved() == 0
    assert cmem.memory_stats() == {}
    cmem.empty_cache()
    cmem.reset_peak_memory_stats()
    cmem.reset_accumulated_memory_stats()
    cmem.reset_max_memory_allocated()
    assert "Allocated memory" in cmem.memory_summary()
    with pytest.raises(RuntimeError):
        cmem.set_per_process_memory_fraction(0.5)


def test_fraction_argument_checks():
    with pytest.raises(TypeError):
        cmem.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError):
        cmem.set_per_process_memory_fraction(1.5)


# --------------------------------------------------------------- with CUDA
@pytest.mark.cuda
class TestCudaAllocator:
    @pytest.fixture
    def alloc(self):
        a = _C._cuda_allocator(0)
        assert _C._cuda_allocator(0) is a
        yield a
        a.set_limit(0)

    @pytest.mark.parametrize("size,block,segment", SIZES)
    def test_accounting(self, alloc, size, block, segment):
        # A stream handle of its own: nothing cached elsewhere is reusable.
        # The allocator only uses it as a key.
        accounting_case(alloc, size, block, segment, stream=0xC0FFEE000)

    def test_figures_agree_with_memory_api(self, alloc):
        before = cmem.memory_allocated(0)
        st = alloc.malloc(MiB, stream=0xC0FFEE000)
        assert cmem.memory_allocated() == before + MiB
        assert cmem.memory_allocated("cuda:0") == before + MiB
        assert cmem.memory_stats()["allocated_bytes.all.current"] == \
            before + MiB
        assert cmem.max_memory_allocated(0) >= before + MiB
        assert cmem.memory_reserved(0) >= cmem.memory_allocated(0)
        assert "Allocated memory" in cmem.memory_summary(0)
        del st
        cmem.empty_cache()
        assert cmem.memory_allocated(0) == before

    def test_true_out_of_memory(self, alloc):
        free, total = alloc.mem_get_info()
        assert 0 < free <= total
        gc.collect()  # the OOM path collects: start with nothing to collect
        before = alloc.stats()
        with pytest.raises(pygpu.cuda.OutOfMemoryError) as info:
            alloc.malloc(2 * total)
        msg = str(info.value)
        assert msg.startswith("CUDA out of memory. Tried to allocate ")
        assert "GPU 0 has a total capacity of" in msg
        after = check_consistent(alloc)
        assert after["num_ooms"] == before["num_ooms"] + 1
        assert after["allocation.all.current"] == \
            before["allocation.all.current"]
        st = alloc.malloc(MiB)  # still works
        assert st.size == MiB
        # and no error is left behind for the next launch to report
        assert (pygpu.ones(4, device="cuda") + 1).cpu().tolist() == [2.0] * 4

    def test_fraction(self, alloc):
        alloc.empty_cache()
        cmem.set_per_process_memory_fraction(0.0, 0)
        with pytest.raises(pygpu.cuda.OutOfMemoryError, match="memory cap"):
            alloc.malloc(64 * MiB, stream=0xC0FFEE000)
        assert cmem.get_per_process_memory_fraction(0) == 0.0
        cmem.set_per_process_memory_fraction(1.0, 0)
        assert (pygpu.ones(4, device="cuda") + 1).cpu().tolist() == [2.0] * 4
        cmem.set_per_process_memory_fraction(0.5, "cuda:0")
        assert abs(cmem.get_per_process_memory_fraction(0) - 0.5) < 1e-6

    def test_pinned(self):
        p = _C._pinned_allocator()
        assert p is _C._pinned_allocator() and p.device == -1
        st = p.malloc(MiB)
        assert st.device == -1
        ctypes.memset(st.ptr, 7, st.nbytes)
        assert ctypes.string_at(st.ptr, 4) == b"\x07" * 4

    def test_invalid_device(self):
        with pytest.raises(RuntimeError):
            _C._cuda_allocator(pygpu.cuda.device_count())


def test_segments_of_an_empty_allocator():
    # No segments: nothing to sort (qsort was given a NULL array, undefined
    # behaviour that scripts/sanitize.sh's UBSan pass reports).
    assert new_allocator().segments() == []
    a = new_allocator()
    st = a.malloc(1000)
    assert len(a.segments()) == 1
    del st
    a.empty_cache()
    assert a.segments() == []


# ------------------------------------------- deferred frees (host events)
# A block recorded on streams goes back only once an event recorded on each
# when its storage died is done.  Host-memory allocators have stand-in
# events that _C._complete_host_events marks done; their storages behave as
# pinned ones: no stream of theirs is skipped, the legacy default one
# (0, also spelled 1) included.
record = _C._storage_record_stream
complete = _C._complete_host_events


def test_deferred_block_waits_for_its_event():
    a = new_allocator()
    st = a.malloc(MiB, stream=0)
    ptr = st.ptr
    record(st, 0, 3)  # its own stream, on cuda:3: not skipped
    del st
    assert cur(a, "allocated_bytes") == MiB  # held back
    other = a.malloc(MiB)
    assert other.ptr != ptr  # not handed out while the copy may run
    assert complete(a) == (1, 3)  # one event, on the stream's device
    del other
    again = a.malloc(MiB)  # every allocation reclaims what is done
    assert again.ptr == ptr and cur(a, "allocated_bytes") == MiB
    assert complete(a) == (0, 3)
    check_consistent(a)


def test_deferred_events_per_stream_and_device():
    a = new_allocator()
    st = a.malloc(4096, stream=5)
    record(st, 5, 0)
    record(st, 5, 0)  # the same stream: one event
    record(st, 5, 1)  # the same handle on another device: another
    record(st, 0, 0)
    record(st, 1, 0)  # the legacy default stream's other name
    del st
    assert complete(a)[0] == 3
    kept = a.malloc(512)
    assert complete(a)[0] == 0 and cur(a, "allocated_bytes") == kept.size


def test_recorded_streams_are_limited():
    a = new_allocator()
    st = a.malloc(4096)
    for s in range(8):
        record(st, 100 + s, 0)
    record(st, 100, 0)  # already there
    with pytest.raises(RuntimeError, match="at most 8 streams"):
        record(st, 200, 0)
    del st
    assert complete(a)[0] == 8
    a.empty_cache()
    assert cur(a, "allocated_bytes") == 0 and cur(a, "reserved_bytes") == 0


def test_empty_cache_waits_for_deferred_blocks():
    a = new_allocator()
    st = a.malloc(3 * MiB)
    record(st, 7, 0)
    del st
    assert cur(a, "reserved_bytes") == 20 * MiB
    a.empty_cache()  # waits (the stand-in is then done) and gives back
    assert cur(a, "allocated_bytes") == 0 and cur(a, "reserved_bytes") == 0
    assert complete(a)[0] == 0
    check_consistent(a)


def test_out_of_memory_waits_for_deferred_blocks():
    a = new_allocator(capacity=21 * MiB)
    st = a.malloc(MiB)  # a 2 MiB segment
    record(st, 7, 0)
    del st
    big = a.malloc(2 * MiB)  # needs 20 MiB: only after the wait
    assert cur(a, "reserved_bytes") == 20 * MiB and big.size == 2 * MiB
    assert a.stats()["num_ooms"] == 0


def test_deferred_frees_of_two_allocators_are_apart():
    a, b = new_allocator(), new_allocator()
    sa, sb = a.malloc(512), b.malloc(512)
    record(sa, 1, 0)
    record(sb, 1, 0)
    del sa, sb
    complete(a)
    kept = [b.malloc(512), a.malloc(512)]
    assert cur(a, "allocated_bytes") == 512
    assert cur(b, "allocated_bytes") == 1024  # b's event is not done
    complete(b)
    kept.append(b.malloc(512))
    assert cur(b, "allocated_bytes") == 1024


def test_deferred_test_aids_check_their_arguments():
    a = new_allocator()
    st = a.malloc(512)
    with pytest.raises(TypeError):
        record(None, 0, 0)
    with pytest.raises(TypeError, match="stream must be an int"):
        record(st, "s", 0)
    with pytest.raises(TypeError):
        record(st, 0)
    with pytest.raises(TypeError, match="host-memory Allocator"):
        complete(None)
    assert complete(a) == (0, -1)
    empty = a.malloc(0)
    record(empty, 1, 0)  # no block: nothing to hold back
    del empty, st
    assert complete(a) == (0, -1)
