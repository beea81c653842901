"""Normalisation layers (batch, instance, layer, group, RMS, normalize)
against NumPy float64: values for every option and dtype, running
statistics over several steps, state_dict, gradients (gradcheck in
float64) and errors with torch's wording (compared with torch when it is
installed)."""
import re

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from conftest import BF16, F16, F32, F64, dtype_name, rel_err
from conftest import host as _host

F = nn.functional

FLOATS = [F16, BF16, F32, F64]
TOL = {F16: 1e-2, BF16: 2e-2, F32: 2e-5, F64: 1e-12}


def tensor(rng, shape, dtype=F32, device="cpu", scale=3.0, shift=0.5,
           noncontig=False):
    """(a, t): random values (not centred, so a missing mean shows) as a
    tensor of dtype on device, and its exact values as float64 NumPy; with
    noncontig the tensor is a transposed view of the last two dims."""
    a = rng.standard_normal(shape) * scale + shift
    if noncontig and len(shape) >= 2:
        t = pygpu.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)),
                         dtype=dtype, device=device).transpose(-1, -2)
        assert not t.is_contiguous()
    else:
        t = pygpu.tensor(a, dtype=dtype, device=device)
    return host(t).astype(np.float64), t


def host(t):
    return _host(t.detach())


def check(got, ref, dtype):
    assert got.dtype is dtype
    err = rel_err(host(got), ref)
    assert err <= TOL[dtype], (err, dtype_name(dtype))


# ----------------------------------------------------- NumPy references

def np_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    """(y, new running_mean, new running_var)."""
    c = x.shape[1]
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if training:
        mean, var = x.mean(dims), x.var(dims)
        n = x.size // c
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, rm, rv


def np_layer_norm(x, k, w, b, eps):
    dims = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(dims, keepdims=True)) / np.sqrt(
        x.var(dims, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_group_norm(x, g, w, b, eps):
    n, c = x.shape[:2]
    xg = x.reshape(n, g, -1)
    y = (xg - xg.mean(2, keepdims=True)) / np.sqrt(
        xg.var(2, keepdims=True) + eps)
    y = y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def np_rms_norm(x, k, w, eps):
    dims = tuple(range(x.ndim - k, x.ndim))
    y = x / np.sqrt((x * x).mean(dims, keepdims=True) + eps)
    return y if w is None else y * w


def np_instance_norm(x, w, b, eps):
    dims = tuple(range(2, x.ndim))
    y = (x - x.mean(dims, keepdims=True)) / np.sqrt(
        x.var(dims, keepdims=True) + eps)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


# ------------------------------------------------------------ batch norm

@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 4, 5, 2),
                                   (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_values(device, rng, shape, training, affine):
    c = shape[1]
    a, x = tensor(rng, shape, device=device, noncontig=len(shape) > 2)
    rm = pygpu.tensor(rng.standard_normal(c), dtype=F32, device=device)
    rv = pygpu.tensor(rng.random(c) + 0.5, dtype=F32, device=device)
    w = b = wa = ba = None
    if affine:
        wa, w = tensor(rng, (c,), device=device)
        ba, b = tensor(rng, (c,), device=device)
    ry, rrm, rrv = np_batch_norm(a, host(rm).astype(np.float64),
                                 host(rv).astype(np.float64), wa, ba,
                                 training, 0.3, 1e-3)
    y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3,
                     eps=1e-3)
    check(y, ry, F32)
    assert rel_err(host(rm), rrm) < 1e-5
    assert rel_err(host(rv), rrv) < 1e-5


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_dtypes(device, rng, dtype, training):
    a, x = tensor(rng, (8, 4, 6), dtype, device)
    pdt = F32 if dtype in (F16, BF16) else dtype    # torch's mixed form
    for param_dtype in {dtype, pdt}:
        rm = pygpu.zeros(4, dtype=param_dtype, device=device) + 0.25
        rv = pygpu.ones(4, dtype=param_dtype, device=device) * 2
        wa, w = tensor(rng, (4,), param_dtype, device)
        ba, b = tensor(rng, (4,), param_dtype, device)
        ref, rrm, rrv = np_batch_norm(a, np.full(4, 0.25), np.full(4, 2.0),
                                      wa, ba, training, 0.1, 1e-5)
        check(F.batch_norm(x, rm, rv, w, b, training), ref, dtype)
        assert rel_err(host(rm), rrm) <= TOL[param_dtype]
        assert rel_err(host(rv), rrv) <= TOL[param_dtype]


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batchnorm_running_stats_over_steps(device, rng, momentum):
    m = nn.BatchNorm2d(3, momentum=momentum, device=device)
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(1, 5):
        a, x = tensor(rng, (4, 3, 3, 2), device=device)
        y = m(x)
        f = 1.0 / step if momentum is None else momentum
        ref, rm, rv = np_batch_norm(a, rm, rv, None, None, True, f, 1e-5)
        check(y, ref, F32)
        assert m.num_batches_tracked.item() == step
        assert m.num_batches_tracked.dtype is pygpu.int64
        assert rel_err(host(m.running_mean), rm) < 1e-5
        assert rel_err(host(m.running_var), rv) < 1e-5
    # evaluation uses the running statistics and leaves them alone
    m.eval()
    a, x = tensor(rng, (1, 3, 1, 1), device=device)     # a batch of one
    ref, _, _ = np_batch_norm(a, rm, rv, None, None, False, 0.1, 1e-5)
    check(m(x), ref, F32)
    assert m.num_batches_tracked.item() == 4
    assert rel_err(host(m.running_mean), rm) < 1e-5
    if momentum is None:   # cumulative average: the mean of the batches'
        assert m.momentum is None


def test_batchnorm_without_running_stats(device, rng):
    m = nn.BatchNorm1d(4, track_running_stats=False, affine=False,
                       device=device)
    assert m.running_mean is None and m.num_batches_tracked is None
    assert list(m.state_dict()) == []
    a, x = tensor(rng, (5, 4, 3), device=device)
    ref, _, _ = np_batch_norm(a, None, None, None, None, True, 0.1, 1e-5)
    check(m(x), ref, F32)
    check(m.eval()(x), ref, F32)           # batch statistics in eval too


def test_batchnorm_module_options(device, rng):
    m = nn.BatchNorm1d(3, eps=1e-3, momentum=0.2, device=device,
                       dtype=F64)
    assert m.weight.dtype is F64 and m.running_var.dtype is F64
    assert m.weight.device.type == device
    assert m.num_batches_tracked.device.type == device
    np.testing.assert_array_equal(host(m.weight), np.ones(3))
    np.testing.assert_array_equal(host(m.bias), np.zeros(3))
    a, x = tensor(rng, (6, 3), F64, device)
    with pygpu.no_grad():
        m.weight.mul_(2.0)
        m.bias.add_(0.5)
    ref, rm, rv = np_batch_norm(a, np.zeros(3), np.ones(3), np.full(3, 2.0),
                                np.full(3, 0.5), True, 0.2, 1e-3)
    check(m(x), ref, F64)
    assert rel_err(host(m.running_var), rv) < 1e-12
    m.reset_running_stats()
    np.testing.assert_array_equal(host(m.running_mean), np.zeros(3))
    np.testing.assert_array_equal(host(m.running_var), np.ones(3))
    assert m.num_batches_tracked.item() == 0
    m.reset_parameters()
    np.testing.assert_array_equal(host(m.weight), np.ones(3))
    nb = nn.BatchNorm2d(2, bias=False)
    assert nb.bias is None and list(nb.state_dict()) == [
        "weight", "running_mean", "running_var", "num_batches_tracked"]


def test_batchnorm_state_dict_round_trip(device, rng):
    m = nn.BatchNorm2d(3, device=device)
    for _ in range(3):
        m(tensor(rng, (2, 3, 2, 2), device=device)[1])
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var",
                        "num_batches_tracked"]
    assert sd["num_batches_tracked"].shape == ()
    assert sd["num_batches_tracked"].dtype is pygpu.int64
    m2 = nn.BatchNorm2d(3, device=device)
    m2.load_state_dict(sd)
    assert m2.num_batches_tracked.item() == 3
    for k in ("running_mean", "running_var"):
        np.testing.assert_array_equal(host(getattr(m2, k)), host(sd[k]))
    # dtype conversions move the float buffers, not the counter
    m2.half()
    assert m2.running_mean.dtype is F16 and m2.weight.dtype is F16
    assert m2.num_batches_tracked.dtype is pygpu.int64
    m2.to(F64)
    assert m2.running_var.dtype is F64
    a, x = tensor(rng, (2, 3, 2, 2), F64, device)
    ref, _, _ = np_batch_norm(a, host(m2.running_mean), host(m2.running_var),
                              None, None, False, 0.1, 1e-5)
    check(m2.eval()(x), ref, F64)


def test_batch_norm_empty_batch(device):
    rm = pygpu.zeros(3, device=device)
    rv = pygpu.ones(3, device=device)
    y = F.batch_norm(pygpu.zeros(0, 3, device=device), rm, rv,
                     training=True)
    assert y.shape == (0, 3)
    np.testing.assert_array_equal(host(rm), np.zeros(3))
    np.testing.assert_array_equal(host(rv), np.ones(3))


# ---------------------------------------------------------- instance norm

@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 3), (1, 2, 2, 3, 2)])
def test_instance_norm_values(device, rng, shape):
    c = shape[1]
    a, x = tensor(rng, shape, device=device, noncontig=True)
    wa, w = tensor(rng, (c,), device=device)
    ba, b = tensor(rng, (c,), device=device)
    check(F.instance_norm(x), np_instance_norm(a, None, None, 1e-5), F32)
    rm = pygpu.zeros(c, device=device)
    rv = pygpu.ones(c, device=device)
    y = F.instance_norm(x, rm, rv, w, b, momentum=0.4)
    check(y, np_instance_norm(a, wa, ba, 1e-5), F32)
    dims = tuple(range(2, len(shape)))
    n = a[0, 0].size
    rrm = 0.6 * 0 + 0.4 * a.mean(dims).mean(0)
    rrv = 0.6 * 1 + 0.4 * (a.var(dims) * n / (n - 1)).mean(0)
    assert rel_err(host(rm), rrm) < 1e-5
    assert rel_err(host(rv), rrv) < 1e-5
    # with the running statistics
    ref, _, _ = np_batch_norm(a, rrm, rrv, wa, ba, False, 0.1, 1e-5)
    check(F.instance_norm(x, rm, rv, w, b, use_input_stats=False), ref, F32)


def test_instancenorm_modules(device, rng):
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True,
                          device=device)
    a, x = tensor(rng, (2, 3, 4, 4), device=device)
    check(m(x), np_instance_norm(a, np.ones(3), np.zeros(3), 1e-5), F32)
    assert m.num_batches_tracked.item() == 0      # as in torch
    # unbatched input
    check(m(x[0]), np_instance_norm(a[:1], None, None, 1e-5)[0], F32)
    m1 = nn.InstanceNorm1d(4)
    with pytest.raises(ValueError, match=re.escape(
            "expected 2D or 3D input (got 4D input)")):
        m1(pygpu.ones(2, 4, 3, 3))
    with pytest.raises(ValueError, match=re.escape(
            "expected input's size at dim=1 to match num_features (3), but "
            "got: 4.")):
        m(pygpu.ones(2, 4, 3, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(5)(pygpu.ones(2, 4, 3))


# ------------------------------------------------------------- layer norm

@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((3, 4, 5), 1),
                                     ((3, 4, 5), 2), ((2, 3, 4, 5), 3),
                                     ((6,), 1)])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_values(device, rng, shape, k, affine):
    a, x = tensor(rng, shape, device=device, noncontig=len(shape) > 1)
    ns = shape[len(shape) - k:]
    m = nn.LayerNorm(ns if k > 1 else ns[0], eps=1e-4,
                     elementwise_affine=affine != "none",
                     bias=affine == "both", device=device)
    wa = ba = None
    if affine != "none":
        wa, w = tensor(rng, ns, device=device)
        m.weight.data = w
    if affine == "both":
        ba, b = tensor(rng, ns, device=device)
        m.bias.data = b
    ref = np_layer_norm(a, k, wa, ba, 1e-4)
    check(m(x), ref, F32)
    check(F.layer_norm(x, list(ns), m.weight, m.bias, 1e-4), ref, F32)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
def test_layer_norm_dtypes(device, rng, dtype):
    a, x = tensor(rng, (5, 6, 16), dtype, device, scale=2.0, shift=100.0)
    for pdt in {dtype, F32 if dtype in (F16, BF16) else dtype}:
        wa, w = tensor(rng, (16,), pdt, device)
        ba, b = tensor(rng, (16,), pdt, device)
        check(F.layer_norm(x, (16,), w, b), np_layer_norm(a, 1, wa, ba, 1e-5),
              dtype)


def test_layer_norm_degenerate(device, rng):
    assert F.layer_norm(pygpu.zeros(0, 5, device=device), (5,)).shape == \
        (0, 5)
    assert F.layer_norm(pygpu.zeros(2, 0, device=device), (0,)).shape == \
        (2, 0)
    # one element per row: (x - mean) = 0, so the result is the bias
    a, x = tensor(rng, (3, 1), device=device)
    b = pygpu.tensor([2.5], device=device)
    check(F.layer_norm(x, (1,), None, b), np.full((3, 1), 2.5), F32)


# ------------------------------------------------------------- group norm

@pytest.mark.parametrize("shape,g", [((4, 6), 3), ((3, 6, 5), 2),
                                     ((2, 4, 3, 3), 4), ((2, 4, 3, 3), 1),
                                     ((2, 6, 2, 2, 3), 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_values(device, rng, shape, g, affine):
    c = shape[1]
    a, x = tensor(rng, shape, device=device, noncontig=len(shape) > 2)
    m = nn.GroupNorm(g, c, eps=1e-4, affine=affine, device=device)
    wa = ba = None
    if affine:
        wa, m.weight.data = tensor(rng, (c,), device=device)
        ba, m.bias.data = tensor(rng, (c,), device=device)
    ref = np_group_norm(a, g, wa, ba, 1e-4)
    check(m(x), ref, F32)
    check(F.group_norm(x, g, m.weight, m.bias, 1e-4), ref, F32)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
def test_group_norm_dtypes(device, rng, dtype):
    a, x = tensor(rng, (3, 8, 5), dtype, device)
    wa, w = tensor(rng, (8,), dtype, device)
    ba, b = tensor(rng, (8,), dtype, device)
    check(F.group_norm(x, 4, w, b), np_group_norm(a, 4, wa, ba, 1e-5), dtype)


# --------------------------------------------------------------- rms norm

@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((3, 4, 5), 2),
                                     ((2, 3, 4, 5), 3)])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_values(device, rng, shape, k, eps, affine):
    a, x = tensor(rng, shape, device=device, scale=1e-3, shift=0.0,
                  noncontig=True)
    ns = shape[len(shape) - k:]
    m = nn.RMSNorm(ns, eps=eps, elementwise_affine=affine, device=device)
    wa = None
    if affine:
        wa, m.weight.data = tensor(rng, ns, device=device)
    e = np.finfo(np.float32).eps if eps is None else eps
    ref = np_rms_norm(a, k, wa, e)
    check(m(x), ref, F32)
    check(F.rms_norm(x, ns, m.weight, eps), ref, F32)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
def test_rms_norm_dtypes(device, rng, dtype):
    # tiny values: eps=None is float32's epsilon for the half types
    a, x = tensor(rng, (4, 32), dtype, device, scale=1e-3, shift=0.0)
    wa, w = tensor(rng, (32,), dtype, device)
    e = np.finfo(np.float64 if dtype is F64 else np.float32).eps
    check(F.rms_norm(x, (32,), w), np_rms_norm(a, 1, wa, e), dtype)


# -------------------------------------------------------------- normalize

@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, -1, 0, (1, 2)])
def test_normalize_values(device, rng, p, dim):
    a, x = tensor(rng, (3, 4, 5), device=device, noncontig=True)
    axis = dim if isinstance(dim, tuple) else (dim,)
    if p == float("inf"):
        nrm = np.abs(a).max(axis, keepdims=True)
    else:
        nrm = (np.abs(a) ** p).sum(axis, keepdims=True) ** (1 / p)
    check(F.normalize(x, p, dim), a / np.maximum(nrm, 1e-12), F32)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
def test_normalize_dtypes_and_eps(device, rng, dtype):
    a, x = tensor(rng, (4, 6), dtype, device)
    ref = a / np.sqrt((a * a).sum(1, keepdims=True))
    check(F.normalize(x), ref, dtype)
    z = pygpu.zeros(2, 3, dtype=dtype, device=device)
    # 0 / eps; in float16 eps=1e-12 rounds to 0, and 0 / 0 is NaN (torch's)
    check(F.normalize(z), np.full((2, 3), np.nan if dtype is F16 else 0.0),
          dtype)
    out = pygpu.empty(4, 6, dtype=dtype, device=device)
    F.normalize(x, out=out)
    check(out, ref, dtype)


# -------------------------------------------------------------- gradients

def _p(rng, shape, device):
    return pygpu.tensor(rng.standard_normal(shape) + 1.0, dtype=F64,
                        device=device, requires_grad=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(device, rng, training):
    x, w, b = (_p(rng, s, device) for s in ((4, 3, 2), (3,), (3,)))
    rm = pygpu.tensor(rng.standard_normal(3), dtype=F64, device=device)
    rv = pygpu.tensor(rng.random(3) + 0.5, dtype=F64, device=device)

    def fn(x, w, b):
        # fresh copies: each call of a training step updates them
        return F.batch_norm(x, rm.clone(), rv.clone(), w, b, training)
    assert gradcheck(fn, (x, w, b))


def test_instance_norm_gradcheck(device, rng):
    x, w, b = (_p(rng, s, device) for s in ((2, 3, 4), (3,), (3,)))
    assert gradcheck(lambda x, w, b: F.instance_norm(
        x, weight=w, bias=b), (x, w, b))


@pytest.mark.parametrize("ns", [(5,), (4, 5)])
def test_layer_norm_gradcheck(device, rng, ns):
    x, w, b = (_p(rng, s, device) for s in ((3, 4, 5), ns, ns))
    assert gradcheck(lambda x, w, b: F.layer_norm(x, ns, w, b), (x, w, b))


def test_group_norm_gradcheck(device, rng):
    x, w, b = (_p(rng, s, device) for s in ((2, 4, 3), (4,), (4,)))
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))


def test_rms_norm_gradcheck(device, rng):
    x, w = (_p(rng, s, device) for s in ((3, 4, 5), (4, 5)))
    assert gradcheck(lambda x, w: F.rms_norm(x, (4, 5), w), (x, w))


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_normalize_gradcheck(device, rng, p):
    x = _p(rng, (3, 4), device)
    assert gradcheck(lambda x: F.normalize(x, p, 1), (x,))


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=dtype_name)
def test_backward_low_precision(device, rng, dtype):
    """Gradients of the half types match float64's, in the input's type."""
    def grads(dt):
        x = pygpu.tensor(a, dtype=dt, device=device, requires_grad=True)
        w = pygpu.tensor(wa, dtype=dt, device=device, requires_grad=True)
        y = F.layer_norm(x, (8,), w) + F.group_norm(x, 2) + \
            F.batch_norm(x, None, None, training=True) + F.rms_norm(x, (8,))
        (y * pygpu.tensor(g, dtype=dt, device=device)).sum().backward()
        return x.grad, w.grad
    a = rng.standard_normal((3, 4, 8))
    wa, g = rng.standard_normal(8), rng.standard_normal((3, 4, 8))
    a = host(pygpu.tensor(a, dtype=dtype)).astype(np.float64)
    gx, gw = grads(dtype)
    rx, rw = grads(F64)
    assert gx.dtype is dtype and gw.dtype is dtype
    assert rel_err(host(gx), host(rx)) <= 5 * TOL[dtype]
    assert rel_err(host(gw), host(rw)) <= 5 * TOL[dtype]


# --------------------------------------------------------- repr, errors

def test_reprs():
    assert repr(nn.BatchNorm2d(4)) == (
        "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)")
    assert repr(nn.BatchNorm1d(3, momentum=None, affine=False)) == (
        "BatchNorm1d(3, eps=1e-05, momentum=None, affine=False, bias=False, "
        "track_running_stats=True)")
    assert repr(nn.LayerNorm((3, 4))) == (
        "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=True)")
    assert repr(nn.LayerNorm(5, bias=False)) == (
        "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=False)")
    assert repr(nn.GroupNorm(2, 4, affine=False)) == (
        "GroupNorm(2, 4, eps=1e-05, affine=False, bias=False)")
    assert repr(nn.RMSNorm(5)) == (
        "RMSNorm((5,), eps=None, elementwise_affine=True)")
    assert repr(nn.InstanceNorm2d(3)) == (
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, "
        "bias=False, track_running_stats=False)")
    assert list(nn.LayerNorm(3).state_dict()) == ["weight", "bias"]
    assert list(nn.RMSNorm(3).state_dict()) == ["weight"]


def _cases(lib):
    """(name, call) pairs that must raise the same way in pygpu and torch;
    lib is pygpu or torch."""
    Fn, nn_ = lib.nn.functional, lib.nn
    x = lib.ones(2, 6, 5)
    v = lambda n: lib.ones(n)                              # noqa: E731
    return [
        ("ln_shape", lambda: Fn.layer_norm(x, (4,))),
        ("ln_shape2", lambda: Fn.layer_norm(x, (6, 4))),
        ("ln_weight", lambda: Fn.layer_norm(x, (5,), v(4))),
        ("ln_bias", lambda: Fn.layer_norm(x, (5,), None, v(4))),
        ("ln_empty", lambda: Fn.layer_norm(x, ())),
        ("ln_int", lambda: Fn.layer_norm(x, 5)),
        ("ln_mixed", lambda: Fn.layer_norm(x.double(), (5,), v(5))),
        ("ln_long", lambda: Fn.layer_norm(lib.ones(2, 3, dtype=lib.int64),
                                          (3,))),
        ("rms_shape", lambda: Fn.rms_norm(x, (4,))),
        ("rms_shape2", lambda: Fn.rms_norm(x, (6, 4))),
        ("rms_weight", lambda: Fn.rms_norm(x, (5,), v(4))),
        ("gn_groups", lambda: Fn.group_norm(x, 4)),
        ("gn_weight", lambda: Fn.group_norm(x, 3, v(4))),
        ("gn_bias", lambda: Fn.group_norm(x, 3, None, v(4))),
        ("gn_1d", lambda: Fn.group_norm(v(3), 3)),
        ("gn_one", lambda: Fn.group_norm(lib.ones(1, 3), 3)),
        ("gn_module", lambda: nn_.GroupNorm(4, 6)),
        ("bn_rm", lambda: Fn.batch_norm(x, v(5), v(6))),
        ("bn_rv", lambda: Fn.batch_norm(x, v(6), v(5))),
        ("bn_eval", lambda: Fn.batch_norm(x, None, None)),
        ("bn_weight", lambda: Fn.batch_norm(x, v(6), v(6), v(5))),
        ("bn_bias", lambda: Fn.batch_norm(x, v(6), v(6), None, v(5))),
        ("bn_eps0", lambda: Fn.batch_norm(x, None, None, training=True,
                                          eps=0)),
        ("bn_eps", lambda: Fn.batch_norm(x, v(6), v(6), eps=-1)),
        ("bn_one", lambda: Fn.batch_norm(lib.ones(1, 3), None, None,
                                         training=True)),
        ("bn_half", lambda: Fn.batch_norm(x, v(6), None, training=True)),
        ("bn_long", lambda: Fn.batch_norm(lib.ones(2, 3, dtype=lib.int64),
                                          None, None, training=True)),
        ("bn1d_dim", lambda: nn_.BatchNorm1d(3)(lib.ones(2, 3, 4, 5))),
        ("bn2d_dim", lambda: nn_.BatchNorm2d(3)(lib.ones(2, 3, 4))),
        ("bn3d_dim", lambda: nn_.BatchNorm3d(3)(lib.ones(2, 3, 4, 4))),
        ("bn2d_c", lambda: nn_.BatchNorm2d(3)(lib.ones(2, 4, 4, 4))),
        ("bn_module_one", lambda: nn_.BatchNorm1d(3)(lib.ones(1, 3))),
        ("in_stats", lambda: Fn.instance_norm(x, use_input_stats=False)),
        ("in_rm", lambda: Fn.instance_norm(x, v(4), v(4))),
        ("in_spatial", lambda: Fn.instance_norm(lib.ones(2, 3, 1))),
        ("in2d_dim", lambda: nn_.InstanceNorm2d(3)(lib.ones(3, 5))),
    ]


# Errors torch words differently in one detail pygpu cannot share: the
# class name in a Size's repr.
def _same_text(got, want):
    return got.replace("pygpu.Size", "torch.Size") == want


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    for (name, ours), (_, theirs) in zip(_cases(pygpu), _cases(torch)):
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(Exception) as got:
            ours()
        assert got.type is want.type, (name, got.value, want.value)
        assert _same_text(str(got.value), str(want.value)), (
            name, str(got.value), str(want.value))


def test_errors_without_torch():
    """The same errors, for machines without torch: each case raises."""
    for name, call in _cases(pygpu):
        with pytest.raises((RuntimeError, ValueError, TypeError)):
            call()
    with pytest.raises(ValueError, match=re.escape(
            "Expected more than 1 value per channel when training, got "
            "input size pygpu.Size([1, 3])")):
        nn.BatchNorm1d(3)(pygpu.ones(1, 3))
    with pytest.raises(ValueError, match=re.escape(
            "num_channels (6) must be divisible by num_groups (4)")):
        nn.GroupNorm(4, 6)
    # a batch of one is fine in evaluation
    assert nn.BatchNorm1d(3).eval()(pygpu.ones(1, 3)).shape == (1, 3)


def test_modules_match_torch(rng):
    """The modules' outputs and state after training steps equal torch's
    (same initial parameters and inputs)."""
    torch = pytest.importorskip("torch")
    pairs = [(lambda lib: lib.nn.BatchNorm2d(3, momentum=None), (4, 3, 2, 2)),
             (lambda lib: lib.nn.BatchNorm1d(3), (5, 3)),
             (lambda lib: lib.nn.InstanceNorm1d(
                 3, affine=True, track_running_stats=True), (2, 3, 4)),
             (lambda lib: lib.nn.LayerNorm((2, 3)), (4, 2, 3)),
             (lambda lib: lib.nn.GroupNorm(2, 4), (3, 4, 5)),
             (lambda lib: lib.nn.RMSNorm(6), (3, 6))]
    for make, shape in pairs:
        ours, theirs = make(pygpu), make(torch)
        for _ in range(3):
            a = rng.standard_normal(shape).astype(np.float32) * 2 + 1
            y = ours(pygpu.tensor(a))
            t = theirs(torch.tensor(a))
            assert rel_err(host(y), t.detach().numpy()) < 1e-5, ours
        for k, v in theirs.state_dict().items():
            got = host(ours.state_dict()[k])
            assert rel_err(got, v.numpy()) < 1e-5, (ours, k)


# --------------------------------------------- the fused ops (_C._norm, ...)

def np_layer_norm_grads(a, w, g, eps, rms=False):
    """(dx, dw, db) of sum(layer_norm(a) * g) over the last dim, float64."""
    n = a.shape[-1]
    m = 0 if rms else a.mean(-1, keepdims=True)
    xc = a - m
    rs = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    xh = xc * rs
    gw = g * w
    dx = rs * (gw - (0 if rms else gw.mean(-1, keepdims=True)) -
               xh * (gw * xh).mean(-1, keepdims=True))
    del n
    return dx, (g * xh).reshape(-1, a.shape[-1]).sum(0), \
        g.reshape(-1, a.shape[-1]).sum(0)


@pytest.mark.parametrize("shape", [(300, 700), (5, 1500), (7, 33), (3, 1)])
@pytest.mark.parametrize("rms", [False, True])
def test_fused_rows_against_formula(device, rng, shape, rms):
    """Rows in several parts (the parameters' sums by part), rows longer
    than a warp's share (a block per row on CUDA), lengths that are no
    multiple of the vector lanes."""
    n = shape[-1]
    a, x = tensor(rng, shape, F64, device)
    wa = rng.standard_normal(n)
    ga = rng.standard_normal(shape)
    xt = x.clone().requires_grad_(True)
    w = pygpu.tensor(wa, device=device, requires_grad=True)
    if rms:
        y = F.rms_norm(xt, (n,), w, eps=1e-5)
        ref = np_rms_norm(a, 1, wa, 1e-5)
    else:
        b = pygpu.tensor(rng.standard_normal(n), device=device,
                         requires_grad=True)
        y = F.layer_norm(xt, (n,), w, b, eps=1e-5)
        ref = np_layer_norm(a, 1, wa, host(b), 1e-5)
    check(y, ref, F64)
    y.backward(pygpu.tensor(ga, device=device))
    dx, dw, db = np_layer_norm_grads(a, wa, ga, 1e-5, rms)
    assert rel_err(host(xt.grad), dx) < 1e-10
    assert rel_err(host(w.grad), dw) < 1e-10
    if not rms:
        assert rel_err(host(b.grad), db) < 1e-10


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=dtype_name)
def test_fused_rows_low_precision_grads(device, rng, dtype):
    shape = (200, 520)
    a, x = tensor(rng, shape, dtype, device)
    x.requires_grad_(True)
    pdt = F32 if dtype in (F16, BF16) else dtype
    w = pygpu.tensor(rng.standard_normal(520), dtype=pdt, device=device,
                     requires_grad=True)
    b = pygpu.tensor(rng.standard_normal(520), dtype=pdt, device=device,
                     requires_grad=True)
    ga = host(pygpu.tensor(rng.standard_normal(shape), dtype=dtype))
    F.layer_norm(x, (520,), w, b).backward(
        pygpu.tensor(ga, dtype=dtype, device=device))
    dx, dw, db = np_layer_norm_grads(a, host(w).astype(np.float64),
                                     ga.astype(np.float64), 1e-5)
    assert x.grad.dtype is dtype and w.grad.dtype is pdt
    tol = 1e-4 if dtype is F32 else 3 * TOL[dtype]
    assert rel_err(host(x.grad), dx) < tol
    assert rel_err(host(w.grad), dw) < tol
    assert rel_err(host(b.grad), db) < tol


# The last three: channels of 16915 to 27000 elements, which the GPU cuts
# into slices of about 8192 that begin and end inside a run (inner 1, 3383,
# 7000: shorter and longer than a block of threads).
@pytest.mark.parametrize("shape", [(64, 8, 9, 7), (300, 5), (2, 3, 1000),
                                   (20000, 3), (3, 2, 7000),
                                   (5, 4, 17, 199)])
@pytest.mark.parametrize("dtype", [F64, F32], ids=dtype_name)
def test_fused_batch_norm_against_formula(device, rng, shape, dtype):
    c = shape[1]
    tol = 1e-10 if dtype == F64 else 1e-5
    a, x = tensor(rng, shape, dtype, device)
    x.requires_grad_(True)
    npt = np.float64 if dtype == F64 else np.float32
    wa, ba = (rng.standard_normal(c).astype(npt).astype(np.float64)
              for _ in range(2))
    w = pygpu.tensor(wa, dtype=dtype, device=device, requires_grad=True)
    b = pygpu.tensor(ba, dtype=dtype, device=device, requires_grad=True)
    y = F.batch_norm(x, None, None, w, b, training=True)
    check(y, np_batch_norm(a, None, None, wa, ba, True, 0.1, 1e-5)[0], dtype)
    ga = rng.standard_normal(shape)
    if dtype != F64:
        ga = ga.astype(np.float32).astype(np.float64)
    y.backward(pygpu.tensor(ga, dtype=dtype, device=device))
    dims = (0,) + tuple(range(2, len(shape)))
    bshape = (1, c) + (1,) * (len(shape) - 2)
    mean = a.mean(dims, keepdims=True)
    rs = 1 / np.sqrt(a.var(dims, keepdims=True) + 1e-5)
    xh = (a - mean) * rs
    dx = rs * wa.reshape(bshape) * (
        ga - ga.mean(dims, keepdims=True) -
        xh * (ga * xh).mean(dims, keepdims=True))
    assert rel_err(host(x.grad), dx) < tol
    assert rel_err(host(w.grad), (ga * xh).sum(dims)) < tol
    assert rel_err(host(b.grad), ga.sum(dims)) < tol


def test_fused_results_do_not_depend_on_threads(rng):
    """The same bits with one thread as with several."""
    a = rng.standard_normal((400, 300)).astype(np.float32)
    g = pygpu.tensor(rng.standard_normal((400, 300)).astype(np.float32))

    def run():
        x = pygpu.tensor(a, requires_grad=True)
        m = nn.LayerNorm(300)
        y = m(x)
        y.backward(g)
        bx = pygpu.tensor(a.reshape(40, 10, 300), requires_grad=True)
        bn = nn.BatchNorm1d(10)
        z = bn(bx)
        z.backward(g.reshape(40, 10, 300))
        return [host(t) for t in (y, x.grad, m.weight.grad, m.bias.grad, z,
                                  bx.grad, bn.weight.grad, bn.running_var)]
    old = pygpu.get_num_threads()
    try:
        pygpu.set_num_threads(1)
        one = run()
        pygpu.set_num_threads(max(2, old))
        many = run()
    finally:
        pygpu.set_num_threads(old)
    for p, q in zip(one, many):
        np.testing.assert_array_equal(p, q)


def test_fused_grad_fns_and_fallbacks(device, rng):
    x = pygpu.randn(4, 6, device=device, requires_grad=True)
    w = pygpu.ones(6, device=device, requires_grad=True)
    assert F.layer_norm(x, (6,), w).grad_fn.name() == \
        "NativeLayerNormBackward0"
    assert F.rms_norm(x, (6,), w).grad_fn.name() == "FusedRmsNormBackward0"
    assert F.batch_norm(x, None, None, w, None, True).grad_fn.name() == \
        "NativeBatchNormBackward0"
    # a bias alone; gradients only for what requires them
    a, xt = tensor(rng, (5, 6), device=device)
    b = pygpu.tensor(rng.standard_normal(6), dtype=F32, device=device,
                     requires_grad=True)
    y = F.layer_norm(xt, (6,), None, b)
    check(y, np_layer_norm(a, 1, None, host(b), 1e-5), F32)
    y.sum().backward()
    np.testing.assert_allclose(host(b.grad), np.full(6, 5.0))
    # rms_norm of a float64 input with a float32 weight: torch's promotion
    a, x64 = tensor(rng, (3, 6), F64, device)
    w32 = pygpu.tensor(rng.standard_normal(6), dtype=F32, device=device)
    check(F.rms_norm(x64, (6,), w32),
          np_rms_norm(a, 1, host(w32).astype(np.float64),
                      np.finfo(np.float64).eps), F64)
    # modified in place after the forward: torch's error at backward
    x2 = pygpu.randn(3, 6, device=device, requires_grad=True)
    h = x2 * 1.0
    y = F.layer_norm(h, (6,))
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        y.sum().backward()


def test_fused_ops_do_not_leak(device):
    """Forward and backward of the fused ops, and their error paths, leave
    reference counts, Python blocks, the resident set (and CUDA's
    allocated bytes) as they were."""
    from conftest import CYCLES, WARMUP, assert_no_leak, raising
    x = pygpu.randn(6, 4, 5, device=device, requires_grad=True)
    w = pygpu.randn(5, device=device, requires_grad=True)
    wc = pygpu.randn(4, device=device, requires_grad=True)
    bad = pygpu.ones(3, device=device)
    errors = [raising(RuntimeError, pygpu._C._norm, x, bad, None, 5, 1e-5,
                      False),
              raising(RuntimeError, pygpu._C._norm, x, None, None, 7, 1e-5,
                      False),
              raising(RuntimeError, pygpu._C._batch_norm_train, x, bad, None,
                      1e-5)]

    def cycle():
        F.layer_norm(x, (5,), w, w).sum().backward()
        F.rms_norm(x, (5,), w).sum().backward()
        F.group_norm(x, 2, wc).sum().backward()
        F.batch_norm(x, None, None, wc, None, True).sum().backward()
        F.instance_norm(x.detach())
        for e in errors:
            e()
    if device == "cuda":
        pygpu.cuda.synchronize()
        base = pygpu.cuda.memory_allocated()
    assert_no_leak(cycle, CYCLES // 8, WARMUP // 8)
    x.grad = w.grad = wc.grad = None
    if device == "cuda":
        pygpu.cuda.synchronize()
        assert pygpu.cuda.memory_allocated() == base
