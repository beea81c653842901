"""Train the tutorial's MLP on scikit-learn's bundled handwritten digits
(8x8 images, 10 classes; no download), with a held-out test split, a
progress bar per epoch and a saved loss curve.

    python examples/train_digits.py [--device cuda] [--amp] [--epochs 20]

Data parallel on several processes, each seeing its share of every batch
(the gradients averaged by DistributedDataParallel):

    python -m pygpu.distributed.run --nproc_per_node 2 \
        examples/train_digits.py --ddp
"""
import argparse
import sys
import time

import numpy as np

import pygpu as torch
from pygpu import nn


def load(seed):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    tr, te = order[:cut], order[cut:]
    return x[tr], y[tr], x[te], y[te]


def bar(i, n, width=30):
    done = int(width * (i + 1) / n)
    return "[" + "#" * done + "." * (width - done) + "]"


def evaluate(model, x, y):
    with torch.no_grad():
        pred = model(x).argmax(1)
    return float((pred.cpu().numpy() == y).mean())


def train(device="cpu", epochs=20, batch=64, lr=1e-3, amp=False, seed=0,
          quiet=False, plot=None, ddp=False):
    """Returns (test accuracy, seconds, per-epoch mean losses).  With ddp
    (in a process group), each rank trains on its share of every batch."""
    torch.manual_seed(seed)
    xtr, ytr, xte, yte = load(seed)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    rank, world = 0, 1
    if ddp:
        import pygpu.distributed as dist
        rank, world = dist.get_rank(), dist.get_world_size()
        quiet = quiet or rank != 0
        net = nn.parallel.DistributedDataParallel(model)
    else:
        net = model
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, enabled=amp)
    xt = torch.tensor(xte, device=device)
    rng = np.random.default_rng(seed)
    losses, t0 = [], time.perf_counter()
    nb = (len(xtr) + batch - 1) // batch
    for epoch in range(epochs):
        order = rng.permutation(len(xtr))
        total = 0.0
        for i in range(nb):
            idx = order[i * batch:(i + 1) * batch]
            idx = np.array_split(idx, world)[rank]  # this rank's share
            xb = torch.tensor(xtr[idx], device=device)
            yb = torch.tensor(ytr[idx], device=device)
            with torch.autocast(device, dtype=torch.float16, enabled=amp):
                loss = loss_fn(net(xb).float(), yb)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total += loss.item()
            if not quiet:
                print(f"\rEpoch {epoch + 1:3d}/{epochs} {bar(i, nb)} "
                      f"loss {total / (i + 1):.4f}", end="", flush=True)
        losses.append(total / nb)
        if not quiet:
            acc = evaluate(model, xt, yte)
            print(f"  test accuracy {acc:.3f}")
    seconds = time.perf_counter() - t0
    acc = evaluate(model, xt, yte)
    if plot:
        save_curve(losses, plot)
    return acc, seconds, losses


def save_curve(losses, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed: no loss curve (pip install '
              '".[bench]")', file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(range(1, len(losses) + 1), losses, marker="o")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (cross-entropy)")
    ax.set_title("64-256-10 MLP on the 8x8 digits (pygpu)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"loss curve: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--amp", action="store_true",
                    help="float16 autocast and a GradScaler")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", default="digits_loss.png",
                    help="where to save the loss curve ('' for none)")
    ap.add_argument("--ddp", action="store_true",
                    help="DistributedDataParallel in the process group "
                         "that pygpu.distributed.run (pygpu-run) sets up")
    args = ap.parse_args()
    rank = 0
    if args.ddp:
        import pygpu.distributed as dist
        dist.init_process_group()
        rank = dist.get_rank()
    acc, seconds, _ = train(args.device, args.epochs, args.batch, args.lr,
                            args.amp, args.seed,
                            plot=(args.plot or None) if rank == 0 else None,
                            ddp=args.ddp)
    if rank == 0:
        where = f"{args.device}, {dist.get_world_size()} processes" \
            if args.ddp else args.device
        print(f"test accuracy {acc:.4f} after {args.epochs} epochs in "
              f"{seconds:.1f} s on {where}")
    if args.ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
