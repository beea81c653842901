"""Convolutions, unfold and fold (pygpu.nn.functional and the modules of
pygpu.nn) against NumPy float64 references written here as direct loops
over the kernel's taps; gradients by gradcheck in float64; torch's error
messages; torch itself, where it is importable, for a few cases."""
import math

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from pygpu.nn import functional as F

from conftest import BF16, F16, F32, F64, RTOL, dtype_name, rel_err

FLOATS = [F32, F64, F16, BF16]
TOL = {F32: 1e-5, F64: 1e-12, F16: 1e-2, BF16: 2e-2}


def f64(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype is BF16 else t).numpy().astype(np.float64)


def tensor(a, dtype=F64, device="cpu", grad=False):
    t = pygpu.tensor(np.asarray(a, dtype=np.float64), dtype=dtype,
                     device=device)
    return t.requires_grad_(True) if grad else t


def rounded(a, dtype):
    """a as the values a tensor of dtype holds."""
    return f64(tensor(a, dtype))


# ------------------------------------------------------- NumPy references

def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def taps(xp, i, j, d, s, oh, ow):
    """The input elements tap (i, j) meets at each output position:
    xp[..., i*dh + oh*sh, j*dw + ow*sw]."""
    return xp[..., i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
              j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]]


def ref_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (pair(kernel_size), pair(dilation), pair(padding),
                  pair(stride))
    xp = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p[0], p[0]), (p[1], p[1])])
    oh = (xp.shape[-2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (xp.shape[-1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    rows = [taps(xp, i, j, d, s, oh, ow)
            for i in range(k[0]) for j in range(k[1])]
    out = np.stack(rows, axis=-3)  # (..., C, kh*kw, oh, ow)
    return out.reshape(x.shape[:-3] + (-1, oh * ow))


def ref_fold(cols, size, kernel_size, dilation=1, padding=0, stride=1):
    size, k, d, p, s = (pair(size), pair(kernel_size), pair(dilation),
                        pair(padding), pair(stride))
    oh = (size[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    c = cols.shape[-2] // (k[0] * k[1])
    blocks = cols.reshape(cols.shape[:-2] + (c, k[0], k[1], oh, ow))
    img = np.zeros(cols.shape[:-2] + (c, size[0] + 2 * p[0],
                                      size[1] + 2 * p[1]))
    for i in range(k[0]):
        for j in range(k[1]):
            taps(img, i, j, d, s, oh, ow)[...] += blocks[..., i, j, :, :]
    return img[..., p[0]: p[0] + size[0], p[1]: p[1] + size[1]]


def ref_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """padding: int, pair, or ((top, bottom), (left, right))."""
    s, d = pair(stride), pair(dilation)
    if isinstance(padding, int) or isinstance(padding[0], int):
        p = pair(padding)
        padding = ((p[0], p[0]), (p[1], p[1]))
    xp = np.pad(x, [(0, 0), (0, 0)] + list(padding))
    cout, cg, kh, kw = w.shape
    oh = (xp.shape[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    og = cout // groups
    out = np.zeros((x.shape[0], cout, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "ncxy,oc->noxy", taps(xs, i, j, d, s, oh, ow),
                    w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def ref_conv_transpose2d(x, w, b=None, stride=1, padding=0,
                         output_padding=0, groups=1, dilation=1):
    s, p, op, d = pair(stride), pair(padding), pair(output_padding), \
        pair(dilation)
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    size = [(v - 1) * s_ - 2 * p_ + d_ * (k - 1) + op_ + 1
            for v, s_, p_, d_, k, op_ in zip((h, wd), s, p, d, (kh, kw), op)]
    full = np.zeros((n, og * groups, size[0] + 2 * p[0] + s[0],
                     size[1] + 2 * p[1] + s[1]))
    cg = cin // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                taps(full[:, g * og:(g + 1) * og], i, j, d, s, h, wd)[...] \
                    += np.einsum("ncxy,co->noxy", x[:, g * cg:(g + 1) * cg],
                                 w[g * cg:(g + 1) * cg, :, i, j])
    out = full[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def same_padding(w, dilation):
    d = pair(dilation)
    total = [d[i] * (w.shape[2 + i] - 1) for i in range(2)]
    return tuple((t // 2, t - t // 2) for t in total)


# --------------------------------------------------------- unfold / fold

UNFOLD_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), stride=(2, 1)),
    dict(kernel_size=3, padding=1),
    dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 2), stride=2),
    dict(kernel_size=1),
    dict(kernel_size=(5, 6)),  # one block: the whole image
]


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("case", range(len(UNFOLD_CASES)))
def test_unfold_matches_numpy(device, rng, dtype, case):
    kw = UNFOLD_CASES[case]
    x = rounded(rng.standard_normal((2, 3, 5, 6)), dtype)
    got = F.unfold(tensor(x, dtype, device), **kw)
    ref = ref_unfold(x, **kw)
    assert got.dtype is dtype and got.device.type == device
    assert rel_err(f64(got), ref) == 0  # a copy: exact
    assert nn.Unfold(**kw)(tensor(x, dtype, device)).shape == ref.shape


# Rows of 19 and more blocks: the CPU copies 8 elements at a time, then
# the rest; rows without padding as one block, others element by element.
WIDE_CASES = [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=(2, 1)),
              dict(kernel_size=3, padding=(0, 1)),
              dict(kernel_size=3, dilation=(1, 2)),
              dict(kernel_size=(3, 1), padding=(1, 0))]


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("case", range(len(WIDE_CASES)))
def test_unfold_fold_wide_rows(device, rng, dtype, case):
    kw = WIDE_CASES[case]
    x = rounded(rng.standard_normal((2, 3, 7, 21)), dtype)
    got = F.unfold(tensor(x, dtype, device), **kw)
    ref = ref_unfold(x, **kw)
    assert rel_err(f64(got), ref) == 0
    cols = rounded(rng.standard_normal(ref.shape), dtype)
    back = F.fold(tensor(cols, dtype, device), (7, 21), **kw)
    assert rel_err(f64(back), ref_fold(cols, (7, 21), **kw)) <= TOL[dtype]


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("case", range(len(UNFOLD_CASES)))
def test_fold_matches_numpy(device, rng, dtype, case):
    kw = UNFOLD_CASES[case]
    rows = ref_unfold(np.zeros((1, 3, 5, 6)), **kw).shape[1:]
    cols = rounded(rng.standard_normal((2,) + rows), dtype)
    got = F.fold(tensor(cols, dtype, device), (5, 6), **kw)
    ref = ref_fold(cols, (5, 6), **kw)
    assert got.shape == (2, 3, 5, 6) and got.dtype is dtype
    assert rel_err(f64(got), ref) <= TOL[dtype]
    mod = nn.Fold((5, 6), **kw)
    assert rel_err(f64(mod(tensor(cols, dtype, device))), ref) <= TOL[dtype]


def test_unfold_fold_unbatched_noncontiguous_and_empty(device, rng):
    x = rng.standard_normal((3, 6, 5))
    t = tensor(x, F32, device).transpose(1, 2)  # (3, 5, 6), not contiguous
    assert not t.is_contiguous()
    got = F.unfold(t, (2, 3), padding=1)
    ref = ref_unfold(x.transpose(0, 2, 1)[None], (2, 3), padding=1)[0]
    assert got.shape == ref.shape and rel_err(f64(got), ref) <= 1e-6
    cols = rng.standard_normal(ref.shape)
    ct = tensor(cols, F32, device)
    back = F.fold(ct, (5, 6), (2, 3), padding=1)
    assert back.shape == (3, 5, 6)
    assert rel_err(f64(back), ref_fold(cols[None], (5, 6), (2, 3),
                                       padding=1)[0]) <= 1e-5
    # a non-contiguous column input
    cnc = tensor(cols.T.copy(), F32, device).T
    assert rel_err(f64(F.fold(cnc, (5, 6), (2, 3), padding=1)),
                   f64(back)) == 0
    # zero batch
    e = F.unfold(tensor(np.zeros((0, 3, 5, 6)), F32, device), 2)
    assert e.shape == (0, 12, 20)
    assert F.fold(e, (5, 6), 2).shape == (0, 3, 5, 6)


def test_fold_unfold_adjoint(device, rng):
    """<unfold(x), y> = <x, fold(y)>: fold is unfold's adjoint."""
    for kw in UNFOLD_CASES:
        x = rng.standard_normal((2, 3, 5, 6))
        u = F.unfold(tensor(x, F64, device), **kw)
        y = rng.standard_normal(tuple(u.shape))
        fy = F.fold(tensor(y, F64, device), (5, 6), **kw)
        lhs = float((f64(u) * y).sum())
        rhs = float((x * f64(fy)).sum())
        assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs))


def test_fold_sums_overlaps_deterministically(device, rng):
    ones = tensor(np.ones((1, 9, 16)), F32, device)
    counts = f64(F.fold(ones, (6, 6), 3))[0, 0]
    ref = ref_fold(np.ones((1, 9, 16)), (6, 6), 3)[0, 0]
    assert np.array_equal(counts, ref) and counts.max() == 9
    cols = tensor(rng.standard_normal((4, 27, 49)), F32, device)
    a = f64(F.fold(cols, (9, 9), 3, stride=1, padding=0, dilation=1))
    b = f64(F.fold(cols, (9, 9), 3, stride=1, padding=0, dilation=1))
    assert np.array_equal(a, b)


def test_unfold_fold_gradcheck(device, rng):
    x = tensor(rng.standard_normal((2, 2, 5, 4)), F64, device, grad=True)
    assert gradcheck(lambda t: F.unfold(t, (2, 3), dilation=(1, 2),
                                        padding=1, stride=(2, 1)), (x,))
    y = F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    assert y.grad_fn.name() == "Im2ColBackward0"
    c = tensor(rng.standard_normal(tuple(y.shape)), F64, device, grad=True)
    assert gradcheck(lambda t: F.fold(t, (5, 4), (2, 3), dilation=(1, 2),
                                      padding=1, stride=(2, 1)), (c,))
    assert F.fold(c, (5, 4), (2, 3), dilation=(1, 2), padding=1,
                  stride=(2, 1)).grad_fn.name() == "Col2ImBackward0"
    u = tensor(rng.standard_normal((2, 4, 3)), F64, device, grad=True)
    assert gradcheck(lambda t: F.unfold(t, 2), (u,))


UNFOLD_ERRORS = [
    (lambda t: F.unfold(t(1, 2, 3, 4, 5), 2),
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
     "other non-zero dimensions for input, but got: [1, 2, 3, 4, 5]"),
    (lambda t: F.unfold(t(1, 0, 3, 4), 2),
     "other non-zero dimensions for input, but got: [1, 0, 3, 4]"),
    (lambda t: F.unfold(t(1, 2, 3, 4), 0),
     "kernel size should be greater than zero, but got kernel_height: 0 "
     "kernel_width: 0"),
    (lambda t: F.unfold(t(1, 2, 3, 4), 2, dilation=0),
     "dilation should be greater than zero, but got dilation_height: 0 "
     "dilation_width: 0"),
    (lambda t: F.unfold(t(1, 2, 3, 4), 2, padding=-1),
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    (lambda t: F.unfold(t(1, 2, 3, 4), 2, stride=0),
     "stride should be greater than zero, but got stride_height: 0 "
     "stride_width: 0"),
    (lambda t: F.unfold(t(1, 2, 3, 4), 5),
     "Given input with spatial size (3, 4), kernel_size=(5, 5), "
     "dilation=(1, 1), padding=(0, 0), calculated shape of the array of "
     "sliding blocks as (-1, 0), but its components must be at least one."),
    (lambda t: F.fold(t(1, 8, 3), (4, 5), 2),
     "Given output_size=(4, 5), kernel_size=(2, 2), dilation=(1, 1), "
     "padding=(0, 0), stride=(1, 1), expected size of input's dimension 2 "
     "to match the calculated number of sliding blocks 3 * 4 = 12, but got "
     "input.size(2)=3."),
    (lambda t: F.fold(t(1, 8, 12), (4, 5), 3),
     "Expected size of input's dimension 1 to be divisible by the product "
     "of kernel_size, but got input.size(1)=8 and kernel_size=(3, 3)."),
    (lambda t: F.fold(t(2, 3, 4, 5), (4, 5), 2),
     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
     "size and non-zero dimensions for input, but got: [2, 3, 4, 5]"),
]


@pytest.mark.parametrize("case", range(len(UNFOLD_ERRORS)))
def test_unfold_fold_errors(device, case):
    fn, message = UNFOLD_ERRORS[case]

    def t(*shape):
        return pygpu.zeros(shape, device=device)
    with pytest.raises(RuntimeError) as e:
        fn(t)
    assert message in str(e.value)


def test_unfold_refuses_integers(device):
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.unfold(pygpu.zeros((1, 2, 3, 4), dtype=pygpu.int64,
                             device=device), 2)
    with pytest.raises(RuntimeError, match="It is expected kernel_size "
                                           "equals to 2, but got size 3"):
        F.unfold(pygpu.zeros((1, 2, 3, 4)), (1, 2, 3))


# ------------------------------------------------------------- conv2d

CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=(2, 1), padding=(1, 2)),
    dict(padding=1, dilation=(2, 1)),
    dict(groups=2),
    dict(groups=2, stride=(1, 2), padding=2, dilation=2),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid", stride=3),
]


def conv2d_ref(x, w, b, kw):
    kw = dict(kw)
    if kw.get("padding") == "same":
        kw["padding"] = same_padding(w, kw.get("dilation", 1))
    elif kw.get("padding") == "valid":
        kw["padding"] = 0
    return ref_conv2d(x, w, b, **kw)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("case", range(len(CONV2D_CASES)))
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_numpy(device, rng, dtype, case, bias):
    kw = CONV2D_CASES[case]
    groups = kw.get("groups", 1)
    x = rounded(rng.standard_normal((2, 4, 9, 8)), dtype)
    w = rounded(rng.standard_normal((6, 4 // groups, 3, 2)), dtype)
    b = rounded(rng.standard_normal(6), dtype) if bias else None
    got = F.conv2d(tensor(x, dtype, device), tensor(w, dtype, device),
                   tensor(b, dtype, device) if bias else None, **kw)
    ref = conv2d_ref(x, w, b, kw)
    assert got.dtype is dtype and got.device.type == device
    assert rel_err(f64(got), ref) <= TOL[dtype]


@pytest.mark.parametrize("dtype", [F32, F64], ids=dtype_name)
@pytest.mark.parametrize("case", [0, 2, 5, 7])
def test_conv2d_columns_by_chunks(rng, monkeypatch, dtype, case):
    """On the CPU with nothing recorded, columns over _CHUNK_BYTES are made
    a few images at a time (one image, two, all but a short last chunk):
    the same values as the reference, and the same bits as all at once."""
    from pygpu.nn._functional import conv
    kw = CONV2D_CASES[case]
    groups = kw.get("groups", 1)
    x = rounded(rng.standard_normal((5, 4, 9, 8)), dtype)
    w = rounded(rng.standard_normal((6, 4 // groups, 3, 2)), dtype)
    b = rounded(rng.standard_normal(6), dtype)
    args = (tensor(x, dtype), tensor(w, dtype), tensor(b, dtype))
    monkeypatch.setattr(conv, "_DIRECT_MACS", 0)  # columns, not direct
    whole = F.conv2d(*args, **kw).numpy()
    per_image = conv2d_ref(x[:1], w, None, kw).shape[2:]
    per_image = 4 * 3 * 2 * per_image[0] * per_image[1] * x.itemsize
    for chunk in (1, 2):
        monkeypatch.setattr(conv, "_CHUNK_BYTES", chunk * per_image)
        got = F.conv2d(*args, **kw)
        assert rel_err(f64(got), conv2d_ref(x, w, b, kw)) <= TOL[dtype]
        assert np.array_equal(got.numpy(), whole)


@pytest.mark.parametrize("dtype", [F32, F16], ids=dtype_name)
def test_conv2d_depthwise_1x1_unbatched(device, rng, dtype):
    x = rounded(rng.standard_normal((3, 4, 7, 6)), dtype)
    wd = rounded(rng.standard_normal((8, 1, 3, 3)), dtype)
    got = F.conv2d(tensor(x, dtype, device), tensor(wd, dtype, device),
                   groups=4, padding=1)
    assert rel_err(f64(got), ref_conv2d(x, wd, None, padding=1,
                                        groups=4)) <= TOL[dtype]
    w1 = rounded(rng.standard_normal((5, 4, 1, 1)), dtype)
    b1 = rounded(rng.standard_normal(5), dtype)
    got = F.conv2d(tensor(x, dtype, device), tensor(w1, dtype, device),
                   tensor(b1, dtype, device))
    assert rel_err(f64(got), ref_conv2d(x, w1, b1)) <= TOL[dtype]
    got = F.conv2d(tensor(x[0], dtype, device), tensor(wd, dtype, device),
                   stride=2, groups=4)
    assert got.shape == (8, 3, 2)
    assert rel_err(f64(got), ref_conv2d(x[:1], wd, None, stride=2,
                                        groups=4)[0]) <= TOL[dtype]


def test_conv2d_noncontiguous_and_empty(device, rng):
    x = rng.standard_normal((2, 4, 8, 9))
    w = rng.standard_normal((3, 4, 3, 3))
    xt = tensor(x.transpose(0, 1, 3, 2).copy(), F32, device).transpose(2, 3)
    wt = tensor(w.transpose(1, 0, 2, 3).copy(), F32, device).transpose(0, 1)
    assert not xt.is_contiguous() and not wt.is_contiguous()
    got = F.conv2d(xt, wt, stride=2, padding=1)
    assert rel_err(f64(got), ref_conv2d(x, w, None, 2, 1)) <= 1e-5
    e = F.conv2d(tensor(np.zeros((0, 4, 8, 9)), F32, device),
                 tensor(w, F32, device), padding=1)
    assert e.shape == (0, 3, 8, 9)
    one = F.conv2d(tensor(x[:1, :, :3, :3], F32, device),
                   tensor(w, F32, device))
    assert one.shape == (1, 3, 1, 1)
    assert rel_err(f64(one), ref_conv2d(x[:1, :, :3, :3], w)) <= 1e-5


CONV_GRAD_CASES = [
    dict(),
    dict(stride=(2, 1), padding=1),
    dict(dilation=(1, 2), padding=(2, 1)),
    dict(groups=2, stride=2),
    dict(padding="same", dilation=(2, 1)),
    dict(padding="valid"),
]


@pytest.mark.parametrize("case", range(len(CONV_GRAD_CASES)))
def test_conv2d_gradcheck(device, rng, case):
    kw = CONV_GRAD_CASES[case]
    groups = kw.get("groups", 1)
    x = tensor(rng.standard_normal((2, 4, 5, 6)), F64, device, grad=True)
    w = tensor(rng.standard_normal((4, 4 // groups, 3, 2)), F64, device,
               grad=True)
    b = tensor(rng.standard_normal(4), F64, device, grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, **kw), (x, w, b))


def test_conv2d_gradcheck_depthwise_1x1_unbatched(device, rng):
    x = tensor(rng.standard_normal((2, 3, 4, 5)), F64, device, grad=True)
    wd = tensor(rng.standard_normal((6, 1, 2, 2)), F64, device, grad=True)
    assert gradcheck(lambda x, w: F.conv2d(x, w, groups=3, padding=1),
                     (x, wd))
    w1 = tensor(rng.standard_normal((2, 3, 1, 1)), F64, device, grad=True)
    b1 = tensor(rng.standard_normal(2), F64, device, grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b), (x, w1, b1))
    xu = tensor(rng.standard_normal((3, 4, 4)), F64, device, grad=True)
    assert gradcheck(lambda x, w: F.conv2d(x, w, stride=2, groups=3),
                     (xu, wd))


def test_conv2d_backward_reaches_weight_and_input(device, rng):
    """The gradients flow through unfold and the batched matmul."""
    x = tensor(rng.standard_normal((2, 4, 6, 6)), F32, device, grad=True)
    w = tensor(rng.standard_normal((4, 2, 3, 3)), F32, device, grad=True)
    b = tensor(rng.standard_normal(4), F32, device, grad=True)
    y = F.conv2d(x, w, b, groups=2, padding=1)
    g = rng.standard_normal(tuple(y.shape))
    y.backward(tensor(g, F32, device))
    assert x.grad.shape == x.shape and w.grad.shape == w.shape
    # the weight gradient of a convolution: the input's taps times g
    xr = f64(x)
    for gi in range(2):
        xs = np.pad(xr, [(0, 0), (0, 0), (1, 1), (1, 1)])[:, 2 * gi:2 * gi + 2]
        for i in range(3):
            for j in range(3):
                ref = np.einsum("ncxy,noxy->oc", taps(xs, i, j, (1, 1),
                                                      (1, 1), 6, 6),
                                g[:, 2 * gi:2 * gi + 2])
                assert rel_err(f64(w.grad)[2 * gi:2 * gi + 2, :, i, j],
                               ref) <= 1e-5
    assert rel_err(f64(b.grad), g.sum((0, 2, 3))) <= 1e-5


# ------------------------------------------------------------- conv1d

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1),
                                dict(dilation=3, padding="same"),
                                dict(groups=2, padding="same"),
                                dict(padding="valid", stride=2)],
                         ids=str)
def test_conv1d_matches_numpy(device, rng, dtype, kw):
    groups = kw.get("groups", 1)
    x = rounded(rng.standard_normal((2, 4, 11)), dtype)
    w = rounded(rng.standard_normal((6, 4 // groups, 4)), dtype)
    b = rounded(rng.standard_normal(6), dtype)
    got = F.conv1d(tensor(x, dtype, device), tensor(w, dtype, device),
                   tensor(b, dtype, device), **kw)
    k2 = dict(kw)
    for name in ("stride", "dilation"):
        if name in k2:
            k2[name] = (1, k2[name])
    if "padding" in k2 and isinstance(k2["padding"], int):
        k2["padding"] = (0, k2["padding"])
    if k2.get("padding") == "same":
        k2["padding"] = ((0, 0),
                         same_padding(w[:, :, None], k2.get("dilation",
                                                            1))[1])
    ref = conv2d_ref(x[:, :, None], w[:, :, None], b, k2)[:, :, 0]
    assert got.dtype is dtype
    assert rel_err(f64(got), ref) <= TOL[dtype]
    un = F.conv1d(tensor(x[0], dtype, device), tensor(w, dtype, device),
                  tensor(b, dtype, device), **kw)
    assert rel_err(f64(un), ref[0]) <= TOL[dtype]


def test_conv1d_gradcheck(device, rng):
    x = tensor(rng.standard_normal((2, 4, 7)), F64, device, grad=True)
    w = tensor(rng.standard_normal((3, 4, 3)), F64, device, grad=True)
    b = tensor(rng.standard_normal(3), F64, device, grad=True)
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2,
                                              dilation=2), (x, w, b))
    wg = tensor(rng.standard_normal((4, 2, 3)), F64, device, grad=True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, groups=2, padding="same"),
                     (x, wg))
    xu = tensor(rng.standard_normal((4, 5)), F64, device, grad=True)
    assert gradcheck(lambda x, w: F.conv1d(x, w), (xu, w))


# ---------------------------------------------------- conv_transpose

TRANSPOSE_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(groups=2, stride=(1, 2)),
    dict(dilation=2, padding=(1, 0)),
    dict(stride=1, dilation=3, output_padding=2),  # output_padding > stride
]


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_conv_transpose2d_matches_numpy(device, rng, dtype, case):
    kw = TRANSPOSE_CASES[case]
    x = rounded(rng.standard_normal((2, 4, 5, 4)), dtype)
    w = rounded(rng.standard_normal((4, 3, 3, 2)), dtype)
    b = rounded(rng.standard_normal(3 * kw.get("groups", 1)), dtype)
    got = F.conv_transpose2d(tensor(x, dtype, device),
                             tensor(w, dtype, device),
                             tensor(b, dtype, device), **kw)
    ref = ref_conv_transpose2d(x, w, b, **kw)
    assert got.dtype is dtype
    assert rel_err(f64(got), ref) <= TOL[dtype]
    un = F.conv_transpose2d(tensor(x[1], dtype, device),
                            tensor(w, dtype, device), **kw)
    assert rel_err(f64(un), ref_conv_transpose2d(x[1:], w, **kw)[0]) \
        <= TOL[dtype]


@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_conv_transpose2d_gradcheck(device, rng, case):
    kw = TRANSPOSE_CASES[case]
    x = tensor(rng.standard_normal((2, 4, 3, 3)), F64, device, grad=True)
    w = tensor(rng.standard_normal((4, 2, 3, 2)), F64, device, grad=True)
    b = tensor(rng.standard_normal(2 * kw.get("groups", 1)), F64, device,
               grad=True)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw),
                     (x, w, b))


def test_conv_transpose2d_is_conv2d_input_gradient(device, rng):
    x = tensor(rng.standard_normal((2, 3, 7, 6)), F64, device, grad=True)
    w = tensor(rng.standard_normal((4, 3, 3, 3)), F64, device)
    y = F.conv2d(x, w, stride=2, padding=1, dilation=1)
    g = tensor(rng.standard_normal(tuple(y.shape)), F64, device)
    y.backward(g)
    t = F.conv_transpose2d(g, w, stride=2, padding=1, output_padding=(0, 1))
    assert t.shape == x.shape
    assert rel_err(f64(t), f64(x.grad)) <= 1e-12


def test_conv_transpose1d(device, rng):
    x = rng.standard_normal((2, 4, 6))
    w = rng.standard_normal((4, 3, 3))
    b = rng.standard_normal(3)
    got = F.conv_transpose1d(tensor(x, F32, device), tensor(w, F32, device),
                             tensor(b, F32, device), stride=3, padding=1,
                             output_padding=2)
    ref = ref_conv_transpose2d(x[:, :, None], w[:, :, None], b,
                               stride=(1, 3), padding=(0, 1),
                               output_padding=(0, 2))[:, :, 0]
    assert rel_err(f64(got), ref) <= 1e-5
    xg = tensor(x[:, :, :4], F64, device, grad=True)
    wg = tensor(w[:, :2], F64, device, grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=2,
                                                     groups=2), (xg, wg))


# --------------------------------------------------------------- errors

def z(device, *shape):
    return pygpu.zeros(shape, device=device)


CONV_ERRORS = [
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 3, 3, 3), groups=2),
     "Given groups=2, weight of size [6, 3, 3, 3], expected input[1, 4, 5, "
     "5] to have 6 channels, but got 4 channels instead"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 2, 3, 3), groups=4),
     "Given groups=4, expected weight to be divisible by 4 at dimension 0, "
     "but got weight of size [[6, 2, 3, 3]] instead"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 2, 3, 3), groups=2,
                        stride=2, padding="same"),
     "padding='same' is not supported for strided convolutions"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3), padding="foo"),
     "Invalid padding string: 'foo'"),
    (lambda d: F.conv2d(z(d, 4, 5, 5, 5, 5), z(d, 6, 4, 3, 3)),
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got "
     "input of size: [4, 5, 5, 5, 5]"),
    (lambda d: F.conv1d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3)),
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
     "input of size: [1, 4, 5, 5]"),
    (lambda d: F.conv2d(z(d, 1, 4, 2, 2), z(d, 6, 4, 3, 3)),
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x "
     "3). Kernel size can't be greater than actual input size"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3), z(d, 5)),
     "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional "
     "with 6 elements, but got bias of size [5] instead"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3), stride=0),
     "non-positive stride is not supported"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3), padding=-1),
     "negative padding is not supported"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3), groups=0),
     "non-positive groups is not supported"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5), z(d, 6, 4, 3, 3),
                        padding=(1, 2, 3)),
     "expected padding to be a single integer value or a list of 2 values "
     "to match the convolution dimensions, but got padding=[1, 2, 3]"),
    (lambda d: F.conv2d(z(d, 1, 4, 5, 5),
                        z(d, 6, 4, 3, 3).to(pygpu.float64)),
     "expected scalar type Float but found Double"),
    (lambda d: F.conv2d(z(d, 2, 4, 5, 5), z(d, 0, 4, 3, 3)),
     "Given groups=1, expected weight to be at least 1 at dimension 0, but "
     "got weight of size [0, 4, 3, 3] instead"),
    (lambda d: F.conv_transpose2d(z(d, 1, 4, 5, 5), z(d, 3, 4, 3, 3)),
     "Given transposed=1, weight of size [3, 4, 3, 3], expected input[1, "
     "4, 5, 5] to have 3 channels, but got 4 channels instead"),
    (lambda d: F.conv_transpose2d(z(d, 1, 4, 5, 5), z(d, 4, 2, 3, 3),
                                  output_padding=2, stride=2),
     "output padding must be smaller than either stride or dilation, but "
     "got output_padding_height: 2 output_padding_width: 2 stride_height: "
     "2 stride_width: 2 dilation_height: 1 dilation_width: 1"),
    (lambda d: F.conv_transpose2d(z(d, 2, 4, 5, 5), z(d, 4, 3, 3, 3),
                                  z(d, 4)),
     "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be "
     "1-dimensional with 3 elements, but got bias of size [4] instead"),
    (lambda d: F.conv_transpose2d(z(d, 2, 4, 5, 5), z(d, 4, 3, 3, 3),
                                  output_padding=-1),
     "negative output_padding is not supported"),
    (lambda d: F.conv_transpose1d(z(d, 4, 5, 5, 5), z(d, 4, 3, 3)),
     "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, "
     "but got input of size: [4, 5, 5, 5]"),
]


@pytest.mark.parametrize("case", range(len(CONV_ERRORS)))
def test_conv_errors(device, case):
    fn, message = CONV_ERRORS[case]
    with pytest.raises(RuntimeError) as e:
        fn(device)
    assert message in str(e.value)


def test_conv_transpose_refuses_padding_string():
    with pytest.raises(TypeError, match="conv_transpose2d\\(\\): argument "
                                        "'padding' must be tuple of ints"):
        F.conv_transpose2d(pygpu.zeros((1, 2, 3, 3)),
                           pygpu.zeros((2, 2, 2, 2)), padding="same")


# -------------------------------------------------------------- modules

def test_conv_module_init_and_state_dict(device):
    m = nn.Conv2d(3, 8, 5, device=device)
    assert m.weight.shape == (8, 3, 5, 5) and m.bias.shape == (8,)
    assert m.weight.device.type == device
    bound = 1 / math.sqrt(3 * 25)
    w = f64(m.weight)
    assert np.all(np.abs(w) <= bound) and w.std() > bound / 3
    assert np.all(np.abs(f64(m.bias)) <= bound) and f64(m.bias).std() > 0
    assert list(m.state_dict()) == ["weight", "bias"]
    t = nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False,
                           dtype=pygpu.float64)
    assert t.weight.shape == (4, 3, 3, 3) and t.bias is None
    assert t.weight.dtype is pygpu.float64 and list(t.state_dict()) == \
        ["weight"]
    # torch's fan_in of a transposed weight is its dim 1 times the kernel
    assert np.all(np.abs(f64(t.weight)) <= 1 / math.sqrt(27))
    c1 = nn.Conv1d(4, 2, 3, groups=2)
    assert c1.weight.shape == (2, 2, 3)
    pygpu.manual_seed(5)
    a = nn.Conv2d(2, 3, 3)
    pygpu.manual_seed(5)
    b = nn.Conv2d(2, 3, 3)
    assert np.array_equal(f64(a.weight), f64(b.weight))
    c = nn.Conv2d(3, 8, 5, device=device)
    c.load_state_dict(m.state_dict())
    assert np.array_equal(f64(c.weight), w)


def test_conv_module_repr():
    assert repr(nn.Conv2d(3, 6, 3)) == \
        "Conv2d(3, 6, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(4, 8, (3, 2), stride=2, padding=1, dilation=2,
                          groups=4, bias=False, padding_mode="reflect")) == \
        ("Conv2d(4, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), "
         "dilation=(2, 2), groups=4, bias=False, padding_mode=reflect)")
    assert repr(nn.Conv1d(3, 6, 3, padding="same")) == \
        "Conv1d(3, 6, kernel_size=(3,), stride=(1,), padding=same)"
    assert repr(nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)) == \
        ("ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), "
         "output_padding=(1, 1))")
    assert repr(nn.Unfold(3, padding=1)) == \
        "Unfold(kernel_size=3, dilation=1, padding=1, stride=1)"
    assert repr(nn.Fold((4, 5), 2)) == \
        ("Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, "
         "stride=1)")


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate",
                                  "circular"])
def test_conv_module_padding_modes(device, rng, mode):
    m = nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode=mode,
                  dtype=pygpu.float64, device=device)
    x = rng.standard_normal((2, 3, 5, 6))
    np_mode = {"zeros": "constant", "reflect": "reflect",
               "replicate": "edge", "circular": "wrap"}[mode]
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
    ref = ref_conv2d(xp, f64(m.weight), f64(m.bias))
    assert rel_err(f64(m(tensor(x, F64, device))), ref) <= 1e-12
    m1 = nn.Conv1d(3, 2, 3, padding="same", padding_mode=mode,
                   dtype=pygpu.float64, device=device)
    x1 = rng.standard_normal((2, 3, 6))
    xp1 = np.pad(x1, [(0, 0), (0, 0), (1, 1)], mode=np_mode)
    ref1 = ref_conv2d(xp1[:, :, None], f64(m1.weight)[:, :, None],
                      f64(m1.bias))[:, :, 0]
    assert rel_err(f64(m1(tensor(x1, F64, device))), ref1) <= 1e-12


def test_conv_module_checks_and_output_size(device, rng):
    with pytest.raises(ValueError, match="in_channels must be divisible by "
                                         "groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="edge")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported "
                                         "for strided convolutions"):
        nn.Conv2d(4, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is '
                                         "supported for ConvTranspose2d"):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
    t = nn.ConvTranspose2d(3, 2, 3, stride=2, dtype=pygpu.float64,
                           device=device)
    x = tensor(rng.standard_normal((1, 3, 4, 4)), F64, device)
    assert t(x).shape == (1, 2, 9, 9)
    y = t(x, output_size=(10, 9))
    assert y.shape == (1, 2, 10, 9)
    ref = ref_conv_transpose2d(f64(x), f64(t.weight), f64(t.bias), stride=2,
                               output_padding=(1, 0))
    assert rel_err(f64(y), ref) <= 1e-12
    assert t(x, output_size=[1, 2, 10, 10]).shape == (1, 2, 10, 10)
    with pytest.raises(ValueError, match="requested an output size of "
                                         "\\[11, 11\\], but valid sizes "
                                         "range from \\[9, 9\\] to "
                                         "\\[10, 10\\]"):
        t(x, output_size=(11, 11))
    t1 = nn.ConvTranspose1d(3, 2, 3, stride=3)
    assert t1(pygpu.randn(2, 3, 4), output_size=[12]).shape == (2, 2, 12)


def test_conv_module_trains(device, rng):
    """A step of SGD on a tiny conv net lowers its loss."""
    pygpu.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(4, 2, 3, stride=2),
                        nn.Flatten(), nn.Linear(2 * 3 * 3, 3)).to(device)
    x = tensor(rng.standard_normal((8, 1, 7, 7)), F32, device)
    target = pygpu.tensor(rng.integers(0, 3, 8), device=device)
    opt = pygpu.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    assert all(p.grad is not None for p in net.parameters())


# ---------------------------------------------------------------- torch

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    wt = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    for kw in (dict(stride=2, padding=1, groups=2),
               dict(padding="same", dilation=(2, 1), groups=2)):
        got = F.conv2d(pygpu.tensor(x), pygpu.tensor(w), pygpu.tensor(b),
                       **kw)
        ref = tf.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                        torch.from_numpy(b), **kw).numpy()
        assert rel_err(f64(got), ref) <= 1e-5
    got = F.conv_transpose2d(pygpu.tensor(x), pygpu.tensor(wt), stride=2,
                             padding=1, output_padding=1, groups=2)
    ref = tf.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(wt),
                              stride=2, padding=1, output_padding=1,
                              groups=2).numpy()
    assert rel_err(f64(got), ref) <= 1e-5
    got = F.fold(F.unfold(pygpu.tensor(x), (2, 3), 1, 1, 2), (9, 8),
                 (2, 3), 1, 1, 2)
    ref = tf.fold(tf.unfold(torch.from_numpy(x), (2, 3), 1, 1, 2), (9, 8),
                  (2, 3), 1, 1, 2).numpy()
    assert rel_err(f64(got), ref) <= 1e-6
    for name, args in (("Conv2d", (4, 6, 3)), ("ConvTranspose2d", (4, 6, 3)),
                       ("Conv1d", (4, 6, 3))):
        for kw in (dict(), dict(stride=2, padding=1, groups=2, bias=False)):
            assert repr(getattr(nn, name)(*args, **kw)) == \
                repr(getattr(torch.nn, name)(*args, **kw))


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=dtype_name)
def test_conv_backward_low_precision(device, rng, dtype):
    """Gradients in float16, bfloat16 and float32 against float64's."""
    x = rounded(rng.standard_normal((2, 4, 6, 5)), dtype)
    w = rounded(rng.standard_normal((6, 2, 3, 3)), dtype)
    b = rounded(rng.standard_normal(6), dtype)
    g = rounded(rng.standard_normal((2, 6, 3, 3)), dtype)
    grads = {}
    for dt in (dtype, F64):
        ts = [tensor(a, dt, device, grad=True) for a in (x, w, b)]
        y = F.conv2d(*ts, stride=2, padding=1, groups=2)
        y.backward(tensor(g, dt, device))
        grads[dt] = [f64(t.grad) for t in ts]
        assert all(t.grad.dtype is dt for t in ts)
    for got, ref in zip(grads[dtype], grads[F64]):
        assert rel_err(got, ref) <= 10 * TOL[dtype]
    wt = rounded(rng.standard_normal((4, 3, 2, 2)), dtype)
    grads = {}
    for dt in (dtype, F64):
        ts = [tensor(a, dt, device, grad=True) for a in (x, wt)]
        y = F.conv_transpose2d(*ts, stride=2)
        y.backward(tensor(np.ones(tuple(y.shape)), dt, device))
        grads[dt] = [f64(t.grad) for t in ts]
    for got, ref in zip(grads[dtype], grads[F64]):
        assert rel_err(got, ref) <= 10 * TOL[dtype]


def test_conv_bias_only_gradient(device, rng):
    """Only the bias requires grad: the in-place bias add records it."""
    x = tensor(rng.standard_normal((2, 3, 5, 5)), F32, device)
    w = tensor(rng.standard_normal((4, 3, 3, 3)), F32, device)
    b = tensor(rng.standard_normal(4), F32, device, grad=True)
    y = F.conv2d(x, w, b)
    assert y.requires_grad
    y.sum().backward()
    assert np.array_equal(f64(b.grad), np.full(4, 18.0))
    wt = tensor(rng.standard_normal((3, 4, 3, 3)), F32, device)
    b.grad = None
    F.conv_transpose2d(x, wt, b, stride=2).sum().backward()
    assert np.array_equal(f64(b.grad), np.full(4, 242.0))
    with pygpu.no_grad():
        assert not F.conv2d(x, w, b).requires_grad
