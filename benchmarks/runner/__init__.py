"""python -m benchmarks: pygpu against whichever peers import (torch,
cupy, NumPy), in one process (with --isolate on the CPU: a process per
library, isolate.py), on one device (a GPU when pygpu sees one).

Each suite is a module here with NAME, a docstring and run(bench); see
core.py for how a case is checked and timed, and cpuload.py for the wait
between libraries on the CPU and the other load recorded with each case.
--threads 1,default runs the suites under each thread setting in turn
(threads.py).  results.md opens with the goals (goals.py): pygpu's time
over torch's in each row against its goal.  Results go to
DIR/results.json (every figure and ratio, with the run's provenance),
DIR/results.md (a table per suite) and DIR/*.png (with matplotlib:
pip install ".[bench]"); DIR is --out, or the source tree's
benchmarks/results/<date>_<device-kind>/ with --save, else a new
temporary folder.
"""
import argparse
import datetime
import os
import sys
import tempfile
import time

from . import (allocator, bandwidth, latency, linear, matmul, model,
               transfer)
from . import dataloader
from . import checkpoint, layers, ops
from . import threads as threads_

SUITES = {m.NAME: m for m in (latency, matmul, bandwidth, linear, model,
                              transfer, allocator, dataloader, ops,
                              layers, checkpoint)}
RESULTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "results")


def _doc(mod):
    return " ".join(mod.__doc__.split("\n\n")[0].split())


def _sizes(text):
    """'1024,2^20,2**24' -> [1024, 1048576, 16777216]."""
    out = []
    for v in text.split(","):
        base, _, exp = v.strip().replace("**", "^").partition("^")
        try:
            n = int(base) ** int(exp) if exp else int(base)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--sizes wants comma-separated integers (2^20 allowed), "
                f"not {text!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"--sizes: {n} is not >= 1")
        out.append(n)
    return out


def _pause(text):
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise argparse.ArgumentTypeError(
            f"--pause wants 'auto' or seconds >= 0, not {text!r}")
    return v


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="pygpu against torch, cupy and NumPy, in one run: each "
        "result checked against NumPy first, then timed (medians of "
        "interleaved rounds; CUDA events on a GPU, inputs rotated beyond "
        "the L2 cache).")
    ap.add_argument("--quick", action="store_true",
                    help="fewer sizes and repetitions (a few minutes on a "
                    "2-core CPU)")
    ap.add_argument("--out", metavar="DIR",
                    help="where results go (default: a new temporary "
                    "folder, printed)")
    ap.add_argument("--save", action="store_true",
                    help="write into the source tree's "
                    "benchmarks/results/<date>_<device-kind>/ (for results "
                    "to commit)")
    ap.add_argument("--suite", action="append", choices=list(SUITES),
                    metavar="NAME", help="run this suite (repeatable; "
                    "default all); see --list")
    ap.add_argument("--list", action="store_true",
                    help="list the suites and exit")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"],
                    default="auto", help="default: cuda when pygpu sees a "
                    "GPU, else cpu")
    ap.add_argument("--sizes", type=_sizes, metavar="N,N,...",
                    help="replace the size lists of matmul (n), bandwidth "
                    "(elements), transfer (bytes) and allocator (elements)")
    ap.add_argument("--reps", type=int, metavar="N",
                    help="timed batches per library and case (default 12 "
                    "with --quick, else 30; fewer when a case would run "
                    "long)")
    ap.add_argument("--threads", type=threads_.parse, metavar="N,...",
                    help="CPU threads for pygpu and torch (set_num_threads) "
                    "and NumPy's BLAS (threadpoolctl; a single N also sets "
                    "the *_NUM_THREADS variables before NumPy loads); a "
                    "list such as 1,default runs every suite under each "
                    "setting in turn ('default': each library's own), "
                    "rows told apart by their 'threads' field; default: "
                    "each library's own")
    ap.add_argument("--pause", type=_pause, default="auto", metavar="S",
                    help="CPU: what to wait before each library's turn for "
                    "the idle worker threads of the one before to sleep: "
                    "'auto' (default: until this process uses no CPU over "
                    "20 ms) or a fixed number of seconds")
    ap.add_argument("--isolate", action="store_true",
                    help="CPU: each library in a process of its own, the "
                    "libraries taking turns over rounds (runner/isolate.py)"
                    "; default: all in this process, each timed alone")
    ap.add_argument("--only", metavar="LIB", help=argparse.SUPPRESS)
    ap.add_argument("--render", metavar="DIR",
                    help="only rewrite DIR/results.md and the plots from "
                    "DIR/results.json")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    from . import output
    if args.list:
        for name, mod in SUITES.items():
            print(f"{name:10s} {_doc(mod)}")
        return 0
    if args.render:
        output.render(args.render)
        return 0
    import pygpu
    from .core import Bench, torch

    device = args.device
    if device == "auto":
        device = "cuda" if pygpu.cuda.is_available() else "cpu"
    if device == "cuda" and not pygpu.cuda.is_available():
        print("--device cuda: " + str(pygpu._C._cuda_unavailable_reason()),
              file=sys.stderr)
        return 2
    settings = args.threads or ["default"]
    names = args.suite or list(SUITES)
    if args.isolate and device != "cpu":
        print("--isolate is for the CPU", file=sys.stderr)
        return 2
    bench = Bench(device, quick=args.quick, sizes=args.sizes,
                  reps=args.reps, pause=args.pause)
    bench.thread_settings = {}
    bench.only = args.only
    bench.isolated = args.isolate
    kind = output.device_kind(device)
    stem = f"{datetime.date.today().isoformat()}_{kind}"
    if args.out:
        out = args.out
    elif args.save:
        out = os.path.join(RESULTS, stem)
    else:
        out = tempfile.mkdtemp(prefix=f"pygpu-bench-{stem}-")
    bench.say(f"device {output.device_name(device)}; peers: "
              f"{', '.join(bench.peers) or 'none'}; suites: "
              f"{', '.join(names)}; results to {out}")
    saved = pygpu.is_grad_enabled(), torch and torch.is_grad_enabled()
    pygpu.set_grad_enabled(False)  # inference timings: no graphs
    if torch is not None:
        torch.set_grad_enabled(False)
    t0 = time.perf_counter()
    done = []
    try:
        if args.isolate:
            from . import isolate
            isolate.merge(bench, isolate.run_children(
                bench, sys.argv[1:] if argv is None else argv, settings,
                ["pygpu"] + bench.peers, bench.say))
            settings, done = [], names
        for label in settings:
            with threads_.setting(label) as counts:
                bench.threads = label
                bench.thread_settings[label] = counts
                if len(settings) > 1:
                    bench.say(f"threads {label}: " + ", ".join(
                        f"{k} {v}" for k, v in counts.items() if v))
                for name in names:
                    bench.suite = name
                    SUITES[name].run(bench)
                    _stamp(bench)
                    if name not in done:
                        done.append(name)
                    # What is measured so far, in case a later suite is
                    # cut off.
                    output.write_json(out, bench, output.meta(
                        bench, done, time.perf_counter() - t0, argv),
                        {n: _doc(SUITES[n]) for n in done})
    finally:
        pygpu.set_grad_enabled(saved[0])
        if torch is not None:
            torch.set_grad_enabled(saved[1])
    wall = time.perf_counter() - t0
    meta = output.meta(bench, names, wall, argv)
    files = output.write(out, bench, meta, {n: _doc(SUITES[n])
                                            for n in names})
    bench.say(f"done in {wall:.1f} s; wrote {', '.join(files)}")
    if bench.refused:
        bench.say(f"{len(bench.refused)} implementation(s) refused or "
                  "failed (see results.md)")
        return 1
    return 0


def _stamp(bench):
    """Put the thread setting on what a suite recorded without it."""
    for rec in (bench.rows, bench.ratios, bench.skipped, bench.refused):
        for r in rec:
            r.setdefault("threads", bench.threads)
