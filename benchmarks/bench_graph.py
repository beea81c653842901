"""CUDA graphs: the tutorial's model (PyTorch quickstart's
Sequential(Flatten(), Linear(784, 512), ReLU(), Linear(512, 512), ReLU(),
Linear(512, 10))) forward at batch 32, float32, timed side by side in one
run on one GPU: pygpu eager, pygpu graph replay, torch eager and torch
graph replay (torch.cuda.CUDAGraph) of the same model with the same
weights.  Every impl is validated against NumPy float64 first.  Times come
from CUDA events around `inner` back-to-back calls (so a launch-bound
forward shows its launch cost), medians of interleaved rounds.

  python benchmarks/bench_graph.py [--json PATH] [--quick]

Prints the ratios pygpu graph / torch eager and pygpu graph / torch graph
(the goal: at most 0.3 and at most 1.0).  Without a GPU it says so and
exits 0; torch rows appear when torch imports and sees the GPU.
"""
import statistics
import sys

import numpy as np

import pygpu
from pygpu import nn
from bench_ops import HAS_CUDA, TORCH_CUDA, check, report, rows, save, \
    script_args, torch

BATCH = 32
CASE = f"tutorial mlp forward b={BATCH}"
GOALS = (("pygpu-graph", "torch", 0.3), ("pygpu-graph", "torch-graph", 1.0))


def pygpu_model():
    pygpu.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10)).to("cuda")


def torch_model(weights):
    tm = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512),
                             torch.nn.ReLU(), torch.nn.Linear(512, 512),
                             torch.nn.ReLU(),
                             torch.nn.Linear(512, 10)).to("cuda")
    with torch.no_grad():
        for p, v in zip(tm.parameters(), weights):
            p.copy_(torch.from_numpy(v))
    return tm


def reference(weights, x):
    h = x.astype(np.float64)
    for i in range(0, len(weights), 2):
        h = h @ weights[i].T.astype(np.float64) + weights[i + 1]
        if i + 2 < len(weights):
            h = np.maximum(h, 0.0)
    return h


def pygpu_graph(model, x):
    """Warm up on a side stream, capture; (graph, static output)."""
    side = pygpu.cuda.Stream()
    with pygpu.cuda.stream(side):
        for _ in range(3):
            model(x)
    pygpu.cuda.synchronize()
    g = pygpu.cuda.CUDAGraph()
    with pygpu.cuda.graph(g):
        y = model(x)
    return g, y


def torch_graph(model, x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    return g, y


def event_us(fn, event_type, inner):
    """Microseconds per fn() between two CUDA events of the library's own
    around `inner` calls on its current stream."""
    start = event_type(enable_timing=True)
    end = event_type(enable_timing=True)
    start.record()
    for _ in range(inner):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / inner


def compare_events(impls, inner, reps):
    """Median microseconds per call of each {name: (fn, event type)}, in
    interleaved rounds, each starting one place further along."""
    for fn, ev in impls.values():  # warm: caches, clocks, lazy work
        event_us(fn, ev, inner)
    times = {name: [] for name in impls}
    names = list(impls)
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            fn, ev = impls[name]
            times[name].append(event_us(fn, ev, inner))
    return {name: statistics.median(v) for name, v in times.items()}


def ratio(num, den, values):
    r = values[num] / values[den]
    print(f"{'':10s} {CASE:28s} {num}/{den} time: {r:.3f}")
    rows.append({"group": "cuda", "case": CASE, "impl": "ratio", "of": num,
                 "vs": den, "value": r, "meaning": "time"})
    return r


def bench(quick):
    model = pygpu_model()
    weights = [p.detach().cpu().numpy() for p in model.parameters()]
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((BATCH, 784)).astype(np.float32)
    x = pygpu.tensor(xs, device="cuda")
    g, gy = pygpu_graph(model, x)
    impls = {"pygpu": (lambda: model(x), pygpu.cuda.Event),
             "pygpu-graph": (g.replay, pygpu.cuda.Event)}
    if TORCH_CUDA:
        torch.backends.cuda.matmul.allow_tf32 = False  # pygpu's default
        tm = torch_model(weights)
        tx = torch.tensor(xs, device="cuda")
        tg, tgy = torch_graph(tm, tx)
        impls["torch"] = (lambda: tm(tx), torch.cuda.Event)
        impls["torch-graph"] = (tg.replay, torch.cuda.Event)
    # Validate every impl on fresh inputs, written into the static ones.
    xs = rng.standard_normal((BATCH, 784)).astype(np.float32)
    ref = reference(weights, xs)
    x.copy_(pygpu.tensor(xs))
    check("pygpu eager", model(x).cpu().numpy(), ref, 1e-4)
    g.replay()
    check("pygpu graph", gy.cpu().numpy(), ref, 1e-4)
    if TORCH_CUDA:
        tx.copy_(torch.from_numpy(xs))
        check("torch eager", tm(tx).cpu().numpy(), ref, 1e-4)
        tg.replay()
        check("torch graph", tgy.cpu().numpy(), ref, 1e-4)
    inner, reps = (100, 11) if quick else (200, 31)
    values = compare_events(impls, inner, reps)
    for impl, us in values.items():
        report("cuda", CASE, impl, us, "us")
    ratio("pygpu", "pygpu-graph", values)  # what the graph saves
    met = {}
    for num, den, goal in GOALS:
        if den in values:
            r = ratio(num, den, values)
            met[f"{num}/{den} <= {goal}"] = r <= goal
    for name, ok in met.items():
        print(f"goal {name}: {'met' if ok else 'MISSED'}")
    return met


def main():
    args = script_args("fewer repetitions", cpu_only=False)
    if not HAS_CUDA:
        print("bench_graph: skipped, no CUDA GPU: "
              f"{pygpu._C._cuda_unavailable_reason()}")
        save(args.json, model="784-512-relu-512-relu-10 float32",
             skipped="no CUDA GPU")
        return 0
    print("device:", pygpu.cuda.get_device_name())
    # Inference in both libraries: no autograd bookkeeping.
    pygpu.set_grad_enabled(False)
    if torch is not None:
        torch.set_grad_enabled(False)
    goals = bench(args.quick)
    save(args.json, model="784-512-relu-512-relu-10 float32", batch=BATCH,
         timing="CUDA events", goals=goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
