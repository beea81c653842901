"""scatter / scatter_ (src and value forms) against a float64 NumPy
reference written element by element, their gradients, and torch's
checks."""
import numpy as np
import pytest

import pygpu


def put(a, idx, values, dim):
    """torch's scatter rule in NumPy: a[..., idx[i], ...] = values[i] (dim
    replaced by idx's entry) for every position i of idx."""
    out = a.copy()
    dim %= a.ndim
    for i in np.ndindex(*idx.shape):
        j = list(i)
        j[dim] = idx[i]
        out[tuple(j)] = values if np.ndim(values) == 0 else values[i]
    return out


def unique_index(rng, shape, dim, size):
    """An int64 index of `shape` whose entries along dim are distinct
    values of [0, size) (so the result does not depend on write order)."""
    moved = np.moveaxis(np.empty(shape), dim, -1).shape
    rows = [rng.permutation(size)[:moved[-1]]
            for _ in range(int(np.prod(moved[:-1], dtype=np.int64)))]
    a = np.array(rows, dtype=np.int64).reshape(moved)
    return np.moveaxis(a, -1, dim)


@pytest.mark.parametrize("shape,ishape,dim", [
    ((4, 5), (2, 5), 0), ((4, 5), (4, 3), 1), ((3, 4, 5), (3, 2, 4), -2),
    ((6,), (6,), 0), ((1, 1), (1, 1), 1), ((3, 0), (2, 0), 0),
])
def test_scatter_src_against_numpy(device, rng, shape, ishape, dim):
    a = rng.standard_normal(shape)
    src = rng.standard_normal(tuple(n + 1 for n in ishape))
    idx = unique_index(rng, ishape, dim, shape[dim])
    want = put(a, idx, src, dim)
    t = pygpu.tensor(a, device=device)
    got = t.scatter(dim, pygpu.tensor(idx, device=device),
                    pygpu.tensor(src, device=device))
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    np.testing.assert_array_equal(t.cpu().numpy(), a)  # out of place
    same = t.scatter_(dim, pygpu.tensor(idx, device=device),
                      pygpu.tensor(src, device=device))
    assert same is t
    np.testing.assert_array_equal(t.cpu().numpy(), want)


def test_scatter_value_and_the_tutorials_one_hot(device, rng):
    y = int(rng.integers(0, 10))
    t = pygpu.zeros(10, dtype=pygpu.float32, device=device)
    t.scatter_(0, pygpu.tensor(y, device=device), value=1)
    assert t.cpu().numpy().tolist() == [float(i == y) for i in range(10)]
    a = rng.standard_normal((3, 4)).astype(np.float32)
    idx = unique_index(rng, (3, 2), 1, 4)
    want = put(a, idx, np.float32(2.5), 1)
    got = pygpu.tensor(a, device=device).scatter(
        1, pygpu.tensor(idx, device=device), 2.5)
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_scatter_into_a_transposed_tensor(device, rng):
    a = rng.standard_normal((5, 3))
    idx = unique_index(rng, (2, 5), 0, 3)
    want = put(a.T, idx, -1.0, 0)
    t = pygpu.tensor(a, device=device).t()
    t.scatter_(0, pygpu.tensor(idx, device=device), value=-1.0)
    np.testing.assert_array_equal(t.cpu().numpy(), want)


def test_scatter_gradients(device, rng):
    a = rng.standard_normal((4, 3))
    src = rng.standard_normal((2, 3))
    idx = unique_index(rng, (2, 3), 0, 4)
    w = rng.standard_normal((4, 3))
    x = pygpu.tensor(a, device=device, requires_grad=True)
    s = pygpu.tensor(src, device=device, requires_grad=True)
    out = x.scatter(0, pygpu.tensor(idx, device=device), s)
    (out * pygpu.tensor(w, device=device)).sum().backward()
    written = put(np.zeros((4, 3), bool), idx, True, 0)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(written, 0, w))
    np.testing.assert_allclose(s.grad.cpu().numpy(),
                               np.take_along_axis(w, idx, axis=0))


def test_repeated_index_writes_one_of_the_values(device):
    t = pygpu.zeros(3, device=device)
    t.scatter_(0, pygpu.tensor([1, 1, 1], device=device),
               pygpu.tensor([5.0, 6.0, 7.0], device=device))
    v = t.cpu().numpy()
    assert v[0] == 0 and v[2] == 0 and v[1] in (5.0, 6.0, 7.0)


@pytest.mark.parametrize("call,err,message", [
    (lambda t: t.scatter(0, pygpu.tensor([0.0]), 1.0), RuntimeError,
     "Expected dtype int64 for index"),
    (lambda t: t.scatter(0, pygpu.tensor([5]), 1.0), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda t: t.scatter(0, pygpu.tensor([-1]), 1.0), RuntimeError,
     "index -1 is out of bounds"),
    (lambda t: t.scatter(0, pygpu.tensor([[0]]), 1.0), RuntimeError,
     "same number of dimensions as self"),
    (lambda t: t.scatter(0, pygpu.tensor([0]),
                         pygpu.tensor([1], dtype=pygpu.int64)),
     RuntimeError, "Expected self.dtype to be equal to src.dtype"),
    (lambda t: t.scatter(1, pygpu.tensor([0]), 1.0), IndexError,
     "Dimension out of range"),
    (lambda t: t.scatter(0, pygpu.tensor([0]), 1.0, reduce="add"),
     NotImplementedError, "reduce="),
])
def test_scatter_errors(call, err, message):
    with pytest.raises(err, match=message):
        call(pygpu.zeros(3))
