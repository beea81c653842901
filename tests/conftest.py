"""Test fixtures: a `device` fixture that runs a test body on the CPU and,
when present, on CUDA; the `cuda` marker skips without a GPU, and
--require-gpu turns those skips into failures (for runs on GPU machines)."""
import gc
import glob
import importlib.machinery
import os
import sys
import zlib

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# pygpu comes from where it was built: an install (regular or editable) or
# an in-place build.  `python -m pytest` run at the root puts the root first
# on sys.path; after a regular install the tree there holds no extension,
# and importing it would shadow the installed package, so the root goes.
if not any(glob.glob(os.path.join(ROOT, "pygpu", "_C" + suffix))
           for suffix in importlib.machinery.EXTENSION_SUFFIXES):
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != ROOT]

import pygpu  # noqa: E402

# The size-list helpers whose __index__ empties the list being read, shared
# with the fuzzer's bad_sizes family.
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from fuzz_sizes import emptied_list  # noqa: E402,F401

HAS_CUDA = pygpu.cuda.is_available()
NO_CUDA_REASON = None if HAS_CUDA else (
    "no CUDA GPU: " + str(pygpu._C._cuda_unavailable_reason()))


def pytest_addoption(parser):
    parser.addoption("--require-gpu", action="store_true", default=False,
                     help="fail (instead of skip) tests that need a GPU")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cuda: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line(
        "markers", "gpu_exclusive: takes all of the GPU's memory, so runs "
        "with no other process on the GPU (scripts/gpu_check.sh runs these "
        "after the parallel suite)")


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    if config.getoption("--require-gpu"):
        return  # pytest_runtest_setup fails them instead
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=NO_CUDA_REASON))


def pytest_runtest_setup(item):
    if not HAS_CUDA and item.config.getoption("--require-gpu") and \
            "cuda" in item.keywords:
        pytest.fail("--require-gpu given but " + NO_CUDA_REASON)


@pytest.fixture(autouse=True, scope="session")
def children_import_this_pygpu(tmp_path_factory):
    """Child processes (`python -c`, `-m`, spawned workers) start in a
    directory outside the tree, so an unbuilt source tree under the working
    directory never shadows the installed pygpu; when this process imports
    an in-place build, children find that same build on PYTHONPATH."""
    old_cwd, old_path = os.getcwd(), os.environ.get("PYTHONPATH")
    os.chdir(tmp_path_factory.mktemp("cwd"))
    here = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
    if here == ROOT:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [ROOT] + ([old_path] if old_path else []))
    yield
    os.chdir(old_cwd)
    if old_path is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old_path


def import_from_root(name):
    """Imports the top-level package `name` (benchmarks, ...) of the source
    tree without putting the root itself on sys.path."""
    import importlib.util
    if name in sys.modules:
        return sys.modules[name]
    pkg = os.path.join(ROOT, name)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(pkg, "__init__.py"),
        submodule_search_locations=[pkg])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def poisoned_outputs():
    """Every new tensor starts as 0xFF bytes (NaN, or -1 for int64), so an
    op that leaves part of its output unwritten fails its comparison."""
    pygpu._C._set_poison(True)
    yield
    pygpu._C._set_poison(False)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture(params=DEVICES)
def device(request):
    """Each test body runs on 'cpu' and on 'cuda' (skipped without one)."""
    return request.param


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name: fresh inputs for each
    test, the same ones on every run."""
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


# float32 through NumPy/cuBLAS FP32, float16 with FP32 accumulation.
RTOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-12, "int64": 0}


def rel_err(got, ref):
    """max |got - ref| / max |ref| (or the absolute error when ref is 0)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise AssertionError(f"shape {got.shape} != {ref.shape}")
    if ref.size == 0:
        return 0.0
    both_nan = np.isnan(got) & np.isnan(ref)
    if np.any(np.isnan(got) != np.isnan(ref)):
        return float("inf")
    diff = np.where(both_nan, 0.0, np.abs(got - ref))
    diff = np.where(np.isinf(ref) & (got == ref), 0.0, diff)
    scale = np.max(np.abs(np.where(np.isfinite(ref), ref, 0.0)))
    return float(np.max(diff) / (scale if scale > 0 else 1.0))


# Short names of the dtypes, and all of them.
B, U8, I32, I64 = pygpu.bool, pygpu.uint8, pygpu.int32, pygpu.int64
F16, BF16, F32, F64 = (pygpu.float16, pygpu.bfloat16, pygpu.float32,
                       pygpu.float64)
ALL_DTYPES = [B, U8, I32, I64, F16, BF16, F32, F64]
# NumPy's dtype for each pygpu dtype NumPy has (bfloat16 is read as
# float32 by host()).
NP = {B: np.bool_, U8: np.uint8, I32: np.int32, I64: np.int64,
      F16: np.float16, F32: np.float32, F64: np.float64}


def dtype_name(d):
    """"float32" for pygpu.float32: test ids and dtype names."""
    return repr(d).split(".")[-1]


def host(t):
    """A tensor's values as a NumPy array (bfloat16 as float32)."""
    return (t.float() if t.dtype is pygpu.bfloat16 else t).cpu().numpy()


def make(rng, shape, dtype=pygpu.float32, device="cpu"):
    """(a, t): random values of shape (times 10) as a NumPy array of
    dtype's type, and the same as a tensor on device."""
    a = (rng.standard_normal(shape) * 10).astype(NP[dtype])
    return a, pygpu.tensor(a, device=device)


def exact(t, ref):
    """t holds ref's shape and values exactly (NaN where ref has NaN)."""
    got = host(t)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert np.array_equal(got, ref, equal_nan=True), rel_err(got, ref)


# The leak check (tests/ops/test_leaks.py and the leak tests of other
# families): many cycles of fn() must leave the shared objects' reference
# counts, Python's memory blocks and the resident set as they were.
SANITIZED = os.environ.get("PYGPU_SANITIZED") == "1"
CYCLES = 300 if SANITIZED else 4000
WARMUP = 50 if SANITIZED else 300
PAGE = os.sysconf("SC_PAGE_SIZE")
# Resident-set growth allowed over CYCLES cycles: far below what a leaked
# tensor (or even a leaked 32-byte object) per cycle would add.
RSS_BOUND = 1 << 20
# Python blocks allowed to stay (caches filled lazily by the interpreter,
# e.g. method caches); a leaked object per cycle gives CYCLES.
BLOCKS_BOUND = 64

SIZE = pygpu.Size([2, 3])


def shared_objects():
    return {
        "float16": pygpu.float16, "float32": pygpu.float32,
        "float64": pygpu.float64, "int64": pygpu.int64,
        "device cpu": pygpu.device("cpu"), "_C": pygpu._C,
        "Tensor": pygpu.Tensor, "Size": SIZE, "None": None, "True": True,
        "False": False, "NotImplemented": NotImplemented,
        "Ellipsis": Ellipsis,
    }


INTERPRETER_SINGLETONS = {"None", "True", "False", "NotImplemented",
                          "Ellipsis"}


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def snapshot(shared):
    gc.collect()
    return ({k: sys.getrefcount(v) for k, v in shared.items()},
            sys.getallocatedblocks(), rss_bytes())


def _window(fn, cycles, shared):
    refs0, blocks0, rss0 = snapshot(shared)
    for _ in range(cycles):
        fn()
    refs1, blocks1, rss1 = snapshot(shared)
    return ({k: refs1[k] - refs0[k] for k in refs0},
            blocks1 - blocks0 if blocks0 else 0, rss1 - rss0)


def assert_no_leak(fn, cycles=CYCLES, warmup=WARMUP, blocks=BLOCKS_BOUND):
    """fn() run warmup times, then cycles times in two halves: nothing may
    stay behind (at most `blocks` Python blocks).  A leak shows in both
    halves; a cache the interpreter or NumPy fills once (or a reference one
    of them happens to hold at the moment) shows in one at most, so each
    figure is the smaller of the two."""
    shared = shared_objects()
    for _ in range(warmup):
        fn()
    (r1, b1, m1), (r2, b2, m2) = (_window(fn, cycles // 2, shared)
                                  for _ in range(2))
    # The interpreter's singletons are referenced from everywhere (pytest
    # included): for them, a leak is at least one reference every few
    # cycles.
    slack = {k: cycles // 20 if k in INTERPRETER_SINGLETONS else 0
             for k in r1}
    changed = {k: r2[k] for k in r1
               if abs(r1[k]) > slack[k] and abs(r2[k]) > slack[k] and
               (r1[k] > 0) == (r2[k] > 0)}
    assert not changed, f"reference counts changed by {changed}"
    if SANITIZED:
        return
    assert min(b1, b2) < blocks, \
        f"{min(b1, b2)} Python blocks left by {cycles // 2} cycles"
    assert min(m1, m2) < RSS_BOUND, \
        f"resident set grew by {min(m1, m2) >> 10} KiB in {cycles // 2} cycles"


def raising(exc, fn, *args, **kwargs):
    """A cycle that must raise exc (with a message)."""
    def cycle():
        try:
            fn(*args, **kwargs)
        except exc as e:
            assert str(e)
        else:
            raise AssertionError(f"{fn} did not raise {exc.__name__}")
    return cycle


# The caching allocator's core over the host backend (tests of its rules
# without a GPU).
FLAVOURS = ("current", "peak", "allocated", "freed")
STATS = ("allocated_bytes", "reserved_bytes", "active_bytes",
         "requested_bytes", "segment", "allocation", "active",
         "inactive_split", "inactive_split_bytes")


def new_allocator(capacity=1 << 40, caching=True):
    # The host backend takes memory from malloc only when a segment is made,
    # so a huge capacity costs nothing.
    return pygpu._C.Allocator(capacity, caching=caching)


def cur(a, name):
    return a.stats()[f"{name}.all.current"]


def check_consistent(a):
    """Identities every stats() snapshot satisfies."""
    s = a.stats()
    for name in STATS:
        c, p, al, fr = (s[f"{name}.all.{f}"] for f in FLAVOURS)
        assert c >= 0 and p >= c, name
        assert al - fr == c, name
    assert s["active_bytes.all.current"] == s["allocated_bytes.all.current"]
    assert s["active.all.current"] == s["allocation.all.current"]
    assert s["requested_bytes.all.current"] <= s["allocated_bytes.all.current"]
    assert s["allocated_bytes.all.current"] + \
        s["inactive_split_bytes.all.current"] <= s["reserved_bytes.all.current"]
    segs = a.segments()
    assert len(segs) == s["segment.all.current"]
    assert sum(g["size"] for g in segs) == s["reserved_bytes.all.current"]
    assert sum(g["allocated"] for g in segs) == \
        s["allocated_bytes.all.current"]
    return s
