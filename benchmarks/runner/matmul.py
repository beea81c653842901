"""Matrix multiply throughput (TFLOP/s) of n x n by n x n: float32, TF32
(pygpu.backends.cuda.matmul.allow_tf32 and torch's switch on) and float16
on a GPU, n = 256..8192; float32, n = 256..2048, on the CPU.  Each result
is checked on its first rows against NumPy in float64."""
import numpy as np

import pygpu

from .core import Impl, cupy, torch

NAME = "matmul"
GPU_SIZES = [256, 512, 1024, 2048, 4096, 8192]
GPU_QUICK = [256, 1024, 4096]
CPU_SIZES = [256, 512, 1024, 2048]
CPU_QUICK = [256, 1024, 2048]
ROWS = 16  # rows of each result checked against NumPy
TOL = {"float32": 1e-4, "tf32": 1e-2, "float16": 1e-2}


class _Tf32:
    """allow_tf32 on in pygpu and torch for the with block."""

    def __enter__(self):
        self.saved = pygpu.backends.cuda.matmul.allow_tf32
        pygpu.backends.cuda.matmul.allow_tf32 = True
        if torch is not None:
            self.tsaved = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True

    def __exit__(self, *exc):
        pygpu.backends.cuda.matmul.allow_tf32 = self.saved
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = self.tsaved


def _impls(ctx, a, b, kind):
    """{lib: Impl} multiplying copies of a and b in each library."""
    dev = ctx.device
    nbytes = a.nbytes + b.nbytes
    impls = {}
    ring = ctx.ring(lambda: (pygpu.tensor(a, device=dev),
                             pygpu.tensor(b, device=dev)), nbytes)
    impls["pygpu"] = Impl(lambda: pygpu.matmul(*ring()))
    if "torch" in ctx.peers:
        tr = ctx.ring(lambda: (torch.tensor(a, device=dev),
                               torch.tensor(b, device=dev)), nbytes)
        impls["torch"] = Impl(lambda: torch.matmul(*tr()), "torch")
    if "cupy" in ctx.peers and kind != "tf32":
        cr = ctx.ring(lambda: (cupy.asarray(a), cupy.asarray(b)), nbytes)
        impls["cupy"] = Impl(lambda: cupy.matmul(*cr()), "cupy")
    if "numpy" in ctx.peers:
        impls["numpy"] = Impl(lambda: np.matmul(a, b), "numpy")
    return impls


def run(ctx):
    gpu = ctx.device == "cuda"
    if gpu:
        sizes = ctx.sizes(GPU_QUICK if ctx.quick else GPU_SIZES)
        kinds = ["float32", "tf32", "float16"]
    else:
        sizes = ctx.sizes(CPU_QUICK if ctx.quick else CPU_SIZES)
        kinds = ["float32"]
    rng = np.random.default_rng(0)
    for kind in kinds:
        for n in sizes:
            npdt = np.float16 if kind == "float16" else np.float32
            a = rng.standard_normal((n, n)).astype(npdt)
            b = rng.standard_normal((n, n)).astype(npdt)
            ref = a[:ROWS].astype(np.float64) @ b.astype(np.float64)
            impls = _impls(ctx, a, b, kind)
            if gpu and kind == "tf32" and "cupy" in ctx.peers:
                ctx.skip(f"matmul {kind} {n}", "cupy has no run-time TF32 "
                         "switch (CUPY_TF32 is read at import)", "cupy")
            args = dict(ref=ref, rtol=TOL[kind], work=(2.0 * n**3,
                                                       "TFLOP/s"),
                        size=n, dtype=kind, check_rows=ROWS)
            if kind == "tf32":
                with _Tf32():
                    ctx.case(f"matmul {kind} {n}", impls, **args)
            else:
                ctx.case(f"matmul {kind} {n}", impls, **args)
            impls = None
