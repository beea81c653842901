"""The tutorial's model, Sequential(Linear(784, 256), ReLU(),
Linear(256, 10)), forward at batch 32, 1024 and 8192: pygpu against torch
with the same weights on the same device (CUDA when present), and against
torch and a NumPy forward on the CPU.  Each case is validated against
NumPy float64 before timing; figures are medians of interleaved rounds
(bench_ops.compare), so the ratios come from one run.

  python benchmarks/bench_nn.py [--json PATH] [--quick] [--cpu-only]

torch rows appear only when torch imports; without it pygpu and NumPy run.
"""
import argparse
import json
import sys

import numpy as np

import pygpu
from pygpu import nn
from bench_ops import HAS_CUDA, TORCH_CUDA, check, compare, ratios, \
    report, rows, torch
from provenance import provenance

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--cpu-only", action="store_true")
    args = ap.parse_args()
    # Inference in both libraries: no graph is recorded.
    pygpu.set_grad_enabled(False)
    if torch is not None:
        torch.set_grad_enabled(False)
    print(f"pygpu {pygpu.__version__}, numpy {np.__version__}, torch "
          f"{getattr(torch, '__version__', 'absent')}")
    bench("cpu", args.quick)
    if HAS_CUDA and not args.cpu_only:
        print("device:", pygpu.cuda.get_device_name())
        bench("cuda", args.quick)
    if args.json:
        meta = provenance()
        meta.update({"pygpu": pygpu.__version__, "numpy": np.__version__,
                     "torch": getattr(torch, "__version__", None),
                     "device": pygpu.cuda.get_device_name() if HAS_CUDA
                     else "cpu", "model": "784-256-relu-10 float32"})
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
