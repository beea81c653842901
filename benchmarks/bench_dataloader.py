"""One epoch of a DataLoader over a TensorDataset of 60,000 random 28x28
float32 images with int64 labels, batch 64, shuffle=True, num_workers 0
and 2: pygpu against torch (when it imports), on the CPU.  Before timing,
pygpu's batches are checked against NumPy indexing of the same order, and
its one-gather TensorDataset path against the item-by-item collate.
Figures are medians over interleaved epochs; after each epoch the timer
sleeps (untimed) so that the other library's idle threads have gone to
sleep before its turn (bench_ops.compare's settle).

  python benchmarks/bench_dataloader.py [--json PATH] [--quick]
"""
import numpy as np

import pygpu
from bench_ops import compare, ratios, report, save, script_args, torch

N, BATCH, WORKERS = 60000, 64, (0, 2)
SETTLE_S = 0.05


def make_data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, n)
    return images, labels


def make_loader(lib, images, labels, workers, **kw):
    data = lib.utils.data
    ds = data.TensorDataset(lib.from_numpy(images), lib.from_numpy(labels))
    kw.setdefault("shuffle", True)
    return data.DataLoader(ds, batch_size=BATCH, num_workers=workers, **kw)


def epoch(loader):
    """One pass; returns the number of samples seen."""
    seen = 0
    for x, _ in loader:
        seen += x.shape[0]
    return seen


def validate(images, labels, workers):
    """pygpu's batches in a fixed order against NumPy's indexing, and the
    one-gather path against default_collate of single items."""
    n = 1000
    order = np.random.default_rng(1).permutation(n).tolist()
    ims, labs = images[:n], labels[:n]
    data = pygpu.utils.data
    fast = make_loader(pygpu, ims, labs, workers, shuffle=False,
                       sampler=order)
    slow = make_loader(pygpu, ims, labs, workers, shuffle=False,
                       sampler=order,
                       collate_fn=lambda b: data.default_collate(b))
    for i, ((x, y), (xs, ys)) in enumerate(zip(fast, slow)):
        idx = order[i * BATCH:(i + 1) * BATCH]
        for got in (x, xs):
            if not np.array_equal(got.numpy(), ims[idx]):
                raise SystemExit(f"batch {i}: images differ from NumPy")
        for got in (y, ys):
            if got.dtype != pygpu.int64 or not np.array_equal(
                    got.numpy(), labs[idx]):
                raise SystemExit(f"batch {i}: labels differ from NumPy")
        if x.dtype != xs.dtype or tuple(x.shape) != tuple(xs.shape):
            raise SystemExit(f"batch {i}: the one-gather path differs")


def epoch_times(workers, quick=False, data=None):
    """{impl: median microseconds per epoch} of pygpu and torch (when it
    imports) with num_workers=workers, after validate()."""
    images, labels = data if data is not None else make_data()
    validate(images, labels, workers)
    impls = {}
    for name, lib in (("pygpu", pygpu), ("torch", torch)):
        if lib is None:
            continue
        loader = make_loader(lib, images, labels, workers)
        if epoch(loader) != N:
            raise SystemExit(f"{name}: an epoch is not {N} samples")
        impls[name] = (lambda loader=loader: epoch(loader), None)
    return compare(impls, inner=1, reps=3 if quick else 7, settle=SETTLE_S)


def bench(quick):
    data = make_data()
    for workers in WORKERS:
        case = f"epoch workers={workers}"
        for impl, us in epoch_times(workers, quick, data).items():
            report("cpu", case, impl, us / 1e3, "ms")
        ratios("cpu", case, False, "torch")


def main():
    args = script_args(quick_help="3 epochs per figure, not 7",
                       cpu_only=False)
    bench(args.quick)
    save(args.json, data=f"TensorDataset {N}x28x28 float32 + int64 labels",
         loader=f"batch_size={BATCH}, shuffle=True, num_workers {WORKERS}")


if __name__ == "__main__":
    main()
