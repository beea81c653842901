"""linear (x @ W.T + b) and linear+ReLU, in TFLOP/s, for a few layer
shapes (batch x in -> out, float32): pygpu's linear_relu (what a Linear
followed by a ReLU in nn.Sequential runs; on a GPU cuBLASLt's BIAS
epilogue, then the relu kernel, which keeps NaN as torch does) against
the same two ops called separately in pygpu and in each peer."""
import numpy as np

import pygpu
import pygpu.nn.functional as F

from .core import Impl, torch

NAME = "linear"
GPU_SHAPES = [(64, 784, 256), (1024, 1024, 1024), (4096, 4096, 4096),
              (8192, 1024, 4096)]
GPU_QUICK = GPU_SHAPES[:3]
CPU_SHAPES = [(64, 784, 256), (256, 4096, 1024), (1024, 1024, 1024)]
CPU_QUICK = [(64, 784, 256), (1024, 1024, 1024)]


def run(ctx):
    gpu = ctx.device == "cuda"
    dev = ctx.device
    shapes = (GPU_QUICK if ctx.quick else GPU_SHAPES) if gpu else \
        (CPU_QUICK if ctx.quick else CPU_SHAPES)
    rng = np.random.default_rng(0)
    for (bsz, fin, fout) in shapes:
        x = rng.standard_normal((bsz, fin)).astype(np.float32)
        w = (rng.standard_normal((fout, fin)) / np.sqrt(fin)).astype(
            np.float32)
        b = rng.standard_normal(fout).astype(np.float32)
        lin = x.astype(np.float64) @ w.T.astype(np.float64) + b
        nbytes = x.nbytes + w.nbytes + b.nbytes
        pr = ctx.ring(lambda: tuple(pygpu.tensor(v, device=dev)
                                    for v in (x, w, b)), nbytes)
        lin_impls = {"pygpu": Impl(lambda: F.linear(*pr()))}
        relu_impls = {
            "pygpu": Impl(lambda: F.linear_relu(*pr())),
            "pygpu separate": Impl(lambda: pygpu.relu(F.linear(*pr())))}
        if "torch" in ctx.peers:
            tf = torch.nn.functional
            tr = ctx.ring(lambda: tuple(torch.tensor(v, device=dev)
                                        for v in (x, w, b)), nbytes)
            lin_impls["torch"] = Impl(lambda: tf.linear(*tr()), "torch")
            relu_impls["torch"] = Impl(lambda: torch.relu(tf.linear(*tr())),
                                       "torch")
        if "numpy" in ctx.peers:
            wt = np.ascontiguousarray(w.T)

            def np_linear():
                h = x @ wt
                h += b
                return h

            def np_linear_relu():
                h = np_linear()
                return np.maximum(h, 0, out=h)
            lin_impls["numpy"] = Impl(np_linear, "numpy")
            relu_impls["numpy"] = Impl(np_linear_relu, "numpy")
        shape = f"{bsz}x{fin}->{fout}"
        args = dict(rtol=1e-4, work=(2.0 * bsz * fin * fout, "TFLOP/s"),
                    size=shape, dtype="float32")
        ctx.case(f"linear {shape}", lin_impls, ref=lin, **args)
        ctx.case(f"linear+relu {shape}", relu_impls,
                 ref=np.maximum(lin, 0), **args)
        lin_impls = relu_impls = None
