"""softmax over the last dim, and an elementwise chain, against torch on
the same device and against a device-to-device copy of the same bytes
measured in the same run.  Every case validates its result against NumPy
before timing.  Figures are medians of interleaved repetitions.

  python benchmarks/bench_softmax.py [--json PATH] [--quick] [--cpu-only]

Bandwidth counts the bytes a single pass needs (read the input once, write
the output once), so a figure near the copy's means the op runs at memory
speed.  The goal on CUDA: softmax at least 0.9x the copy's bandwidth.  The
chain (x * 2 + 1).relu() is three ops in pygpu (no elementwise fusion):
its figure shows what the extra passes cost.
CPU rows always run; CUDA rows run when pygpu sees a GPU (torch rows when
torch imports and sees it too).
"""
import sys

import numpy as np

import pygpu
from bench_ops import check, compare, each_device, ratios, report, save, \
    script_args

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None

HAS_CUDA = pygpu.cuda.is_available()
TORCH_CUDA = torch is not None and torch.cuda.is_available()

SHAPES = [(4096, 4096), (32, 50000)]


def np_softmax(a):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def bench(device, quick):
    """The softmax and chain cases on one device."""
    on_cuda = device == "cuda"
    if torch is not None:
        torch.set_grad_enabled(False)
    use_torch = torch is not None and (TORCH_CUDA or not on_cuda)
    psync = pygpu.cuda.synchronize if on_cuda else None
    tsync = torch.cuda.synchronize if on_cuda and use_torch else None
    rng = np.random.default_rng(0)
    group = f"{device}"
    reps = 15 if quick else 31
    for shape in SHAPES:
        a = (rng.standard_normal(shape) * 3).astype(np.float32)
        nbytes = 2 * a.nbytes  # read once, write once
        x = pygpu.tensor(a, device=device)
        dst = pygpu.empty(shape, device=device)
        inner = (20 if on_cuda else 2) if a.size > 1 << 20 else \
            (100 if on_cuda else 10)
        # validate on a few rows (the whole reference is slow in float64)
        check(f"{device} softmax {shape}", x.softmax(-1)[:8].cpu().numpy(),
              np_softmax(a[:8]), 1e-5)
        impls = {"pygpu": (lambda: x.softmax(-1), psync),
                 "copy": (lambda: dst.copy_(x), psync)}
        if use_torch:
            tx = torch.tensor(a, device=device)
            tdst = torch.empty_like(tx)
            check(f"{device} torch softmax", tx.softmax(-1)[:8].cpu().numpy(),
                  np_softmax(a[:8]), 1e-5)
            impls["torch"] = (lambda: tx.softmax(-1), tsync)
            impls["torch-copy"] = (lambda: tdst.copy_(tx), tsync)
        case = f"softmax {shape[0]}x{shape[1]} f32"
        for impl, us in compare(impls, inner, reps).items():
            report(group, case, impl, nbytes / us / 1e3, "GB/s")
        ratios(group, case, True, "copy")
        impls = tx = tdst = x = dst = None

    # the elementwise chain over 2^24 float32
    n = 1 << 24
    a = rng.standard_normal(n).astype(np.float32)
    x = pygpu.tensor(a, device=device)
    dst = pygpu.empty(n, device=device)
    check(f"{device} chain", ((x * 2 + 1).relu())[:4096].cpu().numpy(),
          np.maximum(a[:4096].astype(np.float64) * 2 + 1, 0), 1e-6)
    impls = {"pygpu": (lambda: (x * 2 + 1).relu(), psync),
             "copy": (lambda: dst.copy_(x), psync)}
    if use_torch:
        tx = torch.tensor(a, device=device)
        tdst = torch.empty_like(tx)
        impls["torch"] = (lambda: (tx * 2 + 1).relu(), tsync)
        impls["torch-copy"] = (lambda: tdst.copy_(tx), tsync)
    case = "chain (x*2+1).relu() 2^24 f32"
    for impl, us in compare(impls, 20 if on_cuda else 3, reps).items():
        report(group, case, impl, 2 * a.nbytes / us / 1e3, "GB/s")
    ratios(group, case, True, "copy")


def main():
    args = script_args()
    if torch is not None:
        print("torch threads:", torch.get_num_threads())
    each_device(bench, args)
    save(args.json,
         torch_threads=torch.get_num_threads() if torch else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
