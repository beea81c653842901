"""all_reduce bandwidth over message sizes, as nccl-tests reports it:

    python -m pygpu.distributed.run --nproc_per_node N \\
        benchmarks/bench_allreduce.py [--max-bytes 64M] [--device cpu]
        [--dtype float32] [--json PATH]

For each size (1 KiB, doubling, up to --max-bytes; default 64 MiB on the
CPU, 1 GiB on CUDA) every round times a few back-to-back all_reduce(SUM)
calls on every rank; a round's time is the slowest rank's (an all_reduce
MAX of the times), and the figure is the median over rounds.
algbw = bytes / time; busbw = algbw * 2 (n - 1) / n, the bytes each rank
moves in a ring algorithm, comparable across rank counts.  The first
call at each size is checked against the expected sum.
"""
import argparse
import json
import statistics
import sys
import time

import pygpu
import pygpu.distributed as dist

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text):
    text = text.strip().upper().rstrip("IB")
    if text and text[-1] in _UNITS:
        return int(float(text[:-1]) * _UNITS[text[-1]])
    return int(text)


def human(n):
    for unit in ("GiB", "MiB", "KiB"):
        if n >= _UNITS[unit[0]]:
            return f"{n / _UNITS[unit[0]]:g} {unit}"
    return f"{n} B"


def sync(device):
    if device.startswith("cuda"):
        pygpu.cuda.synchronize()


def measure(nbytes, dtype, device, rounds, budget_s):
    world = dist.get_world_size()
    itemsize = pygpu.tensor([], dtype=dtype).element_size()
    n = max(1, nbytes // itemsize)
    x = pygpu.ones(n, dtype=dtype, device=device)
    dist.all_reduce(x)  # warm-up and check
    sync(device)
    first = float(x[0].item()), float(x[-1].item())
    if first != (world, world):
        raise SystemExit(f"all_reduce gave {first}, expected {world}")
    # calls per round: enough for about 2 ms, from a timed probe
    t0 = time.perf_counter()
    dist.all_reduce(x)
    sync(device)
    probe = pygpu.tensor([time.perf_counter() - t0], dtype=pygpu.float64)
    dist.all_reduce(probe, op=dist.ReduceOp.MAX)
    calls = max(1, min(50, int(2e-3 / max(probe.item(), 1e-7))))
    rounds = max(3, min(rounds, int(budget_s / max(probe.item() * calls,
                                                   1e-7))))
    times = []
    for _ in range(rounds):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(x)
        sync(device)
        t = pygpu.tensor([(time.perf_counter() - t0) / calls],
                         dtype=pygpu.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    sec = statistics.median(times)
    nb = n * itemsize
    algbw = nb / sec / 1e9
    busbw = algbw * 2 * (world - 1) / world
    return {"bytes": nb, "time_us": sec * 1e6, "algbw_GBps": algbw,
            "busbw_GBps": busbw, "rounds": rounds, "calls": calls}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--min-bytes", default="1K")
    ap.add_argument("--max-bytes", default=None,
                    help="largest message (default 64M on the CPU, 1G on "
                         "CUDA)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--budget", type=float, default=2.0,
                    help="seconds at most per size, about")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.device.startswith("cuda"):
        pygpu.cuda.set_device(int(__import__("os").environ.get(
            "LOCAL_RANK", "0")))
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = getattr(pygpu, args.dtype)
    hi = parse_bytes(args.max_bytes or (
        "1G" if args.device.startswith("cuda") else "64M"))
    size, rows = parse_bytes(args.min_bytes), []
    if rank == 0:
        print(f"all_reduce(SUM) {args.dtype} on {args.device}, {world} "
              f"processes, backend {dist.get_backend()}")
        print(f"{'size':>10} {'time (us)':>12} {'algbw GB/s':>11} "
              f"{'busbw GB/s':>11}")
    while size <= hi:
        row = measure(size, dtype, args.device, args.rounds, args.budget)
        rows.append(row)
        if rank == 0:
            print(f"{human(row['bytes']):>10} {row['time_us']:12.1f} "
                  f"{row['algbw_GBps']:11.3f} {row['busbw_GBps']:11.3f}",
                  flush=True)
        size *= 2
    if rank == 0 and args.json:
        sys.path.insert(0, __import__("os").path.dirname(__file__))
        from provenance import provenance
        with open(args.json, "w") as f:
            json.dump({"meta": provenance(), "world_size": world,
                       "device": args.device, "dtype": args.dtype,
                       "backend": dist.get_backend(), "rows": rows}, f,
                      indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
