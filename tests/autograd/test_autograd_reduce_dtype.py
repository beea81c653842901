"""The reductions' dtype= and half-precision paths under autograd: a dtype=
that converts the input is recorded as a conversion, so the gradient comes
back in the input's dtype with the rule of the converted op; without
recording (no_grad, or an input that needs no gradient) the same calls give
the same values and no history.  float64 NumPy references."""
import numpy as np
import pytest

import pygpu
from conftest import rel_err


def leaf(rng, shape, device, dtype=pygpu.float32, positive=False):
    v = rng.uniform(0.5, 2.0, shape) if positive else \
        rng.standard_normal(shape)
    t = pygpu.from_numpy(v).to(device).to(dtype)
    return t.requires_grad_(), np.asarray(t.detach().cpu().to(
        pygpu.float64).numpy())


def weights(rng, shape, device):
    w = rng.standard_normal(shape)
    return pygpu.from_numpy(w).to(device), w


def softmax_ref(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# Each case: (call with dtype=float64, the gradient of sum(w * out) at v).
CASES = {
    "softmax": (lambda x: x.softmax(1, dtype=pygpu.float64),
                lambda v, w: softmax_ref(v, 1) * (
                    w - (w * softmax_ref(v, 1)).sum(1, keepdims=True))),
    "log_softmax": (lambda x: x.log_softmax(1, dtype=pygpu.float64),
                    lambda v, w: w - softmax_ref(v, 1) * w.sum(
                        1, keepdims=True)),
    "cumsum": (lambda x: x.cumsum(1, dtype=pygpu.float64),
               lambda v, w: np.flip(np.cumsum(np.flip(w, 1), 1), 1)),
    "mean": (lambda x: x.mean(1, dtype=pygpu.float64),
             lambda v, w: np.repeat(w[:, None], v.shape[1], 1) / v.shape[1]),
    "prod": (lambda x: x.prod(1, dtype=pygpu.float64),
             lambda v, w: (v.prod(1) * w)[:, None] / v),
    "norm": (lambda x: x.norm(dim=1, dtype=pygpu.float64),
             lambda v, w: v / np.sqrt((v * v).sum(1, keepdims=True))
             * w[:, None]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype_conversion_recorded(rng, device, name):
    call, grad_ref = CASES[name]
    x, v = leaf(rng, (3, 5), device, positive=(name == "prod"))
    y = call(x)
    assert y.dtype is pygpu.float64 and y.grad_fn is not None
    w, wv = weights(rng, tuple(y.shape), device)
    (y * w).sum().backward()
    assert x.grad.dtype is pygpu.float32
    assert rel_err(x.grad.cpu().numpy(), grad_ref(v, wv)) < 1e-5


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype_conversion_unrecorded(rng, device, name):
    call, _ = CASES[name]
    x, _ = leaf(rng, (3, 5), device, positive=(name == "prod"))
    want = call(x).detach().cpu().numpy()
    with pygpu.no_grad():
        got = call(x)
    assert got.grad_fn is None and not got.requires_grad
    assert got.dtype is pygpu.float64
    assert np.array_equal(got.cpu().numpy(), want)
    plain = call(x.detach())
    assert plain.grad_fn is None
    assert np.array_equal(plain.cpu().numpy(), want)


@pytest.mark.parametrize("dtype", [pygpu.float16, pygpu.bfloat16],
                         ids=["float16", "bfloat16"])
@pytest.mark.parametrize("take_sqrt", [0, 1], ids=["var", "std"])
def test_var_std_half_gradient(rng, device, dtype, take_sqrt):
    x, v = leaf(rng, (4, 6), device, dtype)
    y = x.std(1) if take_sqrt else x.var(1)
    assert y.dtype is dtype and y.grad_fn is not None
    w, wv = weights(rng, (4,), device)
    (y.to(pygpu.float64) * w).sum().backward()
    assert x.grad.dtype is dtype
    n = v.shape[1]
    dev = v - v.mean(1, keepdims=True)
    ref = 2 * dev / (n - 1) * wv[:, None]
    if take_sqrt:
        ref /= 2 * np.sqrt((dev * dev).sum(1, keepdims=True) / (n - 1))
    assert rel_err(x.grad.to(pygpu.float64).cpu().numpy(), ref) < 2e-2
    with pygpu.no_grad():
        plain = x.std(1) if take_sqrt else x.var(1)
    assert not plain.requires_grad
    assert np.array_equal(plain.cpu().to(pygpu.float64).numpy(),
                          y.detach().cpu().to(pygpu.float64).numpy())


def test_sum_accumulator_dtype_unrecorded(device):
    """Unrecorded, sum(dtype=float32) of bfloat16 reads the input as it is
    (no rounded copy) and gives the float32 sum, as the recorded one."""
    x = pygpu.tensor([1.5, 2.25, -3.0, 0.0078125], dtype=pygpu.bfloat16,
                     device=device, requires_grad=True)
    y = x.sum(dtype=pygpu.float32)
    with pygpu.no_grad():
        z = x.sum(dtype=pygpu.float32)
    assert y.grad_fn is not None and z.grad_fn is None
    assert y.item() == z.item() == 0.7578125


def test_integer_dtype_records_nothing(device):
    x = pygpu.tensor([[1.5, -2.0], [3.25, 4.0]], device=device,
                     requires_grad=True)
    for y in (x.cumsum(1, dtype=pygpu.int64), x.sum(dtype=pygpu.int32),
              x.cumprod(0, dtype=pygpu.int64)):
        assert y.grad_fn is None and not y.requires_grad
    with pytest.raises(NotImplementedError, match="softmax"):
        x.softmax(0, dtype=pygpu.int64)
    with pytest.raises(NotImplementedError, match="linalg.vector_norm"):
        x.norm(dtype=pygpu.int64)
