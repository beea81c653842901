"""gpu_smoke.py: one call of every op family on CUDA, checked against the
same call on the CPU, one line per family, in well under a minute.

    python scripts/gpu_smoke.py [--json FILE] [--device cuda]

The first stage of scripts/gpu_check.sh: it says what works before the
suite runs.  A family's line reads `ok`, or `FAIL` with the first error;
the exit status is 0 only when every family passed.  The CPU results are
the reference (the suite checks the CPU against NumPy float64).  Where the
process itself dies (a crash in C), the last line printed names the
family that was running."""
import argparse
import faulthandler
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np

import pygpu
from pygpu import nn

DEV = "cuda"
RTOL = {"float64": 1e-12, "float32": 1e-5, "tf32": 1e-2, "float16": 1e-2,
        "bfloat16": 2e-2}
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int32", "int64"]


def host(t):
    """A tensor's values as a float64 (or bool/int) NumPy array."""
    t = t.detach().cpu()
    if t.dtype in (pygpu.float16, pygpu.bfloat16):
        t = t.float()
    return t.numpy()


def same(got, ref, tol=0.0, what=""):
    """got (CUDA) against ref (CPU): exact, or max error / max |ref|."""
    g, r = host(got), host(ref)
    if g.shape != r.shape:
        raise AssertionError(f"{what}: shape {g.shape} != {r.shape}")
    if tol == 0.0 or g.dtype.kind in "biu":
        if not np.array_equal(g, r, equal_nan=g.dtype.kind == "f"):
            raise AssertionError(f"{what}: values differ")
        return
    g64, r64 = g.astype(np.float64), r.astype(np.float64)
    if not np.array_equal(np.isnan(g64), np.isnan(r64)):
        raise AssertionError(f"{what}: NaN in different places")
    ok = ~np.isnan(r64)
    scale = max(np.abs(r64[ok]).max(initial=0.0), 1e-30)
    err = np.abs(g64[ok] - r64[ok]).max(initial=0.0) / scale
    if err > tol:
        raise AssertionError(f"{what}: relative error {err:.3g} > {tol:g}")


def both(fn, tol=0.0, what=""):
    """fn(device) on the CPU and on CUDA, results compared."""
    ref, got = fn("cpu"), fn(DEV)
    if not isinstance(ref, (tuple, list)):
        ref, got = (ref,), (got,)
    for i, (g, r) in enumerate(zip(got, ref)):
        same(g, r, tol, f"{what}[{i}]")


def data(shape, dtype, seed, device):
    """Fresh values of dtype from a seeded NumPy generator."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.random(shape) < 0.5
    elif dtype in INTS:
        a = rng.integers(1, 60, shape)
    else:
        a = rng.standard_normal(shape)
    t = pygpu.tensor(a.astype(np.float64) if dtype not in INTS + ["bool"]
                     else a)
    return t.to(getattr(pygpu, dtype)).to(device)


class Skip(Exception):
    """A family that cannot run in this build, and why."""


# ------------------------------------------------------------- families

def creation():
    both(lambda d: pygpu.zeros(3, 4, device=d), what="zeros")
    both(lambda d: pygpu.ones(2, 5, dtype=pygpu.float16, device=d),
         what="ones")
    both(lambda d: pygpu.full((7,), 2.5, device=d), what="full")
    both(lambda d: pygpu.arange(0, 10, 3, device=d), what="arange")
    both(lambda d: pygpu.linspace(-1, 1, 9, device=d), 1e-6, "linspace")
    both(lambda d: pygpu.eye(4, 3, device=d), what="eye")
    both(lambda d: pygpu.empty(3, device=d).fill_(7), what="fill_")
    both(lambda d: pygpu.zeros(0, 3, device=d), what="empty shape")


def copy():
    for dt in FLOATS + INTS + ["bool"]:
        x = data((5, 7), dt, 1, "cpu")
        y = x.to(DEV)
        assert y.device.type == DEV, y.device
        same(y, x, what=f"to cuda {dt}")
        same(y.cpu(), x, what=f"back {dt}")
    both(lambda d: data((6, 4), "float32", 2, d).T.contiguous(),
         what="transposed copy")
    both(lambda d: data((6, 4), "float32", 3, d)[1:5:2, ::3].clone(),
         what="strided clone")
    both(lambda d: data((6, 4), "float64", 4, d).to(pygpu.float16),
         1e-3, "cast")
    y = pygpu.empty(6, 4, device=DEV)
    y.copy_(data((6, 4), "float32", 5, "cpu"))
    same(y, data((6, 4), "float32", 5, "cpu"), what="copy_ from host")


def elementwise():
    for dt in FLOATS + INTS + ["bool"]:
        tol = RTOL.get(dt, 0.0)
        both(lambda d: data((33, 17), dt, 6, d) + data((17,), dt, 7, d),
             tol, f"add {dt}")
        both(lambda d: data((33, 17), dt, 8, d) * data((33, 1), dt, 9, d),
             tol, f"mul {dt}")
        both(lambda d: data((9, 9), dt, 10, d) > data((9, 9), dt, 11, d),
             what=f"gt {dt}")
        if dt in FLOATS:
            both(lambda d: data((100,), dt, 12, d).exp().tanh().abs().sqrt(),
                 tol, f"unary {dt}")
            both(lambda d: pygpu.where(data((50,), dt, 13, d) > 0,
                                       data((50,), dt, 14, d), 0.5),
                 tol, f"where {dt}")
            both(lambda d: data((64,), dt, 15, d).sigmoid() * 3 - 1,
                 tol, f"sigmoid {dt}")
    both(lambda d: data((1 << 20,), "float32", 16, d) * 2 + 1, 1e-6,
         "large")


def reduction():
    for dt in ["float16", "bfloat16", "float32", "float64"]:
        tol = max(RTOL[dt], 1e-6)
        x = lambda d: data((37, 129), dt, 20, d)
        both(lambda d: x(d).sum(), tol, f"sum {dt}")
        both(lambda d: x(d).sum(1), tol, f"sum(1) {dt}")
        both(lambda d: x(d).mean(0), tol, f"mean(0) {dt}")
        both(lambda d: x(d).max(1), tol, f"max(1) {dt}")
        both(lambda d: x(d).argmin(), what=f"argmin {dt}")
    both(lambda d: data((3000, 7), "float64", 21, d).var(0), 1e-10, "var(0)")
    both(lambda d: data((3, 4), "float64", 22, d).std(), 1e-10, "std()")
    both(lambda d: data((3, 4), "float64", 23, d).norm(), 1e-10, "norm()")
    both(lambda d: data((1 << 20,), "float32", 24, d).sum(), 1e-5,
         "sum 2^20")
    both(lambda d: data((500, 3), "int64", 25, d).sum(0), what="int sum")
    both(lambda d: data((40, 30), "float32", 26, d).cumsum(1), 1e-5,
         "cumsum")


def softmax():
    for dt in ["float16", "float32", "float64"]:
        tol = max(RTOL[dt], 1e-6)
        both(lambda d: data((64, 10), dt, 30, d).softmax(1), tol,
             f"softmax {dt}")
        both(lambda d: data((8, 1000), dt, 31, d).log_softmax(1), tol,
             f"log_softmax {dt}")
    target = lambda d: pygpu.tensor(np.arange(64) % 10, device=d)
    both(lambda d: nn.functional.cross_entropy(data((64, 10), "float32", 32,
                                                    d), target(d)),
         1e-5, "cross_entropy")


def matmul():
    a = lambda d, dt, s=40: data((65, 130), dt, s, d)
    b = lambda d, dt: data((130, 33), dt, 41, d)
    old = pygpu.backends.cuda.matmul.allow_tf32
    try:
        pygpu.backends.cuda.matmul.allow_tf32 = False
        both(lambda d: a(d, "float32") @ b(d, "float32"), 1e-5, "fp32")
        pygpu.backends.cuda.matmul.allow_tf32 = True
        both(lambda d: a(d, "float32") @ b(d, "float32"), RTOL["tf32"],
             "tf32")
    finally:
        pygpu.backends.cuda.matmul.allow_tf32 = old
    both(lambda d: a(d, "float16") @ b(d, "float16"), 1e-2, "fp16")
    both(lambda d: a(d, "bfloat16") @ b(d, "bfloat16"), 2e-2, "bf16")
    both(lambda d: a(d, "float64") @ b(d, "float64"), 1e-12, "fp64")
    both(lambda d: data((4, 5, 6), "float32", 42, d)
         @ data((6, 3), "float32", 43, d), 1e-5, "batched")
    both(lambda d: a(d, "float32").T @ a(d, "float32", 44), 1e-5,
         "transposed")
    if DEV == "cpu":
        return
    with pygpu.autocast("cuda"):
        c = a(DEV, "float32") @ b(DEV, "float32")
    assert c.dtype == pygpu.float16, c.dtype
    same(c, a("cpu", "float32") @ b("cpu", "float32"), 1e-2, "autocast")


def linear():
    def layer(d, relu):
        pygpu.manual_seed(0)
        m = nn.Sequential(nn.Linear(20, 30), nn.ReLU()) if relu else \
            nn.Linear(20, 30)
        return m.to(d)(data((16, 20), "float32", 50, d))
    old = pygpu.backends.cuda.matmul.allow_tf32
    pygpu.backends.cuda.matmul.allow_tf32 = False
    try:
        both(lambda d: layer(d, False), 1e-5, "linear")
        both(lambda d: layer(d, True), 1e-5, "linear_relu")
        x = data((4, 20), "float32", 51, "cpu")
        x[1, 3] = float("nan")

        def nan_row(d):
            pygpu.manual_seed(0)
            m = nn.Sequential(nn.Linear(20, 8), nn.ReLU()).to(d)
            return m(x.to(d))
        both(nan_row, 1e-5, "linear_relu NaN")
    finally:
        pygpu.backends.cuda.matmul.allow_tf32 = old


def indexing():
    x = lambda d: data((6, 5), "float32", 60, d)
    both(lambda d: x(d)[2], what="int")
    both(lambda d: x(d)[1:5:2, 3:], what="slice")
    both(lambda d: x(d)[[4, 0, 4]], what="list")
    both(lambda d: x(d)[pygpu.tensor([1, 2], device=d)], what="tensor")
    both(lambda d: x(d)[x(d) > 0], what="mask")
    both(lambda d: x(d).index_select(1, pygpu.tensor([4, 0], device=d)),
         what="index_select")
    both(lambda d: x(d).gather(1, pygpu.tensor([[0, 1]] * 6, device=d)),
         what="gather")

    def put(d):
        y = x(d).clone()
        y[[1, 3]] = 9.0
        y[:, 2] = y[:, 4]
        return y
    both(put, what="setitem")
    try:
        x(DEV)[[6]]
    except (IndexError, RuntimeError):
        pass
    else:
        raise AssertionError("an index out of range did not raise")
    same(x(DEV).sum(), x("cpu").sum(), 1e-6, "usable after a bad index")


def random():
    pygpu.manual_seed(123)
    a = pygpu.rand(1 << 16, device=DEV)
    pygpu.manual_seed(123)
    b = pygpu.rand(1 << 16, device=DEV)
    same(a, b, what="seeded repeat")
    v = host(a)
    assert 0.0 <= v.min() and v.max() < 1.0, (v.min(), v.max())
    assert abs(v.mean() - 0.5) < 0.01, v.mean()
    n = host(pygpu.randn(1 << 16, device=DEV))
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02, \
        (n.mean(), n.std())


def autograd():
    def run(d):
        pygpu.manual_seed(1)
        m = nn.Sequential(nn.Linear(12, 16), nn.ReLU(),
                          nn.Linear(16, 4)).to(d)
        x = data((8, 12), "float32", 70, d)
        y = pygpu.tensor(np.arange(8) % 4, device=d)
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        return (loss,) + tuple(p.grad for p in m.parameters())
    old = pygpu.backends.cuda.matmul.allow_tf32
    pygpu.backends.cuda.matmul.allow_tf32 = False
    try:
        both(run, 1e-5, "mlp backward")
    finally:
        pygpu.backends.cuda.matmul.allow_tf32 = old


def optimizer():
    def step(d, opt):
        pygpu.manual_seed(2)
        m = nn.Linear(6, 3).to(d)
        o = opt(m.parameters())
        for s in range(3):
            o.zero_grad()
            (m(data((5, 6), "float32", 80 + s, d)) ** 2).sum().backward()
            o.step()
        return tuple(m.parameters())
    both(lambda d: step(d, lambda p: pygpu.optim.SGD(p, lr=0.1,
                                                     momentum=0.9)),
         1e-5, "sgd")
    both(lambda d: step(d, lambda p: pygpu.optim.Adam(p, lr=0.01)), 1e-5,
         "adam")


def memory():
    cuda = pygpu.cuda
    cuda.synchronize()
    base = cuda.memory_allocated()
    x = pygpu.empty(1 << 20, device=DEV)
    assert cuda.memory_allocated() >= base + (4 << 20), \
        cuda.memory_allocated()
    assert cuda.memory_reserved() >= cuda.memory_allocated()
    assert cuda.max_memory_allocated() >= cuda.memory_allocated()
    del x
    assert cuda.memory_allocated() == base, cuda.memory_allocated()
    cuda.empty_cache()
    try:
        pygpu.empty(1 << 50, device=DEV)
    except cuda.OutOfMemoryError as e:
        assert str(e).startswith("CUDA out of memory. Tried to allocate"), e
    else:
        raise AssertionError("2^50 elements did not run out of memory")
    free, total = cuda.mem_get_info()
    assert 0 < free <= total, (free, total)


def streams():
    cuda = pygpu.cuda
    s = cuda.Stream()
    x = data((1 << 16,), "float32", 90, DEV)
    s.wait_stream(cuda.current_stream())
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    with cuda.stream(s):
        start.record()
        y = x * 2.0 + 1.0
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    cuda.current_stream().wait_stream(s)
    same(y, x.cpu() * 2.0 + 1.0, 1e-6, "on a side stream")
    assert s.query()
    cuda.synchronize()


def nccl():
    dist = pygpu.distributed
    if not dist.is_nccl_available():
        why = str(pygpu._C._nccl_load_error())
        if "built without NCCL" in why:
            raise Skip(why)  # a build without NCCL is a build pygpu allows
        raise RuntimeError(f"NCCL is not available: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group("nccl", store=store, rank=0, world_size=1)
        try:
            x = data((1000,), "float32", 95, DEV)
            y = x.clone()
            dist.all_reduce(y)
            same(y, x, what="all_reduce, one rank")
            z = data((8,), "bfloat16", 96, DEV)
            dist.all_reduce(z)
        finally:
            dist.destroy_process_group()


def conv():
    F = nn.functional
    for dt in FLOATS:
        tol = max(RTOL[dt], 1e-6)
        both(lambda d: F.unfold(data((2, 3, 7, 6), dt, 40, d), (3, 2),
                                padding=1, stride=(2, 1)), 0.0,
             f"unfold {dt}")
        both(lambda d: F.fold(data((2, 18, 30), dt, 41, d), (5, 6), 3,
                              padding=1), tol, f"fold {dt}")
        both(lambda d: F.conv2d(data((2, 4, 9, 8), dt, 42, d),
                                data((6, 2, 3, 3), dt, 43, d), None,
                                padding=1, groups=2), tol,
             f"conv2d {dt}")


def normalization():
    def run(d, dt, shape):
        x = data(shape, dt, 80, d).requires_grad_(True)
        c, pdt = shape[1], "float64" if dt == "float64" else "float32"
        w = data((c,), pdt, 81, d).requires_grad_(True)
        g = data(shape, dt, 82, d)
        ys = [nn.functional.batch_norm(x, None, None, w, None, True),
              nn.functional.group_norm(x, 2, w),
              nn.functional.layer_norm(x, shape[-1:],
                                       data(shape[-1:], pdt, 83, d)),
              nn.functional.rms_norm(x, shape[-1:])]
        sum(y * g for y in ys).sum().backward()
        return ys + [x.grad, w.grad]
    for dt in ["float16", "bfloat16", "float32", "float64"]:
        for shape in [(6, 4, 40), (3, 4, 1500)]:   # a warp / a block a row
            both(lambda d: run(d, dt, shape), max(RTOL[dt], 1e-5) * 10,
                 f"normalization {dt} {shape}")


CUDA_ONLY = {"memory", "streams", "nccl"}
FAMILIES = [creation, copy, elementwise, reduction, softmax, matmul, linear,
            indexing, random, autograd, optimizer, memory, streams, nccl,
            conv]
FAMILIES += [normalization]


def main():
    global DEV
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", help="write the results here")
    p.add_argument("--device", default="cuda",
                   help="the device checked against the CPU (default cuda)")
    args = p.parse_args()
    DEV = args.device
    faulthandler.enable()
    if DEV == "cuda" and not pygpu.cuda.is_available():
        print("smoke: no CUDA GPU: "
              f"{pygpu._C._cuda_unavailable_reason()}")
        return 1
    results = {}
    t_all = time.perf_counter()
    for fam in FAMILIES:
        print(f"{fam.__name__:12s} ", end="", flush=True)
        t0 = time.perf_counter()
        if DEV == "cpu" and fam.__name__ in CUDA_ONLY:
            print("skip (CUDA only)", flush=True)
            continue
        try:
            fam()
            pygpu.cuda.synchronize() if DEV == "cuda" else None
            status, why = "ok", ""
        except Skip as e:
            status, why = "skip", str(e)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            status = "FAIL"
            why = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
            tb = traceback.extract_tb(e.__traceback__)
            here = [f for f in tb if f.filename == __file__]
            if here:
                why += f" (line {here[-1].lineno})"
        dt = time.perf_counter() - t0
        results[fam.__name__] = {"status": status, "seconds": round(dt, 3),
                                 "error": why}
        print(f"{status:4s} {dt:6.2f} s  {why}", flush=True)
    ok = sum(r["status"] == "ok" for r in results.values())
    failed = sum(r["status"] == "FAIL" for r in results.values())
    assert results, "no family ran"
    print(f"smoke: {ok}/{len(results)} families ok on {DEV}, {failed} "
          f"failed ({time.perf_counter() - t_all:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": DEV, "families": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
