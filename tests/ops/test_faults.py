"""Injected faults: every allocation an op makes can fail, and the op then
raises the device's out-of-memory error, leaves its inputs as they were,
frees what it had allocated, and the next call works.

Two switches do the injecting: pygpu._C._fail_allocation_in(n) makes the
nth tensor allocation from now fail (CPU and CUDA tensors alike), and
Allocator.inject_failure(n, count) makes backend allocations of a
host-memory caching allocator fail, where the core's retry and its figures
are checked exactly.
"""
import gc
import sys

import numpy as np
import pytest

import pygpu
from pygpu import _C
from conftest import check_consistent, new_allocator

MiB = 1 << 20
INJECTED = "failure injected for testing"


@pytest.fixture(autouse=True)
def injection_off():
    yield
    _C._fail_allocation_in(0)


def rand(shape, device, seed, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return pygpu.from_numpy(a).to(device)


def linear_model(device):
    pygpu.manual_seed(0)
    return pygpu.nn.Sequential(pygpu.nn.Linear(6, 5), pygpu.nn.ReLU(),
                               pygpu.nn.Linear(5, 3)).to(device)


# Each case: (name, make inputs, op).  The ops cover each family: creation,
# conversion, binary with broadcasting and promotion, in place, unary,
# reduction, views that copy, indexing, matmul and linear, random numbers,
# a model's forward.
CASES = [
    ("zeros", lambda d: (), lambda d: pygpu.zeros(3, 4, device=d)),
    ("tensor", lambda d: (), lambda d: pygpu.tensor([[1.0, 2.0]], device=d)),
    ("to_double", lambda d: (rand((4, 3), d, 1),), lambda x: x.double()),
    ("to_half_t", lambda d: (rand((4, 3), d, 2),), lambda x: x.t().half()),
    ("add_bcast", lambda d: (rand((4, 3), d, 3), rand((3,), d, 4)),
     lambda x, y: x + y),
    ("mul_mixed", lambda d: (rand((4, 3), d, 5),
                             rand((4, 3), d, 6, np.float64)),
     lambda x, y: x * y),
    ("sub_scalar", lambda d: (rand((5,), d, 7),), lambda x: 2.0 - x),
    ("iadd_t", lambda d: (rand((3, 3), d, 8), rand((3, 3), d, 9)),
     lambda x, y: x.__iadd__(y.t())),
    ("exp", lambda d: (rand((2, 3, 4), d, 10),), lambda x: x.exp()),
    ("relu_int", lambda d: (pygpu.tensor([[-1, 2], [3, -4]], device=d),),
     lambda x: x.relu()),
    ("exp_int", lambda d: (pygpu.tensor([1, 2, 3], device=d),),
     lambda x: pygpu.exp(x)),
    ("sum_dim", lambda d: (rand((4, 5), d, 11),), lambda x: x.sum(1)),
    ("mean_t", lambda d: (rand((4, 5), d, 12),), lambda x: x.t().mean(0)),
    ("max_dim", lambda d: (rand((4, 5), d, 13),), lambda x: x.max(1)),
    ("reshape_t", lambda d: (rand((4, 5), d, 14),),
     lambda x: x.t().reshape(20)),
    ("contiguous", lambda d: (rand((4, 5), d, 15),),
     lambda x: x[:, 1:].contiguous()),
    ("clone", lambda d: (rand((4, 5), d, 16),), lambda x: x.clone()),
    ("setitem", lambda d: (rand((4, 5), d, 17), rand((5,), d, 18)),
     lambda x, y: x.__setitem__(1, y)),
    ("matmul", lambda d: (rand((4, 6), d, 19), rand((6, 3), d, 20)),
     lambda x, y: x @ y),
    ("bmm_bcast", lambda d: (rand((2, 4, 6), d, 21), rand((6, 3), d, 22)),
     lambda x, y: pygpu.matmul(x, y)),
    ("linear", lambda d: (rand((4, 6), d, 23), rand((5, 6), d, 24),
                          rand((5,), d, 25)),
     lambda x, w, b: pygpu.nn.functional.linear(x, w, b)),
    ("randn", lambda d: (),
     lambda d: (pygpu.manual_seed(3), pygpu.randn(7, 3, device=d))[1]),
    ("model", lambda d: (linear_model(d), rand((4, 6), d, 26)),
     lambda m, x: m(x)),
    ("numpy_back", lambda d: (rand((3, 4), d, 27),),
     lambda x: pygpu.from_numpy(x.detach().cpu().detach().numpy() * 2).to(d_of(x))),
]


# Ops that allocate no new tensor on the CPU: NumPy-backed creation and
# in-place writes.
NO_CPU_ALLOCATION = ("tensor", "iadd_t", "setitem", "numpy_back")


def d_of(x):
    return x.device


def snapshot(args):
    """What an op must leave unchanged: its tensor inputs' values and
    reference counts."""
    values = [a.detach().cpu().detach().numpy().copy() if isinstance(a, pygpu.Tensor) else None
              for a in args]
    return values, [sys.getrefcount(a) for a in args]


def call(op, device, args):
    return op(device) if not args else op(*args)


@pytest.mark.parametrize("name,make,op", CASES, ids=[c[0] for c in CASES])
def test_every_allocation_of_an_op_can_fail(device, name, make, op):
    args = make(device)
    if device == "cuda":
        pygpu.cuda.synchronize()
    gc.collect()  # what earlier tests left to the collector goes first
    base = pygpu.cuda.memory_allocated() if device == "cuda" else 0
    failures = 0
    for n in range(1, 50):
        before, refs = snapshot(args)
        gc.collect()
        _C._fail_allocation_in(n)
        try:
            call(op, device, args)
        except (RuntimeError, pygpu.cuda.OutOfMemoryError) as e:
            assert INJECTED in str(e), e
            failures += 1
        else:
            _C._fail_allocation_in(0)
            break
        finally:
            _C._fail_allocation_in(0)
        # The failed op left its inputs alone (an in-place op may have
        # written before failing only if it failed after its last write:
        # none of these allocates after writing) and holds no reference.
        after, refs_after = snapshot(args)
        assert refs_after == refs, name
        for a, b in zip(before, after):
            if a is not None:
                np.testing.assert_array_equal(a, b)
        if device == "cuda":
            gc.collect()
            assert pygpu.cuda.memory_allocated() == base, name
    else:
        pytest.fail(f"{name} still fails after 49 allocations")
    # Each allocation failed in turn, so the op allocates `failures`
    # tensors, and with the switch off it runs to the same answer as
    # before.
    assert failures >= (0 if name in NO_CPU_ALLOCATION else 1), name
    fresh = make(device)
    want = call(op, device, fresh)
    got = call(op, device, make(device))
    if isinstance(want, pygpu.Tensor):
        np.testing.assert_array_equal(got.detach().cpu().detach().numpy(), want.detach().cpu().detach().numpy())


def test_injection_counts_down_and_turns_off():
    _C._fail_allocation_in(3)
    pygpu.zeros(1)
    pygpu.zeros(1)
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator: can't "
                       "allocate memory: you tried to allocate 24 bytes"):
        pygpu.zeros(2, 3)
    pygpu.zeros(2, 3)  # one failure only
    _C._fail_allocation_in(1)
    _C._fail_allocation_in(0)
    pygpu.zeros(1)
    with pytest.raises(TypeError):
        _C._fail_allocation_in("1")


@pytest.mark.cuda
def test_injected_cuda_failure_is_out_of_memory():
    _C._fail_allocation_in(1)
    with pytest.raises(pygpu.cuda.OutOfMemoryError,
                       match=r"^CUDA out of memory\. Tried to allocate "
                       r"48 bytes"):
        pygpu.zeros(3, 4, device="cuda")


# -------------------------------------------- the caching allocator's core
# A request that needs a new segment makes up to four backend calls: the
# core's, its retry after emptying the cache, and both again after the
# Python face has collected garbage.
def test_backend_failure_retried_after_emptying_the_cache():
    """One failing backend call: the core empties its cache and retries,
    so the request succeeds and counts one retry, no OOM."""
    a = new_allocator()
    keep = a.malloc(3 * MiB)
    cached = a.malloc(12 * MiB)
    del cached
    a.inject_failure(1)
    x = a.malloc(30 * MiB)
    s = check_consistent(a)
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert x.size == 30 * MiB
    # The retry gave the cached 12 MiB segment back first.
    assert s["reserved_bytes.all.current"] == 20 * MiB + 30 * MiB
    del x, keep
    s = check_consistent(a)
    assert s["allocated_bytes.all.current"] == 0


@pytest.mark.parametrize("count", [2, 3])
def test_backend_failures_rescued_by_the_second_attempt(count):
    a = new_allocator()
    keep = a.malloc(MiB)
    a.inject_failure(1, count)
    x = a.malloc(30 * MiB)
    s = check_consistent(a)
    assert s["num_ooms"] == 0 and s["num_alloc_retries"] == 1
    assert s["segment.all.current"] == 2
    del x, keep
    assert check_consistent(a)["allocated_bytes.all.current"] == 0


@pytest.mark.parametrize("count", [4, 9])
def test_backend_failures_give_one_oom_and_exact_figures(count):
    a = new_allocator()
    live = [a.malloc(n) for n in (100, 3 * MiB, 30 * MiB)]
    before = check_consistent(a)
    a.inject_failure(1, count)
    with pytest.raises(pygpu.cuda.OutOfMemoryError,
                       match="CUDA out of memory. Tried to allocate"):
        a.malloc(64 * MiB)
    s = check_consistent(a)
    assert s["num_ooms"] == 1
    for key in ("allocated_bytes.all.current", "active.all.current",
                "requested_bytes.all.current"):
        assert s[key] == before[key], key
    # Blocks still in use stay; later requests are served.
    a.inject_failure(0)
    y = a.malloc(64 * MiB)
    z = a.malloc(1000)
    s = check_consistent(a)
    assert s["allocation.all.current"] == 5
    del live, y, z
    s = check_consistent(a)
    assert s["allocated_bytes.all.current"] == 0
    a.empty_cache()
    assert check_consistent(a)["reserved_bytes.all.current"] == 0


def test_backend_failure_in_the_middle_of_many():
    """Backend calls 5 to 8 fail: the fifth of ten requests for a new
    segment gets the OOM, every other is served, and every figure agrees
    after each."""
    a = new_allocator()
    a.inject_failure(5, 4)
    got, ooms = [], 0
    for _ in range(10):
        try:
            got.append(a.malloc(11 * MiB))
        except pygpu.cuda.OutOfMemoryError:
            ooms += 1
        check_consistent(a)
    s = check_consistent(a)
    assert s["num_ooms"] == ooms == 1
    assert len(got) == 9
    del got
    assert check_consistent(a)["allocated_bytes.all.current"] == 0


def test_inject_failure_arguments():
    a = new_allocator()
    with pytest.raises(TypeError):
        a.inject_failure("x")
    a.inject_failure(0, 5)  # off
    assert a.malloc(MiB).size == MiB
