"""pygpu.distributed: stores in this process; collectives, rendezvous and
failures in worlds of 2 and 4 processes started by the launcher (each
under a hard timeout), checked against NumPy by the workers in
tests/distributed/dist_workers/."""
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import pygpu.distributed as dist
from pygpu.distributed.run import find_mpiexec

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "dist_workers")
sys.path.insert(0, WORKERS)
from collectives import CHECKS  # noqa: E402

HAS_MPI = importlib.util.find_spec("mpi4py") is not None and \
    find_mpiexec() is not None
needs_mpi = pytest.mark.skipif(
    not HAS_MPI, reason="mpi4py and an mpiexec are not installed "
                        "(pip install '.[distributed]')")
HARD_TIMEOUT = 60


def launch(nproc, *args, env=None, extra=(), timeout=HARD_TIMEOUT):
    cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node",
           str(nproc), *extra, *args]
    e = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
              "LOCAL_RANK"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=HERE)


def worker(name):
    return os.path.join(WORKERS, name)


# ------------------------------------------------------------ in-process

def test_import_pygpu_does_not_import_mpi4py():
    code = ("import sys, pygpu; import pygpu.distributed as d; "
            "assert pygpu.distributed is d; "
            "assert 'mpi4py' not in sys.modules; "
            "assert not d.is_initialized(); print(d.is_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=HARD_TIMEOUT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_api_before_init():
    assert dist.is_available()
    assert dist.is_mpi_available() == (
        importlib.util.find_spec("mpi4py") is not None)
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="not been initialized"):
        dist.all_reduce(None)
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("gloo-nonexistent")
    assert {op.name for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG,
                               dist.ReduceOp.MAX, dist.ReduceOp.MIN,
                               dist.ReduceOp.PRODUCT)} == \
        {"SUM", "AVG", "MAX", "MIN", "PRODUCT"}


def _store_ops(make_master, make_client):
    master = make_master()
    client = make_client()
    try:
        master.set("a", b"1")
        assert client.get("a") == b"1"
        client.set("s", "text")
        assert master.get("s") == b"text"
        assert client.add("n", 2) == 2
        assert master.add("n", 3) == 5
        assert master.check(["a", "s"]) and not master.check(["a", "zz"])
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="timed out"):
            client.wait(["never"], timeout=0.3)
        assert time.monotonic() - t0 < 3
        threading.Timer(0.2, lambda: master.set("late", b"x")).start()
        assert client.get("late") == b"x"  # waits for it
        assert client.delete_key("a") and not client.check(["a"])
        assert not client.delete_key("a")
    finally:
        client.close()
        master.close()


def test_tcp_store():
    holder = {}

    def master():
        holder["m"] = dist.TCPStore("127.0.0.1", 0, 2, is_master=True,
                                    timeout=5, wait_for_workers=False)
        return holder["m"]

    _store_ops(master, lambda: dist.TCPStore("127.0.0.1", holder["m"].port,
                                             timeout=5))


def test_tcp_store_unreachable():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="could not reach"):
        dist.TCPStore("127.0.0.1", 1, timeout=0.3)
    assert time.monotonic() - t0 < 5


def test_file_store(tmp_path):
    path = str(tmp_path / "store")
    _store_ops(lambda: dist.FileStore(path, 2),
               lambda: dist.FileStore(path, 2))
    assert not os.path.exists(path)  # the second to close removes it


def test_prefix_store(tmp_path):
    base = dist.FileStore(str(tmp_path / "s"), 1)
    p = dist.PrefixStore("pre", base)
    p.set("k", b"v")
    assert base.get("pre/k") == b"v" and p.get("k") == b"v"
    assert p.add("c", 4) == 4
    base.close()


# ------------------------------------------------------------ collectives

@pytest.fixture(scope="module", params=[2, 4])
def world(request, tmp_path_factory):
    if not HAS_MPI:
        pytest.skip("mpi4py and an mpiexec are not installed")
    n = request.param
    out = tmp_path_factory.mktemp(f"world{n}")
    r = launch(n, worker("collectives.py"), env={"DIST_OUT": str(out)})
    results = {}
    for rank in range(n):
        f = out / f"rank{rank}.json"
        if f.exists():
            results[rank] = json.loads(f.read_text())["results"]
    return n, r, results


@needs_mpi
@pytest.mark.parametrize("check", CHECKS)
def test_collective(world, check):
    n, r, results = world
    assert len(results) == n, (r.returncode, r.stdout[-2000:],
                               r.stderr[-4000:])
    bad = {rank: res[check] for rank, res in results.items()
           if res[check] != "ok"}
    assert not bad, "\n".join(f"rank {k}: {v}" for k, v in bad.items())


@needs_mpi
def test_singleton_world_without_launcher():
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    r = subprocess.run([sys.executable, worker("collectives.py")],
                       capture_output=True, text=True, timeout=HARD_TIMEOUT,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert f"{len(CHECKS)} of {len(CHECKS)} checks passed" in r.stdout, \
        r.stderr


@needs_mpi
def test_one_mpiexec_for_the_world():
    """mpiexec -n 2 without any rendezvous: the group is COMM_WORLD."""
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    r = subprocess.run([find_mpiexec(), "-n", "2", sys.executable,
                        worker("collectives.py"), "all_reduce_SUM_float32",
                        "broadcast", "all_gather", "new_group",
                        "recv_any_source"],
                       capture_output=True, text=True, timeout=HARD_TIMEOUT,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("5 of 5 checks passed") == 2, r.stdout + r.stderr


# ------------------------------------------------------------ rendezvous

@needs_mpi
def test_file_tcp_and_env_rendezvous(tmp_path):
    r = launch(2, worker("scenarios.py"), "rendezvous", str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    for tag in ("file", "tcp", "env"):
        for rank in range(2):
            assert f"{tag} ok rank {rank} of 2" in r.stdout, r.stdout
    assert not os.path.exists(tmp_path / "store")


def test_launcher_environment():
    r = launch(2, worker("scenarios.py"), "env",
               extra=["--no_mpiexec", "--master_port", "29555"])
    assert r.returncode == 0, r.stderr
    envs = sorted((json.loads(line[3:]) for line in r.stdout.splitlines()
                   if line.startswith("ENV")), key=lambda e: e["RANK"])
    assert [e["RANK"] for e in envs] == ["0", "1"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    for e in envs:
        assert e["WORLD_SIZE"] == e["LOCAL_WORLD_SIZE"] == "2"
        assert e["ROLE_WORLD_SIZE"] == "2" and e["GROUP_RANK"] == "0"
        assert e["MASTER_ADDR"] == "127.0.0.1"
        assert e["MASTER_PORT"] == "29555"


# ------------------------------------------------------------ failures

@needs_mpi
@pytest.mark.parametrize("mode,what", [("exit_early", "all_reduce"),
                                       ("exit_before_group", "new_group")])
def test_rank_exiting(mode, what):
    """A rank gone before a collective (or before new_group, whose MPI
    creation cannot be interrupted): the others raise within the timeout
    instead of hanging."""
    t0 = time.monotonic()
    r = launch(3, worker("scenarios.py"), mode)
    assert time.monotonic() - t0 < 30
    assert r.returncode == 3, r.stderr[-3000:]
    raised = [line for line in r.stdout.splitlines() if "raised" in line]
    assert len(raised) == 2, r.stdout + r.stderr[-3000:]
    for line in raised:
        assert f"{what} did not complete within the timeout of 5 s" in line
        assert "unusable" in line
    assert "exited with code 3" in r.stderr


@needs_mpi
def test_mismatched_world_size():
    r = launch(2, worker("scenarios.py"), "mismatch")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("mismatched world sizes") == 2, r.stdout


@needs_mpi
def test_singleton_refuses_a_bigger_world(tmp_path):
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    r = subprocess.run([sys.executable, worker("scenarios.py"),
                        "singleton_big", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=HARD_TIMEOUT,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "pygpu.distributed.run --nproc_per_node 2" in r.stdout
    assert "mpiexec -n 2" in r.stdout


@pytest.mark.parametrize("mpiexec", [
    pytest.param(True, marks=needs_mpi), False])
def test_launcher_names_the_failed_rank(mpiexec):
    extra = [] if mpiexec else ["--no_mpiexec"]
    env = {} if mpiexec else {"DIST_BACKEND": ""}
    args = ["fail", "7"] if mpiexec else ["nonexistent-mode"]
    t0 = time.monotonic()
    r = launch(2, worker("scenarios.py"), *args, extra=extra, env=env)
    assert time.monotonic() - t0 < 25
    assert r.returncode != 0
    if mpiexec:
        assert r.returncode == 7
        assert "rank 1" in r.stderr and "exited with code 7" in r.stderr
    else:
        assert "exited with code 1" in r.stderr


def test_launcher_bad_arguments():
    r = launch(0, worker("scenarios.py"), "env")
    assert r.returncode == 2 and "nproc_per_node" in r.stderr


def test_launcher_forwards_sigterm():
    import signal
    cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node",
           "2", "--no_mpiexec", worker("scenarios.py"), "sleep"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        ready = 0
        while ready < 2:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            ready += line.strip() == "ready"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=HARD_TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err
    assert out.count("got signal 15") == 2, out
