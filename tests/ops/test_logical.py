"""logical_* and bitwise_* (with & | ^ ~), where, masked_fill(_), any and
all: against NumPy over dtypes, broadcasting, strided views, scalars and
torch's errors."""
import itertools

import numpy as np
import pytest

import pygpu

from conftest import ALL_DTYPES, B, BF16, F16, F32, F64, I32, I64, NP, \
    U8, dtype_name, host

ALL = ALL_DTYPES
INTS = [B, U8, I32, I64]


def values(dtype, shape, rng, lo=0, hi=4):
    v = rng.integers(lo, hi, shape)
    if dtype is B:
        return pygpu.from_numpy((v % 2).astype(bool))
    if dtype is BF16:
        return pygpu.from_numpy(v.astype(np.float32)).bfloat16()
    return pygpu.from_numpy(v.astype(NP[dtype]))


@pytest.mark.parametrize("da,db", list(itertools.product(ALL, ALL)),
                         ids=lambda d: dtype_name(d))
def test_logical_ops(da, db, device, rng):
    a = values(da, (4, 1), rng).to(device)
    b = values(db, (3,), rng).to(device).expand(2, 3)[1]  # a stride-0 view
    x, y = host(a) != 0, host(b) != 0
    for name, f in (("logical_and", np.logical_and),
                    ("logical_or", np.logical_or),
                    ("logical_xor", np.logical_xor)):
        got = getattr(pygpu, name)(a, b)
        assert got.dtype is B
        np.testing.assert_array_equal(got.cpu().numpy(), f(x, y))
        np.testing.assert_array_equal(getattr(a, name)(b).cpu().numpy(),
                                      f(x, y))
    got = pygpu.logical_not(a)
    assert got.dtype is B
    np.testing.assert_array_equal(got.cpu().numpy(), ~x)
    np.testing.assert_array_equal(a.logical_not().cpu().numpy(), ~x)


@pytest.mark.parametrize("da,db", list(itertools.product(INTS, INTS)),
                         ids=lambda d: dtype_name(d))
def test_bitwise_ops(da, db, device, rng):
    a = values(da, (3, 4), rng, -50, 200).to(device).T
    b = values(db, (4, 1), rng, -50, 200).to(device)
    dtype = pygpu.promote_types(da, db)
    x, y = host(a).astype(NP[dtype]), host(b).astype(NP[dtype])
    for sym, name, f in (("&", "bitwise_and", np.bitwise_and),
                         ("|", "bitwise_or", np.bitwise_or),
                         ("^", "bitwise_xor", np.bitwise_xor)):
        for got in (eval(f"a {sym} b"), getattr(pygpu, name)(a, b),
                    getattr(a, name)(b)):
            assert got.dtype is dtype, name
            np.testing.assert_array_equal(host(got), f(x, y))
    inv = ~a
    assert inv.dtype is da
    np.testing.assert_array_equal(host(inv), np.invert(host(a)))
    np.testing.assert_array_equal(host(pygpu.bitwise_not(a)),
                                  np.invert(host(a)))


def test_bitwise_with_numbers_and_in_place(device):
    i = pygpu.tensor([12, 10, -1], device=device)
    assert (i & 6).tolist() == [4, 2, 6]
    assert (6 & i).tolist() == [4, 2, 6]
    assert (i | np.int64(1)).tolist() == [13, 11, -1]
    assert (i ^ True).tolist() == [13, 11, -2]
    u = pygpu.tensor([0, 255, 7], dtype=U8, device=device)
    assert (u ^ -1).tolist() == [255, 0, 248]  # -1 wraps to 255
    assert (~u).tolist() == [255, 0, 248]
    b = pygpu.tensor([True, False], device=device)
    assert (b & True).dtype is B and (b | 0).dtype is I64
    b &= pygpu.tensor([False, False], device=device)
    assert b.tolist() == [False, False]
    i |= 1
    assert i.tolist() == [13, 11, -1]
    i ^= pygpu.tensor([1, 1, 1], dtype=I32, device=device)
    assert i.tolist() == [12, 10, -2] and i.dtype is I64


def test_bitwise_errors(device):
    f = pygpu.ones(2, device=device)
    i = pygpu.ones(2, dtype=I64, device=device)
    for r in (lambda: f & 1, lambda: i | 1.5, lambda: f ^ i):
        with pytest.raises(RuntimeError, match="\"bitwise_(and|or|xor)_cpu\" "
                           "not implemented for 'Float'"):
            r()
    with pytest.raises(RuntimeError, match="\"bitwise_not_cpu\" not "
                       "implemented for 'Half'"):
        ~f.half()
    with pytest.raises(RuntimeError, match="can't be cast to the desired "
                       "output type Bool"):
        b = pygpu.tensor([True], device=device)
        b |= 2
    # a NumPy array is the tensor made from it, as in torch
    assert (i & np.ones(2, dtype=np.int64)).tolist() == [1, 1]
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.logical_and(i, 1)
    with pytest.raises(TypeError):
        i & "a"


@pytest.mark.parametrize("dx,dy", [(F32, F32), (F16, F64), (I32, U8),
                                   (B, B), (BF16, I64), (B, F16)],
                         ids=lambda d: dtype_name(d))
def test_where_tensors(dx, dy, device, rng):
    cond = pygpu.from_numpy(rng.integers(0, 2, (2, 1, 4)).astype(bool))
    x = values(dx, (3, 1), rng).to(device)
    y = values(dy, (3, 4), rng).to(device).T.T  # a view
    cond = cond.to(device)
    got = pygpu.where(cond, x, y)
    dtype = pygpu.promote_types(dx, dy)
    assert got.dtype is dtype and got.shape == (2, 3, 4)
    want = np.where(cond.cpu().numpy(), host(x), host(y))
    np.testing.assert_array_equal(host(got), want.astype(np.float64)
                                  if dtype.is_floating_point else want)
    np.testing.assert_array_equal(host(x.where(cond, y)), host(got))


def test_where_scalars_and_special_values(device):
    cond = pygpu.tensor([True, False, True], device=device)
    nan = float("nan")
    x = pygpu.tensor([nan, 1.0, -0.0], device=device)
    got = pygpu.where(cond, x, 5)
    assert got.dtype is F32
    r = got.tolist()
    assert np.isnan(r[0]) and r[1] == 5.0 and np.signbit(r[2])
    assert pygpu.where(cond, 1, 0).tolist() == [1, 0, 1]
    assert pygpu.where(cond, 1, 0).dtype is I64
    assert pygpu.where(cond, 1.5, 0).dtype is F32
    assert pygpu.where(cond, True, False).dtype is B
    h = pygpu.ones(3, dtype=F16, device=device)
    assert pygpu.where(cond, h, 2.5).dtype is F16
    assert pygpu.where(cond, 2 ** 40, pygpu.zeros(3, dtype=I32,
                                                  device=device)).dtype is I32
    e = pygpu.where(pygpu.ones(0, dtype=B, device=device), 1.0, 2.0)
    assert e.shape == (0,)
    with pytest.raises(RuntimeError, match="where expected condition to be a "
                       "boolean tensor, but got a tensor with dtype Float"):
        pygpu.where(x, 1, 2)
    with pytest.raises(RuntimeError, match="size of tensor"):
        pygpu.where(cond, pygpu.ones(2, device=device), 0)
    with pytest.raises(TypeError, match="'other' must be Tensor or Number"):
        pygpu.where(cond, x, "a")


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_masked_fill(dtype, device, rng):
    t = values(dtype, (3, 4), rng).to(device)
    mask = pygpu.from_numpy(rng.integers(0, 2, 4).astype(bool)).to(device)
    want = host(t).copy()
    want[:, mask.cpu().numpy()] = 1
    got = t.masked_fill(mask, 1)
    assert got.dtype is dtype and got is not t
    np.testing.assert_array_equal(host(got), want)
    np.testing.assert_array_equal(host(pygpu.masked_fill(t, mask, 1)), want)
    view = t.T  # strided, in place through the view
    assert view.masked_fill_(mask.reshape(4, 1), pygpu.tensor(1)) is view
    np.testing.assert_array_equal(host(t), want)


def test_masked_fill_values_and_errors(device):
    t = pygpu.zeros(2, 3, dtype=I32, device=device)
    m = pygpu.tensor([[True, False, True], [False, False, True]],
                     device=device)
    assert t.masked_fill(m, 2.7).tolist() == [[2, 0, 2], [0, 0, 2]]
    f = pygpu.zeros(2, 3, device=device).masked_fill(m, float("-inf"))
    assert f.tolist()[0][0] == float("-inf")
    # a mask that broadcasts the tensor: the out-of-place form grows
    g = pygpu.zeros(3, device=device).masked_fill(m, 1.0)
    assert g.shape == (2, 3)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports "
                       "boolean masks, but got mask with dtype Long"):
        t.masked_fill_(pygpu.ones(3, dtype=I64, device=device), 1)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor, but "
                       "got tensor with 1 dimension"):
        t.masked_fill_(m, pygpu.ones(1, device=device))
    with pytest.raises(RuntimeError):
        pygpu.zeros(3, device=device).masked_fill_(m, 1.0)
    with pytest.raises(TypeError, match="'value' must be Tensor or Number"):
        t.masked_fill_(m, "x")
    ro = pygpu.from_numpy(np.zeros(3, dtype=np.float32)[None].repeat(2, 0)
                          .copy())
    ro = pygpu.from_numpy(np.broadcast_to(np.zeros(3, np.float32), (2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        ro.masked_fill_(pygpu.ones(2, 3, dtype=B), 1.0)


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_any_all(dtype, device, rng):
    t = values(dtype, (3, 4, 2), rng, 0, 2).to(device)
    x = host(t) != 0
    assert bool(pygpu.any(t).item()) is bool(x.any())
    assert bool(t.all().item()) is bool(x.all())
    want_dtype = U8 if dtype is U8 else B
    for dim in (0, 1, -1, (0, 2)):
        for keep in (False, True):
            got = pygpu.any(t, dim, keep)
            assert got.dtype is want_dtype
            np.testing.assert_array_equal(host(got) != 0,
                                          x.any(axis=dim, keepdims=keep))
            got = t.all(dim=dim, keepdim=keep)
            np.testing.assert_array_equal(host(got) != 0,
                                          x.all(axis=dim, keepdims=keep))
    e = pygpu.ones(2, 0, dtype=dtype, device=device)
    assert pygpu.any(e).item() in (False, 0) and pygpu.all(e).item()
    assert pygpu.all(e, 1).tolist() in ([True, True], [1, 1])
    nan = pygpu.tensor([float("nan")], device=device)
    assert nan.any().item() is True and nan.all().item() is True
