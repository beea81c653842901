"""Boolean-mask indexing: x[mask] copies the selected rows (row-major
order) and x[mask] = v writes them (a number, a 0-d tensor, or a tensor
broadcast to the selection), against NumPy; torch's errors."""
import numpy as np
import pytest

import pygpu

from conftest import ALL_DTYPES, B, F64, dtype_name, host

ALL = ALL_DTYPES


def make(dtype, shape, rng):
    v = rng.integers(0, 50, shape)
    if dtype is B:
        return pygpu.from_numpy((v % 2).astype(bool))
    return pygpu.from_numpy(v.astype(np.float32)).to(dtype)


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
@pytest.mark.parametrize("mask_ndim", [0, 1, 2, 3])
def test_getitem(dtype, mask_ndim, device, rng):
    x = make(dtype, (4, 3, 5), rng).to(device)
    m = rng.integers(0, 2, (4, 3, 5)[:mask_ndim]).astype(bool)
    got = x[pygpu.from_numpy(m).to(device)]
    want = host(x)[m] if mask_ndim else host(x)[None][np.array([m])]
    assert got.dtype is dtype and got.shape == want.shape
    np.testing.assert_array_equal(host(got), want)
    # a strided tensor and a strided mask
    xt = x.transpose(0, 1)  # (3, 4, 5)
    mt = pygpu.from_numpy(rng.integers(0, 2, (4, 3)).astype(bool)).to(
        device).T
    np.testing.assert_array_equal(host(xt[mt]),
                                  host(xt)[mt.cpu().numpy()])


def test_getitem_edges(device):
    x = pygpu.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x[x > 2].tolist() == [3.0, 4.0]
    assert x[x > 9].shape == (0,)
    assert x[pygpu.tensor([False, False], device=device)].shape == (0, 2)
    assert pygpu.zeros(0, 3, device=device)[
        pygpu.zeros(0, dtype=B, device=device)].shape == (0, 3)
    assert x[pygpu.tensor(True, device=device)].shape == (1, 2, 2)
    assert x[True].shape == (1, 2, 2)  # Python bools stay views
    c = x[x > 0]
    c[0] = 100.0  # a copy
    assert x.tolist()[0][0] == 1.0
    # a CPU mask for a tensor on another device works too
    assert x[pygpu.tensor([True, False])].tolist() == [[1.0, 2.0]]


def test_mask_shape_errors(device):
    x = pygpu.zeros(3, 3, device=device)
    with pytest.raises(IndexError, match=r"The shape of the mask \[2, 3\] at "
                       r"index 0 does not match the shape of the indexed "
                       r"tensor \[3, 3\] at index 0"):
        x[pygpu.ones(2, 3, dtype=B, device=device)]
    with pytest.raises(IndexError, match=r"mask \[3, 2\] at index 1"):
        x[pygpu.ones(3, 2, dtype=B, device=device)] = 1.0
    with pytest.raises(IndexError, match="too many indices"):
        x[pygpu.ones(3, 3, 3, dtype=B, device=device)]


@pytest.mark.parametrize("dtype", ALL, ids=dtype_name)
def test_setitem(dtype, device, rng):
    x = make(dtype, (4, 3), rng).to(device)
    ref = host(x).copy()
    m = rng.integers(0, 2, 4).astype(bool)
    m[0] = True
    mask = pygpu.from_numpy(m).to(device)
    x[mask] = 1  # a number
    ref[m] = 1
    np.testing.assert_array_equal(host(x), ref)
    x[mask] = pygpu.tensor(0, device=device)  # a 0-d tensor
    ref[m] = 0
    np.testing.assert_array_equal(host(x), ref)
    row = make(dtype, (3,), rng).to(device)  # one row for every selected
    x[mask] = row
    ref[m] = host(row)
    np.testing.assert_array_equal(host(x), ref)
    k = int(m.sum())
    rows = make(dtype, (k, 3), rng).to(device)  # a row each
    x[mask] = rows
    ref[m] = host(rows)
    np.testing.assert_array_equal(host(x), ref)
    col = make(F64, (k, 1), rng).to(device)  # converted, broadcast
    x[mask] = col
    ref[m] = host(col.to(dtype))
    np.testing.assert_array_equal(host(x), ref)


def test_setitem_views_and_errors(device):
    x = pygpu.zeros(3, 4, device=device)
    x.T[pygpu.tensor([True, False, False, True], device=device)] = \
        pygpu.tensor([[1.0, 2.0, 3.0]], device=device)
    assert x.tolist() == [[1, 0, 0, 1], [2, 0, 0, 2], [3, 0, 0, 3]]
    x[x > 1] = [9.0]  # data converted first
    assert x.tolist() == [[1, 0, 0, 1], [9, 0, 0, 9], [9, 0, 0, 9]]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of "
                       r"shape \[3\] cannot be broadcast to indexing result "
                       r"of shape \[2, 4\]"):
        x[pygpu.tensor([True, False, True], device=device)] = \
            pygpu.ones(3, device=device)
    ro = pygpu.from_numpy(np.broadcast_to(np.zeros(3, np.float32), (2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        ro[pygpu.tensor([True, False])] = 1.0
    with pytest.raises(TypeError, match="cannot be deleted"):
        del x[x > 0]
