"""Differential fuzz families for the wider API (scripts/fuzz.py runs
them with its own): comparisons and float classification, unary and
binary math, the reductions beyond sum/mean/max, joining, gathering and
masks, and casts and type promotion across all eight dtypes.  Each family
takes (rng, h), h being the fuzz module with its generators, its checker
and the device under test."""
import numpy as np

import pygpu

FAMILIES = ["compare", "math", "reduce_more", "join", "select", "dtypes"]

FLOATS = ["float16", "float32", "float64"]
ALL = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
ORDER = {d: i for i, d in enumerate(ALL)}
TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}


def contig(a):
    """A C-ordered copy that keeps 0-d arrays 0-d."""
    return np.array(a, order="C", copy=True)


def pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def with_specials(rng, t, a, dt, h):
    """Put a NaN, an inf or a -inf at a random place of a float tensor."""
    if dt == "int64" or a.size == 0 or rng.random() < 0.5:
        return t, a
    base = np.array(a, copy=True)
    base.flat[int(rng.integers(base.size))] = pick(
        rng, [np.nan, np.inf, -np.inf])
    return h.to_tensor(contig(base), dt), base


def exact(h, got, ref, what):
    """Booleans and indices: equal, element for element."""
    g = h.host(got) if isinstance(got, pygpu.Tensor) else np.asarray(got)
    ref = np.asarray(ref)
    if g.shape != ref.shape or not np.array_equal(g, ref):
        raise h.Wrong(f"{what}: {g.tolist()} != {ref.tolist()}")


def dim_args(rng, ndim):
    """(dim, axis, keepdim): a random dim (None for all) and NumPy's axis."""
    keep = bool(rng.integers(2))
    if not ndim or rng.random() < 0.2:
        return None, None, keep
    dim = int(rng.integers(-ndim, ndim))
    return dim, dim % ndim, keep


# ------------------------------------------------------------- comparisons

CMP = [("__eq__", np.equal), ("__ne__", np.not_equal), ("__lt__", np.less),
       ("__le__", np.less_equal), ("__gt__", np.greater),
       ("__ge__", np.greater_equal)]


def fam_compare(rng, h):
    dt = h.rand_dtype(rng)
    t, a = h.make_any(rng, dt)
    if dt != "int64":
        t, a = with_specials(rng, t, a, dt, h)
    name, ref = pick(rng, CMP)
    if rng.random() < 0.3:  # a Python scalar, exactly representable
        s = int(rng.integers(-3, 4)) if dt == "int64" else \
            float(rng.integers(-12, 13)) / 4
        exact(h, getattr(t, name)(s), ref(a, s), f"{name} {dt} scalar {s}")
        return
    u, b = h.make_exact(rng, h.broadcast_partner(rng, a.shape), dt)
    if rng.random() < 0.5:  # some equal elements
        u, b = h.make_exact(rng, a.shape, dt)
        if a.size:
            k = rng.random(a.shape) < 0.5
            b = np.where(k, a, b)
            u = h.to_tensor(contig(b), dt)
    with np.errstate(invalid="ignore"):
        want = ref(a, b)
    what = f"{name} {dt} {a.shape} {b.shape}"
    exact(h, getattr(t, name)(u), want, what)
    fn = getattr(pygpu, name.strip("_"))
    exact(h, fn(t, u), want, "pygpu." + what)
    if dt != "int64":
        exact(h, pygpu.isnan(t), np.isnan(a), f"isnan {dt}")
        exact(h, pygpu.isinf(t), np.isinf(a), f"isinf {dt}")
        exact(h, pygpu.isfinite(t), np.isfinite(a), f"isfinite {dt}")
        rtol, atol = 1e-2, 1e-3
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(a.astype(np.float64), b.astype(np.float64),
                               rtol=rtol, atol=atol)
        got = pygpu.isclose(t, u, rtol=rtol, atol=atol)
        # Near the edge the dtype's own rounding may decide: check only
        # where the margin is wide.
        x, y = np.broadcast_arrays(a.astype(np.float64),
                                   np.asarray(b, np.float64))
        with np.errstate(invalid="ignore", over="ignore"):
            margin = np.abs(np.abs(x - y) - (atol + rtol * np.abs(y)))
        sure = ~(margin < 1e-2 * (1 + np.abs(y)))
        g = h.host(got)
        if g.shape != close.shape or np.any((g != close) & sure):
            raise h.Wrong(f"isclose {dt}: {g.tolist()} != {close.tolist()}")
    if a.shape == b.shape and dt != "int64":
        same = bool(np.array_equal(a, b))
        if bool(pygpu.equal(t, u)) != same:
            raise h.Wrong(f"equal {dt} {a.shape}: not {same}")


# ------------------------------------------------------------- math

UNARY = {  # name: (NumPy rule, domain)
    "exp": (np.exp, "any"), "log": (np.log, "pos"), "abs": (np.abs, "any"),
    "sqrt": (np.sqrt, "nonneg"), "sin": (np.sin, "any"),
    "cos": (np.cos, "any"), "tanh": (np.tanh, "any"),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "any"),
    "floor": (np.floor, "any"), "ceil": (np.ceil, "any"),
    "sign": (np.sign, "any"), "reciprocal": (lambda x: 1 / x, "nonzero"),
    "neg": (np.negative, "any"), "log1p": (np.log1p, "nonneg"),
    "expm1": (np.expm1, "any"), "rsqrt": (lambda x: 1 / np.sqrt(x), "pos"),
}
BINARY = {  # name: (NumPy rule, the divisor must be nonzero)
    "maximum": (np.maximum, False), "minimum": (np.minimum, False),
    "fmod": (np.fmod, True), "remainder": (np.remainder, True),
    "floor_divide": (np.floor_divide, True),
}


def domain_values(rng, a, domain):
    x = a.astype(np.float64)
    if domain == "pos":
        return np.abs(x) + 0.25
    if domain == "nonneg":
        return np.abs(x)
    if domain == "nonzero":
        return np.where(x < 0, x - 0.5, x + 0.5)
    return x


def fam_math(rng, h):
    dt = pick(rng, FLOATS)
    tol_dt = dt
    if rng.random() < 0.6:
        name = pick(rng, sorted(UNARY))
        rule, domain = UNARY[name]
        shape = h.rand_shape(rng)
        x = domain_values(rng, h.rand_values(rng, shape, "float64"), domain)
        a = x.astype(h.DTYPES[dt][1])
        t = h.to_tensor(a, dt)
        if a.ndim >= 2 and rng.random() < 0.5:
            t, a = t.transpose(0, 1), a.swapaxes(0, 1)
        got = getattr(pygpu, name)(t) if rng.random() < 0.5 else \
            getattr(t, name)()
        with np.errstate(all="ignore"):
            ref = rule(a.astype(np.float64))
        h.compare(got, ref, tol_dt, f"{name} {dt} {a.shape}")
        return
    if rng.random() < 0.3:  # pow with a positive base, clamp
        t, a = h.make_any(rng, dt)
        if rng.random() < 0.5:
            base = np.abs(a.astype(np.float64)) + 0.5
            e = float(rng.integers(-4, 5)) / 2
            t2 = h.to_tensor(base.astype(h.DTYPES[dt][1]), dt)
            ref = base.astype(h.DTYPES[dt][1]).astype(np.float64) ** e
            h.compare(t2 ** e, ref, tol_dt, f"pow {dt} ** {e}",
                      scale=np.abs(ref) + 1)
            return
        lo = float(rng.integers(-8, 1)) / 4
        hi = lo + float(rng.integers(0, 9)) / 4
        h.compare(t.clamp(lo, hi), np.clip(a.astype(np.float64), lo, hi),
                  tol_dt, f"clamp {dt} [{lo}, {hi}]")
        return
    name = pick(rng, sorted(BINARY))
    rule, nonzero = BINARY[name]
    if rng.random() < 0.3:
        dt = "int64"
    t, a = h.make_any(rng, dt)
    u, b = h.make_exact(rng, h.broadcast_partner(rng, a.shape), dt,
                        nonzero=nonzero)
    if dt == "int64":  # keep clear of the wrapping extremes
        a, b = np.clip(a, -10**6, 10**6), np.clip(b, -10**6, 10**6)
        b = np.where(b == 0, 1, b) if nonzero else b
        t = h.to_tensor(contig(a), dt)
        u = h.to_tensor(contig(b), dt)
    got = getattr(pygpu, name)(t, u)
    with np.errstate(all="ignore"):
        ref = rule(a, b) if dt == "int64" else \
            rule(a.astype(np.float64), b.astype(np.float64))
    if dt != "int64" and name in ("floor_divide", "remainder"):
        # The quotient's floor can fall either way of an integer in the
        # dtype's rounding: compare where the exact quotient is clear of one.
        q = a.astype(np.float64) / b.astype(np.float64)
        frac = np.abs(q - np.round(q))
        g = h.host(got).astype(np.float64)
        ok = frac > 1e-2
        ref, g = np.broadcast_arrays(ref, g)
        if np.any(np.abs(g - ref)[np.broadcast_to(ok, g.shape)] >
                  TOL[dt] * (1 + np.abs(ref[np.broadcast_to(ok, g.shape)]))):
            raise h.Wrong(f"{name} {dt}: {g.tolist()} != {ref.tolist()}")
        return
    h.compare(got, ref, dt, f"{name} {dt} {a.shape} {b.shape}")


# ------------------------------------------------------------- reductions

def fam_reduce_more(rng, h):
    dt = pick(rng, FLOATS + ["int64"])
    t, a = h.make_any(rng, dt)
    x = h.f64(a)
    dim, axis, keep = dim_args(rng, a.ndim)
    kw = {} if dim is None else {"dim": dim, "keepdim": keep}
    keepdims = keep and dim is not None
    empty = x.size == 0 if dim is None else a.shape[axis] == 0
    which = pick(rng, ["amax", "amin", "argmax", "argmin", "prod", "any",
                       "all", "var", "std", "cumsum", "logsumexp",
                       "softmax", "log_softmax", "norm"])
    what = f"{which}({kw}) of {dt} {a.shape}"
    if which in ("amax", "amin"):
        if empty:
            h.expect_clean_error(lambda: getattr(t, which)(**kw),
                                 must_raise=True, what=what)
            return
        ref = (np.max if which == "amax" else np.min)(
            x, axis=axis, keepdims=keepdims)
        h.compare(getattr(t, which)(**kw), ref, dt, what)
    elif which in ("argmax", "argmin"):
        if empty:
            h.expect_clean_error(lambda: getattr(t, which)(**kw),
                                 must_raise=True, what=what)
            return
        idx = h.host(getattr(t, which)(**kw)).astype(np.int64)
        best = (np.max if which == "argmax" else np.min)(
            x, axis=axis, keepdims=True)
        if dim is None:  # an index into the flattened tensor, at a best
            if idx.shape != () or x.reshape(-1)[int(idx)] != best.item():
                raise h.Wrong(f"{what}: index {idx} is not at {best}")
            return
        got = idx if keep else np.expand_dims(idx, axis)
        picked = np.take_along_axis(x, got, axis)
        if not np.array_equal(picked, best):
            raise h.Wrong(f"{what}: indices {idx.tolist()}")
    elif which == "prod":
        small = np.clip(x, -2, 2) if dt != "int64" else np.clip(x, -3, 3)
        if small.size > 24:
            small = np.where(np.abs(small) > 1.1, np.sign(small), small)
        t = h.to_tensor(contig(small).astype(a.dtype), dt)
        ref = np.prod(small.astype(a.dtype).astype(
            np.int64 if dt == "int64" else np.float64), axis=axis,
            keepdims=keepdims)
        h.compare(t.prod(**kw), ref, dt, what, scale=np.abs(ref) + 1)
    elif which in ("any", "all"):
        y = np.where(rng.random(a.shape) < 0.7, 0, x)
        t = h.to_tensor(contig(y).astype(a.dtype), dt)
        ref = (np.any if which == "any" else np.all)(
            y != 0, axis=axis, keepdims=keepdims)
        exact(h, getattr(t, which)(**kw), ref, what)
    elif dt == "int64":  # the rest are for floating point
        h.expect_clean_error(lambda: getattr(t, which)(
            **({"dim": dim if dim is not None else 0} if which in (
                "cumsum", "softmax", "log_softmax", "logsumexp") else kw)),
            what=what)
    elif which in ("var", "std"):
        c = int(rng.integers(0, 2))
        n = x.size if dim is None else a.shape[axis]
        got = getattr(t, which)(correction=c, **kw)
        with np.errstate(all="ignore"):
            ref = (np.var if which == "var" else np.std)(
                x, axis=axis, ddof=c, keepdims=keepdims) if n - c > 0 \
                else np.full(np.sum(x, axis=axis, keepdims=keepdims).shape,
                             np.nan if n - c <= 0 and n > 0 or n == 0
                             else 0.0)
        if n - c <= 0:  # torch gives NaN or inf; only the shape is checked
            g = h.host(got)
            if g.shape != np.shape(ref):
                raise h.Wrong(f"{what}: shape {g.shape}")
            return
        h.compare(got, ref, dt, what,
                  scale=np.max(np.abs(x), initial=0.0) ** 2 + 1)
    elif which in ("cumsum", "logsumexp", "softmax", "log_softmax"):
        if a.ndim == 0 or dim is None:
            dim, axis = 0, 0
            if a.ndim == 0:
                return
        if which == "cumsum":
            ref = np.cumsum(x, axis=axis)
            h.compare(t.cumsum(dim), ref, dt, what,
                      scale=np.cumsum(np.abs(x), axis=axis))
            return
        m = np.max(x, axis=axis, keepdims=True) if a.shape[axis] else 0
        with np.errstate(all="ignore"):
            lse = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        if which == "logsumexp":
            got = t.logsumexp(dim, keepdim=keep)
            ref = lse if keep else np.squeeze(lse, axis)
            if a.shape[axis] == 0:
                ref = np.full(ref.shape, -np.inf)
            h.compare(got, ref, dt, what, scale=np.abs(ref) + 4)
        elif which == "softmax":
            h.compare(t.softmax(dim), np.exp(x - lse), dt, what)
        else:
            h.compare(t.log_softmax(dim), x - lse, dt, what,
                      scale=np.abs(x - lse) + 4)
    else:  # the 2-norm
        ref = np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
        got = t.norm(dim=dim, keepdim=keep) if dim is not None else t.norm()
        h.compare(got, ref, dt, what, scale=np.abs(ref) + 1)


# ------------------------------------------------------------- joining

def fam_join(rng, h):
    dt = h.rand_dtype(rng)
    shape = h.rand_shape(rng, max_dims=4)
    if not shape:
        shape = [int(rng.integers(0, 4))]
    d = int(rng.integers(len(shape)))
    which = pick(rng, ["cat", "stack", "split", "chunk", "flip", "repeat",
                       "narrow", "unbind"])
    what = f"{which} {dt} {shape} dim {d}"
    if which in ("cat", "stack"):
        parts = []
        for _ in range(int(rng.integers(1, 6))):
            s = list(shape)
            if which == "cat":
                s[d] = int(rng.integers(0, 4))
            parts.append(h.make_exact(rng, s, dt))
        ts, arrs = [p[0] for p in parts], [p[1] for p in parts]
        neg = d - len(shape) - (which == "stack") if rng.random() < 0.3 \
            else d
        if which == "cat":
            got, ref = pygpu.cat(ts, dim=neg), np.concatenate(arrs, axis=d)
        else:
            got, ref = pygpu.stack(ts, dim=neg), np.stack(arrs, axis=d)
        h.compare(got, h.f64(ref), dt, what)
        return
    t, a = h.make_exact(rng, shape, dt)
    if which == "split":
        n = a.shape[d]
        if rng.random() < 0.5:
            k = int(rng.integers(1, 4))
            got = t.split(k, dim=d)
            sizes = [min(k, n - i) for i in range(0, n, k)] or [0]
        else:
            sizes, left = [], n
            while left:
                sizes.append(int(rng.integers(0, left + 1)))
                left -= sizes[-1]
            if rng.random() < 0.3:
                sizes.append(0)
            got = t.split(sizes, dim=d)
        starts = np.cumsum([0] + sizes[:-1])
        refs = [np.take(a, range(int(s0), int(s0) + sz), axis=d)
                for s0, sz in zip(starts, sizes)]
        if len(got) != len(refs):
            raise h.Wrong(f"{what}: {len(got)} pieces, NumPy {len(refs)}")
        for g, r in zip(got, refs):
            h.compare(g, h.f64(r), dt, what)
    elif which == "chunk":
        k = int(rng.integers(1, 5))
        n = a.shape[d]
        size = -(-n // k) if n else 0
        got = t.chunk(k, dim=d)
        refs = [np.take(a, range(i, min(i + size, n)), axis=d)
                for i in range(0, n, size)] if size else [a] * k
        if len(got) != len(refs):
            raise h.Wrong(f"{what}: {len(got)} chunks, NumPy {len(refs)}")
        for g, r in zip(got, refs):
            h.compare(g, h.f64(r), dt, what)
    elif which == "flip":
        dims = sorted({int(x) for x in rng.choice(len(shape), int(
            rng.integers(1, len(shape) + 1)), replace=False)})
        h.compare(t.flip(dims), h.f64(np.flip(a, dims)), dt,
                  f"{what} dims {dims}")
    elif which == "repeat":
        reps = [int(rng.integers(0, 3)) for _ in range(
            len(shape) + int(rng.integers(0, 2)))]
        h.compare(t.repeat(*reps), h.f64(np.tile(a, reps)), dt,
                  f"{what} {reps}")
    elif which == "narrow":
        n = a.shape[d]
        start = int(rng.integers(0, n + 1))
        length = int(rng.integers(0, n - start + 1))
        h.compare(t.narrow(d, start, length),
                  h.f64(np.take(a, range(start, start + length), axis=d)),
                  dt, what)
    else:
        got = t.unbind(d)
        if len(got) != a.shape[d]:
            raise h.Wrong(f"{what}: {len(got)} pieces")
        for i, g in enumerate(got):
            h.compare(g, h.f64(np.take(a, i, axis=d)), dt, what)


# ------------------------------------------------------------- selecting

def fam_select(rng, h):
    dt = h.rand_dtype(rng)
    shape = h.rand_shape(rng, max_dims=4)
    if not shape:
        shape = [int(rng.integers(1, 4))]
    t, a = h.make_any(rng, dt, shape)
    d = int(rng.integers(len(shape)))
    n = a.shape[d]
    which = pick(rng, ["index_select", "gather", "list", "mask", "mask_set",
                       "masked_fill", "where"])
    what = f"{which} {dt} {a.shape} dim {d}"
    idx = rng.integers(-n if which == "list" else 0, max(n, 1),
                       size=int(rng.integers(0, 5))) if n else \
        np.zeros(0, np.int64)
    if which == "index_select":
        i = pygpu.tensor(idx.astype(np.int64), device=h.DEVICE)
        h.compare(pygpu.index_select(t, d, i), h.f64(np.take(a, idx, d)),
                  dt, what)
    elif which == "gather":
        oshape = list(a.shape)
        oshape[d] = int(rng.integers(0, 4))
        if any(s == 0 for s in a.shape) and not n:
            oshape[d] = 0
        gi = rng.integers(0, max(n, 1), size=oshape) if n else \
            np.zeros(oshape, np.int64)
        gi = gi if n else np.zeros([0] * len(oshape), np.int64)
        oshape = list(gi.shape)
        for k in range(len(oshape)):  # index dims no larger than the input's
            if k != d and oshape[k] > a.shape[k]:
                gi = np.take(gi, range(a.shape[k]), axis=k)
        i = pygpu.tensor(gi.astype(np.int64), device=h.DEVICE)
        ref = np.take_along_axis(a[tuple(slice(0, s) for s in gi.shape[:d])
                                   + (slice(None),)
                                   + tuple(slice(0, s)
                                           for s in gi.shape[d + 1:])],
                                 gi, d)
        h.compare(pygpu.gather(t, d, i), h.f64(ref), dt, what)
    elif which == "list":
        if not n:
            return
        key = (slice(None),) * d + (list(int(v) for v in idx),)
        if len(idx) == 0:
            return
        h.compare(t[key], h.f64(a[key]), dt, what + f" {list(idx)}")
    else:
        m = rng.random(a.shape) < 0.5
        mt = pygpu.tensor(m, device=h.DEVICE)
        if which == "mask":
            h.compare(t[mt], h.f64(a[m]), dt, what)
        elif which == "mask_set":
            t2, a2 = t.clone(), np.array(a, copy=True)
            v = 3
            t2[mt] = v
            a2[m] = v
            h.compare(t2, h.f64(a2), dt, what)
        elif which == "masked_fill":
            h.compare(t.masked_fill(mt, -2), h.f64(np.where(m, -2, a)), dt,
                      what)
        else:
            u, b = h.make_exact(rng, h.broadcast_partner(rng, a.shape), dt)
            h.compare(pygpu.where(mt, t, u), h.f64(np.where(m, a, b)), dt,
                      what)


# ------------------------------------------------------------- dtypes

def bf16_round(x):
    """float64 -> the nearest bfloat16 (ties to even), as float64."""
    f = np.asarray(x, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    sixteen, one = np.uint64(16), np.uint64(1)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & one)) \
        >> sixteen << sixteen
    out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def dtype_values(rng, shape, dt):
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt == "uint8":
        return rng.integers(0, 100, size=shape).astype(np.uint8)
    if dt in ("int32", "int64"):
        return rng.integers(-100, 100, size=shape).astype(dt)
    x = rng.integers(-64, 64, size=shape) / 8  # exact in every float dtype
    return x.astype(np.float32 if dt == "bfloat16" else dt)


def tensor_of(h, x, dt):
    return pygpu.tensor(x, device=h.DEVICE).to(getattr(pygpu, dt))


def category(dt):
    return 0 if dt == "bool" else 2 if dt in TOL else 1


def promote(a, b, a0=False, b0=False):
    """torch's promotion for two tensors of these dtypes; a0/b0: 0-d.  A
    0-d tensor counts only where its category (bool, integer, floating)
    is higher than the dimensioned one's."""
    if a0 != b0:
        z, d = (a, b) if a0 else (b, a)
        return z if category(z) > category(d) else d
    fa, fb = a in TOL, b in TOL
    if fa and fb:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return max(a, b, key=ORDER.get)
    if fa or fb:
        return a if fa else b
    return max(a, b, key=ORDER.get)


def as_dtype(x, dt):
    """float64 values as the dtype holds them."""
    if dt == "bfloat16":
        return bf16_round(x)
    return np.asarray(x).astype(dt).astype(np.float64)


def fam_dtypes(rng, h):
    shape = h.rand_shape(rng, max_dims=3, max_numel=64)
    a_dt, b_dt = pick(rng, ALL), pick(rng, ALL)
    x = dtype_values(rng, shape, a_dt)
    t = tensor_of(h, x, a_dt)
    if rng.random() < 0.5:  # a cast
        got = t.to(getattr(pygpu, b_dt))
        if str(got.dtype) != "pygpu." + b_dt:
            raise h.Wrong(f"cast {a_dt} -> {b_dt}: {got.dtype}")
        g = h.host(got.float() if b_dt == "bfloat16" else got)
        if b_dt == "bool":
            ref = x != 0
        elif b_dt == "uint8" and a_dt not in ("bool", "uint8"):
            ref = np.abs(x).astype(np.float64).astype(np.uint8)  # >= 0 only
            t2 = tensor_of(h, np.abs(x), a_dt).to(pygpu.uint8)
            g = h.host(t2)
        elif b_dt in ("int32", "int64"):
            ref = np.trunc(x.astype(np.float64)).astype(b_dt)
        else:
            ref = as_dtype(x.astype(np.float64), b_dt)
        if not np.array_equal(np.asarray(g, np.float64),
                              np.asarray(ref, np.float64)):
            raise h.Wrong(f"cast {a_dt} -> {b_dt}: {g.tolist()} != "
                          f"{np.asarray(ref).tolist()}")
        return
    if a_dt == "bool" and b_dt == "bool":
        b_dt = "int32"
    y = dtype_values(rng, h.broadcast_partner(rng, shape), b_dt)
    u = tensor_of(h, y, b_dt)
    op = pick(rng, ["add", "mul", "sub"])
    if op == "sub" and "bool" in (a_dt, b_dt):
        h.expect_clean_error(lambda: t - u, must_raise=True,
                             what=f"sub {a_dt} {b_dt}")
        return
    got = getattr(pygpu, op)(t, u)
    want = promote(a_dt, b_dt, x.ndim == 0, y.ndim == 0)
    if str(got.dtype) != "pygpu." + want:
        raise h.Wrong(f"{op} {a_dt} {b_dt}: {got.dtype}, torch {want}")
    xx, yy = x.astype(np.float64), y.astype(np.float64)
    ref = {"add": xx + yy, "mul": xx * yy, "sub": xx - yy}[op]
    if want == "uint8":
        ref = np.mod(ref, 256)
    g = h.host(got.float() if want == "bfloat16" else got).astype(
        np.float64)
    ref = as_dtype(ref, want)
    if g.shape != ref.shape or not np.allclose(
            g, ref, rtol=TOL.get(want, 0), atol=0):
        raise h.Wrong(f"{op} {a_dt} {b_dt} -> {want}: {g.tolist()} != "
                      f"{ref.tolist()}")
