"""Private memory pools of the caching allocator (what CUDA graphs allocate
from), through host-memory allocators: no GPU needed.

_allocator_begin_pool(a, pool, route) is what a graph's capture_begin does
(the route is the capture's id), _allocator_end_pool its capture_end,
_allocator_release_pool its reset.  The rules are torch's: a block
allocated through a route belongs to the pool; freed, it stays reserved for
the pool (ordinary allocations never get it) until every holder has let
go; several graphs may share a pool; while any route is open no segment
goes back to a backend; the figures count everything.
"""
import gc
import itertools

import pytest

import pygpu
from pygpu import _C

from conftest import check_consistent, cur, new_allocator

MiB = 1 << 20
_ids = itertools.count(1 << 40)  # distinct from any CUDA capture id


def fresh_id():
    return next(_ids)


def pool_of(a, storage):
    """The pool id of the segment holding storage (0: the ordinary ones)."""
    for s in a.segments():
        if s["ptr"] <= storage.ptr < s["ptr"] + s["size"]:
            return s["pool"]
    raise AssertionError("no segment holds the storage")


def pool_figures_match_segments(a, pool):
    info = _C._allocator_pool_stats(a, pool)
    segs = [g for g in a.segments() if g["pool"] == pool]
    assert info["segments"] == len(segs)
    assert info["reserved_bytes"] == sum(g["size"] for g in segs)
    assert info["allocated_bytes"] == sum(g["allocated"] for g in segs)
    return info


@pytest.fixture
def routes():
    """Close every route a test opened, even when it fails: an open route
    keeps every allocator of the process from freeing memory."""
    opened = []

    def open_route(a, pool, route):
        _C._allocator_begin_pool(a, pool, route)
        opened.append((a, route))

    yield open_route
    for a, route in opened:
        _C._allocator_end_pool(a, route)


def test_routed_allocations_come_from_the_pool(routes):
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    inside = a.malloc(1000, route=route)
    outside = a.malloc(1000)
    unknown = a.malloc(1000, route=fresh_id())  # no such route: ordinary
    assert pool_of(a, inside) == pool
    assert pool_of(a, outside) == 0 and pool_of(a, unknown) == 0
    info = pool_figures_match_segments(a, pool)
    assert info["holders"] == 1 and info["routes"] == 1
    assert info["allocated_bytes"] == 1024
    check_consistent(a)


def test_a_freed_pool_block_stays_reserved_for_its_pool(routes):
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    s = a.malloc(4096, route=route)
    ptr = s.ptr
    _C._allocator_end_pool(a, route)  # the capture ended; the graph lives
    del s
    reserved = cur(a, "reserved_bytes")
    assert cur(a, "allocated_bytes") == 0
    # An ordinary request of the same size on the same stream: a new
    # segment, never the pool's free block.
    other = a.malloc(4096)
    assert other.ptr != ptr and pool_of(a, other) == 0
    assert cur(a, "reserved_bytes") == reserved + 2 * MiB
    # empty_cache keeps the pool's segment while the graph holds it.
    del other
    a.empty_cache()
    assert cur(a, "reserved_bytes") == 2 * MiB
    assert pool_figures_match_segments(a, pool)["segments"] == 1
    check_consistent(a)


def test_the_pool_reuses_its_own_blocks(routes):
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    s = a.malloc(3000, route=route)
    ptr = s.ptr
    del s
    again = a.malloc(3000, route=route)  # later in the same capture
    assert again.ptr == ptr
    assert a.stats()["segment.all.current"] == 1
    check_consistent(a)


def test_graphs_share_a_pool_and_free_it_after_the_last_reset(routes):
    a = new_allocator()
    pool = fresh_id()
    r1, r2 = fresh_id(), fresh_id()
    routes(a, pool, r1)
    x = a.malloc(MiB + 1, route=r1)  # a large block: a 20 MiB segment
    _C._allocator_end_pool(a, r1)
    routes(a, pool, r2)  # a second graph captures into the same pool
    y = a.malloc(MiB + 1, route=r2)
    _C._allocator_end_pool(a, r2)
    assert pool_of(a, x) == pool_of(a, y) == pool
    info = pool_figures_match_segments(a, pool)
    assert info["holders"] == 2 and info["routes"] == 0
    assert info["segments"] == 1  # y was split off x's segment
    del x, y
    _C._allocator_release_pool(a, pool)  # the first graph's reset
    a.empty_cache()
    assert pool_figures_match_segments(a, pool)["reserved_bytes"] == 20 * MiB
    _C._allocator_release_pool(a, pool)  # the last one
    a.empty_cache()
    assert _C._allocator_pool_stats(a, pool) is None
    assert cur(a, "reserved_bytes") == 0
    check_consistent(a)


def test_a_live_tensor_keeps_a_released_pool_until_it_dies(routes):
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    out = a.malloc(2048, route=route)  # the graph's output, kept by user
    ptr = out.ptr
    _C._allocator_end_pool(a, route)
    _C._allocator_release_pool(a, pool)  # reset
    a.empty_cache()
    info = pool_figures_match_segments(a, pool)
    assert info["holders"] == 0 and info["allocated_bytes"] == 2048
    del out
    # Back to its pool, not to the ordinary ones.
    other = a.malloc(2048)
    assert other.ptr != ptr and pool_of(a, other) == 0
    del other
    a.empty_cache()
    assert _C._allocator_pool_stats(a, pool) is None
    assert cur(a, "reserved_bytes") == 0
    check_consistent(a)


def test_nothing_goes_back_to_a_backend_while_a_route_is_open(routes):
    a, b = new_allocator(), new_allocator()
    s, t = a.malloc(1000), b.malloc(1000)
    del s, t
    route = fresh_id()
    routes(a, fresh_id(), route)
    a.empty_cache()
    b.empty_cache()  # another allocator: a cudaFree breaks any capture
    assert cur(a, "reserved_bytes") == 2 * MiB
    assert cur(b, "reserved_bytes") == 2 * MiB
    _C._allocator_end_pool(a, route)
    a.empty_cache()
    b.empty_cache()
    assert cur(a, "reserved_bytes") == 0 and cur(b, "reserved_bytes") == 0


def test_out_of_memory_during_a_capture_cannot_free_the_cache(routes):
    a = new_allocator(capacity=4 * MiB)
    blocks = [a.malloc(MiB) for _ in range(3)]  # two 2 MiB segments
    assert cur(a, "reserved_bytes") == 4 * MiB
    del blocks  # cached, and freeable outside a capture
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    before = a.stats()["num_ooms"]
    with pytest.raises(pygpu.cuda.OutOfMemoryError):
        a.malloc(1000, route=route)  # its own segment: no room left
    assert a.stats()["num_ooms"] == before + 1
    assert cur(a, "reserved_bytes") == 4 * MiB  # nothing was freed
    _C._allocator_end_pool(a, route)
    _C._allocator_release_pool(a, pool)
    ok = a.malloc(1000)  # the cache is reused outside the capture
    assert pool_of(a, ok) == 0
    check_consistent(a)


def test_pool_blocks_are_cached_without_caching(routes):
    a = new_allocator(caching=False)
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    plain = a.malloc(1000)
    inside = a.malloc(1000, route=route)
    del plain, inside
    # An allocator without caching keeps both while the route is open.
    assert cur(a, "reserved_bytes") == 1024 + 2 * MiB
    _C._allocator_end_pool(a, route)
    a.empty_cache()
    assert cur(a, "reserved_bytes") == 2 * MiB  # the pool's, still held
    _C._allocator_release_pool(a, pool)
    a.empty_cache()
    assert cur(a, "reserved_bytes") == 0
    check_consistent(a)


def test_pool_blocks_keep_to_their_stream(routes):
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    s = a.malloc(1000, stream=1111, route=route)
    ptr = s.ptr
    del s
    t = a.malloc(1000, stream=2222, route=route)
    assert t.ptr != ptr and pool_of(a, t) == pool
    check_consistent(a)


def test_a_released_pool_can_be_held_again(routes):
    a = new_allocator()
    pool = fresh_id()
    r1, r2 = fresh_id(), fresh_id()
    routes(a, pool, r1)
    keep = a.malloc(1000, route=r1)
    _C._allocator_end_pool(a, r1)
    _C._allocator_release_pool(a, pool)
    routes(a, pool, r2)  # a new capture with the same pool token
    more = a.malloc(1000, route=r2)
    assert pool_of(a, more) == pool == pool_of(a, keep)
    assert _C._allocator_pool_stats(a, pool)["holders"] == 1
    del keep, more


def test_memory_figures_count_pools(routes):
    gc.collect()
    a = new_allocator()
    pool, route = fresh_id(), fresh_id()
    routes(a, pool, route)
    x = a.malloc(5000, route=route)
    y = a.malloc(7000)
    s = check_consistent(a)
    assert s["allocated_bytes.all.current"] == 5120 + 7168
    assert s["requested_bytes.all.current"] == 12000
    assert s["reserved_bytes.all.current"] == 4 * MiB
    del x
    s = check_consistent(a)
    assert s["allocated_bytes.all.current"] == 7168
    assert s["reserved_bytes.all.current"] == 4 * MiB
    del y


def test_pool_argument_errors(routes):
    a = new_allocator()
    with pytest.raises(ValueError, match="nonzero"):
        _C._allocator_begin_pool(a, 0, fresh_id())
    with pytest.raises(ValueError, match="nonzero"):
        _C._allocator_begin_pool(a, fresh_id(), 0)
    route = fresh_id()
    routes(a, fresh_id(), route)
    with pytest.raises(ValueError, match="open already"):
        _C._allocator_begin_pool(a, fresh_id(), route)
    with pytest.raises(ValueError, match="no holder"):
        _C._allocator_release_pool(a, fresh_id())
    _C._allocator_end_pool(a, fresh_id())  # not open: nothing
    assert _C._allocator_pool_stats(a, fresh_id()) is None
    with pytest.raises(TypeError):
        _C._allocator_begin_pool(object(), 1, 2)
