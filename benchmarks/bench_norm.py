"""LayerNorm and BatchNorm2d, forward and forward + backward, against torch
on the same device.  Every case validates pygpu's output and input
gradient against NumPy float64 before timing.  Figures are medians of
interleaved repetitions, in milliseconds per step.

  python benchmarks/bench_norm.py [--json PATH] [--quick] [--cpu-only]

The cases: LayerNorm(768) over (32*128, 768) float32 (a transformer's
activations) and BatchNorm2d(64) in training mode over (32, 64, 56, 56)
float32 (a ResNet's first stage).  The goal: pygpu's step at most 1.0x
torch's.  CPU rows always run; CUDA rows run when pygpu sees a GPU (torch
rows when torch imports and sees it too).
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

TORCH_CUDA = torch is not None and torch.cuda.is_available()

CASES = [("LayerNorm", (32 * 128, 768)), ("BatchNorm2d", (32, 64, 56, 56))]


def np_reference(kind, a, g):
    """(y, dx) of the case with unit weight and zero bias, in float64."""
    a, g = a.astype(np.float64), g.astype(np.float64)
    dims = (-1,) if kind == "LayerNorm" else (0, 2, 3)
    mean = a.mean(dims, keepdims=True)
    rs = 1 / np.sqrt(a.var(dims, keepdims=True) + 1e-5)
    xh = (a - mean) * rs
    dx = rs * (g - g.mean(dims, keepdims=True) -
               xh * (g * xh).mean(dims, keepdims=True))
    return xh, dx


def make(lib, kind, a, g, device, backward):
    """A step of lib's module on fresh tensors, and the tensors."""
    shape = a.shape
    m = (lib.nn.LayerNorm(shape[-1]) if kind == "LayerNorm"
         else lib.nn.BatchNorm2d(shape[1])).to(device)
    x = lib.tensor(a, device=device, requires_grad=backward)
    gt = lib.tensor(g, device=device)

    def step():
        y = m(x)
        if backward:
            y.backward(gt)
        return y
    return step, x


def bench(device, quick):
    on_cuda = device == "cuda"
    use_torch = torch is not None and (TORCH_CUDA or not on_cuda)
    psync = pygpu.cuda.synchronize if on_cuda else None
    tsync = torch.cuda.synchronize if on_cuda and use_torch else None
    rng = np.random.default_rng(0)
    reps = 9 if quick else 21
    for kind, shape in CASES:
        a = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        g = rng.standard_normal(shape).astype(np.float32)
        ref_y, ref_dx = np_reference(kind, a, g)
        for backward in (False, True):
            step, x = make(pygpu, kind, a, g, device, backward)
            y = step()
            check(f"{device} {kind}", y.detach().cpu().numpy(), ref_y, 1e-5)
            if backward:
                check(f"{device} {kind} dx", x.grad.cpu().numpy(), ref_dx,
                      1e-4)
            impls = {"pygpu": (step, psync)}
            if use_torch:
                impls["torch"] = (make(torch, kind, a, g, device,
                                       backward)[0], tsync)
            case = f"{kind} {'fwd+bwd' if backward else 'fwd'}"
            for impl, us in compare(impls, 3 if on_cuda else 1, reps).items():
                report(device, case, impl, us / 1e3, "ms")
            ratios(device, case, False, "torch")


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
