"""How long the libraries' idle worker threads poll after a call, and how
long python -m benchmarks must pause between libraries on this CPU.

  python benchmarks/bench_settle.py [--n 256] [--repeats 15] [--json PATH]

1. Idle polling: after a few n x n float32 matmuls in one library (pygpu's
   runs NumPy's BLAS; a relu of 2^20 floats shows pygpu's and torch's own
   pools), this
   process's CPU time is sampled every 5 ms for a second; the figure is
   when it stopped growing faster than 5% of a core (its worker threads
   asleep), and runner.cpuload.settle()'s wait after the same calls.
2. The pause: a batch of n x n matmuls in library B (its threads awake),
   then a few in library A, a pause of P seconds, and B's batch again,
   timed; median and minimum over the repeats, for each P, A and B
   (P "auto": runner.cpuload.settle(), the runner's wait).  B's time after
   its own calls is the figure with nothing in the way; once P is long
   enough for A's threads to sleep, B after A comes down to it.
The machine's other load over the run is printed with the figures.
"""
import argparse
import json
import os
import statistics
import time

import numpy as np

import pygpu
from runner.cpuload import LoadMeter, settle

try:
    import torch
except ImportError:  # optional peer
    torch = None

PAUSES = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, "auto")
SAMPLE_S = 0.005


def matmuls(n):
    """{lib: one n x n float32 matmul} for the libraries present."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    fns = {"numpy": lambda: a @ a}
    p = pygpu.tensor(a)
    fns["pygpu"] = lambda: p @ p
    if torch is not None:
        torch.set_grad_enabled(False)
        t = torch.tensor(a)
        fns["torch"] = lambda: t @ t
    return fns


def idle_poll_s(fn, calls=5, span=1.0):
    """Seconds after `calls` calls of fn until this process's CPU time
    stops growing faster than 5% of one core (sampled each SAMPLE_S)."""
    settle()
    for _ in range(calls):
        fn()
    t0 = time.perf_counter()
    last_busy = 0.0
    c_prev, w_prev = time.process_time(), t0
    while time.perf_counter() - t0 < span:
        time.sleep(SAMPLE_S)
        c, w = time.process_time(), time.perf_counter()
        if c - c_prev > 0.05 * (w - w_prev):
            last_busy = w - t0
        c_prev, w_prev = c, w
    return last_busy


def relus(n=1 << 20):
    """{lib relu: relu of n float32}: pygpu's and torch's own pools (a
    matmul in pygpu runs NumPy's BLAS)."""
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    p = pygpu.tensor(a)
    fns = {"pygpu relu": lambda: pygpu.relu(p)}
    if torch is not None:
        t = torch.tensor(a)
        fns["torch relu"] = lambda: torch.relu(t)
    return fns


def batch_s(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def after(fns, victim, other, pause, repeats, calls):
    """Seconds per call of victim's batch right after other's calls and a
    pause: (median, minimum) over the repeats (the minimum is the figure
    least touched by other processes on a loaded machine)."""
    out = []
    for _ in range(repeats):
        settle()
        batch_s(fns[victim], calls)      # its own threads awake
        for _ in range(3):
            fns[other]()
        if pause == "auto":
            settle()
        elif pause:
            time.sleep(pause)
        out.append(batch_s(fns[victim], calls))
    return statistics.median(out), min(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--calls", type=int, default=5,
                    help="matmuls in a timed batch")
    ap.add_argument("--victims", help="time only these libraries' "
                    "matmuls (comma-separated; default all)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    fns = matmuls(args.n)
    for fn in fns.values():
        for _ in range(20):
            fn()
    meter = LoadMeter().start()
    out = {"idle_poll_ms": {}, "settle_ms": {}, "after": []}
    print(f"{args.n}x{args.n} float32 matmul (pygpu's: NumPy's BLAS), "
          f"relu of 2^20 float32; threads: pygpu "
          f"{pygpu.get_num_threads()}, torch "
          f"{torch.get_num_threads() if torch else '-'}; cores "
          f"{os.cpu_count()}")
    for lib, fn in {**fns, **relus()}.items():
        polls = [idle_poll_s(fn) for _ in range(3)]
        waits = []
        for _ in range(5):
            settle()
            for _ in range(5):
                fn()
            waits.append(settle()[0])
        out["idle_poll_ms"][lib] = statistics.median(polls) * 1e3
        out["settle_ms"][lib] = statistics.median(waits) * 1e3
        print(f"idle polling after {lib:10s}: "
              f"{out['idle_poll_ms'][lib]:6.1f} ms (runs "
              f"{', '.join(f'{p * 1e3:.0f}' for p in polls)}); settle() "
              f"waits {out['settle_ms'][lib]:6.1f} ms", flush=True)
    print("ms per call of B's matmul after A's and a pause, median "
          "(minimum) over the repeats, and the other load meanwhile:")
    victims = args.victims.split(",") if args.victims else list(fns)
    for victim in victims:
        for other in fns:
            line = f"{victim:5s} after {other:5s}:"
            pair = LoadMeter().start()
            for pause in PAUSES:
                med, low = after(fns, victim, other, pause, args.repeats,
                                 args.calls)
                out["after"].append({"victim": victim, "other": other,
                                     "pause_s": pause, "ms": med * 1e3,
                                     "min_ms": low * 1e3})
                when = "auto" if pause == "auto" else f"{pause:g}s"
                line += f" {when} {med * 1e3:.3f} ({low * 1e3:.3f})"
            load = pair.stop()
            print(line + f"; load {load.get('load_cores')}", flush=True)
    out["load"] = meter.stop()
    print(f"other load during the run: {out['load']}")
    if args.json:
        from provenance import provenance
        with open(args.json, "w") as f:
            json.dump({"meta": provenance(), **out}, f, indent=1)


if __name__ == "__main__":
    main()
