"""matmul / mm / bmm / @ and linear against NumPy float64: torch's rules for
1-D, 2-D and batched (broadcast) operands, transposed and strided inputs,
degenerate shapes, every float dtype, and torch's error messages."""
import numpy as np
import pytest

import pygpu

from conftest import rel_err

# matmul tolerances: K-term sums in the dtype's accumulator.
TOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-12}
FLOATS = [pygpu.float32, pygpu.float16, pygpu.float64]

SHAPES = [
    ((5,), (5,)),            # dot -> 0-d
    ((1,), (1,)),
    ((4,), (4, 3)),          # vector @ matrix
    ((4, 3), (3,)),          # matrix @ vector
    ((1, 1), (1, 1)),
    ((7, 5), (5, 3)),        # non-square
    ((32, 64), (64, 16)),
    ((0, 5), (5, 3)),        # empty rows
    ((4, 0), (0, 3)),        # k = 0 gives zeros
    ((3, 5), (5, 0)),
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((2, 3, 4), (4, 5)),     # batched @ matrix
    ((4,), (2, 4, 5)),       # vector @ batched
    ((2, 3, 4), (4,)),       # batched @ vector
    ((3, 1, 4, 2), (5, 2, 3)),  # broadcast batch dims
    ((1, 4, 2), (3, 2, 6)),
    ((0, 3, 4), (4, 2)),     # empty batch
]


def name(dt):
    return repr(dt).split(".")[1]


def operands(rng, sa, sb, dt):
    a = rng.standard_normal(sa).astype(dt.numpy_dtype)
    b = rng.standard_normal(sb).astype(dt.numpy_dtype)
    return a, b


def check(got, a, b, dt):
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype is dt
    assert tuple(got.shape) == ref.shape
    out = got.cpu().numpy()
    assert rel_err(out, ref) <= TOL[name(dt)], rel_err(out, ref)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_matmul(device, rng, dt, sa, sb):
    a, b = operands(rng, sa, sb, dt)
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    check(ta @ tb, a, b, dt)
    check(pygpu.matmul(ta, tb), a, b, dt)
    check(ta.matmul(tb), a, b, dt)


def test_int64_cpu(rng):
    a = rng.integers(-9, 9, (3, 4))
    b = rng.integers(-9, 9, (4, 2))
    got = pygpu.tensor(a) @ pygpu.tensor(b)
    assert got.dtype is pygpu.int64
    np.testing.assert_array_equal(got.numpy(), a @ b)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_transposed_operands(device, rng, dt):
    """Transposed views reach cuBLAS through its transpose flags."""
    a, b = operands(rng, (6, 9), (5, 6), dt)
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    check(ta.T @ tb.T, a.T, b.T, dt)
    check(ta.T @ ta, a.T, a, dt)
    check(tb @ ta, b, a, dt)
    # batched transposes (mT) and a broadcast weight
    x, w = operands(rng, (3, 7, 4), (5, 4), dt)
    tx, tw = pygpu.tensor(x, device=device), pygpu.tensor(w, device=device)
    check(tx @ tw.T, x, w.T, dt)
    check(tx.mT @ tx, np.swapaxes(x, -1, -2), x, dt)


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_strided_operands(device, rng, dt):
    """Views without a unit stride are copied first; results still exact."""
    a, b = operands(rng, (8, 10), (10, 12), dt)
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    check(ta[::2, ::2] @ tb[::2, 1::3], a[::2, ::2], b[::2, 1::3], dt)
    check(ta[1:5, 2:7] @ tb[2:7, :], a[1:5, 2:7], b[2:7, :], dt)
    v = pygpu.tensor(rng.standard_normal(20).astype(dt.numpy_dtype),
                     device=device)
    check(v[::2] @ tb[:, ::3], v.cpu().numpy()[::2], b[:, ::3], dt)


def test_mm_bmm(device, rng):
    a, b = operands(rng, (3, 4), (4, 2), pygpu.float64)
    check(pygpu.mm(pygpu.tensor(a, device=device),
                   pygpu.tensor(b, device=device)), a, b, pygpu.float64)
    x, y = operands(rng, (2, 3, 4), (2, 4, 5), pygpu.float64)
    check(pygpu.bmm(pygpu.tensor(x, device=device),
                    pygpu.tensor(y, device=device)), x, y, pygpu.float64)
    with pytest.raises(RuntimeError):
        pygpu.mm(pygpu.tensor(x, device=device), pygpu.tensor(y, device=device))
    with pytest.raises(RuntimeError):
        pygpu.bmm(pygpu.tensor(a, device=device),
                  pygpu.tensor(b, device=device))


def test_shape_errors(device):
    a = pygpu.ones(32, 784, device=device)
    b = pygpu.ones(256, 10, device=device)
    with pytest.raises(RuntimeError) as e:
        a @ b
    assert str(e.value) == ("mat1 and mat2 shapes cannot be multiplied "
                            "(32x784 and 256x10)")
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        pygpu.ones(3, device=device) @ pygpu.ones(4, device=device)
    with pytest.raises(RuntimeError, match="at least 1D"):
        pygpu.tensor(2.0, device=device) @ pygpu.ones(2, device=device)
    with pytest.raises(RuntimeError):
        pygpu.ones(2, 3, 4, device=device) @ pygpu.ones(2, 5, 6, device=device)
    with pytest.raises(RuntimeError, match="must match"):
        pygpu.ones(2, 3, 4, device=device) @ pygpu.ones(3, 4, 5, device=device)


def test_dtype_and_type_errors(device):
    a = pygpu.ones(2, 2, device=device)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ pygpu.ones(2, 2, dtype=pygpu.float64, device=device)
    with pytest.raises(TypeError):
        a @ 2.0
    with pytest.raises(TypeError):
        pygpu.matmul(a, [[1.0]])
    with pytest.raises(TypeError):
        a.matmul(None)


@pytest.mark.cuda
def test_device_mismatch():
    with pytest.raises(RuntimeError) as e:
        pygpu.ones(2, 2, device="cuda") @ pygpu.ones(2, 2)
    assert "Expected all tensors to be on the same device" in str(e.value)
    assert "cuda:0 and cpu" in str(e.value)


@pytest.mark.cuda
def test_int64_cuda_refused():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        pygpu.ones(2, 2, dtype=pygpu.int64, device="cuda") @ \
            pygpu.ones(2, 2, dtype=pygpu.int64, device="cuda")


@pytest.mark.cuda
def test_tf32_switch(rng):
    a, b = operands(rng, (256, 512), (512, 128), pygpu.float32)
    ta, tb = pygpu.tensor(a, device="cuda"), pygpu.tensor(b, device="cuda")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert rel_err((ta @ tb).cpu().numpy(), ref) < 1e-5
    pygpu.backends.cuda.matmul.allow_tf32 = True
    try:
        err = rel_err((ta @ tb).cpu().numpy(), ref)
        assert err < 1e-2
    finally:
        pygpu.backends.cuda.matmul.allow_tf32 = False


# ------------------------------------------------------------------ linear

LINEAR_SHAPES = [((4, 3), 5), ((1, 1), 1), ((0, 3), 4), ((2, 5, 3), 6),
                 ((3,), 2), ((7, 16), 8), ((2, 3, 4, 8), 5), ((5, 0), 3)]


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
@pytest.mark.parametrize("xshape,out_f", LINEAR_SHAPES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_linear(device, rng, dt, xshape, out_f, with_bias, relu):
    in_f = xshape[-1]
    x = rng.standard_normal(xshape).astype(dt.numpy_dtype)
    w = rng.standard_normal((out_f, in_f)).astype(dt.numpy_dtype)
    bias = rng.standard_normal(out_f).astype(dt.numpy_dtype)
    tx, tw = pygpu.tensor(x, device=device), pygpu.tensor(w, device=device)
    tb = pygpu.tensor(bias, device=device) if with_bias else None
    F = pygpu.nn.functional
    got = (F.linear_relu if relu else F.linear)(tx, tw, tb)
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    if with_bias:
        ref = ref + bias
    if relu:
        ref = np.maximum(ref, 0)
    assert got.dtype is dt and tuple(got.shape) == ref.shape
    assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]


def test_linear_transposed_weight(device, rng):
    x = rng.standard_normal((6, 4))
    wt = rng.standard_normal((4, 3))  # weight stored transposed
    t = pygpu.nn.functional.linear(pygpu.tensor(x, device=device),
                                   pygpu.tensor(wt, device=device).T)
    assert rel_err(t.cpu().numpy(), x @ wt) < 1e-12


def test_linear_errors(device):
    F = pygpu.nn.functional
    x = pygpu.ones(32, 784, device=device)
    w = pygpu.ones(10, 256, device=device)
    with pytest.raises(RuntimeError) as e:
        F.linear(x, w)
    assert str(e.value) == ("mat1 and mat2 shapes cannot be multiplied "
                            "(32x784 and 256x10)")
    with pytest.raises(RuntimeError):
        F.linear(x, pygpu.ones(10, 784, device=device),
                 pygpu.ones(9, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(x, pygpu.ones(10, 784, dtype=pygpu.float64, device=device))
    with pytest.raises(TypeError):
        F.linear(x, "w")


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_linear_bias_shapes(device, rng, dt):
    """A bias of one value ([] or [1]) spreads over the features; a bias of
    another broadcastable shape is added afterwards, as torch's addmm."""
    F = pygpu.nn.functional
    x = rng.standard_normal((6, 4)).astype(dt.numpy_dtype)
    w = rng.standard_normal((3, 4)).astype(dt.numpy_dtype)
    tx, tw = pygpu.tensor(x, device=device), pygpu.tensor(w, device=device)
    base = x.astype(np.float64) @ w.astype(np.float64).T
    for bias in (np.array(0.75), np.array([-0.5]),
                 rng.standard_normal((6, 3)), rng.standard_normal((6, 1))):
        bias = bias.astype(dt.numpy_dtype)
        tb = pygpu.tensor(bias, device=device)
        for relu in (False, True):
            got = (F.linear_relu if relu else F.linear)(tx, tw, tb)
            ref = base + bias
            if relu:
                ref = np.maximum(ref, 0)
            assert tuple(got.shape) == ref.shape
            assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]
    with pytest.raises(RuntimeError, match="must match the size"):
        F.linear(tx, tw, pygpu.ones(2, dtype=dt, device=device))


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_linear_strided_input(device, rng, dt):
    """A transposed or strided 2-D input needs no contiguous copy."""
    F = pygpu.nn.functional
    x = rng.standard_normal((5, 8)).astype(dt.numpy_dtype)
    w = rng.standard_normal((3, 5)).astype(dt.numpy_dtype)
    b = rng.standard_normal(3).astype(dt.numpy_dtype)
    tx = pygpu.tensor(x, device=device)
    tw, tb = pygpu.tensor(w, device=device), pygpu.tensor(b, device=device)
    ref = x.T.astype(np.float64) @ w.astype(np.float64).T + b
    assert rel_err(F.linear(tx.T, tw, tb).cpu().numpy(), ref) \
        <= TOL[name(dt)]
    w2 = rng.standard_normal((3, 10)).astype(dt.numpy_dtype)
    ref = x[:, ::2].T.astype(np.float64) @ w2[:, ::2].astype(np.float64).T
    got = F.linear(tx[:, ::2].T, pygpu.tensor(w2, device=device)[:, ::2])
    assert rel_err(got.cpu().numpy(), ref) <= TOL[name(dt)]


@pytest.mark.parametrize("dt", FLOATS, ids=repr)
def test_broadcast_strided_weight(device, rng, dt):
    """A shared (broadcast) weight without a unit stride is copied once and
    still broadcast over the batch."""
    x = rng.standard_normal((50, 3, 8)).astype(dt.numpy_dtype)
    w = rng.standard_normal((8, 10)).astype(dt.numpy_dtype)
    tx, tw = pygpu.tensor(x, device=device), pygpu.tensor(w, device=device)
    check(tx @ tw[:, ::2], x, w[:, ::2], dt)
    check(tw[::2, :].T @ tx[:, :, :4].mT, w[::2, :].T,
          np.swapaxes(x[:, :, :4], -1, -2), dt)


def test_linear_nan_bias_path(device):
    """NaN in the input stays NaN through linear (bias epilogue); relu of it
    is NaN when applied separately."""
    F = pygpu.nn.functional
    x = np.ones((4, 8), np.float32)
    x[1, 3] = np.nan
    w = np.full((16, 8), 0.5, np.float32)
    b = np.arange(16, dtype=np.float32)
    tx, tw = pygpu.tensor(x, device=device), pygpu.tensor(w, device=device)
    tb = pygpu.tensor(b, device=device)
    got = F.linear(tx, tw, tb).cpu().numpy()
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2, 3]]).any()
    got = pygpu.relu(F.linear(tx, tw, tb)).cpu().numpy()
    assert np.isnan(got[1]).all()
