"""Backward rules of max/min/amax/amin, prod, cumprod, flip, repeat,
index_select, gather, indexing by tensors, t[key] = v, masked_fill with a
tensor value, gelu and floor_divide: gradcheck in float64 on each device,
plus the cases gradcheck cannot see (ties, zeros, repeated indices)."""
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu.autograd import gradcheck


def param(rng, shape, device, distinct=True):
    """A float64 leaf on device; distinct values (no ties) unless asked."""
    n = int(np.prod(shape))
    if distinct:
        vals = rng.permutation(n).astype(np.float64) / n * 4 - 2
        vals += rng.uniform(-0.01, 0.01, n)
    else:
        vals = rng.standard_normal(n)
    t = pygpu.from_numpy(vals.reshape(shape)).to(device)
    return t.requires_grad_()


def index(values, device):
    return pygpu.tensor(values, dtype=pygpu.int64, device=device)


def grad_of(fn, x, seed=None):
    out = fn(x)
    g = pygpu.ones_like(out) if seed is None else seed
    x.grad = None
    out.backward(g)
    return x.grad.cpu().numpy()


# ----------------------------------------------------------- max and min

@pytest.mark.parametrize("fn", [
    lambda t: t.max(),
    lambda t: t.min(),
    lambda t: t.amax(),
    lambda t: t.amin(dim=(0, 2)),
    lambda t: t.amax(dim=1, keepdim=True),
    lambda t: t.max(dim=1).values,
    lambda t: t.min(1, keepdim=True)[0],
    lambda t: pygpu.max(t, 0)[0],
    lambda t: t.max(dim=-1).values,
])
def test_extrema_gradcheck(device, rng, fn):
    x = param(rng, (3, 4, 2), device)
    assert gradcheck(fn, (x,))


def test_max_names_and_indices_not_differentiable(device, rng):
    x = param(rng, (3, 4), device)
    r = x.max(dim=1)
    assert r.values.grad_fn.name() == "MaxBackward0"
    assert not r.indices.requires_grad
    assert x.max().grad_fn.name() == "MaxBackward1"
    assert x.amin(0).grad_fn.name() == "AminBackward0"


def test_ties_are_shared_evenly(device):
    x = pygpu.tensor([[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]], dtype=pygpu.float64,
                     device=device).requires_grad_()
    np.testing.assert_allclose(grad_of(lambda t: t.max(), x),
                               [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]])
    np.testing.assert_allclose(grad_of(lambda t: t.amax(dim=1), x),
                               [[0, 0.5, 0.5], [1, 0, 0]])
    # along a dim with indices: all of it to the index returned
    r = x.max(dim=1)
    got = grad_of(lambda t: t.max(dim=1).values, x)
    want = np.zeros((2, 3))
    want[np.arange(2), r.indices.cpu().numpy()] = 1
    np.testing.assert_allclose(got, want)


def test_nan_maximum(device):
    nan = float("nan")
    x = pygpu.tensor([1.0, nan, 3.0, nan], dtype=pygpu.float64,
                     device=device).requires_grad_()
    np.testing.assert_array_equal(grad_of(lambda t: t.max(), x),
                                  [0, 0.5, 0, 0.5])
    np.testing.assert_array_equal(grad_of(lambda t: t.min(), x),
                                  [0, 0.5, 0, 0.5])


def test_max_of_0d_and_float32(device):
    x = pygpu.tensor(2.5, device=device).requires_grad_()
    x.max(dim=0).values.backward()
    assert x.grad.item() == 1.0
    y = pygpu.tensor([1.0, 5.0, 2.0], device=device).requires_grad_()
    y.max().backward()
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [0, 1, 0])
    assert y.grad.dtype == pygpu.float32


# ----------------------------------------------------------------- prod

@pytest.mark.parametrize("fn", [
    lambda t: t.prod(),
    lambda t: t.prod(1),
    lambda t: t.prod(dim=0, keepdim=True),
])
def test_prod_gradcheck(device, rng, fn):
    x = param(rng, (3, 4), device)
    assert gradcheck(fn, (x,))


def test_prod_with_zeros(device):
    # one zero: the product of the others there, zeros elsewhere
    x = pygpu.tensor([2.0, 0.0, 3.0, 4.0], dtype=pygpu.float64,
                     device=device).requires_grad_()
    np.testing.assert_allclose(grad_of(lambda t: t.prod(), x),
                               [0, 24, 0, 0])
    # two zeros: zeros everywhere
    y = pygpu.tensor([0.0, 2.0, 0.0], dtype=pygpu.float64,
                     device=device).requires_grad_()
    np.testing.assert_allclose(grad_of(lambda t: t.prod(), y), [0, 0, 0])
    # along a dim, a row each
    z = pygpu.tensor([[0.0, 2.0, 5.0], [0.0, 0.0, 1.0]], dtype=pygpu.float64,
                     device=device).requires_grad_()
    np.testing.assert_allclose(grad_of(lambda t: t.prod(1), z),
                               [[10, 0, 0], [0, 0, 0]])
    assert gradcheck(lambda t: t.prod(0), (x,))


@pytest.mark.parametrize("dims,keepdim", [((0, 2), False), ((2, 0), True),
                                          ((1,), False), ((0, 1, 2), True)])
def test_prod_several_dims(device, rng, dims, keepdim):
    x = param(rng, (2, 3, 2), device)
    assert gradcheck(lambda t: t.prod(dims, keepdim=keepdim), (x,))
    vals = x.detach().cpu().numpy().copy()
    vals[1, 2, 0] = 0.0
    z = pygpu.from_numpy(vals).to(device).requires_grad_()
    assert gradcheck(lambda t: t.prod(dims, keepdim=keepdim), (z,))


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_with_zeros(device, dim):
    vals = np.array([[1.5, 0.0, 2.0, -1.0, 0.5],
                     [0.0, 2.0, 0.0, 3.0, 1.0],
                     [2.0, -0.5, 1.5, 0.7, 0.0],
                     [1.1, 0.9, -1.2, 2.0, 1.3]])
    x = pygpu.from_numpy(vals).to(device).requires_grad_()
    assert gradcheck(lambda t: t.cumprod(dim), (x,))
    assert gradcheck(lambda t: t.cumprod(dim) * t.cumprod(dim), (x,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_gradcheck(device, rng, dim):
    x = param(rng, (3, 4), device)
    assert gradcheck(lambda t: t.cumprod(dim), (x,))
    assert x.cumprod(dim).grad_fn.name() == "CumprodBackward0"


# ---------------------------------------------------------- flip, repeat

@pytest.mark.parametrize("fn", [
    lambda t: t.flip(0),
    lambda t: t.flip(0, 2),
    lambda t: pygpu.flip(t, (1,)),
    lambda t: pygpu.flip(t, ()),  # no dims: a copy, its gradient as it is
    lambda t: t.repeat(2, 1, 3),
    lambda t: t.repeat(2, 2, 1, 2),
    lambda t: t.repeat(1, 1, 1),
    lambda t: t.transpose(0, 1).repeat(1, 2, 1),
])
def test_flip_repeat_gradcheck(device, rng, fn):
    x = param(rng, (2, 3, 2), device)
    assert gradcheck(fn, (x,))


def test_repeat_zero_times(device, rng):
    x = param(rng, (2, 3), device)
    np.testing.assert_array_equal(
        grad_of(lambda t: t.repeat(0, 2), x), np.zeros((2, 3)))


# ------------------------------------------------- selecting by an index

def test_index_select_gather_gradcheck(device, rng):
    x = param(rng, (4, 3), device)
    ix = index([3, 0, 3, 1, 3], device)  # repeated: gradients add
    assert gradcheck(lambda t: t.index_select(0, ix), (x,))
    assert gradcheck(lambda t: pygpu.index_select(t, 1, index([2, 2], device)),
                     (x,))
    gi = index([[0, 0, 1], [3, 3, 3]], device)
    assert gradcheck(lambda t: t.gather(0, gi), (x,))
    assert gradcheck(lambda t: pygpu.gather(t, 1, index([[1], [0], [2], [2]],
                                                        device)), (x,))
    assert x.index_select(0, ix).grad_fn.name() == "IndexSelectBackward0"
    assert x.gather(0, gi).grad_fn.name() == "GatherBackward0"
    np.testing.assert_array_equal(
        grad_of(lambda t: t.index_select(0, ix), x),
        np.array([[1] * 3, [1] * 3, [0] * 3, [3] * 3]))


@pytest.mark.parametrize("key", [
    lambda d: index([2, 0, 2], d),
    lambda d: [0, 2],
    lambda d: (slice(None), index([1, 1, 0], d)),
    lambda d: (index([[0, 1], [3, 3]], d), slice(1, None)),
    lambda d: (index([0, 3], d), index([2, 1], d)),
    lambda d: (Ellipsis, [2]),
])
def test_tensor_indexing_gradcheck(device, rng, key):
    x = param(rng, (4, 3), device)
    k = key(device)
    assert gradcheck(lambda t: t[k], (x,))
    assert x[k].grad_fn.name() == "IndexBackward0"


def test_mask_indexing_gradcheck(device, rng):
    x = param(rng, (3, 4), device)
    m = pygpu.from_numpy(rng.random((3, 4)) > 0.5).to(device)
    assert gradcheck(lambda t: t[m], (x,))
    row = pygpu.tensor([True, False, True], device=device)
    assert gradcheck(lambda t: t[row] * 2, (x,))


def test_repeated_index_accumulates(device):
    x = pygpu.zeros(3, dtype=pygpu.float64, device=device).requires_grad_()
    x[index([0, 0, 2, 0], device)].sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3, 0, 1])


def test_float32_and_float16_index_grads(device):
    for dt in (pygpu.float32, pygpu.float16):
        x = pygpu.ones(4, dtype=dt, device=device).requires_grad_()
        x[index([1, 1, 3], device)].sum().backward()
        assert x.grad.dtype == dt
        np.testing.assert_array_equal(x.grad.cpu().numpy().astype(float),
                                      [0, 2, 0, 1])


# ------------------------------------------------------ t[key] = value

@pytest.mark.parametrize("key", [
    lambda d: index([2, 0], d),
    lambda d: (slice(None), slice(0, 2)),
    lambda d: 1,
    lambda d: pygpu.tensor([[True, False, True]] * 4, device=d),
])
def test_setitem_value_gradcheck(device, rng, key):
    k = key(device)
    base = pygpu.zeros(4, 3, dtype=pygpu.float64, device=device)
    shape = tuple(base[k].shape)
    v = param(rng, shape, device)
    w = param(rng, (4, 3), device)

    def fn(v, w):
        y = w * 1.0     # a non-leaf that requires grad
        y[k] = v * 2
        return y * 3

    assert gradcheck(lambda v: fn(v, w), (v,))
    assert gradcheck(lambda w: fn(v, w), (w,))


def test_setitem_into_plain_tensor_and_broadcast(device, rng):
    v = param(rng, (1, 3), device)
    out = pygpu.zeros(4, 3, dtype=pygpu.float64, device=device)
    out[index([0, 2], device)] = v        # broadcast over two rows
    assert out.grad_fn.name() == "IndexPutBackward0"
    (out * out).sum().backward()
    np.testing.assert_allclose(v.grad.cpu().numpy(),
                               4 * v.detach().cpu().numpy())
    s = param(rng, (), device)
    m = pygpu.zeros(5, dtype=pygpu.float64, device=device)
    m[pygpu.tensor([True, False, True, True, False], device=device)] = s
    m.sum().backward()
    assert s.grad.item() == 3.0


def test_setitem_refusals(device, rng):
    leaf = param(rng, (3,), device)
    v = param(rng, (1,), device)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[index([0], device)] = v
    y = leaf * 1
    view = y[1:]
    with pytest.raises(RuntimeError, match="view"):
        view[index([0], device)] = v
    t = pygpu.zeros(3, dtype=pygpu.float64, device=device)
    with pytest.raises(RuntimeError, match="masked_fill_"):
        t.masked_fill_(pygpu.tensor([True, False, True], device=device),
                       v.sum())


def test_masked_fill_tensor_value(device, rng):
    x = param(rng, (3, 4), device)
    val = param(rng, (), device)
    m = pygpu.from_numpy(rng.random((3, 4)) > 0.4).to(device)
    assert gradcheck(lambda t: t.masked_fill(m, val), (x,))
    assert gradcheck(lambda v: x.masked_fill(m, v) * 2, (val,))
    plain = pygpu.zeros(3, 4, dtype=pygpu.float64, device=device)
    plain.masked_fill(m, val).sum().backward()
    assert val.grad.item() == pytest.approx(float(m.cpu().numpy().sum()))


# ------------------------------------------------- gelu, floor_divide

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradcheck(device, rng, approximate):
    x = param(rng, (5, 3), device, distinct=False)
    assert gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    assert F.gelu(x, approximate=approximate).grad_fn.name() == \
        "GeluBackward0"


def test_gelu_grad_values(device):
    x = pygpu.tensor([-30.0, -1.0, 0.0, 1.0, 30.0], dtype=pygpu.float64,
                     device=device).requires_grad_()
    got = grad_of(F.gelu, x)
    xs = np.array([-30.0, -1.0, 0.0, 1.0, 30.0])
    from math import erfc, exp, pi, sqrt
    want = [0.5 * erfc(-v / sqrt(2)) + v * exp(-v * v / 2) / sqrt(2 * pi)
            for v in xs]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    y = pygpu.tensor([0.5, -2.0], device=device).requires_grad_()
    F.gelu(y, approximate="tanh").sum().backward()
    assert y.grad.dtype == pygpu.float32


def test_floor_divide_gradient_is_zero(device, rng):
    x = param(rng, (3, 2), device)
    d = param(rng, (2,), device)
    for out in (x // 2, pygpu.floor_divide(x, d), x.floor_divide(d)):
        assert out.grad_fn.name() == "FloorDivideBackward0"
    (x // d + x).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(d.grad.cpu().numpy(), np.zeros(2))


# ------------------------------------------- cat and stack, any number

@pytest.mark.parametrize("n", [1, 4, 7])
def test_cat_stack_many_inputs(device, rng, n):
    xs = [param(rng, (2, i % 3 + 1), device) for i in range(n)]

    def f_cat(*ts):
        return pygpu.cat(list(ts), dim=1) * 2

    assert gradcheck(f_cat, tuple(xs))
    ys = [param(rng, (3, 2), device) for _ in range(n)]
    assert gradcheck(lambda *ts: pygpu.stack(ts, dim=1), tuple(ys))
    assert gradcheck(lambda *ts: pygpu.stack(list(ts), -1), tuple(ys))


def test_cat_many_mixed_requires_grad(device, rng):
    xs = [param(rng, (2, 3), device) for _ in range(6)]
    plain = pygpu.ones(2, 3, dtype=pygpu.float64, device=device)
    legacy = pygpu.zeros(0, dtype=pygpu.float64, device=device)
    parts = xs[:3] + [plain, legacy] + xs[3:]
    out = pygpu.cat(parts)
    assert out.grad_fn.name() == "CatBackward0"
    assert len(out.grad_fn.next_functions) == len(parts)
    w = pygpu.from_numpy(rng.standard_normal(tuple(out.shape))).to(device)
    (out * w).sum().backward()
    wn = w.cpu().numpy()
    for k, x in enumerate(xs):
        row = 2 * (k if k < 3 else k + 1)
        np.testing.assert_array_equal(x.grad.cpu().numpy(), wn[row:row + 2])
    s = pygpu.stack(xs * 3)  # 18 inputs, some repeated: gradients add
    s.sum().backward()
    np.testing.assert_array_equal(xs[0].grad.cpu().numpy(),
                                  wn[0:2] + 3 * np.ones((2, 3)))
