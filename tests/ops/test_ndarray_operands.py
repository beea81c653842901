"""A NumPy array beside a tensor in an operator counts as the tensor made
from it, as in torch: both orders give a pygpu Tensor on the tensor's
device, with torch's promotion for a tensor operand (the array's own
dtype, so float32 tensor + float64 array is float64)."""
import operator

import numpy as np
import pytest

import pygpu

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv,
         operator.floordiv, operator.mod, operator.pow]
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
           operator.ge]
NP_OF = {pygpu.float32: np.float32, pygpu.float64: np.float64,
         pygpu.int64: np.int64, pygpu.int32: np.int32, pygpu.float16:
         np.float16}


def _operands(rng, tdt, adt, shape=(3, 4)):
    a = rng.uniform(0.5, 2.0, shape)
    b = rng.uniform(0.5, 2.0, shape)
    if not np.issubdtype(np.dtype(NP_OF[tdt]), np.floating):
        a = np.ceil(a * 3)
    if not np.issubdtype(np.dtype(adt), np.floating):
        b = np.ceil(b * 3)
    return a.astype(NP_OF[tdt]), b.astype(adt)


@pytest.mark.parametrize("op", ARITH, ids=lambda o: o.__name__)
@pytest.mark.parametrize("tdt,adt,want", [
    (pygpu.float32, np.float32, pygpu.float32),
    (pygpu.float32, np.float64, pygpu.float64),
    (pygpu.int64, np.float64, pygpu.float64),
    (pygpu.float64, np.int64, pygpu.float64),
    (pygpu.int64, np.int32, pygpu.int64),
    (pygpu.float16, np.float32, pygpu.float32),
], ids=lambda v: getattr(v, "__name__", repr(v)))
def test_arithmetic_both_orders(device, rng, op, tdt, adt, want):
    if op is operator.truediv and not want.is_floating_point:
        want = pygpu.float32  # true division of integers: the default
    tn, an = _operands(rng, tdt, adt)
    t = pygpu.tensor(tn, device=device)
    for r, ref in ((op(t, an), op(tn.astype(np.float64),
                                  an.astype(np.float64))),
                   (op(an, t), op(an.astype(np.float64),
                                  tn.astype(np.float64)))):
        assert isinstance(r, pygpu.Tensor)
        assert r.device == t.device
        want_dt = want
        if op is operator.truediv and not want.is_floating_point:
            want_dt = pygpu.float32
        assert r.dtype is want_dt, (r.dtype, want_dt)
        rtol = {pygpu.float16: 1e-2, pygpu.float32: 1e-5}.get(r.dtype, 1e-12)
        if op is operator.pow:
            rtol = max(rtol, 1e-5)
        got = r.cpu().numpy().astype(np.float64)
        if op in (operator.floordiv, operator.mod) and \
                r.dtype.is_floating_point:
            # values right at an integer may round either way in float32
            close = np.isclose(got, ref, rtol=rtol, atol=rtol)
            assert close.mean() > 0.9
        else:
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("op", COMPARE, ids=lambda o: o.__name__)
def test_comparisons_both_orders(device, rng, op):
    tn = rng.integers(0, 3, (4, 5)).astype(np.float32)
    an = rng.integers(0, 3, (4, 5)).astype(np.float64)
    t = pygpu.tensor(tn, device=device)
    for r, ref in ((op(t, an), op(tn, an)), (op(an, t), op(an, tn))):
        assert isinstance(r, pygpu.Tensor) and r.dtype is pygpu.bool
        assert r.device == t.device
        np.testing.assert_array_equal(r.cpu().numpy(), ref)


def test_broadcasting_degenerate_and_strided(device, rng):
    t = pygpu.tensor(rng.standard_normal((3, 1)), device=device)
    row = rng.standard_normal(4)
    r = t + row
    assert r.shape == (3, 4)
    np.testing.assert_allclose(r.cpu().numpy(), t.cpu().numpy() + row,
                               rtol=1e-12)
    empty = np.zeros((0, 1, 4))
    assert (t + empty).shape == (0, 3, 4)
    one = np.array([2.5])
    assert (one * t).shape == (3, 1)
    strided = rng.standard_normal((4, 6))[:, ::2].T  # not contiguous
    s = pygpu.tensor(rng.standard_normal((3, 4)), device=device)
    np.testing.assert_allclose((s - strided).cpu().numpy(),
                               s.cpu().numpy() - strided, rtol=1e-12)
    flipped = np.arange(3.0)[::-1]  # a negative stride: copied
    np.testing.assert_allclose((pygpu.ones(3, device=device,
                                           dtype=pygpu.float64) * flipped)
                               .cpu().numpy(), flipped)


def test_zero_dim_array_is_a_zero_dim_tensor(device):
    t = pygpu.ones(3, device=device)  # float32
    r = t + np.array(2.0)  # a 0-d float64 tensor does not lift float32
    assert r.dtype is pygpu.float32 and r.tolist() == [3.0, 3.0, 3.0]
    i = pygpu.tensor([1, 2], device=device)
    # a 0-d tensor of a higher category gives its own dtype, as torch
    assert (i * np.array(1.5)).dtype is pygpu.float64


def test_bitwise_matmul_and_inplace(device):
    i = pygpu.tensor([1, 2, 3], device=device)
    m = np.array([3, 1, 2])
    assert (i & m).tolist() == [1, 0, 2] and (m | i).tolist() == [3, 3, 3]
    assert (i ^ m).tolist() == [2, 3, 1]
    a = pygpu.ones(2, 3, device=device)
    b = np.full((3, 2), 2.0, dtype=np.float32)
    assert (a @ b).tolist() == [[6.0, 6.0]] * 2
    assert (b @ a).shape == (3, 3)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ b.astype(np.float64)  # matmul does not promote, as torch
    x = pygpu.ones(3, device=device)
    x += np.array([1.0, 2.0, 3.0])
    assert x.dtype is pygpu.float32 and x.tolist() == [2.0, 3.0, 4.0]
    x *= np.array([2, 2, 2])
    assert x.tolist() == [4.0, 6.0, 8.0]


def test_numpy_functions_convert_the_tensor():
    t = pygpu.tensor([1.0, 2.0])
    r = np.add(t, 1)  # NumPy's own function answers with an ndarray
    assert isinstance(r, np.ndarray) and r.tolist() == [2.0, 3.0]
    assert pygpu.Tensor.__array_priority__ == 1000


def test_bad_arrays_raise_clear_errors():
    t = pygpu.ones(2)
    with pytest.raises(TypeError, match="complex"):
        t + np.ones(2, dtype=np.complex64)
    with pytest.raises(TypeError):
        t + np.array(["a", "b"])
    with pytest.raises(RuntimeError, match="size"):
        t + np.ones(3)


@pytest.mark.cuda
def test_array_goes_to_the_tensors_cuda_device(rng):
    t = pygpu.tensor(rng.standard_normal(5), device="cuda")
    a = rng.standard_normal(5)
    for r in (t + a, a + t, t < a, a * t):
        assert r.device == t.device
    np.testing.assert_allclose((a - t).cpu().numpy(),
                               a - t.cpu().numpy(), rtol=1e-12)
