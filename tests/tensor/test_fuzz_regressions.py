"""Wrong answers and unsafe inputs found by fuzzing against NumPy: size
products past int64, bool indices, the cost of repr, Tensor(), integers
int64 cannot hold, and what Size accepts."""
import os

import numpy as np
import pytest

import pygpu

OVERFLOW = "integer multiplication overflow"


# ------------------------------------------------------------ size overflow

def test_expand_overflow(device):
    one = pygpu.ones(1, 1, device=device)
    with pytest.raises(RuntimeError, match=OVERFLOW + r".*\[4294967296, "
                                                      r"4294967296\]"):
        one.expand(2**32, 2**32)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.ones(2, 3, device=device).expand(2**62, 2, 3)
    # the largest that fits still works, as a view
    big = pygpu.ones(1, device=device).expand(2**62)
    assert big.numel() == 2**62
    assert pygpu.ones(2, 3).expand(2**60, 2, 3).numel() == 3 * 2**61
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.ones(2, 3).expand(2**61, 2, 3)


@pytest.mark.parametrize("factory", ["empty", "zeros", "ones", "rand",
                                     "randn"])
def test_factory_overflow(factory):
    fn = getattr(pygpu, factory)
    for shape in [(2**32, 2**32), (2**62, 4, 0), (2**40, 2**40, 2**40)]:
        with pytest.raises(RuntimeError, match=OVERFLOW):
            fn(*shape)
        with pytest.raises(RuntimeError, match=OVERFLOW):
            fn(shape)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.full((2**32, 2**32), 1.0)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.Tensor(2**32, 2**32)


def test_size_past_int64_is_torchs_error():
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        pygpu.empty(2**64)
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        pygpu.ones(1).expand(2**63)


def test_view_reshape_overflow(device):
    x = pygpu.ones(1, device=device)
    for method in ("view", "reshape"):
        fn = getattr(x, method)
        with pytest.raises(RuntimeError, match=OVERFLOW):
            fn(2**32, 2**32)
        with pytest.raises(RuntimeError, match=OVERFLOW):
            fn(2**32, 2**32, -1)
        with pytest.raises(RuntimeError, match=OVERFLOW):
            fn((2**62, 4, 0))
    e = pygpu.ones(1, 1, device=device).expand(2**31, 2**31)
    r = e.reshape(-1)
    assert r.shape == (2**62,)
    with pytest.raises(RuntimeError, match="invalid for input of size 1"):
        x.view(2, 3)


def test_broadcast_overflow(device):
    a = pygpu.ones(1, 1, device=device).expand(2**32, 1)
    b = pygpu.ones(1, 1, device=device).expand(1, 2**32)
    for op in (lambda: a + b, lambda: a * b, lambda: pygpu.sub(a, b)):
        with pytest.raises(RuntimeError, match=OVERFLOW):
            op()


def test_size_numel_overflow():
    assert pygpu.Size([2**31, 2**31]).numel() == 2**62
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.Size([2**32, 2**32]).numel()
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pygpu.ones(1, 1).expand(2**31, 2**31).shape.__class__(
            [2**62, 4]).numel()
    assert pygpu.Size([]).numel() == 1


# ---------------------------------------------------------------------- Size

def test_size_rejects_bad_items():
    with pytest.raises(TypeError, match=r"iterable of 'int' \(item 0 is "
                                        r"'str'\)"):
        pygpu.Size(["a"])
    with pytest.raises(TypeError, match=r"item 1 is 'float'"):
        pygpu.Size([1, 2.0])
    with pytest.raises(TypeError, match=r"item 0 is 'bool'"):
        pygpu.Size([True])
    with pytest.raises(ValueError, match="non-negative"):
        pygpu.Size([-1])
    with pytest.raises(ValueError, match=r"item 2 is -5"):
        pygpu.Size((1, 2, -5))
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        pygpu.Size([2**64])
    with pytest.raises(TypeError):
        pygpu.Size(5)


def test_size_accepts_ints():
    s = pygpu.Size([np.int64(2), 3])
    assert s == (2, 3) and type(s[0]) is int
    assert isinstance(s, pygpu.Size)
    assert pygpu.Size() == ()
    assert pygpu.Size(range(3)) == (0, 1, 2)
    assert pygpu.Size(pygpu.ones(2, 3).shape) == (2, 3)
    assert repr(pygpu.Size([4])) == "pygpu.Size([4])"


# ------------------------------------------------------------------ indexing

@pytest.mark.parametrize("true, false", [(True, False),
                                         (np.True_, np.False_)])
def test_bool_index_adds_dim(device, true, false, rng):
    ref = rng.standard_normal((2, 3)).astype(np.float32)
    x = pygpu.tensor(ref, device=device)
    for key in [true, false, (true, 0), (0, true), (false, slice(None)),
                (true, Ellipsis, true), (None, true), (true, 1, 2),
                (true, true), (true, false), (slice(None), true, true),
                (true, slice(None), false), (true, 0, true)]:
        got = x[key]
        want = ref[key]
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.cpu().numpy(), want)
    # an int is a select in torch, not an index NumPy broadcasts with the
    # bool, so the bool's dim stays where it is
    assert x[0, :, true].shape == (3, 1)
    s = pygpu.tensor(5.0, device=device)
    assert s[True].shape == (1,) and s[True].tolist() == [5.0]
    assert s[False].shape == (0,)


def test_bool_index_assignment(device):
    # the same view as reading: True writes everything, False nothing
    x = pygpu.zeros(2, 3, device=device)
    x[False] = 7.0
    assert x.tolist() == [[0.0] * 3] * 2
    x[True] = 1.0
    assert x.tolist() == [[1.0] * 3] * 2
    x[True, 0] = 2.0
    assert x.tolist() == [[2.0] * 3, [1.0] * 3]


# ---------------------------------------------------------------------- repr

def test_repr_of_huge_expanded_view():
    r = repr(pygpu.ones(1).expand(2**40))
    assert r == "tensor([1., 1., 1., ..., 1., 1., 1.])"
    r = repr(pygpu.ones(1, 1, 1).expand(2**20, 2**20, 2**20))
    assert r.count("...") > 3 and r.startswith("tensor([[[1., 1., 1., ...")


def test_repr_of_ten_million_elements():
    x = pygpu.tensor(np.arange(10**7, dtype=np.int64))
    assert repr(x) == ("tensor([      0,       1,       2, ..., 9999997, "
                       "9999998, 9999999])")
    y = x.view(10**4, 10**3).float()
    r = repr(y)
    assert r.startswith("tensor([[      0.,       1.,       2., ...,     "
                        "997.,     998.,     999.],\n")
    assert r.endswith("[9999000., 9999001., 9999002., ..., 9999997., "
                      "9999998., 9999999.]])")
    assert r.count("\n") == 6 and "        ...,\n" in r


def test_repr_unchanged_for_small_and_edges():
    assert repr(pygpu.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    t = pygpu.tensor(np.arange(1001, dtype=np.int64))
    assert repr(t) == "tensor([   0,    1,    2, ...,  998,  999, 1000])"
    # a dim of exactly 6 is shown whole even when the tensor is summarised
    t = pygpu.tensor(np.arange(6 * 200, dtype=np.int64).reshape(6, 200))
    rows = repr(t).split("\n")
    assert len(rows) == 6 and "..." in rows[0]


# ---------------------------------------------------------------- Tensor()

def test_tensor_constructor_empty():
    t = pygpu.Tensor()
    assert t.shape == (0,)
    assert t.dtype == pygpu.float32
    assert t.numel() == 0
    assert t.tolist() == []
    assert pygpu.Tensor(2, 3).shape == (2, 3)


# ---------------------------------------------------------- int64 overflow

def test_python_ints_past_int64():
    for data in ([2**64], [2**63], [-(2**63) - 1], [2**63, -1], 2**64,
                 [[1], [2**64]]):
        with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
            pygpu.tensor(data)
        with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
            pygpu.tensor(data, dtype=pygpu.int64)
    assert pygpu.tensor([2**63 - 1, -(2**63)]).tolist() == [2**63 - 1,
                                                            -(2**63)]
    # as torch: a float dtype, or a float among them, takes the value
    t = pygpu.tensor([2**64], dtype=pygpu.float64)
    assert t.tolist() == [float(2**64)]
    t = pygpu.tensor([1.5, 2**64])
    assert t.dtype == pygpu.float32
    assert t.tolist() == [1.5, float(2**64)]


def test_uint64_arrays_past_int64():
    a = np.array([1, 2**63], dtype=np.uint64)
    with pytest.raises(RuntimeError, match="9223372036854775808"):
        pygpu.tensor(a)
    with pytest.raises(RuntimeError, match="9223372036854775808"):
        pygpu.tensor(np.uint64(2**63))
    assert pygpu.tensor(np.array([2**63 - 1], dtype=np.uint64)).tolist() == \
        [2**63 - 1]
    assert pygpu.tensor(a, dtype=pygpu.float64).tolist() == [1.0, 2.0**63]
    assert pygpu.tensor(np.array([], dtype=np.uint64)).numel() == 0


def test_numpy_integers_are_dims():
    t = pygpu.ones(2, 3)
    assert t.permute(np.int64(1), 0).shape == (3, 2)
    assert t.transpose(np.int32(0), np.int64(1)).shape == (3, 2)
    assert t.sum(np.int64(-1)).shape == (2,)
    assert t.max(np.int32(0))[0].shape == (3,)
    with pytest.raises(TypeError, match="dim must be an int"):
        t.sum(True)
    with pytest.raises(TypeError, match="dim must be an int"):
        t.sum(1.0)


def test_huge_dims_and_device_indices_raise_runtime_error():
    t = pygpu.ones(2, 3)
    for call in (lambda: t.sum(2**64), lambda: t.transpose(0, -2**70),
                 lambda: t.to(2**64), lambda: pygpu.device("cuda", 2**64)):
        with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
            call()
    with pytest.raises(RuntimeError, match="out of range"):
        pygpu.device("cuda", 10**7)


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                    reason="AddressSanitizer reports the failed allocation "
                    "this test makes on purpose")
def test_cpu_allocation_beyond_memory_is_torch_runtime_error():
    with pytest.raises(RuntimeError,
                       match="DefaultCPUAllocator: can't allocate memory"):
        pygpu.empty(2**45)
