"""The activations beyond relu/sigmoid/tanh/silu/gelu (functional forms and
modules): values against NumPy float64 for every float dtype, gradients by
gradcheck and at the kinks, stability at large |x|, in place, PReLU's
learnable weight, Softmax2d/Softmin, reprs and torch's errors."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from pygpu.nn import functional as F

DTYPES = ["float32", "float64", "float16", "bfloat16"]
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2,
        "bfloat16": 1e-2}
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def tensor(a, dtype, device, requires_grad=False):
    t = pygpu.tensor(np.asarray(a, dtype=np.float64), device=device)
    return t.to(getattr(pygpu, dtype)).requires_grad_(requires_grad)


def npy(t):
    t = t.detach().cpu()
    if t.dtype in (pygpu.float16, pygpu.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


def sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * sigmoid(b)


def softmin_ref(x, dim):
    if x.size == 0:
        return x.copy()
    e = np.exp(-x - (-x).max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


# name: (pygpu function of x, NumPy reference of x)
CASES = {
    "leaky_relu": (lambda x: F.leaky_relu(x),
                   lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_0.2": (lambda x: F.leaky_relu(x, 0.2),
                       lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x), lambda x: np.where(x > 0, x, np.expm1(x))),
    "elu_0.5": (lambda x: F.elu(x, alpha=0.5),
                lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "selu": (F.selu, lambda x: SELU_SCALE * np.where(
        x > 0, x, SELU_ALPHA * np.expm1(x))),
    "celu": (lambda x: F.celu(x, alpha=1.5),
             lambda x: np.where(x > 0, x, 1.5 * np.expm1(x / 1.5))),
    "softplus": (F.softplus, softplus_ref),
    "softplus_b2_t3": (lambda x: F.softplus(x, beta=2.0, threshold=3.0),
                       lambda x: softplus_ref(x, 2.0, 3.0)),
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1)),
    "hardtanh_-2_0.5": (lambda x: F.hardtanh(x, -2.0, 0.5),
                        lambda x: np.clip(x, -2, 0.5)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "mish": (F.mish, lambda x: x * np.tanh(np.logaddexp(0, x))),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "logsigmoid": (F.logsigmoid, lambda x: -np.logaddexp(0, -x)),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "glu": (F.glu, glu_ref),
    "glu_0": (lambda x: F.glu(x, 0), lambda x: glu_ref(x, 0)),
    "prelu": (lambda x: F.prelu(x, pygpu.tensor([0.3], dtype=x.dtype,
                                                device=x.device)),
              lambda x: np.where(x > 0, x, 0.3 * x)),
    "softmin": (lambda x: F.softmin(x, -1), lambda x: softmin_ref(x, -1)),
}
# the modules and the functional forms they run
MODULES = {
    "leaky_relu": nn.LeakyReLU(), "leaky_relu_0.2": nn.LeakyReLU(0.2),
    "elu": nn.ELU(), "elu_0.5": nn.ELU(alpha=0.5), "selu": nn.SELU(),
    "celu": nn.CELU(1.5), "softplus": nn.Softplus(),
    "softplus_b2_t3": nn.Softplus(beta=2.0, threshold=3.0),
    "hardtanh": nn.Hardtanh(), "hardtanh_-2_0.5": nn.Hardtanh(-2.0, 0.5),
    "relu6": nn.ReLU6(), "mish": nn.Mish(), "hardswish": nn.Hardswish(),
    "hardsigmoid": nn.Hardsigmoid(), "logsigmoid": nn.LogSigmoid(),
    "softsign": nn.Softsign(), "tanhshrink": nn.Tanhshrink(),
    "glu": nn.GLU(), "glu_0": nn.GLU(0), "softmin": nn.Softmin(-1),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_values(device, rng, name, dtype):
    fn, ref = CASES[name]
    x = tensor(rng.standard_normal((6, 8)) * 4, dtype, device)
    x64 = npy(x)  # the input as rounded to dtype
    got = fn(x)
    assert got.dtype == x.dtype and got.device == x.device
    r = RTOL[dtype]
    np.testing.assert_allclose(npy(got), ref(x64), rtol=r * 4, atol=r)
    if name in MODULES:
        np.testing.assert_array_equal(npy(MODULES[name].to(device)(x)),
                                      npy(got))


@pytest.mark.parametrize("name", list(CASES))
def test_layouts(device, rng, name):
    fn, ref = CASES[name]
    a = rng.standard_normal((8, 6)) * 3
    x = pygpu.tensor(a, device=device).T  # not contiguous
    np.testing.assert_allclose(npy(fn(x)), ref(a.T), rtol=1e-12, atol=1e-14)
    for shape in [(0, 4), (2, 0), (1, 2), (2, 1, 4)]:
        b = rng.standard_normal(shape)
        if name.startswith("glu") and shape[-1 if name == "glu" else 0] % 2:
            continue
        got = fn(pygpu.tensor(b, device=device))
        assert tuple(got.shape) == ref(b).shape
        np.testing.assert_allclose(npy(got), ref(b), rtol=1e-12, atol=1e-14)
    if not name.startswith(("glu", "softmin")):
        s = rng.standard_normal(())
        got = fn(pygpu.tensor(s, device=device))
        assert got.dim() == 0
        np.testing.assert_allclose(npy(got), ref(s), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(device, rng, name):
    fn, _ = CASES[name]
    a = rng.standard_normal((4, 4)) * 3
    a[np.abs(np.abs(a) - 3) < 1e-3] += 0.01  # keep off hardswish's kinks
    x = pygpu.tensor(a, device=device, requires_grad=True)
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "selu", "celu",
                                  "softplus", "mish", "hardswish",
                                  "hardsigmoid", "logsigmoid", "glu",
                                  "softsign", "tanhshrink"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gradient_dtypes(device, rng, name, dtype):
    fn, _ = CASES[name]
    a = rng.standard_normal((4, 6)) * 3
    x = tensor(a, dtype, device, requires_grad=True)
    x64 = pygpu.tensor(npy(x), device=device, requires_grad=True)
    g = rng.standard_normal(tuple(fn(x64).shape))
    fn(x).backward(tensor(g, dtype, device))
    fn(x64).backward(pygpu.tensor(npy(tensor(g, dtype, device)),
                                  device=device))
    assert x.grad.dtype == x.dtype
    r = RTOL[dtype] * (2 if dtype == "bfloat16" else 1)
    np.testing.assert_allclose(npy(x.grad), npy(x64.grad), rtol=r * 4,
                               atol=r * 2)


def grad_at(fn, values, device):
    x = pygpu.tensor(values, dtype=pygpu.float64, device=device,
                     requires_grad=True)
    fn(x).sum().backward()
    return x.grad.tolist()


def test_gradients_at_the_kinks(device):
    # torch's backward formulas at the points where the pieces meet
    assert grad_at(lambda x: F.leaky_relu(x, 0.2), [0.0], device) == [0.2]
    assert grad_at(lambda x: F.elu(x, 0.5), [0.0], device) == [0.5]
    assert grad_at(lambda x: F.celu(x, 2.0), [0.0], device) == [1.0]
    assert grad_at(F.selu, [0.0], device) == \
        pytest.approx([SELU_SCALE * SELU_ALPHA])
    w = pygpu.tensor([0.3], dtype=pygpu.float64, device=device)
    assert grad_at(lambda x: F.prelu(x, w), [0.0], device) == \
        pytest.approx([0.3])
    assert grad_at(F.hardtanh, [-1.0, 1.0, 0.0], device) == [0, 0, 1]
    assert grad_at(F.relu6, [0.0, 6.0, 3.0], device) == [0, 0, 1]
    assert grad_at(F.hardsigmoid, [-3.0, 3.0, 0.0], device) == \
        pytest.approx([0, 0, 1 / 6])
    assert grad_at(F.hardswish, [-3.0, 3.0, -4.0, 4.0, 0.0], device) == \
        pytest.approx([0.0, 1.0, 0.0, 1.0, 0.5])
    assert grad_at(F.softplus, [0.0], device) == [0.5]
    assert grad_at(F.logsigmoid, [0.0], device) == [0.5]
    assert grad_at(lambda x: F.softplus(x, 1.0, 2.0), [2.5], device) == [1.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_inputs_are_stable(device, dtype):
    big = [-1e4, -100.0, -30.0, 0.0, 15.0, 30.0, 100.0, 1e4]
    if dtype in ("float16",):
        big = [v for v in big if abs(v) < 6e4]
    x = tensor(big, dtype, device, requires_grad=True)
    x64 = npy(x)
    r = RTOL[dtype]
    for fn, ref in [(F.softplus, softplus_ref),
                    (lambda v: F.softplus(v, 1.0, 1e9),
                     lambda v: np.logaddexp(0, v)),
                    (F.logsigmoid, lambda v: -np.logaddexp(0, -v)),
                    (F.mish, lambda v: v * np.tanh(np.logaddexp(0, v))),
                    (F.elu, lambda v: np.where(v > 0, v, np.expm1(v))),
                    (F.selu, CASES["selu"][1])]:
        out = fn(x)
        with np.errstate(over="ignore"):
            want = ref(x64)
        np.testing.assert_allclose(npy(out), want, rtol=r * 4, atol=r)
        x.grad = None
        out.sum().backward()
        assert np.isfinite(npy(x.grad)).all()


def test_special_values(device):
    nan, inf = float("nan"), float("inf")
    x = pygpu.tensor([nan, inf, -inf], device=device)
    for name, (fn, ref) in CASES.items():
        if name.startswith(("glu", "softmin")):
            continue
        got = npy(fn(x))
        with np.errstate(all="ignore"):
            want = ref(np.array([nan, inf, -inf]))
        assert np.isnan(got[0]), name
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6,
                                   err_msg=name)


INPLACE = {
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1, inplace=True),
    "leaky_relu_": lambda x: F.leaky_relu_(x, 0.1),
    "elu": lambda x: F.elu(x, 0.7, inplace=True),
    "elu_": lambda x: F.elu_(x, 0.7),
    "selu": lambda x: F.selu(x, inplace=True), "selu_": F.selu_,
    "celu": lambda x: F.celu(x, 0.7, inplace=True),
    "celu_": lambda x: F.celu_(x, 0.7),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.5, inplace=True),
    "hardtanh_": lambda x: F.hardtanh_(x, -0.5, 0.5),
    "relu6": lambda x: F.relu6(x, inplace=True),
    "mish": lambda x: F.mish(x, inplace=True),
    "hardswish": lambda x: F.hardswish(x, inplace=True),
    "hardsigmoid": lambda x: F.hardsigmoid(x, inplace=True),
}
OUT_OF_PLACE = {
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "elu": lambda x: F.elu(x, 0.7), "selu": F.selu,
    "celu": lambda x: F.celu(x, 0.7),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.5), "relu6": F.relu6,
    "mish": F.mish, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
}


@pytest.mark.parametrize("name", list(INPLACE))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_inplace(device, rng, name, dtype):
    plain = OUT_OF_PLACE[name.rstrip("_")]
    a = rng.standard_normal((3, 5)) * 4
    want = npy(plain(tensor(a, dtype, device)))
    x = tensor(a, dtype, device)
    assert INPLACE[name](x) is x
    np.testing.assert_array_equal(npy(x), want)
    # under autograd: a non-leaf is rewritten and the gradient is the
    # out-of-place one's
    leaf = tensor(a, "float64", device, requires_grad=True)
    y = leaf * 1.0
    assert INPLACE[name](y) is y
    g = rng.standard_normal((3, 5))
    y.backward(pygpu.tensor(g, device=device))
    leaf2 = tensor(a, "float64", device, requires_grad=True)
    plain(leaf2 * 1.0).backward(pygpu.tensor(g, device=device))
    np.testing.assert_allclose(npy(leaf.grad), npy(leaf2.grad), rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires "
                       "grad is being used in an in-place operation."):
        INPLACE[name](tensor(a, "float32", device, requires_grad=True))


def test_inplace_modules(device, rng):
    a = rng.standard_normal((2, 7)) * 4
    for m, fn in [(nn.LeakyReLU(0.1, inplace=True),
                   OUT_OF_PLACE["leaky_relu"]),
                  (nn.ELU(0.7, inplace=True), OUT_OF_PLACE["elu"]),
                  (nn.SELU(inplace=True), F.selu),
                  (nn.CELU(0.7, inplace=True), OUT_OF_PLACE["celu"]),
                  (nn.Hardtanh(-0.5, 0.5, True), OUT_OF_PLACE["hardtanh"]),
                  (nn.ReLU6(inplace=True), F.relu6),
                  (nn.Mish(inplace=True), F.mish),
                  (nn.Hardswish(inplace=True), F.hardswish),
                  (nn.Hardsigmoid(inplace=True), F.hardsigmoid)]:
        x = pygpu.tensor(a, device=device)
        assert m(x) is x
        np.testing.assert_array_equal(npy(x),
                                      npy(fn(pygpu.tensor(a, device=device))))


def test_integer_inputs(device):
    i = pygpu.tensor([-7, -1, 0, 2, 9], device=device)
    assert F.hardtanh(i).tolist() == [-1, -1, 0, 1, 1]
    assert F.relu6(i).tolist() == [0, 0, 0, 2, 6]
    np.testing.assert_allclose(npy(F.softsign(i)),
                               [-7 / 8, -0.5, 0, 2 / 3, 0.9], rtol=1e-6)
    np.testing.assert_allclose(npy(F.tanhshrink(i)),
                               i.cpu().numpy() - np.tanh(i.cpu().numpy()),
                               rtol=1e-5, atol=1e-6)
    dev = pygpu.device(device).type
    for fn, kernel in [(F.leaky_relu, "leaky_relu"), (F.elu, "elu"),
                       (F.selu, "elu"), (F.celu, "elu"),
                       (F.softplus, "softplus"), (F.mish, "mish"),
                       (F.hardswish, "hardswish"),
                       (F.hardsigmoid, "hardsigmoid"),
                       (F.logsigmoid, "log_sigmoid"),
                       (lambda v: F.glu(v[:4]), "glu"),
                       (lambda v: F.prelu(v, pygpu.tensor([1],
                                                          device=device)),
                        "prelu")]:
        with pytest.raises(NotImplementedError,
                           match=f"^\"{kernel}_{dev}\" not implemented for "
                                 f"'Long'$"):
            fn(i)


def test_errors(device):
    x = pygpu.randn(3, 5, device=device)
    with pytest.raises(RuntimeError,
                       match="ZeroDivisionError: alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)
    with pytest.raises(ValueError,
                       match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 1.0, -1.0)
    with pytest.raises(ValueError,
                       match="min_val cannot be greater than max_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, "
                       "but dimension 1 is size 5"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars "
                       "because halving size must be even"):
        F.glu(pygpu.tensor(1.0, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.glu(x, 2)
    with pytest.raises(RuntimeError, match=r"Mismatch of parameter numbers "
                       r"and input channel size. Found parameter numbers = 2 "
                       r"and channel size = 5."):
        F.prelu(x, pygpu.ones(2, device=device))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar "
                       "or 1D tensor, but got: ndim = 2"):
        F.prelu(x, pygpu.ones(1, 1, device=device))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D "
                       "or 4D, got 2D instead"):
        nn.Softmax2d()(x)
    with pytest.raises(TypeError, match="dim is required"):
        F.softmin(x)


def test_hardtanh_deprecated_keywords():
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        m = nn.Hardtanh(min_value=-2.0)
    assert (m.min_val, m.max_val) == (-2.0, 1.0)
    with pytest.warns(FutureWarning, match="`max_value` is deprecated"):
        assert nn.Hardtanh(max_value=3.0).max_val == 3.0


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2), (3,),
                                   ()])
def test_prelu(device, rng, shape):
    channels = shape[1] if len(shape) >= 2 else 1
    m = nn.PReLU(channels, device=device, dtype=pygpu.float64)
    assert tuple(m.weight.shape) == (channels,)
    assert m.weight.tolist() == [0.25] * channels and m.weight.requires_grad
    with pygpu.no_grad():
        m.weight.copy_(pygpu.tensor(rng.random(channels) + 0.1,
                                    device=device))
    a = rng.standard_normal(shape)
    x = pygpu.tensor(a, device=device, requires_grad=True)
    w = npy(m.weight).reshape((channels,) + (1,) * max(len(shape) - 2, 0))
    out = m(x)
    assert tuple(out.shape) == shape
    np.testing.assert_allclose(npy(out), np.where(a > 0, a, w * a)
                               if len(shape) >= 2 else
                               np.where(a > 0, a, npy(m.weight)[0] * a),
                               rtol=1e-12)
    assert gradcheck(lambda v, wt: F.prelu(v, wt), (x, m.weight))
    g = rng.standard_normal(shape)
    m.weight.grad = None
    m(x).backward(pygpu.tensor(g, device=device))
    axes = tuple(k for k in range(len(shape)) if k != 1 or len(shape) < 2)
    want = (np.where(a > 0, 0, a) * g).sum(axis=axes) if len(shape) >= 2 \
        else np.array([(np.where(a > 0, 0, a) * g).sum()])
    np.testing.assert_allclose(npy(m.weight.grad).reshape(-1),
                               np.asarray(want).reshape(-1), rtol=1e-10)


def test_prelu_module_misc(device):
    m = nn.PReLU(init=0.1, device=device)
    assert m.weight.tolist() == pytest.approx([0.1])
    assert m.weight.dtype == pygpu.float32
    assert list(m.state_dict()) == ["weight"]
    n = nn.PReLU(device=device)
    n.load_state_dict(m.state_dict())
    assert n.weight.tolist() == pytest.approx([0.1])
    h = nn.PReLU(3, dtype=pygpu.float16, device=device)
    x = pygpu.randn(2, 3, 4, device=device).half()
    assert h(x).dtype == pygpu.float16


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_softmax2d(device, rng, shape):
    a = rng.standard_normal(shape)
    x = pygpu.tensor(a, device=device, requires_grad=True)
    e = np.exp(a - a.max(axis=-3, keepdims=True))
    np.testing.assert_allclose(npy(nn.Softmax2d()(x)),
                               e / e.sum(axis=-3, keepdims=True), rtol=1e-12)
    assert gradcheck(nn.Softmax2d(), (x,))


def test_softmin_dim_and_dtype(device, rng):
    a = rng.standard_normal((3, 4))
    x = pygpu.tensor(a, dtype=pygpu.float32, device=device)
    np.testing.assert_allclose(npy(F.softmin(x, 0)), softmin_ref(a, 0),
                               rtol=1e-5)
    got = F.softmin(x, dim=1, dtype=pygpu.float64)
    assert got.dtype == pygpu.float64
    np.testing.assert_allclose(npy(got), softmin_ref(
        a.astype(np.float32).astype(np.float64), 1), rtol=1e-12)
    np.testing.assert_allclose(npy(nn.Softmin(dim=0)(x)), softmin_ref(a, 0),
                               rtol=1e-5)


def test_reprs():
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(nn.LeakyReLU(0.2, inplace=True)) == \
        "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert repr(nn.ELU(inplace=True)) == "ELU(alpha=1.0, inplace=True)"
    assert repr(nn.CELU(0.5)) == "CELU(alpha=0.5)"
    assert repr(nn.SELU()) == "SELU()"
    assert repr(nn.SELU(inplace=True)) == "SELU(inplace=True)"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.Hardtanh(inplace=True)) == \
        "Hardtanh(min_val=-1.0, max_val=1.0, inplace=True)"
    assert repr(nn.ReLU6()) == "ReLU6()"
    assert repr(nn.ReLU6(inplace=True)) == "ReLU6(inplace=True)"
    assert repr(nn.Mish(inplace=True)) == "Mish(inplace=True)"
    assert repr(nn.Hardswish(inplace=True)) == "Hardswish()"
    assert repr(nn.Hardsigmoid()) == "Hardsigmoid()"
    assert repr(nn.LogSigmoid()) == "LogSigmoid()"
    assert repr(nn.Softsign()) == "Softsign()"
    assert repr(nn.Tanhshrink()) == "Tanhshrink()"
    assert repr(nn.GLU()) == "GLU(dim=-1)"
    assert repr(nn.PReLU()) == "PReLU(num_parameters=1)"
    assert repr(nn.Softmax2d()) == "Softmax2d()"
    assert repr(nn.Softmin()) == "Softmin(dim=None)"
    assert isinstance(nn.ReLU6(), nn.Hardtanh)


TORCH_NAMES = ["leaky_relu", "elu", "selu", "celu", "softplus", "hardtanh",
               "relu6", "mish", "hardswish", "hardsigmoid", "logsigmoid",
               "softsign", "tanhshrink", "glu"]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_against_torch(rng, name):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((5, 6)) * 4
    a[0, :3] = [0.0, 3.0, -3.0]  # the kinks
    g = rng.standard_normal((5, 3 if name == "glu" else 6))
    tx = torch.tensor(a, requires_grad=True)
    px = pygpu.tensor(a, requires_grad=True)
    to = getattr(torch.nn.functional, name)(tx)
    po = getattr(F, name)(px)
    to.backward(torch.tensor(g))
    po.backward(pygpu.tensor(g))
    np.testing.assert_allclose(npy(po), to.detach().numpy(), rtol=1e-12,
                               atol=1e-15)
    # torch's float64 hardsigmoid gradient is a float32 sixth of it
    rtol = 1e-7 if name == "hardsigmoid" else 1e-12
    np.testing.assert_allclose(npy(px.grad), tx.grad.numpy(), rtol=rtol,
                               atol=1e-15)
