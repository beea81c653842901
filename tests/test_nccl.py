"""The NCCL backend: the library loaded at run time (and what happens when
it is missing or is not NCCL), argument checking of the communicator, the
flavour without CUDA, and on a GPU a one-rank communicator's collectives
against NumPy (plus two ranks where there are two GPUs)."""
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

CUDA_BUILD = _C._cuda_is_built()
NCCL = CUDA_BUILD and _C._nccl_version() is not None
NO_CUDA = "pygpu was built without CUDA support"
UID_BYTES = 128


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
    version, why = _C._nccl_version(), _C._nccl_load_error()
    assert (version is None) == (why is not None)
    assert _nccl.is_nccl_available() == (version is not None)
    assert _nccl.nccl_version() == version
    if version is not None:
        assert len(version) == 3 and all(isinstance(v, int) for v in version)
        assert version >= (2, 7, 0)
    else:
        assert isinstance(why, str) and why


@pytest.mark.skipif(not CUDA_BUILD or toolkit_nccl() is None,
                    reason="needs the CUDA build and the toolkit's NCCL")
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
    if CUDA_BUILD:
        assert "/nonexistent/dir/libnccl.so.2" in lines[2]
        assert "No such file" in lines[2]
    else:
        assert lines[2] == NO_CUDA
    assert len(lines) == 6
    assert all(line.startswith("RuntimeError") for line in lines[3:])
    if CUDA_BUILD:
        assert "NCCL is not available" in lines[3]
        assert "/nonexistent/dir" in lines[5]


@pytest.mark.skipif(not CUDA_BUILD, reason="the CUDA build loads NCCL")
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


@pytest.mark.skipif(not CUDA_BUILD, reason="the CUDA build reads them")
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


@pytest.mark.skipif(not CUDA_BUILD, reason="the CUDA build loads NCCL")
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


def test_load_with_paths_keeps_what_was_loaded():
    before = _C._nccl_version()
    assert _C._nccl_load(["/nonexistent/libnccl.so.2"]) == \
        _C._nccl_load_error()
    assert _C._nccl_version() == before


# -- the communicator's arguments ---------------------------------------

UID = bytes(UID_BYTES)


@pytest.mark.skipif(not CUDA_BUILD, reason="the CUDA build checks them")
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


@pytest.mark.skipif(CUDA_BUILD, reason="the CPU-only flavour")
def test_cpu_only_flavour_refuses():
    assert _C._nccl_version() is None
    assert _C._nccl_load_error() == NO_CUDA
    assert _C._nccl_load(["libnccl.so.2"]) == NO_CUDA
    assert not _nccl.is_nccl_available()
    for f in (_C._nccl_unique_id, lambda: _C.NcclComm(UID, 1, 0, 0),
              lambda: _C.NcclComm(), lambda: _nccl.NcclBackend({}, 0, 1)):
        with pytest.raises(RuntimeError, match=NO_CUDA):
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


class DictStore:
    """A one-process stand-in for a torch Store."""

    def __init__(self):
        self.d = {}

    def set(self, key, value):
        self.d[key] = bytes(value)

    def get(self, key):
        return self.d[key]


@pytest.mark.cuda
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
@pytest.mark.skipif(pygpu.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_ranks(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", TWO_RANKS, str(r),
                               str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "ok", err
