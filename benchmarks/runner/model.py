"""The tutorial's model, nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
nn.Linear(256, 10)), float32: forward at batch 32, 1024 and 8192 (no
autograd recording), and one training step (forward, cross-entropy,
backward, Adam) at batch 32 and 4096, with the same weights and data in
each library (bench_nn.py and bench_train.py's models); then softmax and
cross-entropy of the model's logits.  Time per call, microseconds."""
import numpy as np

import pygpu
import pygpu.nn.functional as F
from bench_nn import make_models, numpy_forward
from bench_train import make_step

from .core import Impl, WrongResult, torch

NAME = "model"
FORWARD = (32, 1024, 8192)
TRAIN = (32, 4096)
LR, EPS = 1e-3, 1e-8  # bench_train's Adam


def _np_forward(w, x):
    z1 = x @ w[0].T + w[1]
    h = np.maximum(z1, 0)
    return z1, h, h @ w[2].T + w[3]


def _np_cross_entropy(z, y):
    m = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(axis=1)) + m[:, 0]
    return np.mean(lse - z[np.arange(len(y)), y])


def np_train_step(w, xs, ys):
    """Loss and parameters after one Adam step from fresh state, in
    float64: Adam's first step moves each weight by -lr*g/(|g|+eps)."""
    w = [v.astype(np.float64) for v in w]
    x = xs.astype(np.float64)
    z1, h, z2 = _np_forward(w, x)
    loss = _np_cross_entropy(z2, ys)
    p = np.exp(z2 - z2.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(ys)), ys] -= 1
    dz2 = p / len(ys)
    dh = dz2 @ w[2]
    dz1 = dh * (z1 > 0)
    grads = [dz1.T @ x, dz1.sum(0), dz2.T @ h, dz2.sum(0)]
    return loss, [v - LR * g / (np.abs(g) + EPS) for v, g in zip(w, grads)]


def _check_step(model, loss, w_after):
    """A checker: the step's loss, and its parameters within 1e-6 of
    NumPy's update for all but 0.1% of them (an update of a weight whose
    gradient is near eps may fall either way)."""
    def check(got):
        if not abs(float(got) - loss) <= 1e-5 * abs(loss):
            raise WrongResult(f"loss {float(got):.7g}, NumPy's {loss:.7g}")
        for p, ref in zip(model.parameters(), w_after):
            got_p = p.detach().cpu().numpy().astype(np.float64)
            bad = np.count_nonzero(np.abs(got_p - ref) > 1e-6)
            if bad > 1e-3 * ref.size:
                raise WrongResult(f"{bad} of {ref.size} parameters differ "
                                  "from NumPy's Adam step")
    return check


def _forward(ctx):
    dev = ctx.device
    peers, w = make_models(dev)
    rng = np.random.default_rng(0)
    for batch in FORWARD:
        xs = rng.standard_normal((batch, 784)).astype(np.float32)
        ref = _np_forward([v.astype(np.float64) for v in w],
                          xs.astype(np.float64))[2]
        model = peers["pygpu"]
        xr = ctx.ring(lambda: pygpu.tensor(xs, device=dev), xs.nbytes)
        impls = {"pygpu": Impl(lambda: model(xr()))}
        if "torch" in peers:
            tm = peers["torch"]
            tr = ctx.ring(lambda: torch.tensor(xs, device=dev), xs.nbytes)
            impls["torch"] = Impl(lambda: tm(tr()), "torch")
        if "numpy" in ctx.peers:
            fwd = numpy_forward(w)
            impls["numpy"] = Impl(lambda: fwd(xs), "numpy")
        ctx.case(f"forward b={batch}", impls, ref=ref, rtol=1e-4,
                 size=batch, dtype="float32")


def _train(ctx):
    dev = ctx.device
    rng = np.random.default_rng(1)
    pygpu.manual_seed(0)
    init = pygpu.nn.Sequential(pygpu.nn.Linear(784, 256), pygpu.nn.ReLU(),
                               pygpu.nn.Linear(256, 10))
    w = [p.detach().numpy().copy() for p in init.parameters()]
    for batch in TRAIN:
        xs = rng.standard_normal((batch, 784)).astype(np.float32)
        ys = rng.integers(0, 10, batch)
        loss, w_after = np_train_step(w, xs, ys)
        impls = {}
        checks = {}
        for lib, mod in (("pygpu", pygpu), ("torch", torch)):
            if lib != "pygpu" and lib not in ctx.peers:
                continue
            model, step = make_step(mod, dev, w, xs, ys)
            impls[lib] = Impl(step, lib)
            checks[lib] = _check_step(model, loss, w_after)
        # each impl's first call is its checked step
        for lib, impl in impls.items():
            impl.ref = checks[lib]
        ctx.case(f"train step b={batch}", impls, size=batch,
                 dtype="float32", note="Adam(lr=1e-3), CrossEntropyLoss")


def _loss_rows(ctx):
    dev = ctx.device
    rng = np.random.default_rng(2)
    for batch, classes in ((8192, 10), (2048, 1000)):
        z = (rng.standard_normal((batch, classes)) * 3).astype(np.float32)
        y = rng.integers(0, classes, batch)
        z64 = z.astype(np.float64)
        e = np.exp(z64 - z64.max(axis=1, keepdims=True))
        soft = e / e.sum(axis=1, keepdims=True)
        ce = _np_cross_entropy(z64, y)
        pz, py = pygpu.tensor(z, device=dev), pygpu.tensor(y, device=dev)
        sm = {"pygpu": Impl(lambda: F.softmax(pz, dim=1))}
        xe = {"pygpu": Impl(lambda: F.cross_entropy(pz, py))}
        if "torch" in ctx.peers:
            tz, ty = torch.tensor(z, device=dev), torch.tensor(y, device=dev)
            tf = torch.nn.functional
            sm["torch"] = Impl(lambda: tf.softmax(tz, dim=1), "torch")
            xe["torch"] = Impl(lambda: tf.cross_entropy(tz, ty), "torch")
        if "numpy" in ctx.peers:
            def np_softmax():
                m = np.exp(z - z.max(axis=1, keepdims=True))
                m /= m.sum(axis=1, keepdims=True)
                return m
            sm["numpy"] = Impl(np_softmax, "numpy")
            xe["numpy"] = Impl(lambda: _np_cross_entropy(z, y), "numpy")
        shape = f"{batch}x{classes}"
        ctx.case(f"softmax {shape}", sm, ref=soft, rtol=1e-5, size=shape,
                 dtype="float32")
        ctx.case(f"cross_entropy {shape}", xe, ref=ce, rtol=1e-5,
                 size=shape, dtype="float32")


def run(ctx):
    _forward(ctx)
    with _grad():
        _train(ctx)
    _loss_rows(ctx)


class _grad:
    """Autograd recording on in pygpu and torch for the with block (the
    runner turns it off elsewhere)."""

    def __enter__(self):
        self.saved = pygpu.is_grad_enabled()
        pygpu.set_grad_enabled(True)
        if torch is not None:
            self.tsaved = torch.is_grad_enabled()
            torch.set_grad_enabled(True)

    def __exit__(self, *exc):
        pygpu.set_grad_enabled(self.saved)
        if torch is not None:
            torch.set_grad_enabled(self.tsaved)
