"""Long lines and short rows on CUDA, against torch on the same GPU when it
sees one, timed with CUDA events (runner/core.py's timers) in interleaved
rounds: cumsum of one line of 2^27 float32, softmax, log_softmax and
cross_entropy (forward, and forward + backward) over 2^20 rows of 10
classes.  Every case validates its result against NumPy before timing.

  python benchmarks/bench_lines.py [--json PATH] [--quick]

Bandwidth counts the bytes one pass needs (the input read once, the
output written once), next to a device-to-device copy of the same bytes
measured in the same rounds.  The rows inputs (40 MB) fit in an H100's L2
cache, so each case cycles through enough copies of its input to read
from memory.  Without a GPU it prints why and times nothing.
"""
import sys
import time

import numpy as np

import pygpu
from bench_ops import check, ratios, report, save, script_args
from runner.core import compare_gpu, gpu_libraries

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None

ROWS, CLASSES = 1 << 20, 10


def batch_size(fn, sync, target_s=0.02):
    """Calls per timed batch: about target_s of work, from one timed call
    (a slow build takes one call per batch, so the run stays short)."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = time.perf_counter() - t0
    return max(1, min(50, int(target_s / max(one, 1e-6))))


def ring(items):
    """A zero-argument callable cycling through items."""
    state = {"i": 0}

    def nxt():
        state["i"] = (state["i"] + 1) % len(items)
        return items[state["i"]]
    return nxt


def run(group, case, impls, libs, reps, nbytes=None, base="torch"):
    """Times {name: (fn, lib)} with each lib's timer and reports GB/s (when
    nbytes is given) or microseconds, and the ratios to base."""
    first, lib0 = next(iter(impls.values()))
    inner = batch_size(first, libs[lib0][0])
    timed = {name: (fn, libs[lib][1]) for name, (fn, lib) in impls.items()}
    for impl, s in compare_gpu(timed, inner, reps).items():
        if nbytes is None:
            report(group, case, impl, s * 1e6, "us")
        else:
            report(group, case, impl, nbytes / s / 1e9, "GB/s")
    ratios(group, case, nbytes is not None, base)


def bench_cumsum(libs, reps, tt):
    n = 1 << 27
    rng = np.random.default_rng(0)
    # integer values: every partial sum is exact in float32
    a = rng.integers(-3, 4, n).astype(np.float32)
    ref = np.cumsum(a, dtype=np.int64)
    x = pygpu.tensor(a, device="cuda")
    dst = pygpu.empty(n, device="cuda")
    got = x.cumsum(0).cpu().numpy()
    check("cuda cumsum 2^27", got[::997], ref[::997], 0)
    check("cuda cumsum 2^27 end", got[-4096:], ref[-4096:], 0)
    impls = {"pygpu": (lambda: x.cumsum(0), "pygpu"),
             "d2d-copy": (lambda: dst.copy_(x), "pygpu")}
    if tt is not None:
        tx = tt.tensor(a, device="cuda")
        check("torch cumsum 2^27", tx.cumsum(0)[-4096:].cpu().numpy(),
              ref[-4096:], 0)
        impls["torch"] = (lambda: tx.cumsum(0), "torch")
    run("lines", "cumsum 2^27 f32", impls, libs, reps, nbytes=2 * a.nbytes)


def np_log_softmax(a):
    a = a.astype(np.float64)
    m = a.max(1, keepdims=True)
    return a - (np.log(np.exp(a - m).sum(1, keepdims=True)) + m)


def bench_rows(libs, reps, tt):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((ROWS, CLASSES)) * 3).astype(np.float32)
    t = rng.integers(0, CLASSES, ROWS)
    ref = np_log_softmax(a)
    l2 = pygpu.cuda.get_device_properties().__dict__.get(
        "L2_cache_size") or 64 << 20
    copies = max(1, -(-(2 * l2 + (4 << 20)) // a.nbytes))
    xs = [pygpu.tensor(a, device="cuda") for _ in range(copies)]
    tgt = pygpu.tensor(t, device="cuda")
    check("cuda softmax", xs[0].softmax(1).cpu().numpy(), np.exp(ref), 1e-5)
    check("cuda log_softmax", xs[0].log_softmax(1).cpu().numpy(), ref, 1e-5)
    want = -ref[np.arange(ROWS), t].mean()
    F = pygpu.nn.functional
    check("cuda cross_entropy", [F.cross_entropy(xs[0], tgt).item()],
          [want], 1e-5)
    px, dst = ring(xs), pygpu.empty((ROWS, CLASSES), device="cuda")
    tx = None
    if tt is not None:
        tx = ring([tt.tensor(a, device="cuda") for _ in range(copies)])
        ttgt = tt.tensor(t, device="cuda")
    shape = f"{ROWS >> 20}Mx{CLASSES}"
    for op in ("softmax", "log_softmax"):
        impls = {"pygpu": (lambda op=op: getattr(px(), op)(1), "pygpu"),
                 "d2d-copy": (lambda: dst.copy_(px()), "pygpu")}
        if tx is not None:
            impls["torch"] = (lambda op=op: getattr(tx(), op)(1), "torch")
        run("rows", f"{op} {shape} f32", impls, libs, reps,
            nbytes=2 * a.nbytes)
    impls = {"pygpu": (lambda: F.cross_entropy(px(), tgt), "pygpu")}
    if tx is not None:
        impls["torch"] = (lambda: tt.nn.functional.cross_entropy(tx(), ttgt),
                          "torch")
    run("rows", f"cross_entropy fwd {shape} f32", impls, libs, reps)

    # forward + backward: the inputs require grad
    gxs = [x.detach().requires_grad_() for x in xs]
    gx = ring(gxs)

    def pygpu_step():
        v = gx()
        v.grad = None
        F.cross_entropy(v, tgt).backward()
    pygpu_step()
    grad = np.exp(ref)
    grad[np.arange(ROWS), t] -= 1
    check("cuda cross_entropy grad", gxs[1 % copies].grad.cpu().numpy(),
          grad / ROWS, 1e-5)
    impls = {"pygpu": (pygpu_step, "pygpu")}
    if tx is not None:
        tgx = ring([tt.tensor(a, device="cuda", requires_grad=True)
                    for _ in range(copies)])

        def torch_step():
            v = tgx()
            v.grad = None
            tt.nn.functional.cross_entropy(v, ttgt).backward()
        impls["torch"] = (torch_step, "torch")
    with_grad = tt.enable_grad() if tt is not None else _nothing()
    with with_grad:
        run("rows", f"cross_entropy fwd+bwd {shape} f32", impls, libs, reps)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    args = script_args(cpu_only=False)
    if not pygpu.cuda.is_available():
        print("bench_lines: no CUDA GPU, nothing timed")
        return 0
    libs = gpu_libraries()
    tt = torch if "torch" in libs else None
    if tt is not None:
        tt.set_grad_enabled(False)
    print("device:", pygpu.cuda.get_device_name(),
          "timers:", {k: v[1].name for k, v in libs.items()})
    reps = 7 if args.quick else 15
    bench_cumsum(libs, reps, tt)
    bench_rows(libs, reps, tt)
    save(args.json, device=pygpu.cuda.get_device_name())
    return 0


if __name__ == "__main__":
    sys.exit(main())
