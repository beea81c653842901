"""Convolution and normalisation layers, float32: conv2d forward, and
forward+backward (the gradient of the weight, the bias and, past the
first layer, the input), at LeNet's sizes (batch 64: 1->6 channels 5x5 on
28x28, 6->16 channels 5x5 on 12x12) and a ResNet block's (batch 32,
64->64 channels 3x3 padded, 56x56), in microseconds per call;
BatchNorm2d (training mode) on 32x64x56x56 and LayerNorm on 4096x768,
forward+backward, in GB/s of their least traffic (five tensors: x read
and y written forward, x and dy read and dx written backward) beside a
copy_ of x in the same rounds (the GPU goal: 0.8 of the copy's GB/s);
and one training step (forward, cross-entropy,
backward, Adam) of a digits CNN at batch 32.  pygpu against torch, the
same weights and data in each.  Each result is checked against NumPy in
float64 (conv by im2col; the gradients by their formulas)."""
import numpy as np

import pygpu

from .core import Impl, WrongResult, torch
from .model import _grad

NAME = "layers"
# (case, batch, in channels, size, out channels, kernel, padding,
#  whether the input's gradient is wanted)
CONVS = (("lenet conv1", 64, 1, 28, 6, 5, 0, False),
         ("lenet conv2", 64, 6, 12, 16, 5, 0, True),
         ("resnet 3x3", 32, 64, 56, 64, 3, 1, True))
BN_SHAPE = (32, 64, 56, 56)
LN_SHAPE = (4096, 768)
CNN_BATCH = 32
RTOL = 1e-4  # float32 sums of up to ~10^5 products


def _libs(ctx):
    return [("pygpu", pygpu)] + ([("torch", torch)]
                                 if "torch" in ctx.peers else [])


def np_im2col(x, k, pad):
    """(N, C, H, W) -> (N, C*k*k, Ho*Wo), stride 1, zero padding."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    n, c, ho, wo = win.shape[:4]
    return win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, ho * wo)


def _conv_cases(ctx, rng):
    dev = ctx.device
    for name, n, cin, size, cout, k, pad, input_grad in CONVS:
        x = rng.standard_normal((n, cin, size, size)).astype(np.float32)
        w = (rng.standard_normal((cout, cin, k, k))
             / np.sqrt(cin * k * k)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        cols = np_im2col(x.astype(np.float64), k, pad)
        out = np.einsum("ok,nkl->nol", w.reshape(cout, -1).astype(np.float64),
                        cols) + b[:, None]
        so = size + 2 * pad - k + 1
        out = out.reshape(n, cout, so, so)
        g = rng.standard_normal(out.shape).astype(np.float32)
        dw = np.einsum("nol,nkl->ok", g.reshape(n, cout, -1).astype(
            np.float64), cols).reshape(w.shape)
        shape = f"{n}x{cin}x{size}x{size} -> {cout}, {k}x{k}"
        fwd, both = {}, {}
        for lib, mod in _libs(ctx):
            tx = mod.tensor(x, device=dev)
            tw = mod.tensor(w, device=dev)
            tb = mod.tensor(b, device=dev)
            tg = mod.tensor(g, device=dev)
            conv = mod.nn.functional.conv2d
            fwd[lib] = Impl(lambda conv=conv, tx=tx, tw=tw, tb=tb:
                            conv(tx, tw, tb, padding=pad), lib)
            px = tx.clone().requires_grad_(input_grad)
            pw = tw.clone().requires_grad_(True)
            pb = tb.clone().requires_grad_(True)

            def step(conv=conv, px=px, pw=pw, pb=pb, tg=tg):
                px.grad = pw.grad = pb.grad = None
                conv(px, pw, pb, padding=pad).backward(tg)
                return pw.grad
            both[lib] = Impl(step, lib)
        ctx.case(f"conv2d {name} forward", fwd, ref=out, rtol=RTOL,
                 size=shape, dtype="float32")
        with _grad():
            ctx.case(f"conv2d {name} forward+backward", both, ref=dw,
                     rtol=RTOL, size=shape, dtype="float32",
                     note="weight's gradient checked" +
                     (", input's computed" if input_grad else ""))


def np_norm_backward(x, g, axes):
    """The input's gradient of (x - mean) / sqrt(var + 1e-5) over axes
    (biased variance), for the output gradient g, in float64."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    mu = x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
    xhat = (x - mu) * rstd
    return rstd * (g - g.mean(axis=axes, keepdims=True)
                   - xhat * (g * xhat).mean(axis=axes, keepdims=True))


def _norm_cases(ctx, rng):
    dev = ctx.device
    for case, shape, axes, make in (
            ("BatchNorm2d", BN_SHAPE, (0, 2, 3),
             lambda mod: mod.nn.BatchNorm2d(BN_SHAPE[1], device=dev)),
            ("LayerNorm", LN_SHAPE, (1,),
             lambda mod: mod.nn.LayerNorm(LN_SHAPE[1], device=dev))):
        x = rng.standard_normal(shape).astype(np.float32)
        g = rng.standard_normal(shape).astype(np.float32)
        ref = np_norm_backward(x, g, axes)
        impls = {}
        for lib, mod in _libs(ctx):
            layer = make(mod)
            tx = mod.tensor(x, device=dev).requires_grad_(True)
            tg = mod.tensor(g, device=dev)

            def step(layer=layer, tx=tx, tg=tg):
                tx.grad = None
                layer(tx).backward(tg)
                return tx.grad
            impls[lib] = Impl(step, lib)
        # The yardstick: copy_ of x into a tensor of its own, in the same
        # rounds.  The layers' figure counts the least traffic of forward
        # and backward (x read, y written; x and dy read, dx written: five
        # tensors), a copy's two.
        src = pygpu.tensor(x, device=dev)
        dst = pygpu.empty(shape, device=dev)
        impls["copy"] = Impl(lambda: dst.copy_(src), "pygpu", reference=True,
                             ref=x, work=2 * x.nbytes)
        with _grad():
            ctx.case(f"{case} forward+backward", impls, ref=ref, rtol=RTOL,
                     work=(5 * x.nbytes, "GB/s"),
                     size="x".join(map(str, shape)), dtype="float32",
                     note="training mode; the input's gradient checked")


def make_cnn(mod, dev):
    """The digits CNN of examples/train_cnn_digits.py, without dropout."""
    nn = mod.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 10)).to(dev)


def np_cnn_loss(params, x, y):
    """The CNN's cross-entropy in training mode (batch statistics), float64;
    params: [w1, b1, g1, be1, w2, b2, g2, be2, wl, bl]."""
    p = [v.astype(np.float64) for v in params]
    h = x.astype(np.float64)
    for w, b, gam, bet in (p[0:4], p[4:8]):
        cout = w.shape[0]
        n, _, s, _ = h.shape
        h = np.einsum("ok,nkl->nol", w.reshape(cout, -1),
                      np_im2col(h, 3, 1)).reshape(n, cout, s, s)
        h = h + b[:, None, None]
        mu = h.mean(axis=(0, 2, 3), keepdims=True)
        var = h.var(axis=(0, 2, 3), keepdims=True)
        h = (h - mu) / np.sqrt(var + 1e-5) * gam[:, None, None] \
            + bet[:, None, None]
        h = np.maximum(h, 0)
        h = h.reshape(n, cout, s // 2, 2, s // 2, 2).max(axis=(3, 5))
    z = h.reshape(len(h), -1) @ p[8].T + p[9]
    m = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(axis=1)) + m[:, 0]
    return np.mean(lse - z[np.arange(len(y)), y])


def _cnn_step(ctx, rng):
    dev = ctx.device
    x = rng.random((CNN_BATCH, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, CNN_BATCH)
    pygpu.manual_seed(0)
    ref_model = make_cnn(pygpu, "cpu")
    params = [p.detach().numpy().copy() for p in ref_model.parameters()]
    loss = np_cnn_loss(params, x, y)
    impls = {}
    for lib, mod in _libs(ctx):
        model = make_cnn(mod, dev)
        with mod.no_grad():
            for p, v in zip(model.parameters(), params):
                p.copy_(mod.tensor(v, device=dev))
        opt = mod.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = mod.nn.CrossEntropyLoss()
        tx, ty = mod.tensor(x, device=dev), mod.tensor(y, device=dev)

        def step(model=model, opt=opt, loss_fn=loss_fn, tx=tx, ty=ty):
            out = loss_fn(model(tx), ty)
            opt.zero_grad()
            out.backward()
            opt.step()
            return out

        def check(got):
            if not abs(float(got) - loss) <= RTOL * abs(loss):
                raise WrongResult(f"loss {float(got):.7g}, NumPy's "
                                  f"{loss:.7g}")
        impls[lib] = Impl(step, lib, ref=check)
    with _grad():
        ctx.case(f"digits CNN train step b={CNN_BATCH}", impls,
                 size=CNN_BATCH, dtype="float32",
                 note="examples/train_cnn_digits.py's model without "
                      "dropout; Adam(lr=1e-3), CrossEntropyLoss")


def run(ctx):
    rng = np.random.default_rng(0)
    # Like for like: pygpu's convolutions (column products) compute in
    # full float32, as its matrix products do by default; torch's cuDNN
    # convolutions default to TF32, which misses the float32 check.
    saved = torch is not None and torch.backends.cudnn.allow_tf32
    if torch is not None:
        torch.backends.cudnn.allow_tf32 = False
    try:
        _conv_cases(ctx, rng)
        _norm_cases(ctx, rng)
        _cnn_step(ctx, rng)
    finally:
        if torch is not None:
            torch.backends.cudnn.allow_tf32 = saved
