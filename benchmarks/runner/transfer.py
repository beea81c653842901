"""Host-to-device and device-to-host transfers, pageable and pinned host
memory, 1 KiB..1 GiB, in GB/s (GPU only).  Host to device is x.to("cuda")
of a host tensor (pinned or not); device to host is .cpu() into pageable
memory, and copy_ into a pinned tensor made beforehand (torch's idiom for
pinned downloads).  cupy, when present: asarray / get(out=)."""
import numpy as np

import pygpu

from .core import Impl, cupy, torch

NAME = "transfer"
SIZES = [1 << k for k in range(10, 31, 2)]  # bytes
QUICK = [1 << k for k in (10, 16, 20, 26, 30)]


def _label(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def _h2d(a, pinned, peers):
    h = pygpu.tensor(a)
    if pinned:
        h = h.pin_memory()
    impls = {"pygpu": Impl(lambda: h.to("cuda"))}
    if "torch" in peers:
        th = torch.tensor(a)
        if pinned:
            th = th.pin_memory()
        impls["torch"] = Impl(lambda: th.to("cuda"), "torch")
    if "cupy" in peers:
        ch = a
        if pinned:
            import cupyx
            ch = cupyx.empty_pinned(a.shape, a.dtype)
            ch[...] = a
        impls["cupy"] = Impl(lambda: cupy.asarray(ch), "cupy")
    return impls


def _d2h(a, pinned, peers):
    d = pygpu.tensor(a, device="cuda")
    if pinned:
        out = pygpu.empty(a.shape).pin_memory()
        impls = {"pygpu": Impl(lambda: out.copy_(d))}
    else:
        impls = {"pygpu": Impl(lambda: d.cpu())}
    if "torch" in peers:
        td = torch.tensor(a, device="cuda")
        if pinned:
            tout = torch.empty(a.shape).pin_memory()
            impls["torch"] = Impl(lambda: tout.copy_(td), "torch")
        else:
            impls["torch"] = Impl(lambda: td.cpu(), "torch")
    if "cupy" in peers:
        cd = cupy.asarray(a)
        if pinned:
            import cupyx
            cout = cupyx.empty_pinned(a.shape, a.dtype)
            impls["cupy"] = Impl(lambda: cd.get(out=cout), "cupy")
        else:
            impls["cupy"] = Impl(lambda: cd.get(), "cupy")
    return impls


def run(ctx):
    if ctx.device != "cuda":
        ctx.skip("host<->device transfers", "no CUDA device: "
                 + str(pygpu._C._cuda_unavailable_reason()))
        return
    rng = np.random.default_rng(0)
    for nbytes in ctx.sizes(QUICK if ctx.quick else SIZES):
        a = rng.standard_normal(max(1, nbytes // 4)).astype(np.float32)
        for pinned in (False, True):
            mem = "pinned" if pinned else "pageable"
            for way, make in (("h2d", _h2d), ("d2h", _d2h)):
                impls = make(a, pinned, ctx.peers)
                ctx.case(f"{way} {mem} {_label(nbytes)}", impls, ref=a,
                         work=(a.nbytes, "GB/s"), size=a.nbytes,
                         dtype="float32", note=mem)
                impls = None
