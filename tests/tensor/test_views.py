"""Views share memory: T, t, transpose, permute, view/reshape, flatten,
squeeze/unsqueeze, expand, indexing and assignment, contiguous."""
import numpy as np
import pytest

import pygpu

from conftest import emptied_list


def arange(shape, device):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return a, pygpu.tensor(a, device=device)


def test_transpose_family(device):
    a, t = arange((2, 3, 4), device)
    np.testing.assert_array_equal(t.T.cpu().numpy(), a.T)
    np.testing.assert_array_equal(t.mT.cpu().numpy(), np.swapaxes(a, 1, 2))
    np.testing.assert_array_equal(t.transpose(0, 2).cpu().numpy(),
                                  np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(t.permute(2, 0, 1).cpu().numpy(),
                                  a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.permute((1, 2, 0)).cpu().numpy(),
                                  a.transpose(1, 2, 0))
    m = t[0]
    np.testing.assert_array_equal(m.t().cpu().numpy(), a[0].T)
    assert t.T.data_ptr() == t.data_ptr()
    with pytest.raises(RuntimeError):
        t.t()
    with pytest.raises(RuntimeError, match="duplicate"):
        t.permute(0, 0, 1)
    with pytest.raises(IndexError):
        t.transpose(0, 3)


def test_view_reshape(device):
    a, t = arange((4, 6), device)
    v = t.view(3, 8)
    assert v.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(v.cpu().numpy(), a.reshape(3, 8))
    np.testing.assert_array_equal(t.view(-1).cpu().numpy(), a.ravel())
    np.testing.assert_array_equal(t.reshape((2, -1, 3)).cpu().numpy(),
                                  a.reshape(2, -1, 3))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.T.view(24)
    r = t.T.reshape(24)  # a copy
    np.testing.assert_array_equal(r.cpu().numpy(), a.T.reshape(24))
    # a non-contiguous tensor can still be viewed when dims stay separate
    np.testing.assert_array_equal(t.T.view(3, 2, 4).cpu().numpy(),
                                  a.T.reshape(3, 2, 4))
    with pytest.raises(RuntimeError, match="invalid for input of size 24"):
        t.view(5, 5)
    with pytest.raises(RuntimeError, match="only one dimension"):
        t.view(-1, -1)
    assert pygpu.zeros(0, 3, device=device).reshape(3, 0, 5).shape == (3, 0, 5)
    assert pygpu.tensor(2.0, device=device).reshape(1, 1).shape == (1, 1)


def test_flatten_squeeze_unsqueeze(device):
    a, t = arange((2, 1, 3, 4), device)
    assert t.flatten().shape == (24,)
    assert t.flatten(1).shape == (2, 12)
    assert t.flatten(1, 2).shape == (2, 3, 4)
    assert pygpu.tensor(3.0, device=device).flatten().shape == (1,)
    assert t.squeeze().shape == (2, 3, 4)
    assert t.squeeze(1).shape == (2, 3, 4) and t.squeeze(0).shape == t.shape
    assert t.unsqueeze(0).shape == (1, 2, 1, 3, 4)
    assert t.unsqueeze(-1).shape == (2, 1, 3, 4, 1)
    np.testing.assert_array_equal(t.unsqueeze(2).cpu().numpy(),
                                  np.expand_dims(a, 2))
    with pytest.raises(RuntimeError):
        t.flatten(2, 1)


def test_expand(device):
    a, t = arange((3, 1), device)
    e = t.expand(2, 3, 4)
    np.testing.assert_array_equal(e.cpu().numpy(), np.broadcast_to(a, (2, 3, 4)))
    assert t.expand(-1, 5).shape == (3, 5)
    with pytest.raises(RuntimeError, match="expanded size"):
        t.expand(4, 4)


def test_indexing(device):
    a, t = arange((4, 5, 6), device)
    cases = [1, -1, (slice(None), 2), (slice(1, 3), slice(None, None, 2)),
             (Ellipsis, 3), (None, 0), (0, None, slice(2, 5)), (2, 3, 4),
             (slice(10, 20),), (slice(-3, None),), (1, Ellipsis, None)]
    for key in cases:
        np.testing.assert_array_equal(t[key].cpu().numpy(), a[key])
    assert t[2, 3, 4].item() == a[2, 3, 4]
    with pytest.raises(IndexError, match="out of bounds"):
        t[4]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0]
    with pytest.raises(ValueError):
        t[::-1]
    with pytest.raises(IndexError):
        t["a"]


def test_setitem(device, rng):
    a, t = arange((3, 4), device)
    t[0] = 7.0
    a[0] = 7.0
    t[1:, ::2] = pygpu.tensor([[-1.0, -2.0]], device=device)
    a[1:, ::2] = [[-1.0, -2.0]]
    t[2, 3] = 5
    a[2, 3] = 5
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    with pytest.raises(RuntimeError):
        t[0] = pygpu.ones(5, device=device)


def test_iteration(device):
    a, t = arange((3, 2), device)
    rows = [r.cpu().numpy() for r in t]
    np.testing.assert_array_equal(np.stack(rows), a)
    with pytest.raises(TypeError):
        iter(pygpu.tensor(1.0, device=device))


def test_contiguous_clone_copy(device, rng):
    a, t = arange((3, 4), device)
    assert t.contiguous() is t
    c = t.T.contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1)
    np.testing.assert_array_equal(c.cpu().numpy(), a.T)
    k = t.clone()
    k.add_(1)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    d = pygpu.zeros(4, 3, device=device)
    d.copy_(t.T)
    np.testing.assert_array_equal(d.cpu().numpy(), a.T)
    d.copy_(pygpu.tensor([1.0, 2.0, 3.0]))  # broadcast, from the CPU
    np.testing.assert_array_equal(d.cpu().numpy(), np.tile([1, 2, 3], (4, 1)))
    d.fill_(2.5)
    assert d.sum().item() == 30.0
    d.T.zero_()
    assert d.sum().item() == 0.0


# ------------------------------------- a size list changed while it is read

def test_size_list_emptied_by_index_is_read_from_a_copy(device):
    t = pygpu.arange(24.0, device=device).view(2, 3, 4)
    a = np.arange(24.0).reshape(2, 3, 4)
    cases = [
        (lambda l: t.view(l), (4, 6, 1), a.reshape(4, 6, 1)),
        (lambda l: t.reshape(l), (6, 2, 2), a.reshape(6, 2, 2)),
        (lambda l: t.permute(l), (2, 0, 1), a.transpose(2, 0, 1)),
        (lambda l: t.repeat(l), (1, 2, 1), np.tile(a, (1, 2, 1))),
        (lambda l: t[:, :1].expand(l), (2, 3, 4),
         np.broadcast_to(a[:, :1], (2, 3, 4))),
        (lambda l: t.flip(l), (0, 2), np.flip(a, (0, 2))),
    ]
    for op, sizes, ref in cases:
        lst = emptied_list(*sizes)
        r = op(lst)
        assert lst == []
        np.testing.assert_array_equal(r.cpu().numpy(), ref)
    lst = emptied_list(3, 4)
    u = pygpu.zeros(2, device=device)
    assert u.resize_(lst) is u and u.shape == (3, 4)


def test_strides_of_huge_sizes_never_overflow(device):
    """Every tensor's contiguous strides fit int64: a shape with no
    elements whose other sizes multiply past it is refused, and a slice
    step past the size keeps a stride that fits."""
    for make in (lambda: pygpu.zeros(0, 2**62, 2**62, device=device),
                 lambda: pygpu.zeros(0, device=device).view(0, 2**62, 4),
                 lambda: pygpu.zeros(0, 1, 1, device=device).expand(
                     0, 2**62, 2**62)):
        with pytest.raises(RuntimeError, match="strides cannot be "
                           "represented"):
            make()
    assert pygpu.zeros(0, 2**60, device=device).stride() == (2**60, 1)
    a, t = arange((2, 3), device)
    for key in [np.s_[::2**62], np.s_[1::2**63 - 1], np.s_[:, ::2**62]]:
        v = t[key]
        np.testing.assert_array_equal(v.cpu().numpy(), a[key])
        np.testing.assert_array_equal(v.contiguous().cpu().numpy(), a[key])
