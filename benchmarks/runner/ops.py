"""Single ops, time per call in microseconds: softmax, log_softmax and
cross-entropy (int64 targets, forward) of 2048x1000 float32 along dim 1;
sigmoid, exp and tanh of 2^20 float32; sum of 2^24 float16 and of 2^24
bfloat16; add of 2^20 float16; add of float32 vectors that fit in the
cache (2^16, 2^18) and of 2^20.  pygpu against torch and NumPy (NumPy's
own function, or the expression a NumPy user writes where it has none;
no bfloat16 in NumPy).  Each result is checked against NumPy in float64."""
import numpy as np

import pygpu
import pygpu.nn.functional as F

from .core import Impl, torch

NAME = "ops"
# the sizes (module constants, so that a test can make them small)
ROWS, CLASSES = 2048, 1000
UNARY_N = 1 << 20
HALF_SUM_N = 1 << 24
HALF_ADD_N = 1 << 20
ADD_SIZES = (1 << 16, 1 << 18, 1 << 20)
BF16_SUM_N = 1 << 24
RTOL = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}


def label(n):
    """2^k for a power of two, else n."""
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def bf16_round(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), as
    float32: the exact values a bfloat16 tensor of `a` holds."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return r.view(np.float32)


class _Lib:
    """Tensors of one library on the device, from NumPy arrays."""

    def __init__(self, ctx, lib):
        self.lib, self.dev = lib, ctx.device

    def __call__(self, a, dtype=None):
        if self.lib == "numpy":
            return a.copy()
        if self.lib == "pygpu":
            t = pygpu.tensor(a, device=self.dev)
            return t.to(getattr(pygpu, dtype)) if dtype else t
        t = torch.tensor(a, device=self.dev)
        return t.to(getattr(torch, dtype)) if dtype else t


def _libs(ctx, numpy=True):
    libs = ["pygpu"] + [p for p in ctx.peers if p == "torch"]
    if numpy and "numpy" in ctx.peers:
        libs.append("numpy")
    return libs


def _np_log_softmax(z):
    m = z.max(axis=1, keepdims=True)
    s = z - m
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def _np_softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def _np_cross_entropy(z, y):
    return -np.mean(_np_log_softmax(z)[np.arange(len(y)), y])


def _rows(ctx, rng):
    z = (rng.standard_normal((ROWS, CLASSES)) * 3).astype(np.float32)
    y = rng.integers(0, CLASSES, ROWS)
    z64 = z.astype(np.float64)
    shape = f"{ROWS}x{CLASSES}"
    fns = {
        "softmax": {"pygpu": lambda t: F.softmax(t, dim=1),
                    "torch": lambda t: torch.nn.functional.softmax(t, dim=1),
                    "numpy": _np_softmax},
        "log_softmax": {
            "pygpu": lambda t: F.log_softmax(t, dim=1),
            "torch": lambda t: torch.nn.functional.log_softmax(t, dim=1),
            "numpy": _np_log_softmax},
    }
    refs = {"softmax": _np_softmax(z64), "log_softmax": _np_log_softmax(z64)}
    for op, by_lib in fns.items():
        impls = {}
        for lib in _libs(ctx):
            t = _Lib(ctx, lib)(z)
            impls[lib] = Impl(lambda f=by_lib[lib], t=t: f(t), lib)
        ctx.case(f"{op} {shape}", impls, ref=refs[op], rtol=RTOL["float32"],
                 size=shape, dtype="float32", note="dim 1")
    impls = {}
    for lib in _libs(ctx):
        t, ty = _Lib(ctx, lib)(z), _Lib(ctx, lib)(y)
        f = {"pygpu": F.cross_entropy,
             "torch": torch and torch.nn.functional.cross_entropy,
             "numpy": _np_cross_entropy}[lib]
        impls[lib] = Impl(lambda f=f, t=t, ty=ty: f(t, ty), lib)
    ctx.case(f"cross_entropy {shape}", impls,
             ref=_np_cross_entropy(z64, y), rtol=RTOL["float32"],
             size=shape, dtype="float32",
             note="int64 targets, mean, forward")


def _unary(ctx, rng):
    a = rng.standard_normal(UNARY_N).astype(np.float32)
    a64 = a.astype(np.float64)
    fns = {
        "sigmoid": ({"pygpu": pygpu.sigmoid,
                     "torch": torch and torch.sigmoid,
                     "numpy": lambda x: 1 / (1 + np.exp(-x))},
                    1 / (1 + np.exp(-a64))),
        "exp": ({"pygpu": pygpu.exp, "torch": torch and torch.exp,
                 "numpy": np.exp}, np.exp(a64)),
        "tanh": ({"pygpu": pygpu.tanh, "torch": torch and torch.tanh,
                  "numpy": np.tanh}, np.tanh(a64)),
    }
    for op, (by_lib, ref) in fns.items():
        impls = {}
        for lib in _libs(ctx):
            t = _Lib(ctx, lib)(a)
            impls[lib] = Impl(lambda f=by_lib[lib], t=t: f(t), lib)
        ctx.case(f"{op} n={label(UNARY_N)}", impls, ref=ref,
                 rtol=RTOL["float32"], size=UNARY_N, dtype="float32")


def _sum(ctx, a, dtype, numpy=True):
    """sum of `a` (float32 values exact in dtype) held as dtype."""
    n = a.size
    ref = np.sum(a.astype(np.float64))
    impls = {}
    for lib in _libs(ctx, numpy):
        if lib == "numpy":
            t = a.astype(dtype)
            impls[lib] = Impl(lambda t=t: np.sum(t), lib)
            continue
        t = _Lib(ctx, lib)(a, dtype)
        mod = pygpu if lib == "pygpu" else torch
        impls[lib] = Impl(lambda t=t, mod=mod: mod.sum(t), lib)
    ctx.case(f"sum {dtype} n={label(n)}", impls, ref=ref, rtol=RTOL[dtype],
             size=n, dtype=dtype)


def _add(ctx, a, b, dtype):
    n = a.size
    ref = a.astype(np.float64) + b.astype(np.float64)
    impls = {}
    for lib in _libs(ctx):
        mk = _Lib(ctx, lib)
        if lib == "numpy":
            x, y = a.astype(dtype), b.astype(dtype)
        else:
            x, y = mk(a, dtype), mk(b, dtype)
        impls[lib] = Impl(lambda x=x, y=y: x + y, lib)
    ctx.case(f"add {dtype} n={label(n)}", impls, ref=ref,
             rtol=RTOL[dtype] if dtype != "float32" else 1e-6,
             size=n, dtype=dtype)


def run(ctx):
    rng = np.random.default_rng(0)
    _rows(ctx, rng)
    _unary(ctx, rng)
    # float16: values in [0, 0.004), exact in float16, whose sum stays
    # well inside float16's range
    h = (rng.random(HALF_SUM_N) * 0.004).astype(np.float16)
    _sum(ctx, h.astype(np.float32), "float16")
    h = None
    a = rng.standard_normal(HALF_ADD_N).astype(np.float16).astype(np.float32)
    b = rng.standard_normal(HALF_ADD_N).astype(np.float16).astype(np.float32)
    _add(ctx, a, b, "float16")
    for n in ADD_SIZES:
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        _add(ctx, a, b, "float32")
    # bfloat16: no NumPy row; values in [0, 1) rounded to bfloat16
    _sum(ctx, bf16_round(rng.random(BF16_SUM_N).astype(np.float32)),
         "bfloat16", numpy=False)
