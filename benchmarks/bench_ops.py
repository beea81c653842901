"""Side-by-side benchmarks of pygpu's compute ops against torch, cupy and
numpy, in one run, on the same device.  Every case validates its result
against NumPy before timing.  Figures are medians of many repetitions.

  python benchmarks/bench_ops.py [--json PATH] [--quick] [--before DIR]

--before DIR also times an earlier build (a copy of the pygpu package with
its extension at DIR/pygpu) in the same run, interleaved with this one, as
impl 'before'; the ratios pygpu/before are then after/before.

CPU rows always run; CUDA rows run when pygpu sees a GPU (torch and cupy
rows when those import and see it too).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import pygpu
from provenance import provenance

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None
try:
    import cupy
except ImportError:  # pragma: no cover - optional peer
    cupy = None

HAS_CUDA = pygpu.cuda.is_available()
TORCH_CUDA = torch is not None and torch.cuda.is_available()
CUPY_CUDA = cupy is not None and HAS_CUDA


def per_call_us(fn, inner=200, reps=31, sync=None):
    """Median host time of one call, in microseconds: `inner` calls in a
    loop, `reps` times (after a warm-up), synchronizing at each end."""
    return compare({"x": (fn, sync)}, inner, reps)["x"]


def compare(impls, inner=200, reps=31, settle=0.0, warm=0):
    """Median microseconds per call of each {name: (fn, sync)}, timed in
    interleaved rounds so that drifts of the machine hit all alike, each
    round starting one place further along.  On the CPU each library's
    idle threads poll for work for about 10 ms after a call (torch's
    OpenMP threads without yielding the core): whichever implementation
    ran next shared the cores with them, hence settle, seconds to sleep
    (untimed) after each batch, longer than that, and warm, untimed calls
    at the start of each batch (they wake the library's threads), so that
    each batch is timed as the library runs alone."""
    for fn, sync in impls.values():
        for _ in range(inner):
            fn()
        if sync:
            sync()
    times = {name: [] for name in impls}
    names = list(impls)
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            fn, sync = impls[name]
            for _ in range(warm):
                fn()
            if sync:
                sync()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            if sync:
                sync()
            times[name].append((time.perf_counter() - t0) / inner)
            if settle:
                time.sleep(settle)
    return {name: statistics.median(v) * 1e6 for name, v in times.items()}


def check(name, got, ref, rtol):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    err = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)
    if not err <= rtol:
        raise SystemExit(f"{name}: result differs from NumPy "
                         f"(rel err {err:.2e})")


rows = []


def report(group, case, impl, value, unit, ratio_to=None):
    row = {"group": group, "case": case, "impl": impl, "value": value,
           "unit": unit}
    rows.append(row)
    print(f"{group:10s} {case:28s} {impl:8s} {value:12.3f} {unit}")


def ratios(group, case, higher_is_better, base):
    """Ratio of pygpu to each peer for one case."""
    vals = {r["impl"]: r["value"] for r in rows
            if r["group"] == group and r["case"] == case}
    if "pygpu" not in vals:
        return
    for impl, v in vals.items():
        if impl == "pygpu" or v == 0:
            continue
        r = vals["pygpu"] / v
        label = "pygpu/%s %s" % (impl, "throughput" if higher_is_better
                                 else "time")
        print(f"{'':10s} {case:28s} {label}: {r:.3f}")
        rows.append({"group": group, "case": case, "impl": "ratio",
                     "vs": impl, "value": r,
                     "meaning": "throughput" if higher_is_better else "time"})


# ------------------------------------------------------ the scripts' CLI
def script_args(quick_help="fewer repetitions", cpu_only=True,
                before=False):
    """The benchmark scripts' shared command line, parsed: --json PATH,
    --quick, and --cpu-only and --before DIR where the script has them.
    Prints the versions being compared."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    if cpu_only:
        ap.add_argument("--cpu-only", action="store_true")
    if before:
        ap.add_argument("--before", metavar="PATH",
                        help="also time the pygpu package copied to "
                        "PATH/pygpu (an earlier build), as impl 'before'")
    args = ap.parse_args()
    print(f"pygpu {pygpu.__version__}, numpy {np.__version__}, torch "
          f"{getattr(torch, '__version__', 'absent')}, cupy "
          f"{getattr(cupy, '__version__', 'absent')}")
    return args


def each_device(bench, args):
    """bench(device, quick) on the CPU, then on CUDA when pygpu sees a GPU
    and --cpu-only was not given."""
    bench("cpu", args.quick)
    if HAS_CUDA and not getattr(args, "cpu_only", False):
        print("device:", pygpu.cuda.get_device_name())
        bench("cuda", args.quick)


def save(path, **meta):
    """Writes {"meta": ..., "rows": rows} to path (nothing when None):
    provenance, versions and device, then the script's own meta."""
    if not path:
        return
    full = provenance()
    full.update({"pygpu": pygpu.__version__, "numpy": np.__version__,
                 "torch": getattr(torch, "__version__", None),
                 "cupy": getattr(cupy, "__version__", None),
                 "device": pygpu.cuda.get_device_name() if HAS_CUDA
                 else "cpu"})
    full.update(meta)
    with open(path, "w") as f:
        json.dump({"meta": full, "rows": rows}, f, indent=1)


def before_name(path):
    """How the JSON names an earlier build (its folder's name)."""
    return path and "pygpu build at " + os.path.basename(
        os.path.normpath(path))


# ------------------------------------------------------------------ CPU
def load_before(path):
    """A second build of pygpu (the package folder copied, with its _C
    extension, to PATH/pygpu) imported as pygpu_before, so that an earlier
    build is timed in the same run, interleaved with this one."""
    import importlib.util
    init = os.path.join(path, "pygpu", "__init__.py")
    spec = importlib.util.spec_from_file_location(
        "pygpu_before", init,
        submodule_search_locations=[os.path.dirname(init)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pygpu_before"] = mod
    spec.loader.exec_module(mod)
    return mod


def cpu_case(case, inputs, make, ref, rtol, inner, reps=41, flop=None,
             peers=None, before=None):
    """Times make(module, *tensors) for pygpu (and the earlier build) on
    inputs converted by each, with the peers {name: fn}, and reports the
    times (or TFLOP/s when flop is given) and the ratios."""
    impls = {}
    for name, mod in (("pygpu", pygpu), ("before", before)):
        if mod is None:
            continue
        ts = [mod.from_numpy(x) for x in inputs]
        fn = make(mod, *ts)
        if ref is not None:
            out = fn()
            got = (out if out is not None else ts[0]).numpy()
            check(f"cpu {case} ({name})", got, ref, rtol)
        impls[name] = (fn, None)
    for name, fn in (peers or {}).items():
        impls[name] = (fn, None)
    # settle past every pool's polling (10 ms); warm: the first call of
    # a batch wakes the threads, later ones run as in a loop
    warm = 2 if inner < 1000 else 0
    for impl, us in compare(impls, inner, reps, settle=0.015,
                            warm=warm).items():
        if flop is None:
            report("cpu", case, impl, us, "us")
        else:
            report("cpu", case, impl, flop / us / 1e6, "TFLOP/s")
    ratios("cpu", case, flop is not None, "numpy")


def bench_cpu(quick, before):
    rng = np.random.default_rng(0)
    tt = torch.from_numpy if torch is not None else None

    def peers(**kw):
        return {k: v for k, v in kw.items() if v}

    for n in ([1 << 10, 1 << 22] if quick else [1 << 10, 1 << 20, 1 << 24]):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        inner = 2000 if n <= 1 << 12 else max(3, (1 << 24) // n)
        ta = tt(a) if tt else None
        tb = tt(b) if tt else None
        # out of place: all allocate their result
        cpu_case(f"relu n={n}", [a], lambda m, x: lambda: m.relu(x),
                 np.maximum(a, 0), 0, inner, before=before,
                 peers=peers(numpy=lambda: np.maximum(a, 0),
                             torch=ta is not None and
                             (lambda: torch.relu(ta))))
        # in place, on a copy each (relu_ of relu_ stays the same work)
        c = a.copy()
        tc = tt(c.copy()) if tt else None
        cpu_case(f"relu_ n={n}", [c], lambda m, x: lambda: m.relu_(x),
                 np.maximum(a, 0), 0, inner, before=before,
                 peers=peers(numpy=lambda: np.maximum(c, 0, out=c),
                             torch=tc is not None and
                             (lambda: torch.relu_(tc))))
        cpu_case(f"add n={n}", [a, b], lambda m, x, y: lambda: x + y,
                 a + b, 1e-6, inner, before=before,
                 peers=peers(numpy=lambda: np.add(a, b),
                             torch=ta is not None and (lambda: ta + tb)))
        cpu_case(f"sum n={n}", [a], lambda m, x: lambda: m.sum(x),
                 a.astype(np.float64).sum(), 1e-5, inner, before=before,
                 peers=peers(numpy=lambda: np.sum(a),
                             torch=ta is not None and
                             (lambda: torch.sum(ta))))
        d = np.empty_like(a)
        td = tt(np.empty_like(a)) if tt else None
        cpu_case(f"copy_ n={n}", [np.empty_like(a), a],
                 lambda m, x, y: lambda: x.copy_(y), a, 0, inner,
                 before=before,
                 peers=peers(numpy=lambda: np.copyto(d, a),
                             torch=td is not None and
                             (lambda: td.copy_(ta))))
    # random numbers: short (the per-element cost shows) and long
    for n in ([1 << 10] if quick else [1 << 10, 1 << 20]):
        inner = 2000 if n <= 1 << 12 else 5
        gen = np.random.default_rng(1)
        cpu_case(f"randn n={n}", [], lambda m: lambda: m.randn(n), None, 0,
                 inner, before=before,
                 peers=peers(numpy=lambda: gen.standard_normal(
                     n, dtype=np.float32),
                     torch=tt is not None and (lambda: torch.randn(n))))
    sizes = [16, 256, 1024] if quick else [16, 256, 1024, 2048]
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        ta = tt(a) if tt else None
        tb = tt(b) if tt else None
        inner = max(1, int(2e8 / n**3)) if n > 64 else 5000
        cpu_case(f"matmul f32 {n}^3", [a, b],
                 lambda m, x, y: lambda: x @ y,
                 a.astype(np.float64) @ b.astype(np.float64), 1e-4, inner,
                 reps=9 if n > 64 else 31, flop=2.0 * n**3, before=before,
                 peers=peers(numpy=lambda: np.matmul(a, b),
                             torch=ta is not None and (lambda: ta @ tb)))


# ----------------------------------------------------------------- CUDA
def peer_syncs():
    """The synchronize function of each library that sees the GPU."""
    syncs = {"pygpu": pygpu.cuda.synchronize}
    if TORCH_CUDA:
        syncs["torch"] = torch.cuda.synchronize
    if CUPY_CUDA:
        syncs["cupy"] = cupy.cuda.runtime.deviceSynchronize
    return syncs


def run_case(group, case, impls, inner, reps, unit, to_value, base,
             higher_is_better):
    """Time {name: (fn, sync)} interleaved, report each and the ratios."""
    for impl, us in compare(impls, inner, reps).items():
        report(group, case, impl, to_value(us), unit)
    ratios(group, case, higher_is_better, base)


def bench_cuda(quick):
    if torch is not None:
        # no autograd bookkeeping in torch's timings (pygpu has none)
        torch.set_grad_enabled(False)
    syncs = peer_syncs()
    rng = np.random.default_rng(0)
    # host time per call on a small tensor: the thin call path
    a = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    x, y = pygpu.tensor(a, device="cuda"), pygpu.tensor(b, device="cuda")
    check("cuda relu", pygpu.relu(x).cpu().numpy(), np.maximum(a, 0), 0)
    check("cuda add", (x + y).cpu().numpy(), a + b, 1e-6)
    peers = {"pygpu": (x, y, pygpu.relu)}
    if TORCH_CUDA:
        peers["torch"] = (torch.tensor(a, device="cuda"),
                          torch.tensor(b, device="cuda"), torch.relu)
    if CUPY_CUDA:
        peers["cupy"] = (cupy.asarray(a), cupy.asarray(b),
                         lambda v: cupy.maximum(v, 0))

    def bind(fn, *args):
        return lambda: fn(*args)

    for what, make in (("relu", lambda p: bind(p[2], p[0])),
                       ("add", lambda p: bind(lambda u, v: u + v,
                                              p[0], p[1]))):
        impls = {k: (make(p), syncs[k]) for k, p in peers.items()}
        run_case("call", f"{what} 1K (host us/call)", impls, 2000, 31,
                 "us", lambda us: us, "torch", False)
    peers = None

    # relu bandwidth on 2^28 float32 against a device-to-device copy of the
    # same bytes (pygpu's dense copy_ is cudaMemcpyAsync)
    n = 1 << (26 if quick else 28)
    case = f"relu 2^{n.bit_length() - 1} f32"
    nbytes = 2 * 4 * n  # read + write
    src = pygpu.randn(n, device="cuda")
    dst = pygpu.empty(n, device="cuda")
    check("cuda relu big", pygpu.relu(src[:4096]).cpu().numpy(),
          np.maximum(src[:4096].cpu().numpy(), 0), 0)
    impls = {"pygpu": (bind(pygpu.relu, src), syncs["pygpu"]),
             "d2d-copy": (bind(dst.copy_, src), syncs["pygpu"])}
    if TORCH_CUDA:
        tsrc = torch.randn(n, device="cuda")
        tdst = torch.empty_like(tsrc)
        impls["torch"] = (bind(torch.relu, tsrc), syncs["torch"])
        impls["torch-copy"] = (bind(tdst.copy_, tsrc), syncs["torch"])
    run_case("bandwidth", case, impls, 10, 15, "GB/s",
             lambda us: nbytes / us / 1e3, "d2d-copy", True)
    impls = src = dst = tsrc = tdst = None

    # matmul throughput
    sizes = [1024, 4096] if quick else [1024, 2048, 4096, 8192]
    for dt, tdt, tol in ((pygpu.float32, "float32", 1e-4),
                         (pygpu.float16, "float16", 2e-2)):
        for n in sizes:
            case = f"matmul {tdt} {n}^3"
            pa = pygpu.randn(n, n, dtype=dt, device="cuda")
            pb = pygpu.randn(n, n, dtype=dt, device="cuda")
            if n <= 2048:
                ref = (pa.cpu().numpy().astype(np.float64)
                       @ pb.cpu().numpy().astype(np.float64))
                check(case, (pa @ pb).cpu().numpy(), ref, tol)
            impls = {"pygpu": (bind(pygpu.matmul, pa, pb), syncs["pygpu"])}
            if TORCH_CUDA:
                tt = getattr(torch, tdt)
                impls["torch"] = (bind(torch.matmul,
                                       torch.randn(n, n, dtype=tt,
                                                   device="cuda"),
                                       torch.randn(n, n, dtype=tt,
                                                   device="cuda")),
                                  syncs["torch"])
            if CUPY_CUDA:
                ca = cupy.random.standard_normal((n, n)).astype(tdt)
                cb = cupy.random.standard_normal((n, n)).astype(tdt)
                impls["cupy"] = (bind(cupy.matmul, ca, cb), syncs["cupy"])
            flop = 2.0 * n**3
            run_case("matmul", case, impls, max(2, int(4e11 / n**3)), 9,
                     "TFLOP/s", lambda us: flop / us / 1e6, "torch", True)
            impls = pa = pb = ca = cb = None

    # fused linear + relu against torch's Linear then ReLU
    lin_relu = pygpu.nn.functional.linear_relu
    for (bsz, fin, fout) in ((64, 784, 256), (4096, 4096, 4096)):
        case = f"linear+relu {bsz}x{fin}->{fout}"
        xx = pygpu.randn(bsz, fin, device="cuda")
        ww = pygpu.randn(fout, fin, device="cuda") * 0.05
        bb = pygpu.randn(fout, device="cuda")
        ref = np.maximum(xx.cpu().numpy().astype(np.float64)
                         @ ww.cpu().numpy().astype(np.float64).T
                         + bb.cpu().numpy(), 0)
        check(case, lin_relu(xx, ww, bb).cpu().numpy(), ref, 1e-4)
        impls = {"pygpu": (bind(lin_relu, xx, ww, bb), syncs["pygpu"])}
        if TORCH_CUDA:
            lin = torch.nn.Linear(fin, fout, device="cuda")
            act = torch.nn.ReLU()
            tx = torch.randn(bsz, fin, device="cuda")
            impls["torch"] = (lambda f=lin, g=act, v=tx: g(f(v)),
                              syncs["torch"])
        run_case("linear", case, impls, 200 if bsz < 1000 else 10, 15,
                 "us", lambda us: us, "torch", False)


def main():
    args = script_args(quick_help="fewer sizes", before=True)
    before = load_before(args.before) if args.before else None
    if torch is not None:
        torch.set_grad_enabled(False)
    each_device(lambda device, quick: bench_cpu(quick, before)
                if device == "cpu" else bench_cuda(quick), args)
    save(args.json, before=before_name(args.before),
         threads=pygpu.get_num_threads())
    return 0


if __name__ == "__main__":
    sys.exit(main())
