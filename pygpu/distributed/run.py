"""Launcher, torchrun's subset:

    python -m pygpu.distributed.run --nproc_per_node N [--nnodes 1
        --node_rank 0 --master_addr A --master_port P] script.py args...
    pygpu-run ... (the same)

Starts N processes of this node with the environment torchrun sets
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,
ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT: a free port when
not given, OMP_NUM_THREADS=1 when unset), each under its own
`mpiexec -n 1` when mpi4py and an mpiexec are installed (so that the MPI
backend can connect them), as plain processes otherwise.  SIGINT and
SIGTERM are passed on to the children.  When a process fails the others
are stopped and the launcher exits non-zero, naming the failed rank and
its exit code.
"""
import argparse
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

__all__ = ["main", "find_mpiexec"]

_GRACE_S = 5.0


def find_mpiexec():
    """The mpiexec next to this Python (the mpich wheel installs it in the
    environment's bin/), else the one on PATH, else None."""
    for d in (os.path.dirname(sys.executable),
              os.path.join(sys.prefix, "bin")):
        for name in ("mpiexec.hydra", "mpiexec"):
            path = os.path.join(d, name)
            if os.access(path, os.X_OK):
                return path
    return shutil.which("mpiexec")


def _free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("localhost",) else "127.0.0.1", 0))
        return s.getsockname()[1]


def _parser():
    p = argparse.ArgumentParser(
        prog="pygpu-run",
        description="Start a distributed pygpu script, one process per "
                    "rank (torchrun's options).")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int,
                   default=1, help="processes on this node")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node_rank", "--node-rank", type=int, default=0)
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    p.add_argument("--master_port", "--master-port", type=int, default=None,
                   help="rank 0's store port (default: a free port; give "
                        "one with several nodes)")
    p.add_argument("--standalone", action="store_true",
                   help="one node on this machine (the defaults)")
    p.add_argument("--no_mpiexec", "--no-mpiexec", action="store_true",
                   help="plain processes even when MPI is installed")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script argument as a module (python -m)")
    p.add_argument("--no_python", "--no-python", action="store_true",
                   help="run the script argument as a program")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _command(args, mpiexec):
    if args.no_python:
        cmd = [args.script]
    elif args.module:
        cmd = [sys.executable, "-u", "-m", args.script]
    else:
        cmd = [sys.executable, "-u", args.script]
    cmd += args.script_args
    if mpiexec:
        cmd = [mpiexec, "-n", "1"] + cmd
    return cmd


def _signal_all(procs, sig):
    """sig to the process group of every child still running."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass


def _stop(procs, sig=signal.SIGTERM):
    """sig to every running child's process group; SIGKILL after a grace
    period to the ones still running."""
    _signal_all(procs, sig)
    deadline = time.monotonic() + _GRACE_S
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def main(argv=None):
    args = _parser().parse_args(argv)
    n = args.nproc_per_node
    if n < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        print("pygpu-run: need --nproc_per_node >= 1, --nnodes >= 1 and "
              "0 <= --node_rank < --nnodes", file=sys.stderr)
        return 2
    if args.master_port is None:
        if args.nnodes > 1:
            print("pygpu-run: give --master_port with several nodes",
                  file=sys.stderr)
            return 2
        args.master_port = _free_port(args.master_addr)
    mpiexec = None
    if not args.no_mpiexec and importlib.util.find_spec("mpi4py"):
        mpiexec = find_mpiexec()
    world = n * args.nnodes
    cmd = _command(args, mpiexec)
    procs, ranks = [], []
    received = []

    def forward(signum, _frame):
        received.append(signum)
        _signal_all(procs, signum)

    # installed before the children start, so that none can see a
    # launcher without them
    old = {s: signal.signal(s, forward) for s in
           (signal.SIGINT, signal.SIGTERM)}
    base = dict(os.environ)
    base.setdefault("OMP_NUM_THREADS", "1")
    for local in range(n):
        rank = args.node_rank * n + local
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(n),
                   GROUP_RANK=str(args.node_rank), GROUP_WORLD_SIZE=str(
                       args.nnodes), ROLE_RANK=str(rank),
                   ROLE_WORLD_SIZE=str(world), ROLE_NAME="default",
                   MASTER_ADDR=args.master_addr,
                   MASTER_PORT=str(args.master_port),
                   TORCHELASTIC_RESTART_COUNT="0",
                   TORCHELASTIC_MAX_RESTARTS="0")
        procs.append(subprocess.Popen(cmd, env=env, start_new_session=True))
        ranks.append(rank)
    if received:  # a signal came while starting them: pass it on to all
        forward(received[0], None)
    try:
        return _watch(procs, ranks, received)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _watch(procs, ranks, received):
    while True:
        running = False
        for p, rank in zip(procs, ranks):
            code = p.poll()
            if code is None:
                running = True
            elif code != 0:
                if received:
                    _stop(procs)
                    return 128 + received[0]
                _stop(procs)
                what = (f"was killed by signal {-code}" if code < 0
                        else f"exited with code {code}")
                print(f"pygpu-run: rank {rank} (pid {p.pid}) {what}; "
                      f"stopped the other ranks", file=sys.stderr,
                      flush=True)
                return code if code > 0 else 128 - code
        if not running:
            return 128 + received[0] if received else 0
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
