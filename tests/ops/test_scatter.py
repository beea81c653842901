"""scatter_add(_) and index_add(_) against NumPy (np.add.at): dtypes,
repeated indices, strided operands, degenerate shapes and torch's errors
(negative indices are refused, as torch refuses them)."""
import numpy as np
import pytest

import pygpu

DTYPES = ["float32", "float64", "float16", "int64", "int32", "uint8"]
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2}


def ref_scatter_add(self, dim, index, src):
    out = self.astype(np.float64).copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] += src[pos]
    return out


def ref_index_add(self, dim, index, src, alpha=1):
    out = np.moveaxis(self.astype(np.float64).copy(), dim, 0)
    s = np.moveaxis(src.astype(np.float64), dim, 0)
    np.add.at(out, index, alpha * s)
    return np.moveaxis(out, 0, dim)


def values(rng, shape, dtype):
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 5, shape).astype(dtype)


def check(got, want, dtype):
    got = got.cpu().numpy().astype(np.float64)
    if dtype in RTOL:
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype],
                                   atol=RTOL[dtype])
    else:
        want = want.astype(dtype).astype(np.float64)  # wraps as the dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add(device, rng, dtype, dim):
    self_np = values(rng, (4, 5), dtype)
    src_np = values(rng, (5, 6), dtype)
    d = dim % 2
    ishape = (3, 4)
    index_np = rng.integers(0, self_np.shape[d], ishape)  # repeats
    t = pygpu.from_numpy(self_np).to(device)
    idx = pygpu.from_numpy(index_np).to(device)
    src = pygpu.from_numpy(src_np).to(device)
    want = ref_scatter_add(self_np, d, index_np, src_np)
    check(t.scatter_add(dim, idx, src), want, dtype)
    check(pygpu.scatter_add(t, dim, idx, src), want, dtype)
    np.testing.assert_array_equal(t.cpu().numpy(), self_np)  # untouched
    r = t.scatter_add_(dim, idx, src)
    assert r is t
    check(t, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add(device, rng, dtype, dim):
    self_np = values(rng, (4, 3), dtype)
    n = 6
    src_shape = (n, 3) if dim == 0 else (4, n)
    src_np = values(rng, src_shape, dtype)
    index_np = rng.integers(0, self_np.shape[dim], n)
    t = pygpu.from_numpy(self_np).to(device)
    idx = pygpu.from_numpy(index_np.astype(np.int32)).to(device)
    src = pygpu.from_numpy(src_np).to(device)
    want = ref_index_add(self_np, dim, index_np, src_np)
    check(t.index_add(dim, idx, src), want, dtype)
    check(pygpu.index_add(t, dim, idx, src), want, dtype)
    assert t.index_add_(dim, idx, src) is t
    check(t, want, dtype)


def test_index_add_alpha_and_strided(device, rng):
    base = rng.standard_normal((3, 8))
    t = pygpu.from_numpy(base.copy()).to(device)
    view = t.T[::2]                      # (4, 3), strided
    src_np = rng.standard_normal((3, 5))
    src = pygpu.from_numpy(src_np).to(device).T   # (5, 3), transposed
    index_np = np.array([0, 3, 3, 1, 0])
    idx = pygpu.from_numpy(np.stack([index_np, index_np]))[0].to(device)
    view.index_add_(0, idx, src, alpha=-2.5)
    want = base.copy()
    wv = want.T[::2]
    np.add.at(wv, index_np, -2.5 * src_np.T)
    np.testing.assert_allclose(t.cpu().numpy(), want, rtol=1e-12)


def test_scatter_add_strided_and_3d(device, rng):
    self_np = rng.standard_normal((3, 4, 5))
    src_np = rng.standard_normal((5, 4, 3))
    index_np = rng.integers(0, 4, (2, 4, 3))
    t = pygpu.from_numpy(self_np).to(device)
    src = pygpu.from_numpy(src_np).to(device).permute(2, 1, 0)  # (3, 4, 5)
    idx = pygpu.from_numpy(index_np).to(device)
    got = t.scatter_add(1, idx, src)
    want = ref_scatter_add(self_np, 1, index_np,
                           np.transpose(src_np, (2, 1, 0)))
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12)


def test_degenerate(device):
    t = pygpu.ones(3, 2, device=device)
    empty = pygpu.zeros(0, 2, dtype=pygpu.int64, device=device)
    assert t.scatter_add(0, empty, pygpu.ones(0, 2, device=device)).sum() \
        .item() == 6
    e0 = pygpu.tensor([], dtype=pygpu.int64, device=device)
    r = t.index_add(0, e0, pygpu.ones(0, 2, device=device))
    np.testing.assert_array_equal(r.cpu().numpy(), np.ones((3, 2)))
    s = pygpu.tensor(1.5, device=device)
    r = s.index_add(0, pygpu.tensor([0], device=device),
                    pygpu.tensor([2.0], device=device))
    assert r.shape == () and r.item() == 3.5
    b = pygpu.tensor([False, False, True], device=device)
    r = b.index_add(0, pygpu.tensor([0, 0], device=device),
                    pygpu.tensor([True, True], device=device))
    assert r.dtype == pygpu.bool
    np.testing.assert_array_equal(r.cpu().numpy(), [True, False, True])
    big = pygpu.tensor([2 ** 62], dtype=pygpu.int64, device=device)
    big.index_add_(0, pygpu.tensor([0], device=device),
                   pygpu.tensor([2 ** 60 + 1], dtype=pygpu.int64,
                                device=device))
    assert big.item() == 2 ** 62 + 2 ** 60 + 1  # exact: added in int64


def test_nan_and_inf(device):
    t = pygpu.zeros(2, device=device)
    t.index_add_(0, pygpu.tensor([0, 1, 1], device=device),
                 pygpu.tensor([float("nan"), float("inf"), 1.0],
                              device=device))
    got = t.cpu().numpy()
    assert np.isnan(got[0]) and got[1] == np.inf


def test_errors(device):
    t = pygpu.zeros(3, 4, device=device)
    idx = pygpu.tensor([[0, 1]], device=device)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal "
                                           "to src.dtype"):
        t.scatter_add(0, idx, pygpu.ones(1, 2, dtype=pygpu.float64,
                                         device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64"):
        t.scatter_add(0, idx.float(), pygpu.ones(1, 2, device=device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        t.scatter_add(0, pygpu.tensor([0], device=device),
                      pygpu.ones(1, 2, device=device))
    with pytest.raises(RuntimeError, match="to be smaller than self"):
        t.scatter_add(0, pygpu.zeros(1, 5, dtype=pygpu.int64, device=device),
                      pygpu.ones(1, 5, device=device))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        t.index_add_(0, idx, pygpu.ones(1, 4, device=device))
    with pytest.raises(IndexError, match="Number of indices"):
        t.index_add_(0, pygpu.tensor([0, 1], device=device),
                     pygpu.ones(3, 4, device=device))
    with pytest.raises(RuntimeError, match="same size apart from dimension"):
        t.index_add_(0, pygpu.tensor([0], device=device),
                     pygpu.ones(1, 3, device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        t.scatter_add(0, [0], t)
    with pytest.raises(IndexError):
        t.scatter_add(3, idx, pygpu.ones(1, 2, device=device))


def test_index_out_of_range_cpu():
    t = pygpu.zeros(3)
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_add_(0, pygpu.tensor([0, 3]), pygpu.ones(2))
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_add_(0, pygpu.tensor([-1]), pygpu.ones(1))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for "
                                           "dimension 0 with size 3"):
        t.scatter_add_(0, pygpu.tensor([-1]), pygpu.ones(1))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds"):
        t.scatter_add_(0, pygpu.tensor([3]), pygpu.ones(1))


def test_autograd(device, rng):
    from pygpu.autograd import gradcheck
    x = pygpu.from_numpy(rng.standard_normal((4, 3))).to(device)
    x.requires_grad_()
    src = pygpu.from_numpy(rng.standard_normal((3, 3))).to(device)
    src.requires_grad_()
    ix = pygpu.tensor([[0, 3, 3], [1, 1, 0]], device=device)
    assert gradcheck(lambda a, b: a.scatter_add(0, ix, b) * 2, (x, src))
    iv = pygpu.tensor([3, 0, 3], device=device)
    assert gradcheck(lambda a, b: pygpu.index_add(a, 0, iv, b, alpha=-1.5),
                     (x, src))
    src2 = pygpu.from_numpy(rng.standard_normal((3, 4))).to(device)
    src2.requires_grad_()
    iv1 = pygpu.tensor([2, 0, 2], device=device)
    assert gradcheck(lambda b: x.index_add(1, iv1, b.T), (src2,))
    assert x.scatter_add(0, ix, src).grad_fn.name() == "ScatterAddBackward0"


def test_autograd_in_place(device, rng):
    from pygpu.autograd import gradcheck
    src = pygpu.from_numpy(rng.standard_normal((3, 3))).to(device)
    src.requires_grad_()
    w = pygpu.from_numpy(rng.standard_normal((4, 3))).to(device)
    w.requires_grad_()
    iv = pygpu.tensor([3, 0, 3], device=device)
    ix = pygpu.tensor([[0, 3, 3], [1, 1, 0]], device=device)

    def f(a, b):
        y = a * 2
        y.index_add_(0, iv, b, alpha=0.5)
        y.scatter_add_(0, ix, b * b)
        return y * a

    assert gradcheck(f, (w, src))
    buf = pygpu.zeros(4, 3, dtype=pygpu.float64, device=device)
    buf.index_add_(0, iv, src)  # a plain tensor takes src's history
    assert buf.grad_fn.name() == "IndexAddBackward0"
    buf.sum().backward()
    np.testing.assert_array_equal(src.grad.cpu().numpy(), np.ones((3, 3)))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.index_add_(0, iv, src)
    with pytest.raises(RuntimeError, match="view"):
        (w * 1)[1:].index_add_(0, pygpu.tensor([0], device=device),
                               src[:1])
    with pygpu.no_grad():
        w.index_add_(0, iv, src)
