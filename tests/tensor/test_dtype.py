"""dtypes: names, aliases, itemsize, NumPy mapping; conversions between all
eight dtypes against a NumPy reference of the rules; the ops on bool,
uint8, int32 and bfloat16 (torch's results, dtypes and errors)."""
import itertools
import pickle

import numpy as np
import pytest

import pygpu
from conftest import dtype_name, rel_err

F32, F16, F64, I64 = pygpu.float32, pygpu.float16, pygpu.float64, pygpu.int64
B, U8, I32, BF16 = pygpu.bool, pygpu.uint8, pygpu.int32, pygpu.bfloat16
ALL = [F32, F16, F64, I64, B, U8, I32, BF16]
NEW = [B, U8, I32, BF16]
FLOATS = [F32, F16, F64, BF16]
NP = {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64,
      B: np.bool_, U8: np.uint8, I32: np.int32}
TOL = {F32: 1e-6, F16: 1e-3, F64: 1e-15, BF16: 8e-3}


def host(t):
    """t's values as a NumPy array (bfloat16 as float32, exactly)."""
    return (t.float() if t.dtype is BF16 else t).cpu().numpy()


def bf16_round(x):
    """float64 values rounded to the nearest bfloat16 (ties to even), as
    float64: the nearest of three bfloat16 neighbours of float32(x),
    compared exactly through their midpoints."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for k, v in enumerate(x.flat):
        if np.isnan(v):
            out.flat[k] = np.nan
            continue
        mag = abs(v)
        with np.errstate(over="ignore"):
            top = int(np.float32(mag).view(np.uint32)) >> 16
        cands = [c for c in (top - 1, top, top + 1) if 0 <= c <= 0x7f80]

        def value(c):  # Inf counts as 2^128 for the distance
            return 2.0 ** 128 if c == 0x7f80 else float(
                np.uint32(c << 16).view(np.float32))

        best = min(cands, key=lambda c: (abs(value(c) - mag), c & 1))
        res = np.inf if best == 0x7f80 else value(best)
        out.flat[k] = -res if np.signbit(v) else res
    return out


def values_of(dtype, rng, n=24):
    """A tensor of dtype (on the CPU) with fresh and edge values, and its
    values as exact float64 (floats) or int64 (integers, bool)."""
    if dtype is B:
        v = rng.integers(0, 2, n).astype(np.bool_)
        return pygpu.from_numpy(v), v.astype(np.int64)
    if dtype in (U8, I32, I64):
        info = np.iinfo(NP[dtype])
        v = rng.integers(info.min, info.max, n, dtype=NP[dtype],
                         endpoint=True)
        v[:3] = [info.min, info.max, 0]
        return pygpu.from_numpy(v), v.astype(np.int64)
    special = [0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 300.7, -129.5, 255.9, 1e10,
               -3e9, np.nan, np.inf, -np.inf, 65504.0, 1e-40, 3e38, 0.5]
    v = np.concatenate([special, rng.standard_normal(n - len(special))
                        * 10.0 ** rng.integers(-3, 6, n - len(special))])
    with np.errstate(over="ignore"):
        if dtype is BF16:
            t = pygpu.from_numpy(v.astype(np.float32)).bfloat16()
        else:
            t = pygpu.from_numpy(v.astype(NP[dtype]))
    return t, host(t).astype(np.float64)


def ref_convert(v, src, dst):
    """The conversion rules: floats truncate toward zero into integers
    (out of range: INT64_MIN / INT32_MIN, uint8 the low byte of the int32),
    integers wrap, bool is != 0, floats round to nearest even."""
    if dst is B:
        return v != 0
    if src.is_floating_point and dst in (I64, I32, U8):
        bits = 64 if dst is I64 else 32
        lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
        ok = np.isfinite(v) & (np.trunc(v) >= lo) & (np.trunc(v) < hi)
        w = np.where(ok, np.trunc(np.where(ok, v, 0)), lo)
        i = np.array([int(x) for x in w.flat], dtype=np.int64).reshape(w.shape)
        return (i & 0xFF).astype(np.uint8) if dst is U8 else i.astype(NP[dst])
    if dst in (I64, I32, U8):
        return v.astype(NP[dst])  # NumPy wraps integers
    if dst is BF16:
        return bf16_round(v.astype(np.float64))
    with np.errstate(over="ignore"):
        return v.astype(NP[dst])


# -- the table ----------------------------------------------------------------

@pytest.mark.parametrize("dt,size,npdt", [
    (F32, 4, np.float32), (F16, 2, np.float16), (F64, 8, np.float64),
    (I64, 8, np.int64), (B, 1, np.bool_), (U8, 1, np.uint8),
    (I32, 4, np.int32),
])
def test_table(dt, size, npdt):
    assert dt.itemsize == size
    assert dt.numpy_dtype == np.dtype(npdt)
    assert dt.is_floating_point == (np.dtype(npdt).kind == "f")


def test_bfloat16_in_the_table():
    assert BF16.itemsize == 2 and BF16.is_floating_point
    with pytest.raises(TypeError, match="Got unsupported ScalarType "
                       "BFloat16"):
        BF16.numpy_dtype


def test_aliases_and_repr():
    assert pygpu.half is pygpu.float16
    assert pygpu.double is pygpu.float64
    assert pygpu.long is pygpu.int64
    assert pygpu.float is pygpu.float32
    assert pygpu.int is pygpu.int32
    assert repr(pygpu.float16) == "pygpu.float16"
    assert [repr(d) for d in NEW] == ["pygpu.bool", "pygpu.uint8",
                                      "pygpu.int32", "pygpu.bfloat16"]
    assert all(pickle.loads(pickle.dumps(d)) is d for d in ALL)


def test_default_dtype_is_float32():
    assert pygpu.zeros(2).dtype is pygpu.float32
    assert pygpu.tensor([1.5]).dtype is pygpu.float32
    assert pygpu.tensor([1, 2]).dtype is pygpu.int64
    assert pygpu.tensor(np.zeros(2)).dtype is pygpu.float64


def test_not_constructible():
    with pytest.raises(TypeError):
        pygpu.dtype()


def test_bad_dtype_argument():
    with pytest.raises(TypeError):
        pygpu.zeros(2, dtype="float32")
    with pytest.raises(TypeError):
        pygpu.zeros(2, dtype=np.float32)


# -- NumPy and Python round trips ---------------------------------------------

def test_inference_from_data():
    assert pygpu.tensor([True, False]).dtype is B
    assert pygpu.tensor(True).dtype is B
    assert pygpu.tensor([True, 2]).dtype is I64
    for npdt, want in [(np.bool_, B), (np.uint8, U8), (np.int32, I32),
                       (np.int16, I64), (np.uint32, I64), (np.int8, I64)]:
        assert pygpu.tensor(np.array([1, 0], dtype=npdt)).dtype is want
    assert pygpu.full((2,), True).dtype is B
    assert pygpu.full((2,), 0.5, dtype=B).tolist() == [True, True]
    assert pygpu.full((2,), 300, dtype=U8).tolist() == [44, 44]
    assert pygpu.tensor([-1, 256], dtype=U8).tolist() == [255, 0]
    assert pygpu.tensor([1.7, -1.7], dtype=I32).tolist() == [1, -1]
    assert pygpu.tensor([0.0, -0.0, 0.1, np.nan], dtype=B).tolist() == [
        False, False, True, True]


@pytest.mark.parametrize("dtype", [B, U8, I32], ids=dtype_name)
def test_from_numpy_shares_memory(dtype, rng):
    a = np.asarray(rng.integers(0, 2, (3, 4)), dtype=NP[dtype])
    t = pygpu.from_numpy(a)
    assert t.dtype is dtype and t.shape == (3, 4)
    n = t.numpy()
    assert n.dtype == a.dtype and np.shares_memory(n, a)
    a[0, 0] = 1
    assert t[0, 0].item() == 1
    assert t.tolist() == a.tolist()
    item = t[1, 2].item()
    assert type(item) is (bool if dtype is B else int)


def test_from_numpy_still_refuses_other_types():
    with pytest.raises(TypeError, match="int32, uint8, and bool"):
        pygpu.from_numpy(np.zeros(2, dtype=np.int16))


def test_bfloat16_meets_numpy_as_float32(device):
    t = pygpu.tensor([1.5, -2.25, 1e-3, np.nan], dtype=BF16, device=device)
    assert t.dtype is BF16
    got = t.tolist()
    assert got[:2] == [1.5, -2.25] and np.isnan(got[3])
    assert got[2] == float(bf16_round([1e-3])[0])
    assert type(t[0].item()) is float and t[0].item() == 1.5
    for f in (lambda: t.numpy(), lambda: t.cpu().numpy(force=True),
              lambda: np.asarray(t.cpu())):
        with pytest.raises(TypeError, match="Got unsupported ScalarType "
                           "BFloat16"):
            f()
    assert host(t).dtype == np.float32


@pytest.mark.parametrize("dtype", NEW, ids=dtype_name)
def test_repr_and_pickle(dtype, device):
    t = pygpu.tensor([1, 0, 1], dtype=dtype, device=device)
    text = repr(t)
    if dtype is B:
        assert text.startswith("tensor([ True, False,  True]")
        assert "dtype" not in text
    else:
        assert f"dtype=pygpu.{dtype_name(dtype)}" in text
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype is dtype and back.tolist() == t.tolist()
    assert repr(pygpu.tensor([], dtype=dtype)).endswith(
        f"dtype=pygpu.{dtype_name(dtype)})")


# -- conversions --------------------------------------------------------------

@pytest.mark.parametrize("src,dst", list(itertools.product(ALL, ALL)),
                         ids=lambda d: dtype_name(d))
def test_conversion_between_every_pair(src, dst, device, rng):
    t, v = values_of(src, rng)
    got = t.to(device).to(dst)
    assert got.dtype is dst
    want = ref_convert(v, src, dst)
    np.testing.assert_array_equal(host(got), want)
    # strided source (a transposed view), strided destination
    m = t.to(device).view(4, 6).T
    got = m.to(dst)
    np.testing.assert_array_equal(host(got), want.reshape(4, 6).T)
    out = pygpu.empty(6, 8, dtype=dst, device=device)[:, ::2]
    out.copy_(m)
    np.testing.assert_array_equal(host(out), want.reshape(4, 6).T)


@pytest.mark.parametrize("method,dtype", [("bool", B), ("int", I32),
                                          ("byte", U8), ("bfloat16", BF16)])
def test_conversion_methods(method, dtype, device):
    t = pygpu.tensor([0.0, 2.75, -1.5], device=device)
    c = getattr(t, method)()
    assert c.dtype is dtype
    assert getattr(c, method)() is c
    assert t.to(dtype).tolist() == c.tolist()


def test_bfloat16_rounding_edges(device):
    f = np.array([0x3f808000, 0x3f818000, 0x7f7fffff, 0x7f7f8000, 0x00008000,
                  0x80018000, 0x7fc00001, 0xff800001], dtype=np.uint32)
    t = pygpu.from_numpy(f.view(np.float32)).to(device).bfloat16()
    got = host(t).view(np.uint32) >> 16
    # ties go to even, up to Inf at the top; NaN stays NaN (quiet, sign
    # and top payload bits kept)
    assert got.tolist() == [0x3f80, 0x3f82, 0x7f80, 0x7f80, 0x0000, 0x8002,
                            0x7fc0, 0xffc0]
    d = np.array([1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -40, 2.0 ** -134,
                  2.0 ** -134 * 1.5, -(2.0 ** 128 - 2.0 ** 119), 1e-50])
    got = host(pygpu.from_numpy(d).to(device).bfloat16())
    np.testing.assert_array_equal(got, bf16_round(d))
    assert got[1] == 1 + 2.0 ** -7  # one rounding, not two
    assert got[4] == -np.inf


# -- ops on the new dtypes ----------------------------------------------------

def small_values(dtype, rng, shape):
    if dtype is B:
        return pygpu.from_numpy(rng.integers(0, 2, shape).astype(np.bool_))
    if dtype in (U8, I32, I64):
        return pygpu.from_numpy(rng.integers(0, 100, shape).astype(NP[dtype]))
    v = rng.uniform(0.5, 4.0, shape) * rng.choice([-1, 1], shape)
    return pygpu.from_numpy(v.astype(np.float32)).to(dtype)


def ref_binary(op, x, y, dtype):
    """x op y as dtype computes it: inputs converted to dtype, the op in
    float64 (floats, then rounded) or exact integers (wrapped)."""
    if dtype.is_floating_point:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = {"add": x + y, "sub": x - y, "mul": x * y,
                 "div": x / y}[op]
        return ref_convert(r, F64, dtype).astype(np.float64)
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    r = {"add": xi + yi, "sub": xi - yi, "mul": xi * yi}[op]
    return ref_convert(r, I64, dtype)


@pytest.mark.parametrize("da,db", list(itertools.product(ALL, ALL)),
                         ids=lambda d: dtype_name(d))
def test_binary_ops_every_pair(da, db, device, rng):
    a = small_values(da, rng, (3, 1)).to(device)
    b = small_values(db, rng, (1, 4)).to(device)
    want_dtype = pygpu.promote_types(da, db)
    for op in ("add", "sub", "mul", "div"):
        if op == "sub" and B in (da, db):
            with pytest.raises(RuntimeError, match="Subtraction, the `-` "
                               "operator, with (two bool tensors|a bool "
                               "tensor) is not supported"):
                a - b
            continue
        got = getattr(pygpu, op)(a, b)
        dtype = want_dtype if op != "div" or want_dtype.is_floating_point \
            else F32
        assert got.dtype is dtype, op
        x = host(a).astype(np.float64) if dtype.is_floating_point \
            else host(a)
        y = host(b).astype(np.float64) if dtype.is_floating_point \
            else host(b)
        if dtype.is_floating_point:
            x, y = ref_convert(x, F64, dtype), ref_convert(y, F64, dtype)
            want = ref_binary(op, x.astype(np.float64),
                              y.astype(np.float64), dtype)
            with np.errstate(invalid="ignore"):  # inf - inf of x / 0
                assert rel_err(host(got), want) <= TOL[dtype], op
        else:
            np.testing.assert_array_equal(host(got),
                                          ref_binary(op, x, y, dtype))


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_scalar_categories(dtype, device):
    t = pygpu.ones(3, dtype=dtype, device=device)
    floating = dtype.is_floating_point
    assert (t + True).dtype is dtype
    assert (t * 2).dtype is (I64 if dtype is B else dtype)
    assert (2.5 * t).dtype is (dtype if floating else F32)
    assert (t / 2).dtype is (dtype if floating else F32)
    assert (t * 2.5).tolist() == [2.5] * 3
    if dtype is B:
        assert (t + True).tolist() == [True] * 3
        with pytest.raises(RuntimeError, match="with a bool tensor"):
            t - 1
    else:
        with pytest.raises(RuntimeError, match="with a bool tensor"):
            t - True


def test_integer_wrap_and_true_division(device):
    u = pygpu.tensor([1, 200, 255], dtype=U8, device=device)
    assert (u + u).tolist() == [2, 144, 254]
    assert (u + 1000).tolist() == [233, 176, 231]  # 1000 wraps as uint8
    assert (-u).tolist() == [255, 56, 1]
    i = pygpu.tensor([2 ** 31 - 1, -2 ** 31, 7], dtype=I32, device=device)
    assert (i + 1).tolist() == [-2 ** 31, -2 ** 31 + 1, 8]
    assert (-i).tolist() == [-2 ** 31 + 1, -2 ** 31, -7]
    assert i.abs().tolist() == [2 ** 31 - 1, -2 ** 31, 7]
    assert (i / 2).dtype is F32 and (i / 2).tolist()[2] == 3.5
    assert (u / u).tolist() == [1.0, 1.0, 1.0]
    b = pygpu.tensor([True, False], device=device)
    assert (b + b).tolist() == [True, False] and (b * b).dtype is B
    assert (b / b).dtype is F32
    with pytest.raises(RuntimeError, match="result type Float can't be cast "
                       "to the desired output type Byte"):
        u += 1.5
    with pytest.raises(RuntimeError, match="result type Long can't be cast "
                       "to the desired output type Bool"):
        b += 2
    u += 1
    assert u.tolist() == [2, 201, 0]


@pytest.mark.parametrize("dtype", [U8, I32, BF16], ids=dtype_name)
def test_unary_ops(dtype, device, rng):
    t = small_values(dtype, rng, (5, 4)).to(device).T
    x = host(t).astype(np.float64)
    for name in list(pygpu._C._unary_ops) + ["neg", "relu"]:
        got = getattr(pygpu, name)(t)
        if dtype is BF16 or name in ("neg", "relu", "abs", "floor", "ceil",
                                     "round", "sign"):
            assert got.dtype is dtype, name
        else:
            assert got.dtype is F32, name
    assert host(pygpu.neg(t)).tolist() == ref_convert(-x, F64, dtype).tolist()
    assert host(pygpu.sign(t)).tolist() == np.sign(x).tolist()
    e = pygpu.exp(t)
    want = ref_convert(np.exp(x), F64, e.dtype).astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf where exp overflows
        assert rel_err(host(e), want) <= (1e-2 if dtype is BF16 else 1e-6)
    if dtype is not BF16:
        with pytest.raises(RuntimeError, match="result type Float can't be "
                           "cast to the desired output type"):
            t.clone().exp_()


def test_bool_unary_errors(device):
    b = pygpu.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a "
                       "bool tensor is not supported"):
        -b
    with pytest.raises(RuntimeError, match="Boolean inputs not supported "
                       "for relu"):
        b.relu()
    for name in ("abs", "floor", "ceil", "round"):
        with pytest.raises(RuntimeError, match=f"\"{name}\" not implemented "
                           "for 'Bool'"):
            getattr(b, name)()
    assert b.sign().tolist() == [True, False]
    assert b.exp().dtype is F32


@pytest.mark.parametrize("dtype", NEW, ids=dtype_name)
def test_reductions(dtype, device, rng):
    t = small_values(dtype, rng, (4, 5)).to(device)
    x = host(t).astype(np.float64)
    if dtype is BF16:
        assert t.sum().dtype is BF16 and t.mean(1).dtype is BF16
        assert rel_err(host(t.sum(0)), x.sum(0)) <= 2e-2
        assert rel_err(host(t.mean()), np.array(x.mean())) <= 2e-2
    else:
        s = t.sum(1, keepdim=True)
        assert s.dtype is I64 and s.tolist() == x.sum(1, keepdims=True).tolist()
        assert t.sum().item() == x.sum()
        name = {B: "Bool", U8: "Byte", I32: "Int"}[dtype]
        with pytest.raises(RuntimeError, match=f"mean\\(\\): could not infer "
                           f"output dtype.*Got: {name}"):
            t.mean()
    m = t.max()
    assert m.dtype is dtype and host(m) == x.max()
    values, idx = t.max(0)
    assert values.dtype is dtype and idx.dtype is I64
    np.testing.assert_array_equal(host(values), x.max(0))
    np.testing.assert_array_equal(idx.cpu().numpy(), x.argmax(0))
    assert pygpu.zeros(0, dtype=dtype, device=device).sum().item() == 0


def test_fill_and_factories(device):
    for dtype in NEW:
        z = pygpu.zeros(2, 3, dtype=dtype, device=device)
        o = pygpu.ones(2, 3, dtype=dtype, device=device)
        assert z.dtype is dtype and host(z).sum() == 0 and host(o).sum() == 6
        assert pygpu.full((2,), 7, dtype=dtype, device=device).tolist() == (
            [True, True] if dtype is B else [7, 7])
    assert pygpu.full((1,), -1, dtype=U8, device=device).tolist() == [255]
    assert pygpu.full((1,), 2.0 ** 31, dtype=I32, device=device).tolist() \
        == [-2 ** 31]


def test_random_only_for_floating_dtypes(device):
    u = pygpu.rand(1000, dtype=BF16, device=device)
    x = host(u)
    assert u.dtype is BF16 and x.min() >= 0 and x.max() < 1
    n = pygpu.randn(1000, dtype=BF16, device=device)
    assert abs(host(n).mean()) < 0.2 and 0.8 < host(n).std() < 1.2
    for dtype in (B, U8, I32):
        with pytest.raises(RuntimeError, match="only defined for floating"):
            pygpu.rand(2, dtype=dtype, device=device)
    pygpu.manual_seed(3)
    a = host(pygpu.rand(9, dtype=BF16))
    pygpu.manual_seed(3)
    b = host(pygpu.rand(9))
    np.testing.assert_array_equal(a * 256, np.floor(a * 256))  # exact
    assert np.all(np.abs(a - b) < 1 / 256)


def test_bfloat16_products(device, rng):
    a = rng.standard_normal((2, 5, 16))
    b = rng.standard_normal((16, 3))
    ta = pygpu.tensor(a, dtype=BF16, device=device)
    tb = pygpu.tensor(b, dtype=BF16, device=device)
    ra, rb = host(ta).astype(np.float64), host(tb).astype(np.float64)
    got = ta @ tb
    assert got.dtype is BF16 and got.shape == (2, 5, 3)
    assert rel_err(host(got), ra @ rb) <= 1e-2
    w = pygpu.tensor(b.T, dtype=BF16, device=device)
    bias = pygpu.tensor(rng.standard_normal(3), dtype=BF16, device=device)
    out = pygpu.nn.functional.linear(ta, w, bias)
    want = ra @ rb + host(bias).astype(np.float64)
    assert out.dtype is BF16 and rel_err(host(out), want) <= 1e-2


def test_cpu_autocast_defaults_to_bfloat16():
    a, b = pygpu.randn(4, 8), pygpu.randn(8, 3)
    with pygpu.autocast("cpu"):
        assert pygpu.get_autocast_dtype("cpu") is BF16
        c = a @ b
    assert c.dtype is BF16
    ref = host(a.bfloat16()).astype(np.float64) @ host(b.bfloat16())
    assert rel_err(host(c), ref) <= 1e-2
