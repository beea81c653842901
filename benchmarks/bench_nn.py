"""The tutorial's model, Sequential(Linear(784, 256), ReLU(),
Linear(256, 10)), forward at batch 32, 1024 and 8192: pygpu against torch
with the same weights on the same device (CUDA when present), and against
torch and a NumPy forward on the CPU.  Each case is validated against
NumPy float64 before timing; figures are medians of interleaved rounds
(bench_ops.compare), so the ratios come from one run.

  python benchmarks/bench_nn.py [--json PATH] [--quick] [--cpu-only]

torch rows appear only when torch imports; without it pygpu and NumPy run.
"""
import sys

import numpy as np

import pygpu
from pygpu import nn
from bench_ops import TORCH_CUDA, check, compare, each_device, ratios, \
    report, save, script_args, torch

BATCHES = (32, 1024, 8192)


def make_models(device):
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    w = [p.detach().cpu().numpy() for p in model.parameters()]
    peers = {"pygpu": model}
    if torch is not None and (device == "cpu" or TORCH_CUDA):
        tm = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 10)).to(device)
        with torch.no_grad():
            for p, v in zip(tm.parameters(), w):
                p.copy_(torch.from_numpy(v))
        peers["torch"] = tm
    return peers, w


def numpy_forward(w):
    w0t, w2t = np.ascontiguousarray(w[0].T), np.ascontiguousarray(w[2].T)

    def fwd(x):
        h = x @ w0t
        h += w[1]
        np.maximum(h, 0, out=h)
        y = h @ w2t
        y += w[3]
        return y
    return fwd


def bench(device, quick):
    peers, w = make_models(device)
    sync = pygpu.cuda.synchronize if device == "cuda" else None
    tsync = torch.cuda.synchronize if device == "cuda" and torch else None
    rng = np.random.default_rng(0)
    for batch in BATCHES:
        xs = rng.standard_normal((batch, 784)).astype(np.float32)
        ref = np.maximum(xs.astype(np.float64) @ w[0].T.astype(np.float64)
                         + w[1], 0) @ w[2].T.astype(np.float64) + w[3]
        x = pygpu.tensor(xs, device=device)
        model = peers["pygpu"]
        check(f"{device} pygpu b={batch}", model(x).cpu().numpy(), ref, 1e-4)
        impls = {"pygpu": (lambda: model(x), sync)}
        if "torch" in peers:
            tx = torch.tensor(xs, device=device)
            tm = peers["torch"]
            check(f"{device} torch b={batch}", tm(tx).cpu().numpy(), ref,
                  1e-4)
            impls["torch"] = (lambda: tm(tx), tsync)
        if device == "cpu":
            fwd = numpy_forward(w)
            check(f"numpy b={batch}", fwd(xs), ref, 1e-4)
            impls["numpy"] = (lambda: fwd(xs), None)
        inner = max(3, int(2e8 / (batch * 784 * 256 * 2)) * 10)
        if quick:
            inner = max(2, inner // 4)
        case = f"mlp forward b={batch}"
        for impl, us in compare(impls, inner, 15 if quick else 31).items():
            report(device, case, impl, us, "us")
        ratios(device, case, False, "numpy")


def main():
    args = script_args()
    # Inference in both libraries: no graph is recorded.
    pygpu.set_grad_enabled(False)
    if torch is not None:
        torch.set_grad_enabled(False)
    each_device(bench, args)
    save(args.json, model="784-256-relu-10 float32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
