"""Train a small CNN on scikit-learn's bundled handwritten digits (8x8
images, 10 classes; no download): two convolution blocks (Conv2d,
BatchNorm2d, ReLU, MaxPool2d), then a linear classifier, on a held-out
test split, with a progress bar per epoch.

    python examples/train_cnn_digits.py [--device cuda] [--amp] [--epochs 12]
"""
import argparse
import time

import numpy as np

import pygpu as torch
from pygpu import nn


def load(seed):
    """(train images, train labels, test images, test labels): images
    (N, 1, 8, 8) float32 in [0, 1], an 80/20 split."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    tr, te = order[:cut], order[cut:]
    return x[tr], y[tr], x[te], y[te]


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),                                    # 32 x 4 x 4
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2),                                    # 64 x 2 x 2
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 2 * 2, 10))


def bar(i, n, width=30):
    done = int(width * (i + 1) / n)
    return "[" + "#" * done + "." * (width - done) + "]"


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return float((pred.cpu().numpy() == y).mean())


def train(device="cpu", epochs=12, batch=32, lr=3e-3, amp=False, seed=0,
          quiet=False):
    """Returns (test accuracy, seconds, per-epoch mean losses)."""
    torch.manual_seed(seed)
    xtr, ytr, xte, yte = load(seed)
    model = make_model().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=epochs * ((len(xtr) + batch - 1) // batch))
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
            xb = torch.tensor(xtr[idx], device=device)
            yb = torch.tensor(ytr[idx], device=device)
            with torch.autocast(device, dtype=torch.float16, enabled=amp):
                loss = loss_fn(model(xb).float(), yb)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            total += loss.item()
            if not quiet:
                print(f"\rEpoch {epoch + 1:3d}/{epochs} {bar(i, nb)} "
                      f"loss {total / (i + 1):.4f}", end="", flush=True)
        losses.append(total / nb)
        if not quiet:
            print(f"  test accuracy {evaluate(model, xt, yte):.3f}")
    seconds = time.perf_counter() - t0
    return evaluate(model, xt, yte), seconds, losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--amp", action="store_true",
                    help="float16 autocast and a GradScaler")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    acc, seconds, _ = train(args.device, args.epochs, args.batch, args.lr,
                            args.amp, args.seed)
    print(f"test accuracy {acc:.4f} after {args.epochs} epochs in "
          f"{seconds:.1f} s on {args.device}")


if __name__ == "__main__":
    main()
