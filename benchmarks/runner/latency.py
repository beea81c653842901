"""Per-call host latency of small calls: relu and add of one element, a
64x64 matmul, empty(1) and .to("cuda") of a one-element tensor.  Host time
per call over long batches (synchronized at each batch's end), so the
figure is the cost of the call path, not of the arithmetic."""
import numpy as np

import pygpu

from .core import Impl, WrongResult, cupy, torch

NAME = "latency"


def _inputs(ctx, a):
    """{lib: a converted for lib on the device}."""
    dev = ctx.device
    out = {"pygpu": pygpu.tensor(a, device=dev)}
    for lib in ctx.peers:
        if lib == "numpy":
            out[lib] = a.copy()
        elif lib == "torch":
            out[lib] = torch.tensor(a, device=dev)
        elif lib == "cupy":
            out[lib] = cupy.asarray(a)
    return out


def _relu(lib):
    return {"pygpu": lambda x: pygpu.relu(x),
            "torch": lambda x: torch.relu(x),
            "numpy": lambda x: np.maximum(x, 0),
            "cupy": lambda x: cupy.maximum(x, 0)}[lib]


def _empty(lib, dev):
    return {"pygpu": lambda: pygpu.empty(1, device=dev),
            "torch": lambda: torch.empty(1, device=dev),
            "numpy": lambda: np.empty(1, np.float32),
            "cupy": lambda: cupy.empty(1, np.float32)}[lib]


def _shape_is(shape):
    def check(got):
        if got.shape != shape:
            raise WrongResult(f"shape {got.shape}, expected {shape}")
    return check


def run(ctx):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1).astype(np.float32)
    b = rng.standard_normal(1).astype(np.float32)
    xa, xb = _inputs(ctx, a), _inputs(ctx, b)
    libs = list(xa)

    def bind(f, *args):
        return lambda: f(*args)

    ctx.case("relu 1 elem",
             {lib: Impl(bind(_relu(lib), xa[lib]), lib) for lib in libs},
             ref=np.maximum(a, 0), size=1, dtype="float32", host=True)
    ctx.case("add 1 elem",
             {lib: Impl(bind(lambda x, y: x + y, xa[lib], xb[lib]), lib)
              for lib in libs},
             ref=a.astype(np.float64) + b, rtol=1e-6, size=1,
             dtype="float32", host=True)
    m = rng.standard_normal((64, 64)).astype(np.float32)
    n = rng.standard_normal((64, 64)).astype(np.float32)
    xm, xn = _inputs(ctx, m), _inputs(ctx, n)
    ctx.case("matmul 64x64",
             {lib: Impl(bind(lambda x, y: x @ y, xm[lib], xn[lib]), lib)
              for lib in libs},
             ref=m.astype(np.float64) @ n, rtol=1e-5, size=64,
             dtype="float32", host=True)
    ctx.case("empty(1)",
             {lib: Impl(_empty(lib, ctx.device), lib) for lib in libs},
             ref=_shape_is((1,)), size=1, dtype="float32", host=True)
    if ctx.device != "cuda":
        ctx.skip('.to("cuda") 1 elem', "no CUDA device: "
                 + str(pygpu._C._cuda_unavailable_reason()))
        return
    h = {"pygpu": pygpu.tensor(a)}
    impls = {"pygpu": Impl(lambda: h["pygpu"].to("cuda"))}
    if "torch" in libs:
        h["torch"] = torch.tensor(a)
        impls["torch"] = Impl(lambda: h["torch"].to("cuda"), "torch")
    if "cupy" in libs:
        impls["cupy"] = Impl(lambda: cupy.asarray(a), "cupy")
    ctx.case('.to("cuda") 1 elem', impls, ref=a, size=1, dtype="float32",
             host=True)
