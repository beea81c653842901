"""Memory bandwidth of relu and add over 2^10..2^28 float32 elements
(2^26 with --quick; to 2^24 on the CPU), in GB/s (bytes read + written
once) and as a fraction of a copy of the same bytes measured in the same
rounds (pygpu's copy_: cudaMemcpyAsync device to device on a GPU, a
memcpy-like loop on the CPU)."""
import numpy as np

import pygpu

from .core import Impl, cupy, torch

NAME = "bandwidth"
GPU_SIZES = [1 << k for k in range(10, 29, 2)]
GPU_QUICK = [1 << k for k in (10, 16, 20, 24, 26)]
CPU_SIZES = [1 << k for k in range(10, 25, 2)]
CPU_QUICK = [1 << k for k in (10, 14, 18, 22, 24)]


def _lib_ops(lib):
    """(make a tensor from an array, relu, add) in lib."""
    if lib == "pygpu":
        return (None, lambda x: pygpu.relu(x), lambda x, y: x + y)
    if lib == "torch":
        return (None, lambda x: torch.relu(x), lambda x, y: x + y)
    if lib == "cupy":
        return (cupy.asarray, lambda x: cupy.maximum(x, 0),
                lambda x, y: x + y)
    return (np.copy, lambda x: np.maximum(x, 0), lambda x, y: x + y)


def _maker(ctx, lib):
    dev = ctx.device
    if lib == "pygpu":
        return lambda a: pygpu.tensor(a, device=dev)
    if lib == "torch":
        return lambda a: torch.tensor(a, device=dev)
    return _lib_ops(lib)[0]


def label(n):
    """2^k for a power of two, else n."""
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def run(ctx):
    gpu = ctx.device == "cuda"
    sizes = ctx.sizes((GPU_QUICK if ctx.quick else GPU_SIZES) if gpu else
                      (CPU_QUICK if ctx.quick else CPU_SIZES))
    rng = np.random.default_rng(0)
    libs = ["pygpu"] + ctx.peers
    for n in sizes:
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        make = _maker(ctx, "pygpu")
        pairs = ctx.ring(lambda: (make(a), pygpu.empty(n, device=ctx.device)),
                         2 * a.nbytes)

        def copy():
            src, dst = pairs()
            return dst.copy_(src)
        for op, nbytes, ref, rtol in (
                ("relu", 2 * a.nbytes, np.maximum(a, 0), 0.0),
                ("add", 3 * a.nbytes, a.astype(np.float64) + b, 1e-6)):
            impls = {}
            for lib in libs:
                mk = _maker(ctx, lib)
                f = _lib_ops(lib)[1 if op == "relu" else 2]
                if op == "relu":
                    r = ctx.ring(lambda mk=mk: (mk(a),), a.nbytes)
                else:
                    r = ctx.ring(lambda mk=mk: (mk(a), mk(b)), 2 * a.nbytes)
                impls[lib] = Impl(lambda f=f, r=r: f(*r()), lib)
            impls["copy"] = Impl(copy, "pygpu", reference=True, ref=a,
                                 work=2 * a.nbytes)
            ctx.case(f"{op} n={label(n)}", impls, ref=ref,
                     rtol=rtol, work=(nbytes, "GB/s"), size=n,
                     dtype="float32")
            impls = None
