"""Copies between strided layouts on the CPU against torch in the same
run: .contiguous() of an expand (nearest upsampling), of a transpose of
the last two dims, of a 4096x4096 transpose and of a broadcast along a
middle dim, and a float32 -> float16 conversion of a transposed matrix;
one thread and two; with --before DIR, a copy of the pygpu package with
its extension at DIR/pygpu (an earlier build) too, as impl 'before'.
Every case validates against NumPy before timing; figures are medians of
interleaved repetitions, in milliseconds.

  python benchmarks/bench_copy.py [--json PATH] [--quick] [--before DIR]

torch's .to(dtype) keeps a transposed layout, so its row asks for a
contiguous result (memory_format=torch.contiguous_format), which is what
pygpu's .to(dtype) returns.
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


def cases(rng, quick):
    """(name, NumPy input, pygpu op, torch op, NumPy reference)."""
    s = 2 if quick else 1
    up = rng.random((32 // s, 64, 28, 28), dtype=np.float32)
    sq = rng.random((32 // s, 64, 56, 56), dtype=np.float32)
    big = rng.random((4096 // s, 4096 // s), dtype=np.float32)
    mid = rng.random((1024 // s, 1, 1024), dtype=np.float32)
    half = rng.random((2048 // s, 2048 // s), dtype=np.float32)

    def upsample(t):
        n, c, h, w = t.shape
        return t[:, :, :, None, :, None].expand(n, c, h, 2, w, 2)

    def to16(lib):
        if lib is torch:
            return lambda t: t.t().to(torch.float16,
                                      memory_format=torch.contiguous_format)
        return lambda t: t.t().to(pygpu.float16)
    return [
        ("expand 2x upsample", up, lambda t: upsample(t).contiguous(),
         lambda t: upsample(t).contiguous(),
         np.broadcast_to(up[:, :, :, None, :, None],
                         up.shape[:3] + (2, up.shape[3], 2))),
        ("transpose(2,3) 4-d", sq, lambda t: t.transpose(2, 3).contiguous(),
         lambda t: t.transpose(2, 3).contiguous(), sq.transpose(0, 1, 3, 2)),
        ("transpose 2-d", big, lambda t: t.t().contiguous(),
         lambda t: t.t().contiguous(), big.T),
        ("expand middle dim x64", mid,
         lambda t: t.expand(t.shape[0], 64, 1024).contiguous(),
         lambda t: t.expand(t.shape[0], 64, 1024).contiguous(),
         np.broadcast_to(mid, (mid.shape[0], 64, 1024))),
        ("f32->f16 of transpose", half, to16(pygpu), to16(torch),
         half.T.astype(np.float16)),
    ]


def bench(quick, before):
    rng = np.random.default_rng(0)
    reps = 5 if quick else 15
    for name, a, pop, top, ref in cases(rng, quick):
        x = pygpu.tensor(a)
        check(f"cpu {name}", pop(x).numpy()[:4], ref[:4], 0)
        impls = {"pygpu": (lambda: pop(x), None)}
        if before is not None:
            bx = before.tensor(a)
            bop = pop
            if name.startswith("f32->f16"):
                def bop(t):
                    return t.t().to(before.float16)
            check(f"cpu before {name}", bop(bx).numpy()[:4], ref[:4], 0)
            impls["before"] = (lambda: bop(bx), None)
        if torch is not None:
            tx = torch.tensor(a)
            check(f"cpu torch {name}", top(tx).numpy()[:4], ref[:4], 0)
            impls["torch"] = (lambda: top(tx), None)
        for n in (1, 2):
            pygpu.set_num_threads(n)
            if before is not None:
                before.set_num_threads(n)
            if torch is not None:
                torch.set_num_threads(n)
            group = f"cpu t={n}"
            for impl, us in compare(impls, 2, reps, warm=1).items():
                report(group, name, impl, us / 1e3, "ms")
            ratios(group, name, False, "torch")


def main():
    args = script_args(cpu_only=False, before=True)
    threads = pygpu.get_num_threads()
    before = load_before(args.before) if args.before else None
    bench(args.quick, before)
    pygpu.set_num_threads(threads)
    save(args.json, before=before_name(args.before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
