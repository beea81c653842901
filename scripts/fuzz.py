#!/usr/bin/env python3
"""Differential fuzzing of pygpu against NumPy (float64; int64 exactly,
wrapping), for as long as asked.

Each call draws an op family, shapes (0-size, 0-d, size-1 dims, up to 6
dims), dtypes and views (transposes, permutes, positive-step slices with
offsets, expanded broadcasts), runs the op and checks it against NumPy; the
"bad" family calls ops with wrong types, None, mismatched shapes, huge or
negative sizes and out-of-range dims and indices, which must raise
TypeError, ValueError, RuntimeError or IndexError with a message: never
SystemError, never another class, never a message-less error.  The
families of scripts/fuzz_ops.py cover the wider API (comparisons, math,
more reductions, joining, selecting, casts and promotion), the
"bad_sizes" family of scripts/fuzz_sizes.py counts at the corners of int64
and size lists emptied while they are read, and the "checkpoint" family
of scripts/fuzz_checkpoint.py saves random state dicts, loads them back
and loads damaged copies of the archive.  A crash ends
the process, so the figures printed then are the crash's report.

    python scripts/fuzz.py [-n CALLS] [--seed S] [--device cpu|cuda]

prints the calls made, the wrong results and the unclean errors (each with
the seed that replays it: --replay SEED --family NAME), and exits non-zero
if there was any.  tests/packaging/test_fuzz.py runs the same checks,
bounded.
"""
import argparse
import sys
import time
import traceback

import numpy as np

import pygpu
import fuzz_checkpoint
import fuzz_ops
import fuzz_sizes

DTYPES = {
    "float16": (pygpu.float16, np.float16, 1e-2),
    "float32": (pygpu.float32, np.float32, 1e-5),
    "float64": (pygpu.float64, np.float64, 1e-12),
    "int64": (pygpu.int64, np.int64, 0),
}
CLEAN = (TypeError, ValueError, RuntimeError, IndexError)
# Known departures from torch, counted apart (not failures); none now: a
# CPU tensor too large to allocate and a dim past int64 both raise
# torch's RuntimeError.
KNOWN = ()
KNOWN_SEEN = []
FAMILIES = ["unary", "binary", "in_place", "reduce", "matmul", "shape",
            "index", "bad", "bad_more"] + fuzz_ops.FAMILIES + \
    fuzz_sizes.FAMILIES + fuzz_checkpoint.FAMILIES
DEVICE = "cpu"


class Wrong(AssertionError):
    """A result that disagrees with NumPy."""


class Unclean(AssertionError):
    """An error of the wrong kind: SystemError, no message, another class,
    or no error where one was due."""


# ------------------------------------------------------------- generators

def rand_dtype(rng):
    return list(DTYPES)[rng.integers(len(DTYPES))]


def rand_shape(rng, max_dims=6, max_numel=512):
    ndim = int(rng.integers(0, max_dims + 1))
    shape = [int(rng.choice([0, 1, 1, 2, 2, 3, 4, 5])) if rng.random() > 0.05
             else 0 for _ in range(ndim)]
    while int(np.prod(shape, dtype=np.int64)) > max_numel:
        shape[int(np.argmax(shape))] //= 2
    return shape


def rand_values(rng, shape, dt, nonzero=False):
    np_dt = DTYPES[dt][1]
    if dt == "int64":
        a = rng.integers(-50, 50, size=shape, dtype=np.int64)
        if rng.random() < 0.2 and a.size:  # values that wrap when added
            a.flat[rng.integers(a.size)] = rng.choice(
                [2**62 + 7, -2**62 - 3, 2**63 - 1, -2**63])
        if nonzero:
            a[a == 0] = 1
        return a
    a = rng.uniform(-4, 4, size=shape)
    if nonzero:
        a = np.where(a < 0, a - 0.5, a + 0.5)
    return a.astype(np_dt)


def to_tensor(a, dt):
    return pygpu.tensor(a, dtype=DTYPES[dt][0], device=DEVICE)


def make_exact(rng, shape, dt, nonzero=False):
    """A tensor of exactly `shape` (no expanded dims, so writable), often a
    view: a permutation of a contiguous base, or every other element of a
    longer one, with an offset."""
    shape = list(shape)
    kind = rng.integers(3) if shape else 0
    if kind == 1:  # permuted
        perm = list(rng.permutation(len(shape)))
        a = rand_values(rng, [shape[p] for p in perm], dt, nonzero)
        perm = [int(p) for p in perm]
        inv = [int(i) for i in np.argsort(perm)]
        return to_tensor(a, dt).permute(*inv), a.transpose(inv)
    if kind == 2:  # strided with an offset along one dim
        d = int(rng.integers(len(shape)))
        step, off = int(rng.integers(1, 4)), int(rng.integers(0, 3))
        big = list(shape)
        big[d] = shape[d] * step + off
        a = rand_values(rng, big, dt, nonzero)
        key = tuple(slice(off, off + shape[d] * step, step) if i == d
                    else slice(None) for i in range(len(shape)))
        return to_tensor(a, dt)[key], a[key]
    a = rand_values(rng, shape, dt, nonzero)
    return to_tensor(a, dt), a


def make_any(rng, dt, shape=None, nonzero=False):
    """A tensor with a random chain of views (may be expanded)."""
    t, a = make_exact(rng, rand_shape(rng) if shape is None else shape, dt,
                      nonzero)
    for _ in range(int(rng.integers(0, 3))):
        op = rng.integers(4)
        if op == 0 and a.ndim >= 2:
            i, j = (int(x) for x in rng.choice(a.ndim, 2, replace=False))
            t, a = t.transpose(i, j), np.swapaxes(a, i, j)
        elif op == 1 and a.ndim:
            p = [int(x) for x in rng.permutation(a.ndim)]
            t, a = t.permute(*p), a.transpose(p)
        elif op == 2 and a.ndim:
            d = int(rng.integers(a.ndim))
            n = a.shape[d]
            lo = int(rng.integers(0, n + 2))
            hi = int(rng.integers(lo, n + 3))
            step = int(rng.integers(1, 4))
            key = (slice(None),) * d + (slice(lo, hi, step),)
            t, a = t[key], a[key]
        elif op == 3:  # expand the size-1 dims and add leading ones
            new = [int(rng.integers(1, 4)) if s == 1 else s
                   for s in a.shape]
            lead = [int(rng.integers(0, 3))
                    for _ in range(int(rng.integers(0, 2)))]
            if len(lead) + len(new) <= 6:
                new = lead + new
                t, a = t.expand(*new), np.broadcast_to(a, new)
    return t, a


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape` to `shape`."""
    shape = list(shape)
    drop = int(rng.integers(0, len(shape) + 1)) if shape else 0
    return [1 if rng.random() < 0.3 else s for s in shape[drop:]]


# ------------------------------------------------------------- checking

def host(t):
    return t.cpu().numpy()


def compare(got, ref, dt, what, scale=None):
    """got (a tensor) against ref (NumPy, float64 or int64); dt names the
    tolerance; scale: an array of the sizes of the terms, when the result
    is a sum (the tolerance is relative to its largest)."""
    g = host(got) if isinstance(got, pygpu.Tensor) else np.asarray(got)
    ref = np.asarray(ref)
    if g.shape != ref.shape:
        raise Wrong(f"{what}: shape {g.shape}, NumPy {ref.shape}")
    if dt == "int64":
        if not np.array_equal(g.astype(np.int64), ref.astype(np.int64)):
            raise Wrong(f"{what}: {g.tolist()} != {ref.tolist()}")
        return
    g = g.astype(np.float64)
    ref = ref.astype(np.float64)
    if dt == "float16":  # out of range in float16 is inf there, as in torch
        with np.errstate(over="ignore"):
            ref = np.where(np.abs(ref) > 65519, ref.astype(np.float16), ref
                           ).astype(np.float64)
    if np.any(np.isnan(g) != np.isnan(ref)):
        raise Wrong(f"{what}: NaN where NumPy has none (or the reverse):\n"
                    f"{g}\n{ref}")
    ok = ~np.isnan(ref)
    if not ok.any():
        return
    s = np.abs(ref if scale is None else np.asarray(scale, np.float64))
    tol = DTYPES[dt][2] * max(1.0, float(np.max(s, initial=0.0)))
    same = g[ok] == ref[ok]  # infinities included
    with np.errstate(invalid="ignore"):
        err = float(np.max(np.where(same, 0.0, np.abs(g[ok] - ref[ok])),
                           initial=0.0))
    if err > tol:
        raise Wrong(f"{what}: max error {err:.3g} > {tol:.3g}\n"
                    f"got {g}\nNumPy {ref}")


def expect_clean_error(fn, must_raise=False, what=""):
    """fn() may return or raise; what it raises must be one of CLEAN, with a
    message.  Returns the exception (or None)."""
    try:
        fn()
    except CLEAN as e:
        if isinstance(e, SystemError) or not str(e):
            raise Unclean(f"{what}: {type(e).__name__}({str(e)!r})") from e
        return e
    except KNOWN as e:
        if not str(e):
            raise Unclean(f"{what}: {type(e).__name__} without a message")
        KNOWN_SEEN.append(type(e).__name__)
        return e
    except BaseException as e:  # noqa: BLE001 - classified here
        if isinstance(e, (KeyboardInterrupt, Wrong, Unclean)):
            raise
        raise Unclean(f"{what}: {type(e).__name__}: {e}") from e
    if must_raise:
        raise Unclean(f"{what}: no error raised")
    return None


def f64(a):
    return a.astype(np.float64 if a.dtype != np.int64 else np.int64)


def result_dt(t):
    return str(t.dtype).replace("pygpu.", "")


# ------------------------------------------------------------- families

def fam_unary(rng):
    dt = rand_dtype(rng)
    t, a = make_any(rng, dt)
    compare(-t, -f64(a), dt, "neg")
    compare(pygpu.neg(t), -f64(a), dt, "pygpu.neg")
    compare(pygpu.relu(t), np.maximum(f64(a), 0), dt, "relu")
    compare(t.clone(), a, dt, "clone")
    compare(t.contiguous(), a, dt, "contiguous")


BINARY = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "div": (lambda x, y: x / y, None),
    "add_fn": (pygpu.add, np.add),
    "sub_fn": (pygpu.sub, np.subtract),
    "mul_fn": (pygpu.mul, np.multiply),
    "div_fn": (pygpu.div, None),
}


def _ref_binary(name, x, y, out_int):
    npop = BINARY[name][1]
    if npop is None:
        return x.astype(np.float64) / y.astype(np.float64)
    if out_int:
        with np.errstate(over="ignore"):
            return npop(np.asarray(x, np.int64), np.asarray(y, np.int64))
    return npop(np.asarray(x, np.float64), np.asarray(y, np.float64))


def fam_binary(rng):
    name = list(BINARY)[rng.integers(len(BINARY))]
    op = BINARY[name][0]
    dt = rand_dtype(rng)
    t, a = make_any(rng, dt)
    div = BINARY[name][1] is None
    kind = rng.integers(3)
    if kind == 0:  # scalar
        s = float(np.round(rng.uniform(-3, 3), 2)) if rng.random() < 0.5 \
            else int(rng.integers(-3, 4))
        if div and s == 0:
            s = 2
        if rng.random() < 0.5:
            got = op(t, s)
            out_int = dt == "int64" and isinstance(s, int) and not div
            ref = _ref_binary(name, f64(a), np.asarray(s), out_int)
        else:
            got = op(s, t) if name.endswith("_fn") is False else op(t, s)
            out_int = dt == "int64" and isinstance(s, int) and not div
            if name.endswith("_fn"):
                ref = _ref_binary(name, f64(a), np.asarray(s), out_int)
            else:
                if div:
                    if np.any(f64(a) == 0):
                        return
                    ref = np.float64(s) / f64(a).astype(np.float64)
                else:
                    ref = _ref_binary(name, np.asarray(s), f64(a), out_int)
        if div and dt != "int64" and np.any(np.asarray(s) == 0):
            return
        compare(got, ref, result_dt(got), f"{name}(t, {s!r}) {dt}",
                scale=None)
        return
    dt2 = dt if rng.random() < 0.7 else rand_dtype(rng)
    pshape = broadcast_partner(rng, a.shape)
    u, b = make_exact(rng, pshape, dt2, nonzero=div)
    if rng.random() < 0.5:
        t, u, a, b = u, t, b, a
        if div and np.any(b == 0):
            return
    got = op(t, u)
    want_dt = str(pygpu.promote_types(t.dtype, u.dtype)).replace("pygpu.", "")
    if div and want_dt == "int64":
        want_dt = "float32"
    if t.dim() and u.dim() and result_dt(got) != want_dt:
        raise Wrong(f"{name}: dtype {got.dtype}, expected {want_dt}")
    out_int = result_dt(got) == "int64"
    ref = _ref_binary(name, f64(a), f64(b), out_int)
    tol_dt = result_dt(got)
    if not out_int:
        mag = np.abs(f64(a).astype(np.float64)) + np.abs(
            f64(b).astype(np.float64))
        if name.startswith("mul"):
            mag = np.abs(f64(a).astype(np.float64) *
                         f64(b).astype(np.float64))
        if div:
            mag = None
        compare(got, ref, tol_dt, f"{name} {dt}/{dt2} {a.shape} {b.shape}",
                scale=mag)
    else:
        compare(got, ref, tol_dt, f"{name} {a.shape} {b.shape}")


def fam_in_place(rng):
    dt = rand_dtype(rng)
    t, a = make_exact(rng, rand_shape(rng), dt)
    a = a.copy()
    name = ["add_", "sub_", "mul_", "div_", "relu_", "iadd", "imul"][
        rng.integers(7)]
    if name == "relu_":
        t.relu_()
        compare(t, np.maximum(f64(a), 0), dt, "relu_")
        return
    dt2 = dt if rng.random() < 0.6 else rand_dtype(rng)
    u, b = make_exact(rng, broadcast_partner(rng, a.shape), dt2,
                      nonzero=name == "div_")
    base = {"add_": "add", "iadd": "add", "sub_": "sub", "mul_": "mul",
            "imul": "mul", "div_": "div"}[name]
    before = host(t).copy()

    def run():
        if name == "iadd":
            x = t
            x += u
        elif name == "imul":
            x = t
            x *= u
        else:
            getattr(t, name)(u)
    castable = pygpu.can_cast(
        pygpu.float32 if base == "div" and dt2 == "int64" and dt == "int64"
        else pygpu.promote_types(t.dtype, u.dtype), t.dtype)
    if not castable:
        expect_clean_error(run, must_raise=True, what=f"{name} {dt} <- {dt2}")
        compare(t, before, dt, f"{name} refused, but wrote")
        return
    run()
    out_int = dt == "int64"
    ref = _ref_binary(base, f64(a), f64(b), out_int)
    if dt != "int64":
        ref = ref.astype(DTYPES[dt][1]).astype(np.float64)
        ref_tol = None if base == "div" else np.abs(f64(a)).astype(
            np.float64) + np.abs(f64(b).astype(np.float64)) ** (
            2 if base == "mul" else 1) + 1
        compare(t, ref, dt, f"{name} {dt} <- {dt2}", scale=ref_tol)
    else:
        compare(t, ref, dt, f"{name} int64")


def fam_reduce(rng):
    dt = rand_dtype(rng)
    t, a = make_any(rng, dt)
    x = f64(a)
    keep = bool(rng.integers(2))
    dim = int(rng.integers(-a.ndim, a.ndim)) if a.ndim and \
        rng.random() < 0.8 else None
    axis = None if dim is None else dim % a.ndim
    which = ["sum", "mean", "max"][rng.integers(3)]
    kw = {} if dim is None else {"dim": dim, "keepdim": keep}
    what = f"{which}({kw}) of {dt} {a.shape}"
    if which == "sum":
        got = t.sum(**kw) if rng.random() < 0.5 else pygpu.sum(t, **kw)
        with np.errstate(over="ignore"):
            ref = np.sum(x, axis=axis, keepdims=keep and dim is not None)
            mag = np.sum(np.abs(x.astype(np.float64)), axis=axis,
                         keepdims=keep and dim is not None)
        compare(got, ref, dt, what, scale=mag)
    elif which == "mean":
        if dt == "int64":
            expect_clean_error(lambda: t.mean(**kw), must_raise=True,
                               what=what)
            return
        got = t.mean(**kw)
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = np.mean(x, axis=axis, keepdims=keep and dim is not None) \
                if x.size or dim is not None else np.float64("nan")
        if dim is not None and x.size == 0:
            n = a.shape[axis]
            ref = np.full(np.sum(x, axis=axis, keepdims=keep).shape,
                          np.nan if n == 0 else 0.0)
        compare(got, ref, dt, what)
    else:
        empty = x.size == 0 if dim is None else a.shape[axis] == 0
        if empty:
            expect_clean_error(lambda: t.max(**kw), must_raise=True,
                               what=what)
            return
        if dim is None:
            compare(t.max(), np.max(x), dt, what)
            return
        values, indices = t.max(**kw)
        ref = np.max(x, axis=axis, keepdims=keep)
        compare(values, ref, dt, what)
        idx = host(indices)
        if not keep:
            idx = np.expand_dims(idx, axis)
        picked = np.take_along_axis(x, idx.astype(np.int64), axis)
        compare(picked if keep else np.squeeze(picked, axis), ref, dt,
                what + " indices")


def fam_matmul(rng):
    dt = rand_dtype(rng)
    n, k, m = (int(rng.choice([0, 1, 2, 3, 5])) for _ in range(3))
    form = rng.integers(6)
    batch = [int(rng.choice([1, 2, 3])) for _ in range(int(rng.integers(1, 3)))]
    sa, sb = {
        0: ([k], [k]), 1: ([n, k], [k, m]), 2: ([k], [k, m]),
        3: ([n, k], [k]), 4: (batch + [n, k], [k, m]),
        5: (batch + [n, k], [1] * len(batch) + [k, m]),
    }[int(form)]
    t, a = make_exact(rng, sa, dt)
    u, b = make_exact(rng, sb, dt)
    fn = [pygpu.matmul, lambda x, y: x @ y][rng.integers(2)]
    try:
        got = fn(t, u)
    except RuntimeError as e:
        # as torch: no integer product on CUDA (cuBLAS has none)
        if dt == "int64" and DEVICE != "cpu" and \
                "not implemented for 'Long'" in str(e):
            return
        raise
    x, y = f64(a), f64(b)
    if dt == "int64":
        ref = np.matmul(x, y)
        compare(got, ref, dt, f"matmul {sa} {sb}")
        return
    ref = np.matmul(x.astype(np.float64), y.astype(np.float64))
    mag = np.matmul(np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64)))
    compare(got, ref, dt, f"matmul {dt} {sa} {sb}", scale=mag)


def fam_shape(rng):
    dt = rand_dtype(rng)
    t, a = make_any(rng, dt)
    n = a.size
    op = rng.integers(7)
    if op == 0:
        cands = [(-1,), (n,), (1, -1), tuple(reversed(a.shape)) or (1,),
                 (-1, 1)]
        shape = cands[rng.integers(len(cands))]
        if n == 0 and -1 in shape:
            expect_clean_error(lambda: t.reshape(*shape), what="reshape -1 of 0")
            return
        compare(t.reshape(*shape), np.reshape(a, shape), dt, f"reshape {shape}")
        e = expect_clean_error(lambda: t.view(*shape), what="view")
        if e is None:
            compare(t.view(*shape), np.reshape(a, shape), dt, "view")
        elif t.is_contiguous():
            raise Wrong(f"view of a contiguous tensor refused: {e}")
    elif op == 1:
        if a.ndim:
            s = int(rng.integers(-a.ndim, a.ndim))
            e = int(rng.integers(-a.ndim, a.ndim))
            if s % a.ndim > e % a.ndim:
                expect_clean_error(lambda: t.flatten(s, e), must_raise=True,
                                   what="flatten start > end")
                return
            shape = a.shape[:s % a.ndim] + (-1,) + a.shape[e % a.ndim + 1:]
            if n == 0:
                shape = a.shape[:s % a.ndim] + (int(np.prod(
                    a.shape[s % a.ndim:e % a.ndim + 1])),) + \
                    a.shape[e % a.ndim + 1:]
            compare(t.flatten(s, e), np.reshape(a, shape), dt, "flatten")
        else:
            compare(t.flatten(), np.reshape(a, (1,)), dt, "flatten 0-d")
    elif op == 2:
        compare(t.squeeze(), np.squeeze(a), dt, "squeeze")
        if a.ndim:
            d = int(rng.integers(-a.ndim, a.ndim))
            ref = np.squeeze(a, d) if a.shape[d] == 1 else a
            compare(t.squeeze(d), ref, dt, f"squeeze({d})")
    elif op == 3:
        d = int(rng.integers(-a.ndim - 1, a.ndim + 1))
        compare(t.unsqueeze(d), np.expand_dims(a, d), dt, f"unsqueeze({d})")
    elif op == 4 and a.ndim:
        i, j = (int(rng.integers(-a.ndim, a.ndim)) for _ in range(2))
        compare(t.transpose(i, j), np.swapaxes(a, i, j), dt, "transpose")
    elif op == 5 and a.ndim <= 2:
        compare(t.t(), a.T, dt, "t()")
    else:
        compare(t.T if a.ndim == 2 else t.permute(*reversed(range(a.ndim))),
                a.transpose(), dt, "reversed dims")


def rand_key(rng, ndim, shape):
    key = []
    for _ in range(int(rng.integers(0, ndim + 2))):
        r = rng.random()
        if r < 0.35:
            d = len([k for k in key if k is not None and k is not Ellipsis])
            size = shape[d] if d < len(shape) else 1
            key.append(int(rng.integers(-size - 1, size + 1)))
        elif r < 0.8:
            lo = int(rng.integers(-6, 7)) if rng.random() < 0.6 else None
            hi = int(rng.integers(-6, 7)) if rng.random() < 0.6 else None
            key.append(slice(lo, hi, int(rng.integers(1, 4))))
        elif r < 0.92:
            key.append(None)
        elif Ellipsis not in key:
            key.append(Ellipsis)
    return key[0] if len(key) == 1 and rng.random() < 0.5 else tuple(key)


def fam_index(rng):
    dt = rand_dtype(rng)
    write = rng.random() < 0.4
    if write:
        t, a = make_exact(rng, rand_shape(rng), dt)
        a = a.copy()
    else:
        t, a = make_any(rng, dt)
    key = rand_key(rng, a.ndim, a.shape)
    try:
        ref = a[key]
    except IndexError:
        e = expect_clean_error(lambda: t[key], must_raise=True,
                               what=f"t[{key!r}] of {a.shape}")
        if not isinstance(e, IndexError):
            raise Unclean(f"t[{key!r}]: {type(e).__name__}, not IndexError")
        return
    if not write:
        compare(t[key], ref, dt, f"t[{key!r}] of {a.shape}")
        return
    if rng.random() < 0.5:
        v = int(rng.integers(-9, 9)) if dt == "int64" else \
            float(np.round(rng.uniform(-9, 9), 1))
        t[key] = v
        a[key] = v
    else:
        vshape = broadcast_partner(rng, np.shape(ref))
        u, b = make_exact(rng, vshape, dt)
        t[key] = u
        a[key] = b
    compare(t, a, dt, f"t[{key!r}] = ... of {a.shape}")


JUNK = [None, "a", 1.5, -1, -7, 2**40, 2**64, -2**63, [], [1, "a"],
        (2, None), object(), pygpu.float32, float("nan"), True,
        (1, 2), [2, 3], slice(None), Ellipsis, b"x", 3j, {}, 10, -10]


def junk(rng):
    j = JUNK[rng.integers(len(JUNK))]
    if isinstance(j, object) and type(j) is object:
        return object()
    return j


def fam_bad(rng):
    t = pygpu.ones(2, 3, device=DEVICE)
    x = junk(rng)
    y = junk(rng)
    calls = [
        lambda: pygpu.empty(x), lambda: pygpu.zeros(x, y),
        lambda: pygpu.ones(2, dtype=x), lambda: pygpu.full(x, y),
        lambda: pygpu.rand(x), lambda: pygpu.tensor(x),
        lambda: pygpu.tensor([x, y]), lambda: pygpu.Size(x),
        lambda: t.view(x), lambda: t.view(x, y), lambda: t.reshape(x, y),
        lambda: t.sum(x), lambda: t.sum(dim=x, keepdim=y),
        lambda: t.mean(x), lambda: t.max(x), lambda: t.max(x, y),
        lambda: t.transpose(x, y), lambda: t.permute(x, y),
        lambda: t.expand(x, y), lambda: t[x], lambda: t[x, y],
        lambda: t.__setitem__(x, y), lambda: t.squeeze(x),
        lambda: t.unsqueeze(x), lambda: t.flatten(x, y),
        lambda: pygpu.add(t, x), lambda: pygpu.add(t, t, alpha=x),
        lambda: t + x, lambda: x - t, lambda: t * x, lambda: t / x,
        lambda: t @ x, lambda: pygpu.matmul(t, x), lambda: t.add_(x),
        lambda: t.to(x), lambda: t.size(x), lambda: t.fill_(x),
        lambda: t.copy_(x), lambda: pygpu.from_numpy(x),
        lambda: pygpu.full_like(t, x), lambda: pygpu.zeros_like(x),
        lambda: t.stride(x), lambda: pygpu.mm(t, x), lambda: pygpu.bmm(t, x),
        lambda: pygpu.relu(x), lambda: pygpu.neg(x),
        lambda: pygpu.nn.functional.linear(t, x),
        lambda: pygpu.add(t, pygpu.ones(x if isinstance(x, int) and
                                        0 <= x < 9 else 4)),
        lambda: pygpu.matmul(t, pygpu.ones(4, 2)),
        lambda: t.view(-1, -1), lambda: t.reshape(-2),
        lambda: t[5], lambda: t[:, -4], lambda: t.sum(2),
        lambda: t.transpose(0, 2), lambda: pygpu.empty(2, -1),
    ]
    i = int(rng.integers(len(calls)))
    # Strict: the last ten calls are wrong whatever x and y are.
    expect_clean_error(calls[i], must_raise=i >= len(calls) - 10,
                       what=f"bad call #{i} with {x!r}, {y!r}")


def fam_bad_more(rng):
    """Junk arguments to the newer API: dtypes, comparisons, masks, math,
    reductions, joining, indexing, creation, autograd, optimizers and
    losses.  Any clean error (or a result) is fine; nothing may crash."""
    F = pygpu.nn.functional
    t = pygpu.ones(2, 3, device=DEVICE)
    g = pygpu.ones(2, 3, device=DEVICE, requires_grad=True)
    x = junk(rng)
    y = junk(rng)
    calls = [
        lambda: t == x, lambda: t < x, lambda: pygpu.eq(t, x),
        lambda: pygpu.isclose(t, x), lambda: pygpu.where(x, t, y),
        lambda: pygpu.where(t > 0, x, y), lambda: t.masked_fill(x, y),
        lambda: t.masked_fill(t > 0, x), lambda: t[t > x],
        lambda: t.__setitem__(t > 0, x), lambda: pygpu.logical_and(t, x),
        lambda: t & x, lambda: ~t, lambda: t.to(pygpu.bool) ^ x,
        lambda: t.any(x), lambda: t.all(x, y), lambda: t ** x,
        lambda: x ** t, lambda: pygpu.pow(t, x), lambda: t.clamp(x, y),
        lambda: pygpu.maximum(t, x), lambda: t % x, lambda: t // x,
        lambda: pygpu.fmod(t, x), lambda: t.softmax(x),
        lambda: t.log_softmax(x), lambda: t.logsumexp(x),
        lambda: t.cumsum(x), lambda: t.cumprod(x, dtype=y),
        lambda: t.var(x), lambda: t.std(x, correction=y),
        lambda: t.norm(x), lambda: t.argmax(x), lambda: t.min(x, y),
        lambda: t.prod(x), lambda: t.amax(x), lambda: pygpu.cat(x),
        lambda: pygpu.cat([t, x]), lambda: pygpu.stack([t, x], y),
        lambda: t.split(x), lambda: t.chunk(x, y), lambda: t.narrow(x, y, 1),
        lambda: t.unbind(x), lambda: t.flip(x), lambda: t.repeat(x, y),
        lambda: pygpu.index_select(t, x, y), lambda: pygpu.gather(t, x, y),
        lambda: t[[x, y]], lambda: t.__setitem__([x], y),
        lambda: pygpu.arange(x), lambda: pygpu.arange(x, y),
        lambda: pygpu.linspace(x, y, 3), lambda: pygpu.eye(x, y),
        lambda: t.new_zeros(x), lambda: t.new_full(x, y), lambda: t.type(x),
        lambda: t.to(x, y), lambda: t.resize_(x), lambda: t.bfloat16() + x,
        lambda: pygpu.add(t, t, out=x), lambda: pygpu.exp(t, out=x),
        lambda: g.requires_grad_(x), lambda: (g * 2).backward(x),
        lambda: (g * 2).sum().backward(retain_graph=x),
        lambda: pygpu.autograd.grad(g.sum(), x),
        lambda: pygpu.autograd.grad(x, g), lambda: g.__setattr__("grad", x),
        lambda: pygpu.optim.SGD(x), lambda: pygpu.optim.Adam([g], lr=x),
        lambda: F.cross_entropy(t, x), lambda: F.mse_loss(t, x),
        lambda: F.cross_entropy(t, pygpu.tensor([0, 1], device=DEVICE),
                                label_smoothing=x),
    ]
    i = int(rng.integers(len(calls)))
    expect_clean_error(calls[i], what=f"bad call #{i} with {x!r}, {y!r}")


def check_one(rng, family):
    for mod in (fuzz_ops, fuzz_sizes, fuzz_checkpoint):
        if family in mod.FAMILIES:
            getattr(mod, "fam_" + family)(rng, sys.modules[__name__])
            return
    globals()["fam_" + family](rng)


# ------------------------------------------------------------- long run

def main(argv=None):
    global DEVICE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--calls", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--family", choices=FAMILIES)
    p.add_argument("--replay", type=int, metavar="SEED",
                   help="run one call with this seed (and --family) and "
                        "show its traceback")
    p.add_argument("--show", type=int, default=5,
                   help="how many failures to print in full")
    args = p.parse_args(argv)
    DEVICE = args.device
    if args.replay is not None:
        check_one(np.random.default_rng(args.replay), args.family or "bad")
        print("no failure")
        return 0
    master = np.random.default_rng(args.seed)
    counts = {"calls": 0, "wrong": 0, "unclean": 0, "other": 0}
    shown = 0
    t0 = time.perf_counter()
    for i in range(args.calls):
        family = args.family or FAMILIES[i % len(FAMILIES)]
        seed = int(master.integers(2**63 - 1))
        counts["calls"] += 1
        try:
            check_one(np.random.default_rng(seed), family)
        except Wrong as e:
            counts["wrong"] += 1
            kind, err = "wrong result", e
        except Unclean as e:
            counts["unclean"] += 1
            kind, err = "unclean error", e
        except Exception as e:  # noqa: BLE001 - a failure of the harness
            counts["other"] += 1
            kind, err = f"unexpected {type(e).__name__}", e
        else:
            continue
        if shown < args.show:
            shown += 1
            print(f"--- {kind} ({family}, --replay {seed} "
                  f"--family {family}):")
            print("".join(traceback.format_exception(err))[-2500:])
    dt = time.perf_counter() - t0
    bad = counts["wrong"] + counts["unclean"] + counts["other"]
    print(f"fuzz: {counts['calls']} calls in {dt:.0f} s on {DEVICE}: "
          f"0 crashes, {counts['wrong']} wrong results, "
          f"{counts['unclean']} unclean errors, {counts['other']} "
          f"harness errors; known departures from torch: "
          f"{len(KNOWN_SEEN)} ({', '.join(sorted(set(KNOWN_SEEN))) or '-'})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
