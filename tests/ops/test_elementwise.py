"""add, sub, mul, div, neg, relu: every dtype and device against NumPy
float64, broadcasting, scalars in both orders, in-place forms, type
promotion, strided inputs, and the errors."""
import operator

import numpy as np
import pytest

import pygpu

from conftest import RTOL, rel_err

FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]
ALL = FLOATS + [pygpu.int64]
OPS = {"add": (operator.add, np.add), "sub": (operator.sub, np.subtract),
       "mul": (operator.mul, np.multiply), "div": (operator.truediv,
                                                  np.true_divide)}
SHAPE_PAIRS = [
    ((), ()), ((0,), (0,)), ((1,), (1,)), ((7,), (7,)), ((3, 5), (3, 5)),
    ((3, 5), (5,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((4,), ()),
    ((), (2, 3)), ((2, 1, 3), (4, 1)), ((0, 3), (3,)), ((1, 1), (1, 1)),
    ((1000,), (1,)), ((2, 3, 4, 5), (2, 1, 4, 1)),
]


def make(rng, shape, dt, positive=False):
    if dt is pygpu.int64:
        a = rng.integers(-50, 50, size=shape)
        if positive:
            a = np.abs(a) + 1
        return a.astype(np.int64)
    a = rng.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return a.astype(dt.numpy_dtype)


def tol(dt):
    return RTOL[repr(dt).split(".")[1]] * 4 or 0


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dt", ALL, ids=repr)
@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS, ids=str)
def test_binary(device, rng, name, dt, sa, sb):
    pyop, npop = OPS[name]
    a = make(rng, sa, dt)
    b = make(rng, sb, dt, positive=(name == "div"))
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    got = pyop(ta, tb)
    ref = npop(a.astype(np.float64), b.astype(np.float64))
    expect_dt = pygpu.float32 if (name == "div" and dt is pygpu.int64) else dt
    assert got.dtype is expect_dt and got.shape == ref.shape
    assert got.device == ta.device
    assert rel_err(got.cpu().numpy(), ref) <= tol(expect_dt)
    same = getattr(pygpu, name)(ta, tb)
    np.testing.assert_array_equal(same.cpu().numpy(), got.cpu().numpy())
    np.testing.assert_array_equal(getattr(ta, name)(tb).cpu().numpy(),
                                  got.cpu().numpy())


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dt", ALL, ids=repr)
@pytest.mark.parametrize("scalar", [2, -3, 0.5, 2.75])
def test_scalar_both_orders(device, rng, name, dt, scalar):
    pyop, npop = OPS[name]
    a = make(rng, (4, 6), dt, positive=True)
    t = pygpu.tensor(a, device=device)
    for got, ref in ((pyop(t, scalar), npop(a.astype(np.float64), scalar)),
                     (pyop(scalar, t), npop(scalar, a.astype(np.float64)))):
        is_float = isinstance(scalar, float) or name == "div"
        expect = pygpu.float32 if (dt is pygpu.int64 and is_float) else dt
        assert got.dtype is expect
        if expect is pygpu.int64:
            np.testing.assert_array_equal(got.cpu().numpy(), ref)
        else:
            assert rel_err(got.cpu().numpy(), ref) <= tol(expect)


def test_int64_exact_scalars(device):
    big = 2**53 + 1
    t = pygpu.tensor([1, 2], device=device)
    assert (t + big).tolist() == [big + 1, big + 2]
    assert (t * -3).tolist() == [-3, -6]


def test_int64_wraps(device):
    """int64 arithmetic wraps around (two's complement) on every device."""
    lo, hi = -2**63, 2**63 - 1
    t = pygpu.tensor([hi, lo, lo, 5], device=device)
    u = pygpu.tensor([1, -1, -1, 0], device=device)
    assert (t + u).tolist() == [lo, hi, hi, 5]
    assert (t - u).tolist() == [hi - 1, lo + 1, lo + 1, 5]
    assert (t * 2).tolist() == [-2, 0, 0, 10]
    assert (-t).tolist() == [lo + 1, lo, lo, -5]
    assert pygpu.tensor([hi, 1], device=device).sum().item() == lo


@pytest.mark.parametrize("src", [pygpu.float16, pygpu.float32,
                                 pygpu.float64], ids=repr)
def test_float_to_int64_edges(device, src):
    """Truncation toward zero; NaN, the infinities and values beyond the
    int64 range give INT64_MIN, the same on the CPU and CUDA."""
    lo = -2**63
    vals = [3.9, -3.9, 0.5, -0.0, float("nan"), float("inf"),
            -float("inf"), 1e19, -1e19, 2.0**62, -2.0**63]
    want = [3, -3, 0, 0, lo, lo, lo, lo, lo, 2**62, lo]
    if src is pygpu.float16:  # beyond float16's range: the infinities
        vals, want = vals[:7] + [60000.0], want[:7] + [60000]
    t = pygpu.tensor(vals, dtype=src, device=device)
    assert t.to(pygpu.int64).tolist() == want


@pytest.mark.parametrize("da,db,expect", [
    (pygpu.float16, pygpu.float32, pygpu.float32),
    (pygpu.float32, pygpu.float64, pygpu.float64),
    (pygpu.float16, pygpu.float64, pygpu.float64),
    (pygpu.int64, pygpu.float16, pygpu.float16),
    (pygpu.int64, pygpu.float32, pygpu.float32),
])
def test_promotion(device, rng, da, db, expect):
    a, b = make(rng, (3, 4), da), make(rng, (4,), db)
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    for got in (ta + tb, tb + ta):
        assert got.dtype is expect
        ref = a.astype(np.float64) + b.astype(np.float64)
        assert rel_err(got.cpu().numpy(), ref) <= tol(expect)


def test_zero_dim_promotion(device):
    x = pygpu.ones(3, dtype=pygpu.float16, device=device)
    assert (x + pygpu.tensor(1.0, dtype=pygpu.float64,
                             device=device)).dtype is pygpu.float16
    i = pygpu.ones(3, dtype=pygpu.int64, device=device)
    assert (i + pygpu.tensor(1.5, dtype=pygpu.float64,
                             device=device)).dtype is pygpu.float64
    assert (i + 1.5).dtype is pygpu.float32
    assert (x + 2).dtype is pygpu.float16


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_inplace(device, rng, name, dt):
    pyop, npop = OPS[name]
    a = make(rng, (3, 4), dt)
    b = make(rng, (4,), dt, positive=True)
    t = pygpu.tensor(a, device=device)
    ptr = t.data_ptr()
    r = getattr(t, name + "_")(pygpu.tensor(b, device=device))
    assert r is t and t.data_ptr() == ptr
    assert rel_err(t.cpu().numpy(), npop(a.astype(np.float64), b)) <= tol(dt)
    t2 = pygpu.tensor(a, device=device)
    t2 += 1.5
    t2 *= 2
    t2 -= pygpu.tensor(b, device=device)
    t2 /= 4
    ref = ((a.astype(np.float64) + 1.5) * 2 - b) / 4
    assert rel_err(t2.cpu().numpy(), ref) <= tol(dt)


def test_inplace_on_view(device, rng):
    a = rng.standard_normal((4, 6))
    t = pygpu.tensor(a, device=device)
    v = t.T
    v.add_(1.0)
    ref = a + 1
    np.testing.assert_allclose(t.cpu().numpy(), ref, rtol=1e-6)
    t[1:3, ::2].mul_(0.0)
    ref[1:3, ::2] = 0
    np.testing.assert_allclose(t.cpu().numpy(), ref, rtol=1e-6)


def test_inplace_errors(device):
    t = pygpu.ones(3, device=device)
    with pytest.raises(RuntimeError):
        t.add_(pygpu.ones(2, 3, device=device))  # would change its shape
    i = pygpu.ones(3, dtype=pygpu.int64, device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(0.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += pygpu.ones(3, device=device)


def test_alpha(device):
    a = pygpu.tensor([1.0, 2.0], device=device)
    b = pygpu.tensor([10.0, 20.0], device=device)
    assert pygpu.add(a, b, alpha=2).tolist() == [21.0, 42.0]
    assert a.sub(b, alpha=0.5).tolist() == [-4.0, -8.0]
    with pytest.raises(TypeError):
        a.mul(b, alpha=2)


@pytest.mark.parametrize("dt", ALL, ids=repr)
def test_neg(device, rng, dt):
    a = make(rng, (5, 3), dt)
    t = pygpu.tensor(a, device=device)
    np.testing.assert_array_equal((-t).cpu().numpy(), -a)
    np.testing.assert_array_equal(pygpu.neg(t.T).cpu().numpy(), -a.T)
    assert (+t) is t


@pytest.mark.parametrize("dt", ALL, ids=repr)
@pytest.mark.parametrize("n", [0, 1, 3, 8, 17, 1000, 4099])
def test_relu_sizes(device, rng, dt, n):
    a = make(rng, (n,), dt)
    t = pygpu.tensor(a, device=device)
    got = pygpu.relu(t).cpu().numpy()
    np.testing.assert_array_equal(got, np.maximum(a, 0))


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_relu_misaligned_and_inplace(device, rng, dt):
    a = make(rng, (1027,), dt)
    t = pygpu.tensor(a, device=device)
    for off in range(1, 5):  # start at every misalignment
        v = t[off:]
        np.testing.assert_array_equal(v.relu().cpu().numpy(),
                                      np.maximum(a[off:], 0))
    v = t[3:1000]
    r = v.relu_()
    assert r is v
    ref = a.copy()
    ref[3:1000] = np.maximum(ref[3:1000], 0)
    np.testing.assert_array_equal(t.cpu().numpy(), ref)


def test_relu_nan_and_forms(device):
    t = pygpu.tensor([float("nan"), -1.0, 0.0, 2.0, float("-inf"),
                      float("inf")], device=device)
    out = pygpu.relu(t).cpu().numpy()
    assert np.isnan(out[0])
    np.testing.assert_array_equal(out[1:], [0.0, 0.0, 2.0, 0.0, np.inf])
    f = pygpu.nn.functional.relu(t)
    np.testing.assert_array_equal(np.isnan(f.cpu().numpy()), np.isnan(out))
    pygpu.nn.functional.relu(t, inplace=True)
    assert t.tolist()[1:] == [0.0, 0.0, 2.0, 0.0, float("inf")]
    pygpu.relu_(t)


def test_relu_strided(device, rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    t = pygpu.tensor(a, device=device)
    np.testing.assert_array_equal(t.T.relu().cpu().numpy(),
                                  np.maximum(a.T, 0))
    np.testing.assert_array_equal(t[:, 1::3].relu().cpu().numpy(),
                                  np.maximum(a[:, 1::3], 0))


def test_strided_binary(device, rng):
    a = rng.standard_normal((5, 7))
    b = rng.standard_normal((7, 5))
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    got = ta + tb.T
    assert rel_err(got.cpu().numpy(), a + b.T) < 1e-12
    got = ta[::2, 1:] * tb.T[::2, :-1]
    assert rel_err(got.cpu().numpy(), a[::2, 1:] * b.T[::2, :-1]) < 1e-12


def test_expand_broadcast_view(device, rng):
    a = rng.standard_normal((3, 1))
    t = pygpu.tensor(a, device=device).expand(3, 4)
    assert t.stride() == (1, 0)
    np.testing.assert_array_equal((t * 2).cpu().numpy(),
                                  np.broadcast_to(a, (3, 4)) * 2)


def test_broadcast_error(device):
    a = pygpu.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"must match the size of tensor b"):
        a + pygpu.ones(4, device=device)


def test_type_errors(device):
    t = pygpu.ones(3, device=device)
    with pytest.raises(TypeError):
        t + "a"
    with pytest.raises(TypeError):
        t + [1, 2, 3]
    with pytest.raises(TypeError):
        pygpu.add(t, None)
    with pytest.raises(TypeError):
        pygpu.relu([1.0])
    with pytest.raises(TypeError):
        t.add(object())


@pytest.mark.cuda
def test_device_mismatch():
    a = pygpu.ones(3, device="cuda")
    b = pygpu.ones(3)
    msg = ("Expected all tensors to be on the same device, but found at "
           "least two devices, cuda:0 and cpu!")
    with pytest.raises(RuntimeError) as e:
        a + b
    assert str(e.value) == msg
    with pytest.raises(RuntimeError):
        b.mul_(a)
    # a 0-d CPU tensor may stand next to a CUDA tensor, as in torch, and
    # keeps its standing as a 0-d tensor in type promotion
    assert (a + pygpu.tensor(2.0)).cpu().tolist() == [3.0] * 3
    i = pygpu.ones(3, dtype=pygpu.int64, device="cuda")
    r = i + pygpu.tensor(2.5, dtype=pygpu.float64)
    assert r.dtype == pygpu.float64 and r.device == a.device
    assert r.cpu().tolist() == [3.5] * 3
    assert (pygpu.tensor(2.5, dtype=pygpu.float16) * i).dtype == pygpu.float16
    assert (a + pygpu.tensor(2, dtype=pygpu.int64)).dtype == pygpu.float32
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.tensor(1.0).add_(a)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("da", ALL, ids=repr)
@pytest.mark.parametrize("db", ALL, ids=repr)
def test_mixed_dtypes_read_in_the_loop(device, rng, name, da, db):
    """Inputs of other dtypes are converted inside the loop: bit for bit
    what converting them first gives, broadcast and strided too."""
    a = pygpu.tensor(make(rng, (3, 1, 300), da), device=device)
    b = pygpu.tensor(make(rng, (300, 4), db), device=device).T  # strided
    fn = getattr(pygpu, name)
    got = fn(a, b)
    want = fn(a.to(got.dtype), b.to(got.dtype))
    np.testing.assert_array_equal(got.cpu().numpy().view(np.uint8),
                                  want.cpu().numpy().view(np.uint8))
    for s in (3, 0.75):
        got = fn(a, s)
        np.testing.assert_array_equal(
            got.cpu().numpy().view(np.uint8),
            fn(a.to(got.dtype), s).cpu().numpy().view(np.uint8))


def test_large_copies_stream_exactly():
    """Contiguous same-dtype copies of 16 MiB and more per part take
    streaming stores: every byte arrives, at any alignment, on one and two
    threads, and nothing around the destination is touched."""
    n = (16 << 20) // 4 + 7
    a = np.random.default_rng(1).standard_normal(n + 9).astype(np.float32)
    a[5] = np.nan
    src = pygpu.tensor(a)
    old = pygpu.get_num_threads()
    try:
        for threads in (1, 2):
            pygpu.set_num_threads(threads)
            for off in (0, 1, 3):
                d = pygpu.zeros(n + 9)
                d[off:off + n].copy_(src[2:2 + n])
                got = d.numpy()
                assert got[off:off + n].tobytes() == a[2:2 + n].tobytes()
                assert not got[:off].any() and not got[off + n:].any()
    finally:
        pygpu.set_num_threads(old)
