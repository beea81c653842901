"""rand/randn on the CPU against torch's, one thread each.  Figures are
medians over interleaved repetitions (each the mean of an inner loop).

  python benchmarks/bench_random.py [--reps N]
"""
import argparse
import statistics
import time

import pygpu

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None

CASES = [("randn", 1024), ("randn", 65536), ("randn", 1 << 24),
         ("rand", 1024)]


def per_call(fn, n, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn(n)
    return (time.perf_counter() - t0) / inner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=41)
    args = ap.parse_args()
    pygpu.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"{'case':<16}{'pygpu us':>12}{'torch us':>12}{'ratio':>8}")
    for name, n in CASES:
        fns = [getattr(pygpu, name)]
        if torch is not None:
            fns.append(getattr(torch, name))
        inner = max(1, 2_000_000 // (n + 2000))
        reps = args.reps if n < 1 << 24 else max(5, args.reps // 4)
        times = [[] for _ in fns]
        for fn in fns:
            per_call(fn, n, inner)  # warm up
        for _ in range(reps):
            for t, fn in zip(times, fns):
                t.append(per_call(fn, n, inner))
        med = [statistics.median(t) * 1e6 for t in times]
        ratio = f"{med[0] / med[1]:8.2f}" if len(med) > 1 else ""
        tt = f"{med[1]:12.1f}" if len(med) > 1 else f"{'-':>12}"
        print(f"{name + '(' + str(n) + ')':<16}{med[0]:12.1f}{tt}{ratio}")


if __name__ == "__main__":
    main()
