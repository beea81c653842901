"""The NCCL backend: the library loaded at run time (and what happens when
it is missing or is not NCCL), what the build finds, argument checking of
the communicator, the builds without NCCL, and on a GPU a one-rank
communicator's collectives against NumPy (plus two ranks where there are
two GPUs) and its release after a failure or in a forked child (through a
stand-in library).

A build without NCCL (CPU-only, or a CUDA toolkit without nccl.h) is
legitimate: the tests that need NCCL skip there, saying why, and those of
its refusals run."""
import ctypes.util
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.distributed import _nccl
from conftest import ROOT

CUDA_BUILD = _C._cuda_is_built()
# The NCCL layer is compiled in (a CUDA build that found nccl.h).
NCCL_BUILT = _C._nccl_is_built()
# ... and a library loads (the search of pygpu.distributed, pip's included).
NCCL = NCCL_BUILT and _nccl.nccl_version() is not None
NCCL_WHY = _nccl.nccl_unavailable_reason()
NO_CUDA = "pygpu was built without CUDA support"
NO_NCCL = "pygpu was built without NCCL"
UID_BYTES = 128

# The GPU tests of a real NCCL.
needs_nccl = pytest.mark.skipif(not NCCL, reason=f"NCCL: {NCCL_WHY}")
# Tests of the NCCL layer itself (a stand-in library will do).
needs_nccl_layer = pytest.mark.skipif(
    not NCCL_BUILT, reason=f"this build has no NCCL layer: {NCCL_WHY}")


def run_python(code, **env):
    """Run code in a fresh interpreter with env added; its stdout."""
    full = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                         env=full, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def toolkit_nccl():
    """(header, library) of the CUDA toolkit's NCCL, or None."""
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                 "/usr/local/cuda"):
        if not root:
            continue
        header = os.path.join(root, "include", "nccl.h")
        for lib in ("lib64", "lib"):
            so = os.path.join(root, lib, "libnccl.so.2")
            if os.path.exists(header) and os.path.exists(so):
                return header, so
    return None


# -- loading ------------------------------------------------------------

def test_version_and_load_error_agree():
    _nccl.nccl_unavailable_reason()  # the search with pip's paths
    version, why = _C._nccl_version(), _C._nccl_load_error()
    assert (version is None) == (why is not None)
    assert _nccl.is_nccl_available() == (version is not None)
    assert _nccl.nccl_version() == version
    if version is not None:
        assert len(version) == 3 and all(isinstance(v, int) for v in version)
        assert version >= (2, 7, 0)
    else:
        assert isinstance(why, str) and why


@pytest.mark.skipif(not NCCL_BUILT or toolkit_nccl() is None,
                    reason="needs the NCCL layer and the toolkit's NCCL")
def test_version_matches_the_header():
    header, so = toolkit_nccl()
    text = open(header).read()
    want = tuple(int(re.search(rf"#define NCCL_{k} (\d+)", text).group(1))
                 for k in ("MAJOR", "MINOR", "PATCH"))
    got = run_python("from pygpu import _C; print(_C._nccl_version())",
                     PYGPU_NCCL_LIBRARY=so)
    assert got.strip() == repr(want)


@pytest.mark.skipif(not NCCL, reason="NCCL is not loadable here")
def test_unique_id_needs_no_gpu():
    a, b = _C._nccl_unique_id(), _C._nccl_unique_id()
    assert isinstance(a, bytes) and len(a) == UID_BYTES
    assert a != b


def test_missing_library_is_reported_cleanly():
    out = run_python("""
        import pygpu
        from pygpu import _C
        from pygpu.distributed import _nccl
        print(_nccl.is_nccl_available())
        print(_C._nccl_version())
        print(_nccl.nccl_unavailable_reason())
        for f in (_C._nccl_unique_id,
                  lambda: _C.NcclComm(bytes(128), 1, 0, 0),
                  lambda: _nccl.NcclBackend({}, 0, 1)):
            try:
                f()
            except RuntimeError as e:
                print("RuntimeError", e)
        """, PYGPU_NCCL_LIBRARY="/nonexistent/dir/libnccl.so.2")
    lines = out.splitlines()
    assert lines[0] == "False" and lines[1] == "None"
    if NCCL_BUILT:
        assert "/nonexistent/dir/libnccl.so.2" in lines[2]
        assert "No such file" in lines[2]
    elif CUDA_BUILD:
        assert lines[2].startswith(NO_NCCL)
    else:
        assert lines[2] == NO_CUDA
    assert len(lines) == 6
    assert all(line.startswith("RuntimeError") for line in lines[3:])
    if NCCL_BUILT:
        assert "NCCL is not available" in lines[3]
        assert "/nonexistent/dir" in lines[5]
    else:
        assert all(lines[2] in line for line in lines[3:])


@needs_nccl_layer
def test_a_library_that_is_not_nccl_is_refused():
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to load")
    out = run_python("""
        from pygpu import _C
        print(_C._nccl_version())
        print(_C._nccl_load_error())
        """, PYGPU_NCCL_LIBRARY=libm)
    version, why = out.splitlines()
    assert version == "None"
    assert "has no ncclGetVersion" in why and libm in why


@needs_nccl_layer
def test_load_rejects_bad_paths():
    with pytest.raises(TypeError):
        _C._nccl_load("libnccl.so.2")
    with pytest.raises(TypeError):
        _C._nccl_load(3)
    with pytest.raises(TypeError):
        _C._nccl_load([b"libnccl.so.2"])
    with pytest.raises(TypeError):
        _C._nccl_load((), ())


# A library with NCCL's names whose ncclGetUniqueId fails, to see the
# error an NCCL call raises (the real one needs no GPU for it).
FAILING_NCCL = r"""
static const char *names[] = {"no error", "unhandled cuda error",
                              "unhandled system error"};
int ncclGetVersion(int *v) { *v = 22809; return 0; }
const char *ncclGetErrorString(int rc) { return names[rc < 3 ? rc : 0]; }
const char *ncclGetLastError(void *comm) { return "socket went away"; }
int ncclGetUniqueId(void *id) { return 2; }
#define STUB(name) int name(void) { return 0; }
STUB(ncclCommInitRank) STUB(ncclCommDestroy) STUB(ncclCommAbort)
STUB(ncclCommGetAsyncError) STUB(ncclAllReduce) STUB(ncclBroadcast)
STUB(ncclReduce) STUB(ncclAllGather) STUB(ncclReduceScatter) STUB(ncclSend)
STUB(ncclRecv) STUB(ncclGroupStart) STUB(ncclGroupEnd)
"""


@needs_nccl_layer
def test_an_nccl_error_names_the_call(tmp_path):
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src, lib = tmp_path / "fake.c", tmp_path / "libnccl.so.2"
    src.write_text(FAILING_NCCL)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True, timeout=60)
    out = run_python("""
        from pygpu import _C
        print(_C._nccl_version())
        try:
            _C._nccl_unique_id()
        except RuntimeError as e:
            print(e)
        """, PYGPU_NCCL_LIBRARY=str(lib))
    version, message = out.splitlines()
    assert version == "(2, 28, 9)"
    assert message == ("NCCL error in ncclGetUniqueId: unhandled system "
                       "error (2), NCCL version 2.28.9; last error: socket "
                       "went away")


def build_library(tmp_path, source, name="libnccl.so.2"):
    """source compiled into tmp_path/name, a shared library."""
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src, lib = tmp_path / (name + ".c"), tmp_path / name
    src.write_text(source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True, timeout=60)
    return lib


# A stand-in for NCCL: every function pygpu loads, the version from
# FAKE_NCCL_VERSION, collectives that fail with FAKE_NCCL_FAIL's code, and
# the releases named on stderr with the process id, to see which ran.
FAKE_NCCL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef struct { char internal[128]; } uid_t128;
static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : dflt;
}
static int say(const char *what)
{
    fprintf(stderr, "fake-nccl %s pid=%d\n", what, (int)getpid());
    fflush(stderr);
    return 0;
}
int ncclGetVersion(int *v) { *v = env_int("FAKE_NCCL_VERSION", 22809);
                             return 0; }
const char *ncclGetErrorString(int rc) { return rc ? "failed" : "ok"; }
int ncclGetUniqueId(uid_t128 *id) { memset(id, 7, sizeof(*id)); return 0; }
int ncclCommInitRank(void **comm, int n, uid_t128 id, int rank)
{ *comm = (void *)16; return 0; }
int ncclCommGetAsyncError(void *comm, int *state) { *state = 0; return 0; }
int ncclAllReduce(const void *s, void *r, size_t n, int t, int op,
                  void *comm, void *stream)
{ return env_int("FAKE_NCCL_FAIL", 0); }
int ncclCommFinalize(void *comm) { return say("finalize"); }
int ncclCommDestroy(void *comm) { return say("destroy"); }
int ncclCommAbort(void *comm) { return say("abort"); }
#define STUB(name) int name(void) { return 0; }
STUB(ncclBroadcast) STUB(ncclReduce) STUB(ncclAllGather)
STUB(ncclReduceScatter) STUB(ncclSend) STUB(ncclRecv) STUB(ncclGroupStart)
STUB(ncclGroupEnd)
"""


@needs_nccl_layer
@pytest.mark.parametrize("code,version,bf16_avg", [
    (2909, (2, 9, 9), False),      # before 2.10: neither
    (21003, (2, 10, 3), True),     # 2.10 brought both
    (22809, (2, 28, 9), True),
])
def test_bfloat16_and_avg_follow_the_library_version(tmp_path, code, version,
                                                     bf16_avg):
    # Decided by the library loaded, whatever nccl.h the build saw (some
    # declare ncclBfloat16 for C++ only).
    lib = build_library(tmp_path, FAKE_NCCL)
    out = run_python("""
        from pygpu import _C
        print(_C._nccl_version())
        caps = _C._nccl_capabilities()
        print(" ".join(caps["dtypes"]))
        print(" ".join(caps["ops"]))
        """, PYGPU_NCCL_LIBRARY=str(lib), FAKE_NCCL_VERSION=str(code))
    got_version, dtypes, ops = out.splitlines()
    assert got_version == repr(version)
    dtypes, ops = dtypes.split(), ops.split()
    assert {"float32", "float16", "float64", "int64", "int32", "uint8",
            "bool"} <= set(dtypes)
    assert {"SUM", "PRODUCT", "MAX", "MIN"} <= set(ops)
    assert ("bfloat16" in dtypes) == bf16_avg
    assert ("AVG" in ops) == bf16_avg


@needs_nccl
def test_the_loaded_nccl_serves_bfloat16_from_2_10():
    recent = _nccl.nccl_version() >= (2, 10, 0)
    caps = _C._nccl_capabilities()
    assert ("bfloat16" in caps["dtypes"]) == recent
    assert ("AVG" in caps["ops"]) == recent


def test_build_finds_nccl_in_the_pip_package(tmp_path):
    # setup.py's module code (run by `setup.py --name`) with a toolkit that
    # has no nccl.h and an nvidia-nccl-cu* layout on the path: the header
    # comes from the package (the library is loaded at run time).
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "include").mkdir()
    (cuda / "include" / "cuda_runtime_api.h").write_text("/* stand-in */\n")
    nvcc = cuda / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\nexit 1\n")
    nvcc.chmod(0o755)
    site = tmp_path / "site"
    nccl = site / "nvidia" / "nccl"
    (nccl / "include").mkdir(parents=True)
    (nccl / "lib").mkdir()
    (nccl / "include" / "nccl.h").write_text("/* stand-in */\n")
    (nccl / "lib" / "libnccl.so.2").write_bytes(b"")
    env = {k: v for k, v in os.environ.items()
           if k not in ("NCCL_HOME", "PYGPU_NO_CUDA", "CUDA_PATH")}
    env.update(CUDA_HOME=str(cuda), PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "setup.py", "--name"], cwd=ROOT,
                         env=env, capture_output=True, text=True,
                         timeout=120)
    lines = [line for line in out.stderr.splitlines()
             if line.startswith("pygpu: with")]
    assert lines == [f"pygpu: with NCCL's header from {nccl}/include (the "
                     f"library is loaded at run time)"], out.stderr[-3000:]


def test_load_with_paths_keeps_what_was_loaded():
    before = _C._nccl_version()
    assert _C._nccl_load(["/nonexistent/libnccl.so.2"]) == \
        _C._nccl_load_error()
    assert _C._nccl_version() == before


# -- the communicator's arguments ---------------------------------------

UID = bytes(UID_BYTES)


@needs_nccl_layer
@pytest.mark.parametrize("args,kwargs,exc", [
    (("x" * UID_BYTES, 1, 0, 0), {}, TypeError),
    ((UID[:-1], 1, 0, 0), {}, ValueError),
    ((UID + b"\0", 1, 0, 0), {}, ValueError),
    ((UID, 0, 0, 0), {}, ValueError),
    ((UID, 2, 2, 0), {}, ValueError),
    ((UID, 2, -1, 0), {}, ValueError),
    ((UID, 1, 0, -1), {}, ValueError),
    ((UID, 1.0, 0, 0), {}, TypeError),
    ((UID, 1, 0), {}, TypeError),
    ((UID, 1, 0, 0), {"timeout": -1.0}, ValueError),
    ((UID, 1, 0, 0), {"timeout": float("nan")}, ValueError),
    ((UID, 1, 0, 0), {"timeout": "10"}, TypeError),
    ((UID, 1, 0, 0), {"device": 0}, TypeError),
])
def test_comm_rejects_bad_arguments(args, kwargs, exc):
    with pytest.raises(exc):
        _C.NcclComm(*args, **kwargs)


@pytest.mark.skipif(not NCCL or pygpu.cuda.is_available(),
                    reason="needs NCCL and no GPU")
def test_comm_without_a_gpu_says_why():
    with pytest.raises(RuntimeError) as e:
        _C.NcclComm(_C._nccl_unique_id(), 1, 0, 0, timeout=5.0)
    assert str(e.value) == _C._cuda_unavailable_reason()
    with pytest.raises(RuntimeError):
        _nccl.NcclBackend({}, 0, 1)


@pytest.mark.skipif(NCCL_BUILT, reason="a build without NCCL")
def test_build_without_nccl_refuses():
    # The CPU-only flavour says so; a CUDA build whose toolkit had no
    # nccl.h names what was missing.
    why = _C._nccl_load_error()
    assert why == NO_CUDA if not CUDA_BUILD else why.startswith(NO_NCCL)
    assert not _C._nccl_is_built()
    assert _C._nccl_version() is None
    assert _C._nccl_load(["libnccl.so.2"]) == why
    assert not _nccl.is_nccl_available()
    assert _nccl.nccl_unavailable_reason() == why
    for f in (_C._nccl_unique_id, _C._nccl_capabilities,
              lambda: _C.NcclComm(UID, 1, 0, 0), lambda: _C.NcclComm(),
              lambda: _nccl.NcclBackend({}, 0, 1)):
        with pytest.raises(RuntimeError, match=re.escape(why)):
            f()


def test_comm_type_has_the_same_names_in_both_flavours():
    names = {"all_reduce", "broadcast", "reduce", "all_gather_into_tensor",
             "reduce_scatter_tensor", "send", "recv", "group_start",
             "group_end", "async_error", "abort", "destroy", "rank",
             "world_size", "device", "closed"}
    assert names <= set(dir(_C.NcclComm))


# -- the Python backend without a GPU -----------------------------------

class _Op:
    def __init__(self, name):
        self.name = name


def test_op_names():
    assert _nccl._op_name("SUM") == "SUM"
    assert _nccl._op_name(_Op("AVG")) == "AVG"
    with pytest.raises(TypeError):
        _nccl._op_name(3)


@pytest.mark.skipif(not NCCL, reason="NCCL is not loadable here")
@pytest.mark.parametrize("rank,world_size,exc", [
    (1, 1, ValueError), (-1, 2, ValueError), (0, 0, ValueError),
    ("0", 1, TypeError)])
def test_backend_rejects_bad_ranks(rank, world_size, exc):
    with pytest.raises(exc):
        _nccl.NcclBackend({}, rank, world_size)


def test_python_m_pygpu_names_nccl(capsys):
    from pygpu.__main__ import nccl_line
    info = {}
    nccl_line(info)
    line = capsys.readouterr().out.strip()
    if NCCL:
        assert line == "NCCL: " + ".".join(map(str, _C._nccl_version()))
        assert info["nccl"] == line[len("NCCL: "):]
    else:
        assert line.startswith("NCCL: none (") and info["nccl"] is None


# -- on a GPU: one rank -------------------------------------------------

DTYPES = ["float16", "bfloat16", "float32", "float64", "int32", "int64",
          "uint8", "bool"]
OPS = ["SUM", "PRODUCT", "MAX", "MIN", "AVG"]
REDUCE = {"SUM": np.sum, "PRODUCT": np.prod, "MAX": np.max, "MIN": np.min,
          "AVG": np.mean}


def _random(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int64", "uint8"):
        return rng.integers(0, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32)


def _cuda(a, dtype):
    return pygpu.tensor(a, device="cuda").to(getattr(pygpu, dtype))


def _host(t):
    if t.dtype in (pygpu.float16, pygpu.bfloat16):
        t = t.float()
    return t.cpu().numpy().astype(np.float64)


@pytest.fixture
def comm():
    c = _C.NcclComm(_C._nccl_unique_id(), 1, 0, pygpu.cuda.current_device(),
                    timeout=60.0)
    yield c
    c.destroy()


@pytest.mark.cuda
@needs_nccl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_all_reduce_one_rank(comm, rng, dtype, op):
    a = _random(rng, dtype, (3, 5))
    t = _cuda(a, dtype)
    if dtype == "bool" and op == "AVG":
        with pytest.raises(ValueError, match="AVG with boolean"):
            comm.all_reduce(t, op)
        return
    ref = REDUCE[op](np.stack([_host(t)]), axis=0)
    comm.all_reduce(t, op)
    np.testing.assert_allclose(_host(t), ref, rtol=1e-2 if "16" in dtype
                               else 1e-6)
    assert comm.async_error() is None


@pytest.mark.cuda
@needs_nccl
def test_collectives_one_rank(comm, rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    t = _cuda(a, "float32")
    comm.broadcast(t, 0)
    comm.reduce(t, "sum", 0)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    out = pygpu.empty(12, device="cuda")
    comm.all_gather_into_tensor(out, t)
    np.testing.assert_array_equal(out.cpu().numpy(), a.ravel())
    small = pygpu.empty(4, 3, device="cuda")
    comm.reduce_scatter_tensor(small, t, "MAX")
    np.testing.assert_array_equal(small.cpu().numpy(), a)
    recv = pygpu.empty(4, 3, device="cuda")
    comm.group_start()
    comm.send(t, 0)
    comm.recv(recv, 0)
    comm.group_end()
    np.testing.assert_array_equal(recv.cpu().numpy(), a)
    empty = pygpu.empty(0, device="cuda")
    comm.all_reduce(empty, "SUM")
    assert comm.async_error() is None
    assert (comm.rank, comm.world_size, comm.closed) == (0, 1, False)
    assert "world_size=1" in repr(comm)


@pytest.mark.cuda
@needs_nccl
def test_collective_argument_errors(comm):
    t = pygpu.zeros(4, 3, device="cuda")
    with pytest.raises(RuntimeError, match="serves CUDA tensors"):
        comm.all_reduce(pygpu.zeros(3), "SUM")
    with pytest.raises(ValueError, match="must be contiguous"):
        comm.all_reduce(t.T, "SUM")
    with pytest.raises(TypeError):
        comm.all_reduce(np.zeros(3), "SUM")
    with pytest.raises(ValueError, match="unknown reduce op"):
        comm.all_reduce(t, "BAND")
    with pytest.raises(TypeError):
        comm.all_reduce(t, 0)
    with pytest.raises(ValueError, match="out of range"):
        comm.broadcast(t, 1)
    with pytest.raises(ValueError, match="out of range"):
        comm.send(t, -1)
    with pytest.raises(ValueError, match="world_size times"):
        comm.all_gather_into_tensor(pygpu.zeros(5, device="cuda"), t)
    with pytest.raises(TypeError, match="same type"):
        comm.all_gather_into_tensor(pygpu.zeros(12, dtype=pygpu.int64,
                                                device="cuda"), t)
    with pytest.raises(ValueError, match="output size times world size"):
        comm.reduce_scatter_tensor(pygpu.zeros(5, device="cuda"), t, "SUM")
    with pytest.raises(TypeError):
        comm.all_reduce(t)
    if pygpu.cuda.device_count() > 1:
        other = pygpu.zeros(3, device="cuda:1")
        with pytest.raises(RuntimeError, match="on the same device"):
            comm.all_reduce(other, "SUM")


@pytest.mark.cuda
@needs_nccl
def test_destroyed_comm_refuses():
    c = _C.NcclComm(_C._nccl_unique_id(), 1, 0, pygpu.cuda.current_device())
    c.destroy()
    assert c.closed
    c.destroy()  # a second time does nothing
    with pytest.raises(RuntimeError, match="destroyed or aborted"):
        c.all_reduce(pygpu.zeros(3, device="cuda"), "SUM")
    a = _C.NcclComm(_C._nccl_unique_id(), 1, 0, pygpu.cuda.current_device())
    a.abort()
    assert a.closed
    del a  # freed without a second release


def _releases(stderr, pid=None):
    """The stand-in's release calls, in order (of process pid, if given)."""
    calls = []
    for line in stderr.splitlines():
        m = re.fullmatch(r"fake-nccl (\w+) pid=(\d+)", line.strip())
        if m and (pid is None or int(m.group(2)) == pid):
            calls.append(m.group(1))
    return calls


RELEASE_AFTER_FAILURE = """
import pygpu
from pygpu import _C
c = _C.NcclComm(_C._nccl_unique_id(), 1, 0, pygpu.cuda.current_device())
t = pygpu.ones(4, device="cuda")
try:
    c.all_reduce(t, "SUM")
except RuntimeError as e:
    print("raised", e)
c.destroy()
print("closed", c.closed)
"""


# Finalized and destroyed (destroyed alone where nccl.h predates
# ncclCommFinalize, 2.14).
CLOSED = (["finalize", "destroy"], ["destroy"])


@pytest.mark.cuda
@needs_nccl_layer
@pytest.mark.parametrize("code,calls", [
    (0, CLOSED),        # nothing failed: finalized
    (4, CLOSED),        # an argument NCCL refused: the same
    (2, (["abort"],)),  # a system error (a peer gone?): aborted
    (6, (["abort"],)),  # a remote error: aborted
])
def test_a_failed_comm_is_aborted_not_finalized(tmp_path, code, calls):
    lib = build_library(tmp_path, FAKE_NCCL)
    out = subprocess.run([sys.executable, "-c", RELEASE_AFTER_FAILURE],
                         env=dict(os.environ, PYGPU_NCCL_LIBRARY=str(lib),
                                  FAKE_NCCL_FAIL=str(code)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert ("raised" in out.stdout) == (code != 0)
    assert "closed True" in out.stdout
    assert _releases(out.stderr) in calls, out.stderr[-3000:]


RELEASE_IN_FORKED_CHILD = """
import gc, os
import pygpu
from pygpu import _C
c = _C.NcclComm(_C._nccl_unique_id(), 1, 0, pygpu.cuda.current_device())
pid = os.fork()
if pid == 0:
    del c
    gc.collect()
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child", pid, os.waitstatus_to_exitcode(status))
del c
gc.collect()
print("parent", os.getpid())
"""


@pytest.mark.cuda
@needs_nccl_layer
def test_a_forked_child_leaves_the_comm_alone(tmp_path):
    # The child's copy is the parent's communicator: releasing it there
    # (finalize, destroy or abort) would join threads the child does not
    # have and free what the parent uses.  The parent releases it.
    lib = build_library(tmp_path, FAKE_NCCL)
    out = subprocess.run([sys.executable, "-c", RELEASE_IN_FORKED_CHILD],
                         env=dict(os.environ, PYGPU_NCCL_LIBRARY=str(lib)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    child = re.search(r"child (\d+) (-?\d+)", out.stdout)
    parent = re.search(r"parent (\d+)", out.stdout)
    assert child and parent, out.stdout + out.stderr[-3000:]
    assert child.group(2) == "0"
    assert _releases(out.stderr, int(child.group(1))) == []
    assert _releases(out.stderr, int(parent.group(1))) in CLOSED


class DictStore:
    """A one-process stand-in for a torch Store."""

    def __init__(self):
        self.d = {}

    def set(self, key, value):
        self.d[key] = bytes(value)

    def get(self, key):
        return self.d[key]


@pytest.mark.cuda
@needs_nccl
def test_backend_one_rank(rng):
    b = _nccl.NcclBackend(DictStore(), 0, 1, timeout=60)
    a = rng.standard_normal(6).astype(np.float32)
    t = _cuda(a, "float32")
    assert b.all_reduce(t, _Op("AVG")).wait()
    outs = [pygpu.empty(2, 3, device="cuda")]
    b.all_gather(outs, t).wait()
    np.testing.assert_array_equal(outs[0].cpu().numpy(), a.reshape(2, 3))
    r = pygpu.empty(6, device="cuda")
    b.group_start()
    b.send(t, 0)
    w = b.recv(r, 0)
    b.group_end()
    w.synchronize()
    np.testing.assert_array_equal(r.cpu().numpy(), a)
    assert w.result() == [r]
    b.barrier()
    b.shutdown()


# -- on two GPUs: two ranks in two processes ------------------------------

TWO_RANKS = """
import os, sys, time
import numpy as np
import pygpu
from pygpu.distributed import _nccl

class FileStore:
    def __init__(self, path):
        self.path = path
    def set(self, key, value):
        name = os.path.join(self.path, key.replace("/", "_"))
        with open(name + ".tmp", "wb") as f:
            f.write(value)
        os.replace(name + ".tmp", name)
    def get(self, key):
        name = os.path.join(self.path, key.replace("/", "_"))
        while not os.path.exists(name):
            time.sleep(0.01)
        with open(name, "rb") as f:
            return f.read()

rank = int(sys.argv[1])
pygpu.cuda.set_device(rank)
b = _nccl.NcclBackend(FileStore(sys.argv[2]), rank, 2, timeout=60)
t = pygpu.tensor([float(rank + 1)] * 4, device="cuda")
b.all_reduce(t, "SUM").wait()
assert t.cpu().numpy().tolist() == [3.0] * 4, t
out = pygpu.empty(8, device="cuda")
b.all_gather_into_tensor(out, t).wait()
x = pygpu.tensor([float(rank)] * 3, device="cuda")
b.broadcast(x, 1).synchronize()
assert x.cpu().numpy().tolist() == [1.0] * 3
b.barrier()
b.shutdown()
print("ok")
"""


@pytest.mark.cuda
@needs_nccl
@pytest.mark.skipif(pygpu.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_ranks(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", TWO_RANKS, str(r),
                               str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "ok", err
