"""pygpu.nn.functional.pad and the padding layers (ZeroPad, ConstantPad,
ReflectionPad, ReplicationPad, CircularPad) against NumPy's np.pad, their
gradients by gradcheck, and torch's error messages."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from pygpu.nn import functional as F

from conftest import BF16, F16, F32, F64, dtype_name, rel_err

NP_MODE = {"constant": "constant", "reflect": "reflect",
           "replicate": "edge", "circular": "wrap"}


def f64(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype is BF16 else t).numpy().astype(np.float64)


def ref_pad(x, pad, mode="constant", value=0.0):
    """torch's pad by np.pad: pad = (left, right) of the last dim, then of
    the one before, ...; negative pads crop (circular crops first, then
    wraps around what is left)."""
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = tuple(slice(max(-a, 0), x.shape[d] - max(-b, 0))
                 for d, (a, b) in enumerate(pairs))
    pos = [(max(a, 0), max(b, 0)) for a, b in pairs]
    if mode == "circular":
        return np.pad(x[crop], pos, mode="wrap")
    kw = {"constant_values": value} if mode == "constant" else {}
    out = np.pad(x, pos, mode=NP_MODE[mode], **kw)
    crop_out = tuple(slice(max(-a, 0), out.shape[d] - max(-b, 0))
                     for d, (a, b) in enumerate(pairs))
    return out[crop_out]


CASES = [
    ("constant", (3, 5), (1, 2)),
    ("constant", (2, 3, 4, 5), (2, 1, 0, 3)),
    ("constant", (2, 3, 4, 5), (1, 1, 1, 1, 1, 2, 1, 0)),
    ("constant", (2, 3, 4, 5), (-1, 2, 1, -2)),
    ("reflect", (3, 6), (2, 3)),
    ("reflect", (2, 3, 6), (5, 1)),
    ("reflect", (2, 3, 4, 5), (2, 1, 3, 0)),
    ("reflect", (3, 4, 5), (1, 4, 2, 3)),
    ("reflect", (2, 3, 4, 5), (-1, 2, 1, -1)),
    ("reflect", (1, 2, 3, 4, 5), (1, 2, 2, 1, 2, 1)),
    ("replicate", (2, 3, 5), (3, 2)),
    ("replicate", (2, 3, 4, 5), (2, 1, 0, 3)),
    ("replicate", (3, 4, 5), (-1, 2, 1, -2)),
    ("replicate", (2, 3, 4, 5), (1, 1, 2, 2, 1, 0)),
    ("circular", (2, 3, 5), (3, 2)),
    ("circular", (2, 3, 4, 5), (5, 1, 4, 4)),
    ("circular", (3, 4, 5), (-1, 2, 1, -1)),
    ("circular", (1, 2, 3, 4, 5), (1, 1, 2, 0, 3, 1)),
]


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=dtype_name)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_pad_matches_numpy(device, rng, dtype, case):
    mode, shape, pad = CASES[case]
    x = f64(pygpu.tensor(rng.standard_normal(shape), dtype=dtype))
    t = pygpu.tensor(x, dtype=dtype, device=device)
    got = F.pad(t, pad, mode=mode)
    assert got.dtype is dtype and got.device.type == device
    assert rel_err(f64(got), ref_pad(x, pad, mode)) == 0  # copies: exact


def test_pad_value_and_noncontiguous(device, rng):
    x = rng.standard_normal((4, 3, 5))
    t = pygpu.tensor(x.transpose(2, 1, 0).copy(), device=device)
    t = t.permute(2, 1, 0)  # (4, 3, 5), not contiguous
    assert not t.is_contiguous()
    got = F.pad(t, (1, 2, 0, 1), value=2.5)
    assert rel_err(f64(got), ref_pad(x, (1, 2, 0, 1), value=2.5)) <= 1e-7
    got = F.pad(t, (2, 1), mode="reflect")
    assert rel_err(f64(got), ref_pad(x, (2, 1), "reflect")) <= 1e-7
    # a pad of zeros is a copy, not the input
    same = F.pad(t, (0, 0))
    assert same.shape == t.shape and same.data_ptr() != t.data_ptr()
    # zero batch
    e = F.pad(pygpu.zeros((0, 2, 3, 4), device=device), (1, 1, 1, 1),
              mode="reflect")
    assert e.shape == (0, 2, 5, 6)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate",
                                  "circular"])
def test_pad_gradcheck(device, rng, mode):
    x = pygpu.tensor(rng.standard_normal((2, 2, 3, 4)), dtype=F64,
                     device=device).requires_grad_(True)
    assert gradcheck(lambda t: F.pad(t, (2, 1, 1, 2), mode=mode), (x,))
    assert gradcheck(lambda t: F.pad(t, (-1, 2, 2, -1), mode=mode), (x,))
    y = pygpu.tensor(rng.standard_normal((2, 5)), dtype=F64,
                     device=device).requires_grad_(True)
    assert gradcheck(lambda t: F.pad(t, (3, 2), mode=mode), (y,))


PAD_ERRORS = [
    (RuntimeError, lambda t: F.pad(t(1, 4, 5, 5), (1, 2, 3)),
     "Padding length must be divisible by 2"),
    (RuntimeError, lambda t: F.pad(t(1, 4, 5, 5), (1,) * 10),
     "Padding length should be less than or equal to two times the input "
     "dimension but got padding length 10 and input of dimension 4"),
    (NotImplementedError,
     lambda t: F.pad(t(1, 4, 5, 5), (5, 5), mode="reflect"),
     "Padding size 2 is not supported for 4D input tensor."),
    (NotImplementedError,
     lambda t: F.pad(t(5), (1, 1), mode="reflect"),
     "Padding size 2 is not supported for 1D input tensor."),
    (NotImplementedError, lambda t: F.pad(t(1, 4, 5, 5), (1, 1), mode="foo"),
     "Unrecognised padding mode foo"),
    (RuntimeError,
     lambda t: F.pad(t(1, 4, 5, 5), (5, 5, 1, 1), mode="reflect"),
     "Argument #4: Padding size should be less than the corresponding input "
     "dimension, but got: padding (5, 5) at dimension 3 of input "
     "[1, 4, 5, 5]"),
    (RuntimeError,
     lambda t: F.pad(t(1, 4, 5, 5), (1, 1, 5, 1), mode="reflect"),
     "Argument #6: Padding size should be less than the corresponding input "
     "dimension, but got: padding (5, 1) at dimension 2 of input "
     "[1, 4, 5, 5]"),
    (RuntimeError,
     lambda t: F.pad(t(1, 4, 5, 5), (6, 1, 1, 1), mode="circular"),
     "Padding value causes wrapping around more than once."),
    (RuntimeError,
     lambda t: F.pad(t(1, 2, 3, 5), (-3, -3, 1, 1), mode="circular"),
     "Negative padding value is resulting in an empty dimension"),
    (RuntimeError,
     lambda t: F.pad(t(1, 4, 0, 5), (1, 1, 1, 1), mode="replicate"),
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
     "other non-zero dimensions for input, but got: [1, 4, 0, 5]"),
    (RuntimeError,
     lambda t: F.pad(t(1, 4, 5, 5), (1, 1, 1, 1), mode="reflect", value=2),
     'Padding mode "reflect" doesn\'t take in value argument'),
    (RuntimeError, lambda t: F.pad(t(1, 2, 3, 5), (-3, -3, 1, 1)),
     "narrow(): length must be non-negative."),
]


@pytest.mark.parametrize("case", range(len(PAD_ERRORS)))
def test_pad_errors(device, case):
    kind, fn, message = PAD_ERRORS[case]

    def t(*shape):
        return pygpu.zeros(shape, device=device)
    with pytest.raises(kind) as e:
        fn(t)
    assert message in str(e.value)


MODULES = [
    (nn.ZeroPad1d, (2,), "constant", (2, 2), "ZeroPad1d((2, 2))"),
    (nn.ZeroPad2d, ((1, 2, 0, 3),), "constant", (1, 2, 0, 3),
     "ZeroPad2d((1, 2, 0, 3))"),
    (nn.ConstantPad1d, ((1, 2), 3.5), "constant", (1, 2),
     "ConstantPad1d(padding=(1, 2), value=3.5)"),
    (nn.ConstantPad2d, (1, -1.0), "constant", (1, 1, 1, 1),
     "ConstantPad2d(padding=(1, 1, 1, 1), value=-1.0)"),
    (nn.ReflectionPad1d, (2,), "reflect", (2, 2), "ReflectionPad1d((2, 2))"),
    (nn.ReflectionPad2d, ((1, 2, 0, 1),), "reflect", (1, 2, 0, 1),
     "ReflectionPad2d((1, 2, 0, 1))"),
    (nn.ReplicationPad1d, ((3, 0),), "replicate", (3, 0),
     "ReplicationPad1d((3, 0))"),
    (nn.ReplicationPad2d, (1,), "replicate", (1, 1, 1, 1),
     "ReplicationPad2d((1, 1, 1, 1))"),
    (nn.CircularPad1d, (2,), "circular", (2, 2), "CircularPad1d((2, 2))"),
    (nn.CircularPad2d, ((1, 2, 2, 0),), "circular", (1, 2, 2, 0),
     "CircularPad2d((1, 2, 2, 0))"),
]


@pytest.mark.parametrize("case", range(len(MODULES)))
def test_padding_modules(device, rng, case):
    cls, args, mode, pad, text = MODULES[case]
    m = cls(*args)
    assert repr(m) == text and m.padding == pad
    assert list(m.state_dict()) == []
    shape = (2, 3, 5) if "1d" in cls.__name__ else (2, 3, 4, 5)
    x = rng.standard_normal(shape)
    value = args[1] if cls.__name__.startswith("Constant") else 0.0
    got = m(pygpu.tensor(x, device=device))
    assert rel_err(f64(got), ref_pad(x, pad, mode, value)) <= 1e-7
    # unbatched input too
    got = m(pygpu.tensor(x[0], device=device))
    assert rel_err(f64(got), ref_pad(x[0], pad, mode, value)) <= 1e-7


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 4, 5))
    for mode, pad in (("reflect", (2, 1, -1, 3)), ("replicate", (1, 2)),
                      ("circular", (-1, 2, 3, 1)), ("constant", (1, -2))):
        xx = x if len(pad) == 4 else x[0]
        got = F.pad(pygpu.tensor(xx), pad, mode=mode)
        ref = torch.nn.functional.pad(torch.from_numpy(xx), pad,
                                      mode=mode).numpy()
        assert rel_err(f64(got), ref) == 0
