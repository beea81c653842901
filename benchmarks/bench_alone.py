"""The CPU cases of bench_ops.py with each library alone in its process.

  python benchmarks/bench_alone.py [--rounds R] [--json PATH] [--before DIR]
                                   [--quick]

In one process, the libraries' thread pools share the cores: pygpu's,
torch's OpenMP threads and NumPy's BLAS threads each poll for work after
a call, and on a 2-core machine the one that runs next can lose its
second core to them (bench_ops.py sleeps between batches against that,
but the kernel may still place two threads on one core).  Here every
(library, size) is timed in a fresh child process, in loops of one op,
and the libraries take turns for R rounds, so that drifts of the machine
hit all alike.  A round's figure is the median time per call of
batches of calls (64K elements' worth per batch); the figure reported is
the median of the rounds'.  --before DIR times an earlier build (the
pygpu package copied to DIR/pygpu) as a library of its own.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (1 << 10, 1 << 20, 1 << 24)
QUICK = (1 << 10, 1 << 16)
CASES = ("relu", "relu_", "add", "sum", "copy_")


def child(lib, n, threads):
    """Times every case for one library and size; prints a JSON dict."""
    import numpy as np
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    if lib == "numpy":
        x, y, d = a.copy(), b, np.empty_like(a)
        fns = {"relu": lambda: np.maximum(x, 0),
               "relu_": lambda: np.maximum(x, 0, out=x),
               "add": lambda: np.add(x, y), "sum": lambda: np.sum(x),
               "copy_": lambda: np.copyto(d, x)}
    else:
        if lib == "torch":
            import torch as m
            m.set_grad_enabled(False)
        else:
            import pygpu as m
        m.set_num_threads(threads)
        # each library's own memory, as its users get it
        x, y, d = m.tensor(a), m.tensor(b), m.tensor(a)
        fns = {"relu": lambda: m.relu(x), "relu_": lambda: m.relu_(x),
               "add": lambda: x + y, "sum": lambda: m.sum(x),
               "copy_": lambda: d.copy_(x)}
    from timing import median_call_ns
    inner = max(1, (1 << 16) // n)            # calls per timed batch
    reps = max(31, min(301, (1 << 26) // n))  # batches
    out = {}
    for case, fn in fns.items():
        out[case] = median_call_ns(fn, inner, reps,
                                   warm=max(3, reps // 10) * inner) / 1e3
    print(json.dumps(out))


def run_child(lib, n, threads, before):
    env = dict(os.environ)
    # the pygpu this process imports (or the earlier build), and provenance
    path = [before] if lib == "before" else [ROOT] if in_tree() else []
    path.append(HERE)
    env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")])
    impl = "pygpu" if lib == "before" else lib
    r = subprocess.run([sys.executable, __file__, "--child", impl, str(n),
                        str(threads)], capture_output=True, text=True,
                       env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{lib} n={n} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def in_tree():
    """Whether the pygpu imported here is the one in this source tree."""
    import pygpu
    return os.path.dirname(os.path.dirname(os.path.abspath(
        pygpu.__file__))) == ROOT


def have(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--before", metavar="DIR")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        lib, n, threads = args.child
        child(lib, int(n), int(threads))
        return
    libs = ["pygpu"] + (["before"] if args.before else []) + \
        [lib for lib in ("torch", "numpy") if have(lib)]
    sizes = QUICK if args.quick else SIZES
    times = {}  # (lib, n, case) -> per-round medians
    for rnd in range(args.rounds):
        for n in sizes:
            # each library takes each place in turn
            for lib in libs[rnd % len(libs):] + libs[:rnd % len(libs)]:
                for case, us in run_child(lib, n, args.threads,
                                          args.before).items():
                    times.setdefault((lib, n, case), []).append(us)
    rows = []
    for n in sizes:
        for case in CASES:
            med = {lib: statistics.median(times[(lib, n, case)])
                   for lib in libs}
            line = f"{case:6s} n={n:<9d}" + "".join(
                f" {lib} {us:10.3f} us" for lib, us in med.items())
            for lib, us in med.items():
                rows.append({"case": f"{case} n={n}", "impl": lib,
                             "value": us, "unit": "us",
                             "rounds": times[(lib, n, case)]})
                if lib != "pygpu":
                    r = med["pygpu"] / us
                    line += f"  pygpu/{lib} {r:.3f}"
                    rows.append({"case": f"{case} n={n}", "impl": "ratio",
                                 "vs": lib, "value": r, "meaning": "time"})
            print(line, flush=True)
    if args.json:
        from provenance import provenance
        meta = provenance()
        meta.update({"threads": args.threads, "rounds": args.rounds,
                     "libraries": libs,
                     "before": args.before and "pygpu build at " +
                     os.path.basename(os.path.normpath(args.before)),
                     "device": "cpu"})
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
