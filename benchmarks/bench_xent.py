"""cross_entropy over class indices on the CPU, forward and forward +
backward, against torch in the same run (and an earlier build of pygpu
with --before DIR, a copy of the pygpu package with its extension at
DIR/pygpu, timed interleaved with this one).  Every case validates its
loss and input gradient against NumPy float64 before timing.  Figures are
medians of interleaved repetitions (bench_ops.compare).

  python benchmarks/bench_xent.py [--json PATH] [--quick] [--before DIR]
"""
import sys

import numpy as np

import pygpu
from bench_ops import before_name, check, compare, load_before, ratios, \
    report, save, script_args

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None

SHAPES = [(32, 10), (2048, 1000)]


def np_reference(x, t):
    """The mean loss and its gradient with respect to x, in float64."""
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(1, keepdims=True))
    n = x.shape[0]
    loss = (lse[:, 0] - x[np.arange(n), t]).mean()
    g = np.exp(x - lse)
    g[np.arange(n), t] -= 1
    return loss, g / n


def impls_for(lib, a, t, backward):
    x = lib.tensor(a, requires_grad=backward)
    y = lib.tensor(t)
    F = lib.nn.functional

    def fwd():
        return F.cross_entropy(x, y)

    def fwd_bwd():
        x.grad = None
        loss = F.cross_entropy(x, y)
        loss.backward()
        return loss
    return (fwd_bwd if backward else fwd), x


def bench(quick, before):
    rng = np.random.default_rng(0)
    libs = {"pygpu": pygpu}
    if before is not None:
        libs["before"] = before
    if torch is not None:
        libs["torch"] = torch
    reps = 11 if quick else 31
    for shape in SHAPES:
        a = (rng.standard_normal(shape) * 2).astype(np.float32)
        t = rng.integers(0, shape[1], shape[0])
        want, gwant = np_reference(a, t)
        inner = 2000 if shape[1] < 100 else 10
        if quick:
            inner = max(2, inner // 4)
        for backward in (False, True):
            impls = {}
            for name, lib in libs.items():
                fn, x = impls_for(lib, a, t, backward)
                loss = fn()
                check(f"{name} {shape}", [float(loss.item())], [want], 1e-5)
                if backward:
                    check(f"{name} {shape} grad", x.grad.detach().numpy(),
                          gwant, 1e-5)
                impls[name] = (fn, None)
            case = f"xent {'fwd+bwd' if backward else 'fwd'} " \
                f"{shape[0]}x{shape[1]}"
            for impl, us in compare(impls, inner, reps).items():
                report("cpu", case, impl, us, "us")
            ratios("cpu", case, False, "torch")


def main():
    args = script_args(cpu_only=False, before=True)
    if torch is not None:
        print("torch threads:", torch.get_num_threads())
    before = load_before(args.before) if args.before else None
    bench(args.quick, before)
    save(args.json, before=before_name(args.before),
         torch_threads=torch.get_num_threads() if torch else None,
         device="cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
