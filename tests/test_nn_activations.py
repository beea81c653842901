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


def test_gelu_tanh_form_is_refused():
    with pytest.raises(ValueError, match="tanh"):
        nn.GELU(approximate="tanh")
    with pytest.raises(ValueError, match="tanh"):
        F.gelu(pygpu.ones(2), approximate="tanh")
    with pytest.raises(ValueError, match="either none or tanh"):
        F.gelu(pygpu.ones(2), approximate="erf")
