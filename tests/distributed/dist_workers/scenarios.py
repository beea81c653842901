"""Small distributed scenarios, one per first argument; each prints what
the test checks and exits 0 on success.

  rendezvous DIR  file:// then tcp:// then env:// in turn, each with an
                  all_reduce, destroy_process_group between them
  env             prints the launcher's environment as JSON
  exit_early      rank 1 exits (code 0) before an all_reduce; the others
                  must raise within the 5 s timeout and exit 3
  exit_before_group  rank 1 exits before new_group; the others must raise
                  within the 5 s timeout and exit 3
  mismatch        rank 1 claims WORLD_SIZE + 1; every rank must raise
  fail CODE       rank 1 exits with CODE after init
  singleton_big   WORLD_SIZE=2 without a launcher: a clear error
  sleep           waits for SIGTERM, prints it and exits 5
"""
import datetime
import json
import os
import sys
import time

import pygpu as torch
import pygpu.distributed as dist

FIVE = datetime.timedelta(seconds=5)


def say(line):
    """One line to stdout in one write, so that the ranks' lines, which
    share the launcher's stdout, never interleave."""
    os.write(1, (line + "\n").encode())


def check_sum(tag):
    r, n = dist.get_rank(), dist.get_world_size()
    x = torch.full((3,), float(r + 1))
    dist.all_reduce(x)
    assert x.tolist() == [n * (n + 1) / 2] * 3, (tag, x.tolist())
    say(f"{tag} ok rank {r} of {n}")


def rendezvous(directory):
    rank = int(os.environ["RANK"])
    n = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("mpi", init_method=f"file://{directory}/store",
                            rank=rank, world_size=n, timeout=FIVE * 4)
    check_sum("file")
    dist.destroy_process_group()
    port = int(os.environ["MASTER_PORT"])
    dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=n, timeout=FIVE * 4)
    check_sum("tcp")
    # A fresh server for env://: rank 0 picks a port that is free now and
    # the group passes it on (MASTER_PORT + 1 may be anyone's).
    fresh = torch.zeros(1, dtype=torch.float64)
    if rank == 0:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            fresh += s.getsockname()[1]
    dist.all_reduce(fresh)
    dist.destroy_process_group()
    os.environ["MASTER_PORT"] = str(int(fresh.item()))
    dist.init_process_group(init_method="env://", timeout=FIVE * 4)
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    check_sum("env")
    dist.destroy_process_group()
    assert not dist.is_initialized()


def after_rank_1_exits(step):
    """Rank 1 exits after a first all_reduce; the others run step, which
    must raise within the 5 s timeout: they say so and exit 3."""
    dist.init_process_group("mpi", timeout=FIVE)
    check_sum("first")
    if dist.get_rank() == 1:
        sys.exit(0)
    t0 = time.monotonic()
    try:
        step()
    except RuntimeError as e:
        say(f"rank {dist.get_rank()} raised after "
            f"{time.monotonic() - t0:.1f} s: {e}")
        sys.exit(3)
    sys.exit(4)


def main():
    mode = sys.argv[1]
    if mode == "rendezvous":
        rendezvous(sys.argv[2])
    elif mode == "env":
        keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "OMP_NUM_THREADS"]
        say("ENV" + json.dumps({k: os.environ.get(k) for k in keys}))
    elif mode == "exit_early":
        after_rank_1_exits(lambda: check_sum("second"))
    elif mode == "exit_before_group":
        after_rank_1_exits(lambda: dist.new_group([0, 1]))  # a member gone
    elif mode == "mismatch":
        if os.environ["RANK"] == "1":
            os.environ["WORLD_SIZE"] = str(int(os.environ["WORLD_SIZE"]) + 1)
        try:
            dist.init_process_group("mpi", timeout=FIVE)
        except RuntimeError as e:
            say(f"rank {os.environ['RANK']} raised: {e}")
            sys.exit(0)
        sys.exit(4)
    elif mode == "fail":
        dist.init_process_group("mpi", timeout=FIVE * 6)
        if dist.get_rank() == 1:
            sys.exit(int(sys.argv[2]))
        time.sleep(30)  # stopped by the launcher long before
    elif mode == "sleep":
        import signal

        def stop(signum, _frame):
            say(f"rank {os.environ['RANK']} got signal {signum}")
            sys.exit(5)
        signal.signal(signal.SIGTERM, stop)
        say("ready")
        time.sleep(30)
        sys.exit(4)
    elif mode == "singleton_big":
        try:
            dist.init_process_group("mpi", rank=0, world_size=2,
                                    store=dist.FileStore(sys.argv[2], 2),
                                    timeout=FIVE)
        except RuntimeError as e:
            say(f"raised: {e}")
            sys.exit(0)
        sys.exit(4)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
