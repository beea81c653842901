"""out= with torch's rules across the op families (binary, unary, clamp,
matmul/mm/bmm, sum/mean) and Tensor.resize_: an out of another shape is
resized (with torch's warning when it had elements), its dtype must be
one the result casts to, same device, no partial overlap with an input;
the result is computed in its own dtype and then cast into out."""
import warnings

import numpy as np
import pytest

import pygpu

RESIZED = "An output with one or more elements was resized"


def t(x, device, dtype=None):
    return pygpu.tensor(x, device=device, dtype=dtype)


def host(x):
    return x.cpu().numpy()


def test_binary_out_resize_and_warning(device):
    a, b = t([1.0, 2.0], device), t([3.0, 4.0], device)
    out = pygpu.empty(5, device=device)
    with pytest.warns(UserWarning, match=r"shape \[5\], which does not "
                                         r"match the required output shape "
                                         r"\[2\]"):
        r = pygpu.add(a, b, out=out)
    assert r is out and out.shape == (2,) and out.tolist() == [4.0, 6.0]
    empty = pygpu.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pygpu.mul(a, t([[1.0], [2.0]], device), out=empty)
    assert empty.shape == (2, 2) and empty.tolist() == [[1, 2], [2, 4]]
    scalar_out = pygpu.empty((), device=device)
    with pytest.warns(UserWarning, match=r"shape \[\]"):
        pygpu.sub(a, 1, out=scalar_out)
    assert scalar_out.tolist() == [0.0, 1.0]


def test_in_place_shape_is_not_resized(device):
    x = t([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't "
                                           r"match the broadcast shape "
                                           r"\[2, 2\]"):
        x.add_(t([[3.0, 4.0], [5.0, 6.0]], device))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast"):
        pygpu.add(x, t([[3.0, 4.0], [5.0, 6.0]], device), out=x)
    assert x.tolist() == [1.0, 2.0]


def test_out_dtype_rules(device):
    f = t([1.5, 2.5], device)
    i = t([1, 2], device)
    long_out = pygpu.zeros(2, device=device, dtype=pygpu.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast "
                                           "to the desired output type Long"):
        pygpu.add(f, f, out=long_out)
    with pytest.raises(RuntimeError, match="result type Double can't be cast"):
        pygpu.add(f.double(), f, out=long_out)
    with pytest.raises(RuntimeError, match="result type Float"):
        pygpu.exp(i, out=long_out)
    assert long_out.tolist() == [0, 0]  # untouched
    # computed in the result's dtype (float16 here), then cast
    h = t([0.1, 0.2], device, pygpu.float16)
    d = pygpu.empty(2, device=device, dtype=pygpu.float64)
    pygpu.add(h, h, out=d)
    np.testing.assert_array_equal(host(d), host(h + h).astype(np.float64))
    pygpu.exp(i, out=d)
    np.testing.assert_array_equal(host(d),
                                  host(pygpu.exp(i)).astype(np.float64))
    assert pygpu.add(i, i, out=d) is d and d.tolist() == [2.0, 4.0]
    assert pygpu.div(i, 2, out=d).tolist() == [0.5, 1.0]


def test_out_strided_and_overlap(device):
    base = pygpu.zeros(3, 4, device=device)
    col = base[:, 1]
    pygpu.add(t([1.0, 2.0, 3.0], device), 1, out=col)
    assert host(base)[:, 1].tolist() == [2.0, 3.0, 4.0]
    assert host(base)[:, 0].tolist() == [0.0, 0.0, 0.0]
    x = t([0.0, 1, 2, 3, 4, 5], device)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        pygpu.add(x[:4], 1, out=x[1:5])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        pygpu.exp(x[:4], out=x[2:])
    # element for element is allowed
    y = t([1.0, 2.0], device)
    assert pygpu.neg(y, out=y).tolist() == [-1.0, -2.0]


def test_out_readonly_and_bad_types():
    arr = np.zeros(2, dtype=np.float32)
    arr.flags.writeable = False
    ro = pygpu.from_numpy(arr)
    with pytest.raises(ValueError, match="read-only"):
        pygpu.add(pygpu.ones(2), 1, out=ro)
    with pytest.raises(ValueError, match="read-only"):
        pygpu.add(pygpu.ones(3), 1, out=ro)  # not resized either
    assert ro.shape == (2,)
    with pytest.raises(TypeError, match="out"):
        pygpu.exp(pygpu.ones(2), out=[0.0, 0.0])


@pytest.mark.cuda
def test_out_on_another_device():
    x = pygpu.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.add(x, x, out=pygpu.empty(2))
    with pytest.raises(RuntimeError, match="same device"):
        pygpu.exp(x, out=pygpu.empty(2))


def test_unary_out(device, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = t(a, device)
    for name in ("exp", "abs", "sin", "neg", "sigmoid", "floor"):
        out = pygpu.empty(3, 4, device=device)
        r = getattr(pygpu, name)(x, out=out)
        assert r is out
        np.testing.assert_array_equal(host(out), host(getattr(pygpu, name)(x)))
    with pytest.raises(TypeError):
        pygpu.exp(x, x)  # out is keyword-only


def test_new_binary_ops_out(device):
    a, b = t([1.0, 4.0], device), t([2.0, 3.0], device)
    out = pygpu.empty(0, device=device)
    assert pygpu.pow(a, b, out=out) is out and out.tolist() == [1.0, 64.0]
    assert pygpu.maximum(a, b, out=out).tolist() == [2.0, 4.0]
    assert pygpu.minimum(a, b, out=out).tolist() == [1.0, 3.0]
    assert pygpu.remainder(a, b, out=out).tolist() == [1.0, 1.0]
    assert pygpu.floor_divide(a, b, out=out).tolist() == [0.0, 1.0]
    assert pygpu.fmod(a, 3, out=out).tolist() == [1.0, 1.0]
    c = pygpu.empty(7, device=device, dtype=pygpu.float64)
    with pytest.warns(UserWarning, match=RESIZED):
        pygpu.clamp(a, 2, 3, out=c)
    assert c.shape == (2,) and c.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        pygpu.clamp(a, 2, out=pygpu.empty(2, device=device,
                                          dtype=pygpu.int64))


def test_matmul_out(device, rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    ta, tb = t(a, device), t(b, device)
    ref = host(ta @ tb)
    out = pygpu.empty(2, 4, device=device)
    assert pygpu.matmul(ta, tb, out=out) is out
    np.testing.assert_array_equal(host(out), ref)
    assert pygpu.mm(ta, tb, out=out) is out
    np.testing.assert_array_equal(host(out), ref)
    strided = pygpu.empty(4, 2, device=device).t()
    pygpu.mm(ta, tb, out=strided)
    assert strided.stride() == (1, 2)
    np.testing.assert_array_equal(host(strided), ref)
    small = pygpu.empty(1, device=device)
    with pytest.warns(UserWarning, match=RESIZED):
        pygpu.matmul(ta, tb, out=small)
    assert small.shape == (2, 4)
    np.testing.assert_array_equal(host(small), ref)
    bo = pygpu.empty(0, device=device)
    pygpu.bmm(ta[None], tb[None], out=bo)
    assert bo.shape == (1, 2, 4)
    with pytest.raises(RuntimeError, match="Expected out tensor to have "
                                           "dtype float, but got double "
                                           "instead"):
        pygpu.mm(ta, tb, out=pygpu.empty(2, 4, device=device,
                                         dtype=pygpu.float64))
    sq = t(rng.standard_normal((3, 3)), device)
    want = host(sq @ sq)
    assert pygpu.mm(sq, sq, out=sq) is sq  # out is an input: still right
    np.testing.assert_allclose(host(sq), want, rtol=1e-12)
    vec = pygpu.empty(5, device=device)
    with pytest.warns(UserWarning, match=RESIZED):
        pygpu.matmul(ta, t(b[:, 0], device), out=vec)
    np.testing.assert_allclose(host(vec), a @ b[:, 0], rtol=1e-5)


def test_reduce_out(device, rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    x = t(a, device)
    out = pygpu.empty(0, device=device)
    assert pygpu.sum(x, 1, out=out) is out
    np.testing.assert_array_equal(host(out), host(x.sum(1)))
    with pytest.warns(UserWarning, match=RESIZED):
        pygpu.mean(x, 0, keepdim=True, out=out)
    assert out.shape == (1, 5)
    np.testing.assert_array_equal(host(out), host(x.mean(0, keepdim=True)))
    d = pygpu.empty(3, device=device, dtype=pygpu.float64)
    pygpu.sum(x, dim=1, out=d)
    np.testing.assert_array_equal(host(d), host(x.sum(1)).astype(np.float64))
    i = t([[1, 2], [3, 4]], device)
    f = pygpu.empty(2, device=device)
    assert pygpu.sum(i, 0, out=f).tolist() == [4.0, 6.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        pygpu.mean(x, 1, out=pygpu.empty(3, device=device,
                                         dtype=pygpu.int64))
    with pytest.raises(TypeError, match="out"):
        pygpu.sum(x, 1, out=3)


# ----------------------------------------------------------------- resize_

def test_resize_reuses_or_reallocates(device):
    x = t([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], device)
    ptr = x.data_ptr()
    assert x.resize_(2, 2) is x
    assert x.shape == (2, 2) and x.data_ptr() == ptr
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    x.resize_((3,))
    assert x.shape == (3,) and x.is_contiguous() and x.data_ptr() == ptr
    x.resize_([0])
    assert x.numel() == 0
    x.resize_(6)
    assert x.data_ptr() == ptr and x.tolist()[:6] == [1, 2, 3, 4, 5, 6]
    x.resize_(4, 3)  # grows: new memory starting with the old elements
    assert x.shape == (4, 3) and x.tolist()[:2] == [[1, 2, 3], [4, 5, 6]]
    y = x.t()
    assert y.resize_(3, 4) is y and y.stride() == (1, 3)  # same shape: kept
    y.resize_(2, 6)
    assert y.stride() == (6, 1)
    v = t([1.0, 2.0, 3.0, 4.0], device)[1:3]
    v.resize_(3)
    assert v.tolist() == [2.0, 3.0, 4.0]
    v.resize_(8)
    assert v.shape == (8,) and v.tolist()[:3] == [2.0, 3.0, 4.0]


@pytest.mark.parametrize("dtype,shape", [
    (pygpu.float32, (2**62,)), (pygpu.float32, (2**61,)),
    (pygpu.float32, (2**31, 2**31)), (pygpu.float64, (2**60,)),
    (pygpu.float16, (2**62,)), (pygpu.int64, (2**30, 2**30, 4))])
def test_resize_byte_count_overflow(device, dtype, shape):
    """The new byte count is checked as allocation checks it: 2**62 float32
    are 2**64 bytes, which wrapped to 0 and kept the old 16 bytes under a
    shape of 2**62 elements."""
    x = pygpu.tensor([1, 2, 3, 4], dtype=dtype, device=device)
    ptr = x.data_ptr()
    with pytest.raises(RuntimeError, match=r"Storage size calculation "
                       r"overflowed with sizes=\["):
        x.resize_(*shape)
    assert x.shape == (4,) and x.data_ptr() == ptr
    assert x.tolist() == [1, 2, 3, 4]


def test_resize_errors():
    x = pygpu.zeros(2, 3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        x.resize_(-1)
    with pytest.raises(TypeError, match="size"):
        x.resize_()
    with pytest.raises(TypeError):
        x.resize_(2.5)
    arr = np.zeros(3, dtype=np.float32)
    arr.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pygpu.from_numpy(arr).resize_(2)
    assert x.shape == (2, 3)


def test_resize_keeps_numpy_views_valid():
    x = pygpu.tensor([1.0, 2.0, 3.0])
    arr = x.numpy()
    x.resize_(1000)
    x.fill_(7.0)
    del x
    assert arr.tolist() == [1.0, 2.0, 3.0]  # the old memory stays alive
