"""Reductions and scans read their input in its own dtype: every op over
every input dtype against a float64 / int64 NumPy reference (dims, keepdim,
non-contiguous views, empty inputs, a large input split over two threads),
the dtype= forms that name the accumulator, and proof that no converted
copy of the input is made."""
import numpy as np
import pytest

import pygpu
from pygpu import _C

DTYPES = [pygpu.bool, pygpu.uint8, pygpu.int32, pygpu.int64, pygpu.float16,
          pygpu.bfloat16, pygpu.float32, pygpu.float64]
IDS = [repr(d).split(".")[1] for d in DTYPES]
FLOATS = [pygpu.float16, pygpu.bfloat16, pygpu.float32, pygpu.float64]
# Relative tolerance of a result stored in the dtype (a 16-bit float
# rounds the float accumulator once; integers are exact).
TOL = {pygpu.float16: 2e-3, pygpu.bfloat16: 1e-2, pygpu.float32: 1e-5,
       pygpu.float64: 1e-12}
NP_INT = {pygpu.bool: np.bool_, pygpu.uint8: np.uint8, pygpu.int32: np.int32,
          pygpu.int64: np.int64}


def make(dt, shape, rng, device, low=-50, high=50):
    """A tensor of dt and its exact values as float64."""
    if dt is pygpu.bool:
        v = rng.integers(0, 2, shape).astype(np.bool_)
    elif dt in NP_INT:
        lo = 0 if dt is pygpu.uint8 else low
        v = rng.integers(lo, high, shape).astype(NP_INT[dt])
    else:
        v = rng.uniform(-3, 3, shape).astype(np.float32)
    t = pygpu.from_numpy(np.ascontiguousarray(v)).to(dt).to(device)
    return t, host(t)


def host(t):
    return t.to(pygpu.float64).cpu().numpy()


def wide(dt):
    """The dtype a sum or product of dt gives."""
    return pygpu.int64 if dt in NP_INT else dt


def check(got, ref, dt, scale=None):
    """got (a tensor) equals ref exactly for integers, else within the
    dtype's tolerance of `scale` (default |ref|)."""
    g = host(got)
    assert g.shape == np.shape(ref)
    if dt in NP_INT:
        np.testing.assert_array_equal(g, ref)
        return
    scale = np.abs(ref) if scale is None else scale
    assert np.all(np.abs(g - ref) <= TOL[dt] * (scale + 1e-30)), (g, ref)


def views(t, v):
    """t as it is and as non-contiguous views, with their values."""
    yield t, v
    if t.ndim >= 2:
        yield t.transpose(0, t.ndim - 1), v.swapaxes(0, v.ndim - 1)
        yield t[:, ::2], v[:, ::2]


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (4, 9), (3, 0),
                                   (2, 5, 6)], ids=str)
def test_sum_mean_prod(device, rng, dt, shape):
    t0, v0 = make(dt, shape, rng, device)
    for t, v in views(t0, v0):
        dims = [None] + list(range(t.ndim))
        for d in dims:
            for keep in (False, True):
                kw = {} if d is None else {"dim": d}
                s = t.sum(**kw, keepdim=keep)
                assert s.dtype is wide(dt)
                ref = v.sum(axis=d, keepdims=keep)
                check(s, ref, dt, np.abs(v).sum(axis=d, keepdims=keep))
                p = t.prod(**kw, keepdim=keep) if d is not None else t.prod()
                assert p.dtype is wide(dt)
                pkeep = keep if d is not None else False
                if dt in NP_INT:  # int64 wraps, as NumPy's int64 product
                    pref = v.astype(np.int64).prod(axis=d, keepdims=pkeep)
                    check(p, pref, dt)
                elif (v.size if d is None else v.shape[d]) <= 9:
                    pref = np.prod(v, axis=d, keepdims=pkeep)  # (no overflow)
                    check(p, pref, dt, np.abs(pref) + 1e-3)
                if dt in FLOATS:
                    m = t.mean(**kw, keepdim=keep)
                    assert m.dtype is dt
                    n = v.size if d is None else v.shape[d]
                    if n:
                        check(m, v.mean(axis=d, keepdims=keep), dt,
                              np.abs(v).mean(axis=d, keepdims=keep))
                    else:
                        assert np.isnan(host(m)).all()
                else:
                    with pytest.raises(RuntimeError,
                                       match="could not infer output dtype"):
                        t.mean(**kw)
        if t.ndim >= 2:
            s = t.sum((0, t.ndim - 1))
            check(s, v.sum(axis=(0, t.ndim - 1)), dt,
                  np.abs(v).sum(axis=(0, t.ndim - 1)))


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (4, 9), (2, 5, 6)],
                         ids=str)
def test_max_min_arg(device, rng, dt, shape):
    t0, v0 = make(dt, shape, rng, device)
    for t, v in views(t0, v0):
        for d in [None] + list(range(t.ndim)):
            for keep in (False, True):
                kw = {} if d is None else {"dim": d}
                for name in ("amax", "amin"):
                    got = getattr(t, name)(**kw, keepdim=keep)
                    assert got.dtype is dt
                    np.testing.assert_array_equal(
                        host(got), getattr(np, name)(v, axis=d,
                                                     keepdims=keep))
                if d is None:
                    assert t.max().dtype is dt
                    assert host(t.max()) == v.max()
                    assert host(t.min()) == v.min()
                    continue
                values, idx = t.max(d, keepdim=keep)
                np.testing.assert_array_equal(host(values),
                                              v.max(axis=d, keepdims=keep))
                ref = np.expand_dims(v.argmax(axis=d), d) if keep and \
                    v.ndim else v.argmax(axis=d)
                np.testing.assert_array_equal(idx.cpu().numpy(), ref)
                if dt is not pygpu.bool:
                    got = t.argmin(d, keepdim=keep).cpu().numpy()
                    ref = np.expand_dims(v.argmin(axis=d), d) if keep and \
                        v.ndim else v.argmin(axis=d)
                    np.testing.assert_array_equal(got, ref)
        if dt is not pygpu.bool:
            assert t.argmax().item() == int(np.argmax(v))
            assert t.argmin().item() == int(np.argmin(v))


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_empty(device, dt):
    t = pygpu.zeros(0, 3, dtype=dt, device=device)
    assert t.sum().item() == 0 and t.sum().dtype is wide(dt)
    assert t.sum(0).tolist() == [0, 0, 0]
    assert t.prod(0).tolist() == [1, 1, 1]
    assert t.sum(1).shape == (0,) and t.amax(1).shape == (0,)
    assert t.cumsum(0).shape == (0, 3)
    with pytest.raises(IndexError, match="non-zero size"):
        t.amax(0)
    with pytest.raises(RuntimeError, match="reduction dim to be specified"):
        t.max()


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_scans(device, rng, dt):
    t0, v0 = make(dt, (5, 6), rng, device, -3, 4)
    for t, v in views(t0, v0):
        for d in (0, 1):
            s = t.cumsum(d)
            assert s.dtype is wide(dt)
            check(s, np.cumsum(v, d), dt, np.cumsum(np.abs(v), d))
            p = t.cumprod(d)
            assert p.dtype is wide(dt)
            check(p, np.cumprod(v, d), dt, np.abs(np.cumprod(v, d)) + 1e-3)
    assert t0.cumsum(0, dtype=pygpu.float64).dtype is pygpu.float64


@pytest.mark.parametrize("dt", FLOATS, ids=IDS[4:])
def test_stats_floats(device, rng, dt):
    t, v = make(dt, (6, 7), rng, device)
    for d in (None, 0, 1):
        kw = {} if d is None else {"dim": d}
        check(t.var(**kw), v.var(axis=d, ddof=1), dt,
              v.var(axis=d, ddof=1) * 4)
        check(t.std(**kw), v.std(axis=d, ddof=1), dt)
        check(t.norm(**kw), np.sqrt((v * v).sum(axis=d)), dt)
        if d is not None:
            ref = np.log(np.exp(v).sum(axis=d))
            check(t.logsumexp(d), ref, dt)
    np.testing.assert_array_equal(host(t.any(1)), (v != 0).any(1))
    np.testing.assert_array_equal(host(t.all(0)), (v != 0).all(0))


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_dtype_argument(device, rng, dt):
    """dtype= naming the accumulator reads the input as it is; the result
    is that of the input converted first, bit for bit."""
    t, v = make(dt, (40, 70), rng, device)
    acc = pygpu.float64 if dt is pygpu.float64 else (
        pygpu.float32 if dt in FLOATS else pygpu.int64)
    conv = t.to(acc)
    for d in (None, 0, 1):
        kw = {} if d is None else {"dim": d}
        for op in ("sum", "prod") + (("mean",) if dt in FLOATS else ()):
            got = getattr(t, op)(**kw, dtype=acc)
            assert got.dtype is acc
            want = getattr(conv, op)(**kw)
            assert got.tolist() == want.tolist() or np.array_equal(
                host(got), host(want), equal_nan=True)
    other = pygpu.float64 if dt is not pygpu.float64 else pygpu.float32
    s = t.sum(dtype=other)
    assert s.dtype is other
    check(s, v.sum(), pygpu.float32, np.abs(v).sum())


def test_dtype_argument_autograd():
    x = pygpu.tensor([1.5, 2.25, -3.0], dtype=pygpu.bfloat16,
                     requires_grad=True)
    y = x.sum(dtype=pygpu.float32)
    assert y.dtype is pygpu.float32 and y.item() == 0.75
    y.backward()
    assert x.grad.dtype is pygpu.bfloat16
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


@pytest.fixture
def two_threads():
    before = pygpu.get_num_threads()
    pygpu.set_num_threads(2)
    yield
    pygpu.set_num_threads(before)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_large_two_threads(rng, dt, two_threads):
    """Over 2^21 elements the CPU splits full and outer reductions over the
    threads; the results are the one-thread ones, bit for bit."""
    n = 7 * 300000  # > 2^21
    t, v = make(dt, n, rng, "cpu")
    m = t.reshape(7, n // 7)
    results = lambda: [t.sum(), t.amax(), m.sum(1), m.amax(1)] + (  # noqa
        [t.mean(), t.sum(dtype=pygpu.float32)] if dt in FLOATS else [])
    split = [host(r) for r in results()]
    check(t.sum(), v.sum(), dt, np.abs(v).sum())
    assert host(t.amax()) == v.max()
    values, idx = t.max(0)
    assert idx.item() == int(np.argmax(v))
    pygpu.set_num_threads(1)
    for a, b in zip(split, [host(r) for r in results()]):
        assert a.tobytes() == b.tobytes()


def allocations(fn):
    """How many tensors fn allocates (each allocation counted by the
    injected-failure aid: the first n that does not fail is one past)."""
    for n in range(1, 20):
        _C._fail_allocation_in(n)
        try:
            fn()
        except (RuntimeError, pygpu.cuda.OutOfMemoryError) as e:
            if "failure injected" not in str(e):
                raise
            continue
        finally:
            _C._fail_allocation_in(0)
        return n - 1
    raise AssertionError("too many allocations")


@pytest.mark.parametrize("dt", [pygpu.int32, pygpu.bfloat16, pygpu.bool,
                                pygpu.float16], ids=str)
def test_no_converted_copy(device, rng, dt):
    """A large sum allocates its result alone (and on CUDA no more device
    memory than the result and the pass-2 workspace): no converted copy of
    the input, as a widening to int64 / float32 would need."""
    t, _ = make(dt, 1 << 20, rng, device)
    m = t.reshape(64, -1)
    for fn, expect in [(lambda: t.sum(), 1), (lambda: t.amax(), 1),
                       (lambda: t.cumsum(0), 1), (lambda: m.sum(1), 1),
                       (lambda: m.sum(0), 1), (lambda: t.max(0), 2)]:
        assert allocations(fn) == expect
    if dt in (pygpu.bfloat16, pygpu.float16):
        assert allocations(lambda: t.sum(dtype=pygpu.float32)) == 1
    else:
        assert allocations(lambda: t.sum(dtype=pygpu.int64)) == 1
    if device == "cuda":
        pygpu.cuda.synchronize()
        base = pygpu.cuda.memory_allocated()
        pygpu.cuda.reset_peak_memory_stats()
        r = t.sum()
        pygpu.cuda.synchronize()
        peak = pygpu.cuda.max_memory_allocated() - base
        # A widened copy would take 2 or 4 times the input's bytes.
        assert peak < t.numel() * t.element_size() // 2
        del r


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_var_std_of_half_types_read_as_they_are(device, dt):
    """var/std of float16/bfloat16 give the bits of the float32 copy's,
    rounded once, without making that copy."""
    rng = np.random.default_rng(12)
    x = pygpu.tensor(rng.standard_normal((6, 33)), device=device).to(
        getattr(pygpu, dt))
    for dim in (None, 0, 1, (0, 1)):
        for fn in ("var", "std"):
            got = getattr(x, fn)(dim)
            want = getattr(x.float(), fn)(dim).to(x.dtype)
            assert got.dtype == x.dtype
            assert got.float().cpu().numpy().tobytes() == \
                want.float().cpu().numpy().tobytes(), (fn, dim)
