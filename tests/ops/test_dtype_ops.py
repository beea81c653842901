"""bool, uint8, int32 and bfloat16 in the reductions, scans, softmax, the
gather kind (joining, index_select, gather, integer indexing), the binary
math ops, out= casting and set_default_dtype, against NumPy (bfloat16
through float32, ~1e-2)."""
import numpy as np
import pytest

import pygpu

B, U8, I32, I64 = pygpu.bool, pygpu.uint8, pygpu.int32, pygpu.int64
BF16, F32 = pygpu.bfloat16, pygpu.float32
NEW = [B, U8, I32, BF16]
NP = {B: np.bool_, U8: np.uint8, I32: np.int32}
IDS = ["bool", "uint8", "int32", "bfloat16"]


def make(dtype, rng, shape, device, low=0, high=6):
    """A tensor of dtype on device and its values as float64 (exact:
    bfloat16 values are drawn as bfloat16 first)."""
    if dtype is B:
        v = rng.integers(0, 2, shape).astype(np.bool_)
        t = pygpu.from_numpy(v)
    elif dtype is BF16:
        v = rng.uniform(-3, 3, shape).astype(np.float32)
        t = pygpu.from_numpy(v).to(BF16)
        v = t.float().numpy()
    else:
        v = rng.integers(low, high, shape).astype(NP[dtype])
        t = pygpu.from_numpy(v)
    return t.to(device), v.astype(np.float64)


def host(t):
    return (t.float() if t.dtype is BF16 else t).cpu().numpy().astype(
        np.float64)


def close(got, ref, dtype):
    if dtype is BF16:
        np.testing.assert_allclose(host(got), ref, rtol=2e-2, atol=2e-2)
    else:
        np.testing.assert_array_equal(host(got), ref)


# -- reductions, scans, softmax -----------------------------------------------

@pytest.mark.parametrize("dtype", NEW, ids=IDS)
def test_reductions(dtype, device, rng):
    t, v = make(dtype, rng, (3, 5), device, 1, 4)
    wide = I64 if dtype is not BF16 else BF16
    assert t.sum().dtype is wide and t.prod().dtype is wide
    close(t.sum(1), v.sum(1), dtype)
    close(t.prod(0), v.prod(0), dtype)
    for name in ("min", "max", "amin", "amax"):
        got = getattr(t, name)() if name in ("min", "max") else \
            getattr(t, name)(1)
        assert got.dtype is dtype
        ref = getattr(np, name)(v) if name in ("min", "max") else \
            getattr(np, name)(v, 1)
        close(got, ref, dtype)
    values, indices = t.max(1)
    assert values.dtype is dtype
    close(values, v.max(1), dtype)
    np.testing.assert_array_equal(indices.cpu().numpy(), v.argmax(1))
    if dtype is B:
        with pytest.raises(RuntimeError,
                           match="\"argmin_cpu\" not implemented for 'Bool'"):
            t.argmin()
    else:
        assert t.argmin().item() == v.argmin()
        assert t.argmax(0).tolist() == v.argmax(0).tolist()
    empty = pygpu.empty(0, 3, dtype=dtype, device=device)
    assert empty.sum(0).tolist() == [0, 0, 0]
    with pytest.raises(IndexError):
        empty.max(0)


@pytest.mark.parametrize("dtype", NEW, ids=IDS)
def test_scans(dtype, device, rng):
    t, v = make(dtype, rng, (4, 3), device, 0, 3)
    want = BF16 if dtype is BF16 else I64
    for name in ("cumsum", "cumprod"):
        got = getattr(t, name)(0)
        assert got.dtype is want
        close(got, getattr(np, name)(v, 0), dtype)
    tt = t.t()  # non-contiguous
    close(tt.cumsum(1), np.cumsum(v.T, 1), dtype)


@pytest.mark.parametrize("dtype", NEW, ids=IDS)
def test_softmax(dtype, device, rng):
    t, v = make(dtype, rng, (2, 5), device)
    e = np.exp(v - v.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    if dtype is BF16:
        got = t.softmax(1)
        assert got.dtype is BF16
        close(got, ref, BF16)
        close(t.log_softmax(1), np.log(ref), BF16)
    else:
        with pytest.raises(NotImplementedError, match="not implemented"):
            t.softmax(1)
        np.testing.assert_allclose(host(t.softmax(1, dtype=F32)), ref,
                                   rtol=1e-5)
    lse = t.logsumexp(1)
    assert lse.dtype is (BF16 if dtype is BF16 else F32)
    np.testing.assert_allclose(
        host(lse), np.log(np.exp(v).sum(1)),
        rtol=2e-2 if dtype is BF16 else 1e-5)


# -- the gather kind: joining, selecting, indexing ----------------------------

@pytest.mark.parametrize("dtype", NEW, ids=IDS)
def test_gather_kind(dtype, device, rng):
    t, v = make(dtype, rng, (4, 3), device)
    idx = [3, 0, 0, 2]
    close(t[idx], v[idx], dtype)
    close(t[:, [2, 0]], v[:, [2, 0]], dtype)
    ix = pygpu.tensor([2, 1], dtype=I32, device=device)
    close(t.index_select(1, ix), v[:, [2, 1]], dtype)
    g = np.array([[0, 2], [1, 1], [2, 0], [0, 0]])
    close(t.gather(1, pygpu.tensor(g, device=device)),
          np.take_along_axis(v, g, 1), dtype)
    close(t.flip(0), v[::-1], dtype)
    close(t.repeat(2, 1), np.tile(v, (2, 1)), dtype)
    w = t.clone()
    w[[1, 2]] = t[[0, 3]]
    ref = v.copy()
    ref[[1, 2]] = v[[0, 3]]
    close(w, ref, dtype)
    # The CPU raises torch's IndexError; CUDA raises the CudaError of a
    # device-side assert as torch does (and the context stays usable).
    with pytest.raises(IndexError if device == "cpu" else pygpu.CudaError,
                       match="index 4 is out of bounds"):
        t[[4]]


def test_uint8_tensor_is_a_mask(device):
    x = pygpu.arange(6, device=device).reshape(3, 2)
    m = pygpu.tensor([1, 0, 1], dtype=U8, device=device)
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        assert x[m].tolist() == [[0, 1], [4, 5]]
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        x[m] = 7
    assert x.tolist() == [[7, 7], [2, 3], [7, 7]]


@pytest.mark.parametrize("other", [B, U8, I32, I64, BF16, F32],
                         ids=["bool", "uint8", "int32", "int64", "bfloat16",
                              "float32"])
@pytest.mark.parametrize("dtype", NEW, ids=IDS)
def test_cat_stack_promote(dtype, other, device, rng):
    a, va = make(dtype, rng, (2, 3), device)
    b, vb = make(other, rng, (1, 3), device) if other in NEW else (
        pygpu.ones(1, 3, dtype=other, device=device), np.ones((1, 3)))
    want = pygpu.promote_types(dtype, other)
    r = pygpu.cat([a, b])
    assert r.dtype is want
    close(r, np.concatenate([va, vb]), want)
    s = pygpu.stack([a, a], 1)
    assert s.dtype is dtype
    close(s, np.stack([va, va], 1), dtype)


# -- binary math --------------------------------------------------------------

def ref_math(name, x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "pow":
            return np.power(x, y)
        if name == "maximum":
            return np.maximum(x, y)
        if name == "minimum":
            return np.minimum(x, y)
        if name == "fmod":
            return np.fmod(x, y)
        if name == "remainder":
            return np.mod(x, y)
        return np.floor_divide(x, y)


MATH = ["pow", "maximum", "minimum", "fmod", "remainder", "floor_divide"]


@pytest.mark.parametrize("name", MATH)
@pytest.mark.parametrize("dtype", [U8, I32, BF16], ids=IDS[1:])
def test_binary_math(name, dtype, device, rng):
    x, vx = make(dtype, rng, (3, 4), device, 1, 5)
    y, vy = make(dtype, rng, (4,), device, 1, 4)
    if dtype is BF16:  # positive bases and divisors away from 0
        x, vx = x.abs() + 0.5, np.abs(vx) + 0.5
        y, vy = y.abs() + 0.5, np.abs(vy) + 0.5
        vx, vy = host(x), host(y)
    got = getattr(pygpu, name)(x, y)
    assert got.dtype is dtype
    ref = ref_math(name, vx, vy)
    if dtype is U8 or dtype is I32:
        ref = ref.astype(np.int64).astype(NP[dtype]).astype(np.float64)
    close(got, ref, dtype)
    lo, hi = (1, 3) if dtype is not BF16 else (0.75, 2.0)
    close(x.clamp(lo, hi), np.clip(vx, lo, hi), dtype)


@pytest.mark.parametrize("name", ["pow", "fmod", "remainder", "floor_divide"])
def test_bool_math_raises(name, device):
    a = pygpu.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        getattr(pygpu, name)(a, a)


def test_bool_math_with_numbers(device):
    a = pygpu.tensor([True, False, True], device=device)
    assert pygpu.maximum(a, a.logical_not()).tolist() == [True] * 3
    assert pygpu.minimum(a, a.logical_not()).tolist() == [False] * 3
    r = a ** 2
    assert r.dtype is I64 and r.tolist() == [1, 0, 1]
    r = a.clamp(0, 2)
    assert r.dtype is I64 and r.tolist() == [1, 0, 1]
    r = a // 2
    assert r.dtype is I64 and r.tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        pygpu.bitwise_and(a.float(), a.float())


def test_int32_pow_wraps(device):
    x = pygpu.tensor([3, -2, 7], dtype=I32, device=device)
    r = x ** 21
    want = (np.array([3, -2, 7], dtype=np.int64) ** 21).astype(np.int32)
    assert r.dtype is I32 and r.tolist() == want.tolist()


# -- out= casting, default dtype ----------------------------------------------

def test_out_casting(device):
    a = pygpu.tensor([1, 2], dtype=I32, device=device)
    out = pygpu.empty(2, dtype=U8, device=device)
    assert pygpu.add(a, a, out=out).tolist() == [2, 4]
    bout = pygpu.empty(2, dtype=B, device=device)
    with pytest.raises(RuntimeError,
                       match="result type Int can't be cast to the desired "
                             "output type Bool"):
        pygpu.add(a, a, out=bout)
    with pytest.raises(RuntimeError, match="result type BFloat16 can't be "
                                           "cast to the desired output "
                                           "type Int"):
        pygpu.add(a.to(BF16), 1, out=pygpu.empty(2, dtype=I32,
                                                 device=device))
    fout = pygpu.empty(2, dtype=BF16, device=device)
    assert pygpu.maximum(a, a, out=fout).tolist() == [1.0, 2.0]
    assert pygpu.eq(a, a, out=bout).tolist() == [True, True]
    assert pygpu.can_cast(I32, B) is False and pygpu.can_cast(B, U8)


def test_set_default_dtype_bfloat16(device):
    old = pygpu.get_default_dtype()
    try:
        pygpu.set_default_dtype(BF16)
        assert pygpu.get_default_dtype() is BF16
        assert pygpu.zeros(2, device=device).dtype is BF16
        a = pygpu.tensor([1, 3], dtype=I32, device=device)
        assert (a / 2).dtype is BF16
        assert (a * 0.5).dtype is BF16
        assert a.exp().dtype is BF16
        assert pygpu.where(a > 1, 1.5, 0.5).dtype is BF16
        assert pygpu.arange(0.0, 2.0, device=device).dtype is BF16
        assert (a / 2).tolist() == [0.5, 1.5]
    finally:
        pygpu.set_default_dtype(old)
    with pytest.raises(TypeError):
        pygpu.set_default_dtype(I32)
