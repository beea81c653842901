"""Caching allocator benchmark.

1. Host nanoseconds per cached 1 MiB allocate+free pair, timed in C on the
   allocator core (pygpu._C._bench_allocator): on a host-memory Allocator
   and, with CUDA, on the allocator of cuda:0.  Goal: < 500 ns.
2. With CUDA and torch and/or cupy importable: the median host time of
   pygpu.empty(n, device="cuda") against torch.empty and cupy.empty for a
   few sizes (the tensor dies at once, so each call is one allocation and
   one free through each library's caching allocator).  Goal: pygpu at most
   0.5x torch.

    python benchmarks/bench_allocator.py [--json PATH] [--quick]
"""
import argparse
import json
import os
import statistics
import sys

try:
    import pygpu
except ImportError:  # run from a checkout that was built but not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    import pygpu
from pygpu import _C  # noqa: E402
from provenance import provenance  # noqa: E402
from timing import median_call_ns  # noqa: E402

MiB = 1 << 20
SIZES = [1, 1024, 256 * 1024, MiB, 16 * MiB]  # float32 elements


def core_pair_ns(allocator, nbytes, iters, repeats):
    """Median over `repeats` runs of the C-timed malloc+free pair."""
    return statistics.median(
        _C._bench_allocator(allocator, nbytes, iters) for _ in range(repeats))


def empty_contenders(n):
    """name -> zero-argument callable making (and dropping) an n-element
    float32 CUDA tensor, for every library that can; validated first."""
    out = {}
    before = pygpu.cuda.memory_allocated()
    t = pygpu.empty(n, device="cuda")
    assert t.shape == (n,) and t.device.type == "cuda"
    assert pygpu.cuda.memory_allocated() - before >= 4 * n
    del t
    out["pygpu"] = lambda: pygpu.empty(n, device="cuda")
    try:
        import torch
        if torch.cuda.is_available():
            torch.empty(n, device="cuda")
            out["torch"] = lambda: torch.empty(n, device="cuda")
    except ImportError:
        pass
    try:
        import cupy
        cupy.empty(n, dtype=cupy.float32)
        out["cupy"] = lambda: cupy.empty(n, dtype=cupy.float32)
    except Exception:  # not installed, or no usable device for it
        pass
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH", help="also write the results")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = p.parse_args(argv)
    iters, repeats, calls = (20000, 5, 2000) if args.quick else \
        (200000, 11, 10000)

    results = {"meta": provenance(), "core_pair_ns": {},
               "empty_ns": {}}
    print("cached 1 MiB allocate+free pair (timed in C, median of "
          f"{repeats} x {iters}):")
    host = _C.Allocator(1 << 34)
    ns = core_pair_ns(host, MiB, iters, repeats)
    results["core_pair_ns"]["host"] = ns
    print(f"  host allocator    {ns:8.1f} ns   (goal < 500 ns)")

    if not pygpu.cuda.is_available():
        print("CUDA not available: skipping the CUDA allocator and "
              "pygpu.empty vs torch/cupy")
    else:
        ns = core_pair_ns(_C._cuda_allocator(0), MiB, iters, repeats)
        results["core_pair_ns"]["cuda:0"] = ns
        print(f"  cuda:0 allocator  {ns:8.1f} ns   (goal < 500 ns)")
        results["device"] = pygpu.cuda.get_device_name(0)
        print(f"\nhost time of empty(n, device='cuda'), float32, median of "
              f"{repeats} x {calls} calls, on {results['device']}:")
        names = None
        for n in SIZES:
            contenders = empty_contenders(n)
            if names is None:
                names = list(contenders)
                head = "".join(f"{k:>12}" for k in names)
                print(f"{'elements':>12}{head}" +
                      ("   pygpu/torch" if "torch" in names else ""))
            row = {k: median_call_ns(f, calls, repeats)
                   for k, f in contenders.items()}
            results["empty_ns"][str(n)] = row
            cells = "".join(f"{row[k]:10.0f}ns" for k in names)
            ratio = f"   {row['pygpu'] / row['torch']:10.2f}x" \
                if "torch" in row else ""
            print(f"{n:>12}{cells}{ratio}")
        if "torch" in (names or []):
            print("(goal: pygpu/torch <= 0.5)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
