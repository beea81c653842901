"""nn.functional.sigmoid/tanh/silu/gelu and the modules nn.Sigmoid, nn.Tanh,
nn.SiLU, nn.GELU: the values of the unary ops and torch's reprs."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F


def test_functional_matches_the_ops(device):
    x = pygpu.tensor([-2.0, -0.5, 0.0, 1.5], device=device)
    for f, op in [(F.sigmoid, pygpu.sigmoid), (F.tanh, pygpu.tanh),
                  (F.silu, pygpu.silu), (F.gelu, pygpu.gelu)]:
        np.testing.assert_array_equal(f(x).cpu().numpy(), op(x).cpu().numpy())
    y = pygpu.tensor(x.cpu().numpy(), device=device)
    assert F.silu(y, inplace=True) is y
    np.testing.assert_array_equal(y.cpu().numpy(), pygpu.silu(x).cpu().numpy())


def test_modules(device):
    x = pygpu.tensor([[-1.0, 0.25], [3.0, -4.0]], device=device)
    for m, op in [(nn.Sigmoid(), pygpu.sigmoid), (nn.Tanh(), pygpu.tanh),
                  (nn.SiLU(), pygpu.silu), (nn.GELU(), pygpu.gelu)]:
        np.testing.assert_array_equal(m(x).cpu().numpy(),
                                      op(x).cpu().numpy())


def test_reprs():
    assert repr(nn.Sigmoid()) == "Sigmoid()"
    assert repr(nn.Tanh()) == "Tanh()"
    assert repr(nn.SiLU()) == "SiLU()"
    assert repr(nn.SiLU(inplace=True)) == "SiLU(inplace=True)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"


def gelu_tanh_ref(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                  (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("dt", [pygpu.float32, pygpu.float16,
                                pygpu.float64], ids=repr)
def test_gelu_tanh(device, rng, dt):
    a = (rng.standard_normal((5, 7)) * 3).astype(dt.numpy_dtype)
    x = pygpu.tensor(a, device=device)
    got = F.gelu(x, approximate="tanh")
    assert got.dtype is dt
    rtol = {pygpu.float32: 1e-5, pygpu.float16: 1e-2, pygpu.float64: 1e-12}
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64),
                               gelu_tanh_ref(a), rtol=rtol[dt] * 4,
                               atol=rtol[dt])
    m = nn.GELU(approximate="tanh")
    assert repr(m) == "GELU(approximate='tanh')"
    np.testing.assert_array_equal(m(x).cpu().numpy(), got.cpu().numpy())
    # the two forms differ by up to ~1e-3
    assert not np.array_equal(got.cpu().numpy(), F.gelu(x).cpu().numpy())
    # strided input, int64 promotes to float32
    np.testing.assert_allclose(F.gelu(x.T, approximate="tanh").cpu().numpy(),
                               got.cpu().numpy().T)
    i = pygpu.tensor([1, -2], device=device)
    assert F.gelu(i, approximate="tanh").dtype is pygpu.float32


def test_gelu_tanh_edges(device):
    inf, nan = float("inf"), float("nan")
    x = pygpu.tensor([-inf, inf, nan, -10.0, 10.0, 0.0], device=device)
    r = F.gelu(x, approximate="tanh").tolist()
    assert np.isnan(r[0]) and r[1] == inf and np.isnan(r[2])
    assert r[3] == 0.0 and r[4] == 10.0 and r[5] == 0.0


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError, match="either none or tanh"):
        F.gelu(pygpu.ones(2), approximate="erf")
    with pytest.raises(RuntimeError, match="either none or tanh"):
        nn.GELU(approximate="erf")(pygpu.ones(2))
