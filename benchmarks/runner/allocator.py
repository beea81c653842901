"""The caching allocator: a cached 1 MiB allocate+free pair timed in C on
the allocator core (bench_allocator.py; the host-memory allocator, and
cuda:0's on a GPU), then the host time of empty(n) (one allocation and one
free through each library) for a few sizes, pygpu against each peer."""
import numpy as np

import pygpu
from bench_allocator import MiB, SIZES, core_pair_ns, empty_contenders
from pygpu import _C

from .core import Impl, WrongResult, torch
from .cpuload import LoadMeter

NAME = "allocator"


def _core_rows(ctx):
    if not ctx.measures_by_other_means():
        return
    iters, repeats = (20000, 5) if ctx.quick else (200000, 11)
    allocators = [("host", _C.Allocator(1 << 34))]
    if ctx.device == "cuda":
        allocators.append(("cuda:0", _C._cuda_allocator(0)))
    for name, alloc in allocators:
        meter = LoadMeter().start()
        ns = core_pair_ns(alloc, MiB, iters, repeats)
        ctx.record_value(f"core pair 1 MiB ({name})", "pygpu", ns, "ns",
                         size=MiB, note="timed in C, median of "
                         f"{repeats} x {iters}", load=meter.stop())


def _shape_is(n):
    def check(got):
        if got.shape != (n,):
            raise WrongResult(f"shape {got.shape}, expected ({n},)")
    return check


def run(ctx):
    _core_rows(ctx)
    for n in ctx.sizes(SIZES):
        if ctx.device == "cuda":
            impls = {lib: Impl(fn, lib)
                     for lib, fn in empty_contenders(n).items()}
        else:
            impls = {"pygpu": Impl(lambda: pygpu.empty(n))}
            if "torch" in ctx.peers:
                impls["torch"] = Impl(lambda: torch.empty(n), "torch")
            impls["numpy"] = Impl(lambda: np.empty(n, np.float32), "numpy")
        ctx.case(f"empty({n})", impls, ref=_shape_is(n),
                 work=(None, "ns"), size=n, dtype="float32", host=True)
