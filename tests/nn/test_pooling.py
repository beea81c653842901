"""Pooling, interpolation and pixel shuffling (pygpu.nn.functional and
their modules) against NumPy float64 loops written from torch's rules:
every option and their combinations, batched and unbatched, odd and
non-square sizes, non-contiguous inputs, every float dtype, indices,
gradients (gradcheck in float64, and each dtype's backward against
float64's), torch's error messages, the modules' reprs."""
import math

import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu import nn
from pygpu.autograd import gradcheck

from conftest import rel_err

FLOATS = [pygpu.float16, pygpu.bfloat16, pygpu.float32, pygpu.float64]
TOL = {pygpu.float16: 1e-2, pygpu.bfloat16: 2e-2, pygpu.float32: 1e-5,
       pygpu.float64: 1e-12}


def host(t):
    t = t.detach()
    return (t.float() if t.dtype is pygpu.bfloat16 else t).cpu().numpy()


def distinct(rng, shape):
    """Random values all different (a shuffled grid 0.1 apart, so no two
    are equal even in float16's spacing near them): no ties for max."""
    n = int(np.prod(shape))
    v = (rng.permutation(n) - n / 2) * (0.1 if n < 400 else 4.0 / n)
    return v.reshape(shape)


def tensor(a, device, dtype=pygpu.float64, requires_grad=False):
    return pygpu.tensor(np.asarray(a, dtype=np.float64), dtype=dtype,
                        device=device, requires_grad=requires_grad)


def close(got, ref, dtype=pygpu.float64):
    err = rel_err(host(got), ref)
    assert err <= TOL[dtype], err


# ----------------------------------------------------- NumPy references


def out_len(n, k, s, p, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def ref_max_pool2d(a, k, s, p, d, ceil_mode):
    """values and flat indices of (N, C, H, W) a, scanning each window row
    by row and keeping the first maximum; a window whose elements are all
    -inf reports its first position inside the input (torch's rule)."""
    n, c, h, w = a.shape
    oh = out_len(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = out_len(w, k[1], s[1], p[1], d[1], ceil_mode)
    vals = np.full((n, c, oh, ow), -np.inf)
    idx = np.full((n, c, oh, ow), -1, dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            r0 = min(i * s[0] - p[0] + ki * d[0] for ki in range(k[0])
                     if i * s[0] - p[0] + ki * d[0] >= 0)
            q0 = min(j * s[1] - p[1] + kj * d[1] for kj in range(k[1])
                     if j * s[1] - p[1] + kj * d[1] >= 0)
            idx[:, :, i, j] = r0 * w + q0
            for ki in range(k[0]):
                r = i * s[0] - p[0] + ki * d[0]
                if not 0 <= r < h:
                    continue
                for kj in range(k[1]):
                    q = j * s[1] - p[1] + kj * d[1]
                    if not 0 <= q < w:
                        continue
                    better = a[:, :, r, q] > vals[:, :, i, j]
                    vals[:, :, i, j] = np.where(better, a[:, :, r, q],
                                                vals[:, :, i, j])
                    idx[:, :, i, j] = np.where(better, r * w + q,
                                               idx[:, :, i, j])
    return vals, idx


def ref_avg_pool2d(a, k, s, p, ceil_mode, count_include_pad, divisor):
    n, c, h, w = a.shape
    oh = out_len(h, k[0], s[0], p[0], 1, ceil_mode)
    ow = out_len(w, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, q1 = min(r0 + k[0], h + p[0]), min(q0 + k[1], w + p[1])
            padded = (r1 - r0) * (q1 - q0)
            r0c, q0c, r1c, q1c = max(r0, 0), max(q0, 0), min(r1, h), \
                min(q1, w)
            total = a[:, :, r0c:r1c, q0c:q1c].sum(axis=(2, 3))
            real = (r1c - r0c) * (q1c - q0c)
            div = divisor or (padded if count_include_pad else real)
            out[:, :, i, j] = total / div
    return out


def adaptive_bounds(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def ref_adaptive2d(a, oh, ow, kind):
    n, c, h, w = a.shape
    vals = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i, (r0, r1) in enumerate(adaptive_bounds(h, oh)):
        for j, (q0, q1) in enumerate(adaptive_bounds(w, ow)):
            win = a[:, :, r0:r1, q0:q1].reshape(n, c, (r1 - r0) * (q1 - q0))
            if n == 0:
                continue
            if kind == "avg":
                vals[:, :, i, j] = win.mean(axis=-1)
            else:
                arg = win.argmax(axis=-1)  # the first maximum
                vals[:, :, i, j] = win.max(axis=-1)
                idx[:, :, i, j] = (r0 + arg // (q1 - q0)) * w + q0 \
                    + arg % (q1 - q0)
    return vals, idx


def ref_nearest(n, o, scale, exact, shortcuts):
    """Source index of each output position, computed in float32 as
    torch does."""
    s = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o)
    res = []
    for i in range(o):
        if exact:
            src = int(math.floor(np.float32(np.float32(i) + np.float32(0.5))
                                 * s))
        elif shortcuts and o == n:
            src = i
        elif shortcuts and o == 2 * n:
            src = i // 2
        else:
            src = int(math.floor(np.float32(i) * s))
        res.append(min(src, n - 1))
    return res


def ref_linear_taps(n, o, scale, align_corners, ft):
    """[(i0, i1, w0, w1)] of each output position (ft: the float type the
    positions are computed in)."""
    taps = []
    for i in range(o):
        if n == o:
            taps.append((i, i, 1.0, 0.0))
            continue
        if align_corners:
            ratio = ft(n - 1) / ft(o - 1) if o > 1 else ft(0)
            src = ratio * ft(i)
        else:
            ratio = ft(1.0 / scale) if scale else ft(n) / ft(o)
            src = max(ratio * (ft(i) + ft(0.5)) - ft(0.5), ft(0))
        i0 = min(int(math.floor(src)), n - 1)
        lam = min(max(float(src) - i0, 0.0), 1.0)
        taps.append((i0, i0 + (1 if i0 < n - 1 else 0), 1 - lam, lam))
    return taps


def ref_interpolate(a, out, scales, mode, align_corners, ft=np.float32):
    """Resize each spatial axis of a (N, C, ...) in turn."""
    dims = a.ndim - 2
    for ax in range(dims):
        n, o = a.shape[2 + ax], out[ax]
        moved = np.moveaxis(a, 2 + ax, -1)
        if mode in ("nearest", "nearest-exact"):
            index = ref_nearest(n, o, scales[ax], mode == "nearest-exact",
                                dims == 2)
            res = moved[..., index]
        else:
            res = np.zeros(moved.shape[:-1] + (o,))
            for i, (i0, i1, w0, w1) in enumerate(
                    ref_linear_taps(n, o, scales[ax], align_corners, ft)):
                res[..., i] = w0 * moved[..., i0] + w1 * moved[..., i1]
        a = np.moveaxis(res, -1, 2 + ax)
    return a


def ref_pixel_shuffle(a, r):
    *lead, c, h, w = a.shape
    out = np.zeros(tuple(lead) + (c // (r * r), h * r, w * r))
    for ch in range(c):
        oc, rest = divmod(ch, r * r)
        i, j = divmod(rest, r)
        out[..., oc, i::r, j::r] = a[..., ch, :, :]
    return out


# ------------------------------------------------------------ max pools

MAX2D = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((2, 3, 9, 7), 3, 2, 1, 1, False),
    ((2, 3, 9, 7), 3, 2, 1, 1, True),
    ((1, 2, 10, 11), (3, 2), (2, 3), (1, 0), 1, True),
    ((1, 2, 11, 9), 3, 1, 1, 2, False),
    ((1, 2, 11, 9), (2, 3), (3, 1), (1, 1), (2, 1), True),
    ((2, 1, 5, 6), 5, 1, 2, 1, False),
    ((3, 1, 1), 1, None, 0, 1, False),
    ((2, 7, 5), 2, 1, 0, 1, True),
    ((1, 1, 6, 6), 4, 3, 2, 1, True),
    ((0, 2, 6, 6), 2, None, 0, 1, False),
]


@pytest.mark.parametrize("case", MAX2D, ids=str)
def test_max_pool2d_values_and_indices(device, rng, case):
    shape, k, s, p, d, ceil_mode = case
    a = distinct(rng, shape)
    vals, idx = F.max_pool2d(tensor(a, device), k, s, p, d, ceil_mode,
                             return_indices=True)
    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    a4 = a if a.ndim == 4 else a[None]
    rv, ri = ref_max_pool2d(a4, pair(k), pair(s if s else k), pair(p),
                            pair(d), ceil_mode)
    if a.ndim == 3:
        rv, ri = rv[0], ri[0]
    assert idx.dtype is pygpu.int64 and idx.device.type == device
    close(vals, rv)
    np.testing.assert_array_equal(idx.cpu().numpy(), ri)
    plain = F.max_pool2d(tensor(a, device), k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(host(plain), host(vals))


MAX1D = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 9), 2, None, 0, 1, False),
    ((2, 3, 9), 3, 2, 1, 1, True),
    ((2, 3, 10), 3, 1, 1, 3, False),
    ((3, 7), 4, 3, 2, 1, True),
    ((1, 1, 1), 1, 1, 0, 1, False),
]


@pytest.mark.parametrize("case", MAX1D, ids=str)
def test_max_pool1d_values_and_indices(device, rng, case):
    shape, k, s, p, d, ceil_mode = case
    a = distinct(rng, shape)
    vals, idx = F.max_pool1d(tensor(a, device), k, s, p, d, ceil_mode,
                             return_indices=True)
    a4 = a[:, :, None, :] if a.ndim == 3 else a[None, :, None, :]
    rv, ri = ref_max_pool2d(a4, (1, k), (1, s or k), (0, p), (1, d),
                            ceil_mode)
    rv, ri = rv[:, :, 0], ri[:, :, 0]
    if a.ndim == 2:
        rv, ri = rv[0], ri[0]
    close(vals, rv)
    np.testing.assert_array_equal(idx.cpu().numpy(), ri)
    close(F.max_pool1d(tensor(a, device), k, s, p, d, ceil_mode), rv)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_pool2d_dtypes(device, rng, dtype):
    a = distinct(rng, (2, 3, 9, 8))
    x = tensor(a, device, dtype)
    vals, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert vals.dtype is dtype
    ref = ref_max_pool2d(host(x).astype(np.float64)[...], (3, 3), (2, 2),
                         (1, 1), (1, 1), False)
    close(vals, ref[0], dtype)
    np.testing.assert_array_equal(idx.cpu().numpy(), ref[1])


def test_max_pool2d_ties_take_the_first(device):
    x = tensor(np.ones((1, 1, 4, 4)), device)
    vals, idx = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(idx.cpu().numpy()[0, 0], [[0, 2],
                                                            [8, 10]])
    np.testing.assert_array_equal(host(vals), np.ones((1, 1, 2, 2)))


def test_max_pool2d_all_minus_inf_windows(device):
    x = tensor(np.full((1, 1, 5, 4), -np.inf), device)
    vals, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    rv, ri = ref_max_pool2d(np.full((1, 1, 5, 4), -np.inf), (3, 3), (2, 2),
                            (1, 1), (1, 1), False)
    np.testing.assert_array_equal(host(vals), rv)
    np.testing.assert_array_equal(idx.cpu().numpy(), ri)
    assert ri.min() >= 0


def test_max_pools_propagate_nan(device):
    a = np.arange(16.0).reshape(1, 1, 4, 4)
    a[0, 0, 1, 1] = a[0, 0, 2, 3] = np.nan
    want = np.array([[[[np.nan, 7.0], [13.0, np.nan]]]])
    for grad in (False, True):
        x = tensor(a, device, requires_grad=grad)
        vals, idx = F.max_pool2d(x, 2, return_indices=True)
        np.testing.assert_array_equal(host(vals), want)
        np.testing.assert_array_equal(idx.cpu().numpy(), [[[[5, 7],
                                                            [13, 11]]]])
        np.testing.assert_array_equal(host(F.max_pool2d(x, 2)), want)
        np.testing.assert_array_equal(host(F.adaptive_max_pool2d(x, 2)),
                                      want)


def test_max_pool2d_integer_input(device):
    a = np.arange(1, 26).reshape(1, 5, 5) * 3 % 17
    x = pygpu.tensor(a, device=device)
    vals, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    rv, ri = ref_max_pool2d(a[None].astype(np.float64), (3, 3), (2, 2),
                            (1, 1), (1, 1), False)
    assert vals.dtype is pygpu.int64
    np.testing.assert_array_equal(vals.cpu().numpy(), rv[0])
    np.testing.assert_array_equal(idx.cpu().numpy(), ri[0])


def test_pools_non_contiguous_input(device, rng):
    a = distinct(rng, (2, 3, 8, 9))
    x = tensor(a.transpose(0, 1, 3, 2).copy(), device).transpose(2, 3)
    assert not x.is_contiguous()
    v, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    rv, ri = ref_max_pool2d(a, (3, 3), (2, 2), (1, 1), (1, 1), True)
    close(v, rv)
    np.testing.assert_array_equal(i.cpu().numpy(), ri)
    close(F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
          ref_avg_pool2d(a, (3, 3), (2, 2), (1, 1), False, False, None))
    close(F.adaptive_avg_pool2d(x, (3, 4)),
          ref_adaptive2d(a, 3, 4, "avg")[0])
    close(F.interpolate(x, size=(5, 11), mode="bilinear"),
          ref_interpolate(a, (5, 11), (None, None), "bilinear", False,
                          np.float64))
    close(F.interpolate(x, scale_factor=1.5),
          ref_interpolate(a, (12, 13), (1.5, 1.5), "nearest", None))
    close(F.pixel_shuffle(x[:, :2].transpose(1, 3)[:, :8], 2),
          ref_pixel_shuffle(a[:, :2].transpose(0, 3, 2, 1)[:, :8], 2))
    sliced = tensor(a, device)[:, :, ::2, 1:]
    close(F.max_pool2d(sliced, 2),
          ref_max_pool2d(a[:, :, ::2, 1:], (2, 2), (2, 2), (0, 0), (1, 1),
                         False)[0])


# ------------------------------------------------------------ avg pools

AVG2D = [  # (shape, kernel, stride, padding, ceil, count_include_pad, div)
    ((2, 3, 8, 8), 2, None, 0, False, True, None),
    ((2, 3, 9, 7), 3, 2, 1, False, True, None),
    ((2, 3, 9, 7), 3, 2, 1, False, False, None),
    ((2, 3, 9, 7), 3, 2, 1, True, True, None),
    ((2, 3, 9, 7), 3, 2, 1, True, False, None),
    ((1, 2, 10, 11), (3, 2), (2, 3), (1, 0), True, True, None),
    ((1, 2, 10, 11), (4, 3), (3, 2), (2, 1), True, False, 5),
    ((2, 1, 5, 6), 3, 1, 1, False, True, -2),
    ((3, 5, 4), 2, 1, 1, True, False, None),
    ((3, 1, 1), 1, None, 0, False, True, None),
    ((0, 2, 6, 6), 2, None, 0, False, True, None),
]


@pytest.mark.parametrize("case", AVG2D, ids=str)
def test_avg_pool2d(device, rng, case):
    shape, k, s, p, ceil_mode, cip, div = case
    a = rng.standard_normal(shape)
    got = F.avg_pool2d(tensor(a, device), k, s, p, ceil_mode, cip, div)
    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    a4 = a if a.ndim == 4 else a[None]
    ref = ref_avg_pool2d(a4, pair(k), pair(s if s else k), pair(p),
                         ceil_mode, cip, div)
    close(got, ref if a.ndim == 4 else ref[0])


AVG1D = [  # (shape, kernel, stride, padding, ceil, count_include_pad)
    ((2, 3, 9), 2, None, 0, False, True),
    ((2, 3, 9), 3, 2, 1, True, True),
    ((2, 3, 9), 3, 2, 1, True, False),
    ((4, 6), 5, 3, 2, True, False),
]


@pytest.mark.parametrize("case", AVG1D, ids=str)
def test_avg_pool1d(device, rng, case):
    shape, k, s, p, ceil_mode, cip = case
    a = rng.standard_normal(shape)
    got = F.avg_pool1d(tensor(a, device), k, s, p, ceil_mode, cip)
    a4 = a[:, :, None, :] if a.ndim == 3 else a[None, :, None, :]
    ref = ref_avg_pool2d(a4, (1, k), (1, s or k), (0, p), ceil_mode, cip,
                         None)[:, :, 0]
    close(got, ref if a.ndim == 3 else ref[0])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_avg_pool2d_dtypes(device, rng, dtype):
    a = rng.standard_normal((2, 3, 9, 8))
    x = tensor(a, device, dtype)
    got = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    assert got.dtype is dtype
    close(got, ref_avg_pool2d(host(x).astype(np.float64), (3, 3), (2, 2),
                              (1, 1), True, False, None), dtype)


# ------------------------------------------------------- adaptive pools

ADAPTIVE2D = [  # (shape, output_size)
    ((2, 3, 7, 7), (1, 1)), ((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 5), (3, 2)),
    ((2, 3, 5, 4), (7, 6)), ((1, 2, 9, 10), (4, None)), ((3, 5, 7), 3),
    ((2, 3, 6, 5), (None, None)), ((1, 1, 1, 1), (2, 3)),
    ((2, 3, 4, 4), (0, 2)), ((0, 3, 4, 4), 2),
]


@pytest.mark.parametrize("case", ADAPTIVE2D, ids=str)
def test_adaptive_pool2d(device, rng, case):
    shape, size = case
    a = distinct(rng, shape)
    oh, ow = size if isinstance(size, tuple) else (size, size)
    oh = shape[-2] if oh is None else oh
    ow = shape[-1] if ow is None else ow
    a4 = a if a.ndim == 4 else a[None]
    ravg, _ = ref_adaptive2d(a4, oh, ow, "avg")
    rmax, ridx = ref_adaptive2d(a4, oh, ow, "max")
    if a.ndim == 3:
        ravg, rmax, ridx = ravg[0], rmax[0], ridx[0]
    x = tensor(a, device)
    close(F.adaptive_avg_pool2d(x, size), ravg)
    vals, idx = F.adaptive_max_pool2d(x, size, return_indices=True)
    close(vals, rmax)
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx)
    close(F.adaptive_max_pool2d(x, size), rmax)


@pytest.mark.parametrize("case", [((2, 3, 9), 4), ((2, 3, 8), 4),
                                  ((3, 5), 7), ((2, 3, 6), 1),
                                  ((1, 2, 5), (2,))], ids=str)
def test_adaptive_pool1d(device, rng, case):
    shape, size = case
    a = distinct(rng, shape)
    o = size[0] if isinstance(size, tuple) else size
    a4 = a[:, :, None, :] if a.ndim == 3 else a[None, :, None, :]
    ravg = ref_adaptive2d(a4, 1, o, "avg")[0][:, :, 0]
    rmax, ridx = (r[:, :, 0] for r in ref_adaptive2d(a4, 1, o, "max"))
    if a.ndim == 2:
        ravg, rmax, ridx = ravg[0], rmax[0], ridx[0]
    x = tensor(a, device)
    close(F.adaptive_avg_pool1d(x, size), ravg)
    vals, idx = F.adaptive_max_pool1d(x, size, return_indices=True)
    close(vals, rmax)
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_pools_dtypes(device, rng, dtype):
    x = tensor(distinct(rng, (2, 3, 9, 7)), device, dtype)
    a = host(x).astype(np.float64)
    for size in ((1, 1), (3, 7), (4, 3)):
        avg = F.adaptive_avg_pool2d(x, size)
        assert avg.dtype is dtype
        close(avg, ref_adaptive2d(a, *size, "avg")[0], dtype)
        vals, idx = F.adaptive_max_pool2d(x, size, return_indices=True)
        rmax, ridx = ref_adaptive2d(a, *size, "max")
        close(vals, rmax, dtype)
        np.testing.assert_array_equal(idx.cpu().numpy(), ridx)


# ---------------------------------------------------------- interpolate

INTERP = [  # (shape, size, scale_factor, mode, align_corners, recompute)
    ((2, 3, 5), 9, None, "nearest", None, None),
    ((2, 3, 9), 4, None, "nearest", None, None),
    ((2, 3, 5), None, 2.5, "nearest", None, None),
    ((2, 3, 5), None, 1.3, "nearest", None, None),
    ((2, 3, 4, 5), (7, 3), None, "nearest", None, None),
    ((2, 3, 4, 5), None, (2.1, 0.7), "nearest", None, None),
    ((2, 3, 3, 5), None, (1.3, 2.0), "nearest", None, None),
    ((2, 3, 4, 5), None, (2.1, 0.7), "nearest", None, True),
    ((2, 3, 5, 7), (9, 4), None, "nearest-exact", None, None),
    ((2, 3, 3, 7), None, (1.3, 0.4), "nearest-exact", None, None),
    ((2, 3, 5), 9, None, "linear", False, None),
    ((2, 3, 5), 9, None, "linear", True, None),
    ((2, 3, 8), None, 0.6, "linear", False, None),
    ((2, 3, 8), None, 0.6, "linear", False, True),
    ((2, 3, 5), 1, None, "linear", True, None),
    ((2, 3, 4, 5), (7, 3), None, "bilinear", False, None),
    ((2, 3, 4, 5), (7, 3), None, "bilinear", True, None),
    ((2, 3, 4, 5), None, (2.5, 0.5), "bilinear", False, None),
    ((2, 3, 4, 5), None, (1.7, 1.3), "bilinear", True, None),
    ((2, 3, 4, 5), None, 3, "bilinear", False, True),
    ((1, 1, 1, 1), (3, 2), None, "bilinear", False, None),
    ((2, 3, 6, 6), (6, 6), None, "bilinear", False, None),
    ((1, 2, 3, 4, 5), (5, 2, 7), None, "nearest", None, None),
    ((1, 2, 3, 4, 5), None, (1.5, 0.5, 2.0), "trilinear", False, None),
    ((1, 2, 3, 4, 5), (5, 2, 7), None, "trilinear", True, None),
    ((0, 3, 4, 5), (6, 2), None, "bilinear", False, None),
]


@pytest.mark.parametrize("case", INTERP, ids=str)
def test_interpolate(device, rng, case):
    shape, size, scale, mode, ac, recompute = case
    a = rng.standard_normal(shape)
    got = F.interpolate(tensor(a, device), size, scale, mode, ac,
                        recompute_scale_factor=recompute)
    dims = len(shape) - 2
    if size is not None:
        out = size if isinstance(size, tuple) else (size,) * dims
        scales = (None,) * dims
    else:
        scales = scale if isinstance(scale, tuple) else (scale,) * dims
        out = tuple(int(n * f) for n, f in zip(shape[2:], scales))
        if recompute:
            scales = (None,) * dims
    ref = ref_interpolate(a, out, scales, mode, ac, np.float64)
    close(got, ref)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
def test_interpolate_dtypes(device, rng, dtype, mode):
    x = tensor(rng.standard_normal((2, 3, 5, 6)), device, dtype)
    a = host(x).astype(np.float64)
    ac = False if mode == "bilinear" else None
    for size, scale in (((9, 4), None), (None, (1.5, 0.6))):
        got = F.interpolate(x, size, scale, mode, ac)
        assert got.dtype is dtype
        out = size or tuple(int(n * f) for n, f in zip((5, 6), scale))
        ft = np.float64 if dtype is pygpu.float64 else np.float32
        close(got, ref_interpolate(a, out, scale or (None, None), mode, ac,
                                   ft), dtype)


def test_interpolate_area_is_adaptive_avg(device, rng):
    a = rng.standard_normal((2, 3, 9, 7))
    x = tensor(a, device)
    close(F.interpolate(x, size=(4, 3), mode="area"),
          ref_adaptive2d(a, 4, 3, "avg")[0])
    close(F.interpolate(x, scale_factor=0.5, mode="area"),
          ref_adaptive2d(a, 4, 3, "avg")[0])
    close(F.interpolate(x[:, :, 0], size=5, mode="area"),
          ref_adaptive2d(a[:, :, :1], 1, 5, "avg")[0][:, :, 0])


def test_upsample_aliases(device, rng):
    a = rng.standard_normal((1, 2, 3, 4))
    x = tensor(a, device)
    close(F.upsample(x, scale_factor=2),
          ref_interpolate(a, (6, 8), (2, 2), "nearest", None))
    close(F.upsample_nearest(x, size=(5, 5)),
          ref_interpolate(a, (5, 5), (None, None), "nearest", None))
    close(F.upsample_bilinear(x, size=(5, 7)),
          ref_interpolate(a, (5, 7), (None, None), "bilinear", True,
                          np.float64))


# -------------------------------------------------------- pixel shuffle


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 5), 2), ((18, 2, 3), 3),
                                     ((2, 2, 4, 2, 2), 1),
                                     ((2, 1, 9, 2, 3), 3),
                                     ((0, 4, 2, 2), 2)], ids=str)
def test_pixel_shuffle_and_unshuffle(device, rng, shape, r):
    a = rng.standard_normal(shape)
    x = tensor(a, device)
    y = F.pixel_shuffle(x, r)
    ref = ref_pixel_shuffle(a, r)
    close(y, ref)
    back = F.pixel_unshuffle(y, r)
    close(back, a)
    assert tuple(back.shape) == shape


# ------------------------------------------------------------ gradients

GRAD_CASES = [
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
     (1, 2, 5, 6)),
    ("max_pool2d dilated", lambda x: F.max_pool2d(x, 2, 1, 1, 2),
     (2, 1, 4, 5)),
    ("max_pool2d unbatched", lambda x: F.max_pool2d(x, (2, 3), (1, 2)),
     (2, 4, 5)),
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True),
     (2, 2, 7)),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                          count_include_pad=False),
     (1, 2, 5, 6)),
    ("avg_pool2d divisor", lambda x: F.avg_pool2d(x, 2, 1, 1,
                                                  divisor_override=3),
     (1, 2, 4, 3)),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1), (2, 2, 7)),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
     (1, 2, 5, 7)),
    ("adaptive_avg_pool2d 1x1", lambda x: F.adaptive_avg_pool2d(x, 1),
     (2, 3, 3, 2)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 2)),
     (1, 2, 5, 7)),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4),
     (2, 7)),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4),
     (2, 2, 7)),
    ("nearest", lambda x: F.interpolate(x, scale_factor=(1.5, 0.7)),
     (1, 2, 3, 5)),
    ("nearest-exact", lambda x: F.interpolate(x, size=(5, 2),
                                              mode="nearest-exact"),
     (1, 2, 3, 5)),
    ("linear", lambda x: F.interpolate(x, size=7, mode="linear"),
     (2, 2, 4)),
    ("bilinear", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"),
     (1, 2, 3, 4)),
    ("bilinear aligned", lambda x: F.interpolate(
        x, scale_factor=1.5, mode="bilinear", align_corners=True),
     (1, 2, 3, 4)),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), (1, 8, 2, 3)),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), (1, 2, 4, 2)),
]


@pytest.mark.parametrize("name,fn,shape", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, rng, name, fn, shape):
    x = tensor(distinct(rng, shape), device, requires_grad=True)
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("dtype", FLOATS[:3], ids=str)
@pytest.mark.parametrize("name,fn,shape", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_backward_dtypes(device, rng, dtype, name, fn, shape):
    """Each dtype's gradient is float64's (within its precision)."""
    a = distinct(rng, shape)
    grads = []
    for dt in (pygpu.float64, dtype):
        x = tensor(a, device, dt, requires_grad=True)
        y = fn(x)
        g = np.linspace(-1.0, 1.0, y.numel()).reshape(tuple(y.shape))
        y.backward(tensor(g, device, dt))
        assert x.grad.dtype is dt
        grads.append(host(x.grad).astype(np.float64))
    err = rel_err(grads[1], grads[0])
    assert err <= TOL[dtype] * 2, err


def test_empty_batch_backward(device):
    x = tensor(np.zeros((0, 2, 6, 5)), device, requires_grad=True)
    for fn in (lambda t: F.max_pool2d(t, 3, 2, 1),
               lambda t: F.avg_pool2d(t, 2),
               lambda t: F.adaptive_max_pool2d(t, (4, 3)),
               lambda t: F.adaptive_avg_pool2d(t, (4, 3)),
               lambda t: F.interpolate(t, size=(3, 7), mode="bilinear"),
               lambda t: F.max_pool1d(t[:, :, 0], 2)):
        x.grad = None
        y = fn(x)
        assert y.shape[0] == 0
        y.sum().backward()
        assert tuple(x.grad.shape) == (0, 2, 6, 5)


def test_max_pool2d_gradient_goes_to_the_indices(device, rng):
    a = distinct(rng, (2, 3, 7, 6))
    x = tensor(a, device, requires_grad=True)
    vals, idx = F.max_pool2d(x, 3, 1, 1, return_indices=True)
    g = rng.standard_normal(tuple(vals.shape))
    vals.backward(tensor(g, device))
    ref = np.zeros((2, 3, 42))
    for n in range(2):
        for c in range(3):
            np.add.at(ref[n, c], idx.cpu().numpy()[n, c].ravel(),
                      g[n, c].ravel())
    close(x.grad, ref.reshape(a.shape))


# --------------------------------------------------------------- errors

ERRORS = [
    (lambda x: F.max_pool2d(x, 2, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=2 and dilation=1"),
    (lambda x: F.max_pool2d(x, 3, padding=(0, 2), dilation=2,
                            return_indices=True),
     RuntimeError, "pad should be smaller than or equal to half of kernel "
     "size, but got padW = 2, padH = 0, kW = 3, kH = 3"),
    (lambda x: F.max_pool2d(x, 0), RuntimeError,
     "stride should not be zero"),
    (lambda x: F.max_pool2d(x, 0, 1), RuntimeError,
     "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    (lambda x: F.max_pool2d(x, 2, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 "
     "dilationW: 0"),
    (lambda x: F.max_pool2d(x, 2, padding=-1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    (lambda x: F.max_pool2d(x, 7), RuntimeError,
     "Given input size: (3x5x6). Calculated output size: (3x0x0). Output "
     "size is too small"),
    (lambda x: F.max_pool2d(x[0, 0, 0], 2), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda x: F.max_pool2d(x, (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of "
     "two ints"),
    (lambda x: F.max_pool2d(x, 2, (1, 1, 1)), RuntimeError,
     "max_pool2d: stride must either be omitted, a single int, or a tuple "
     "of two ints"),
    (lambda x: F.max_pool2d(x, 2.0), TypeError,
     "max_pool2d(): argument 'kernel_size' (position 2) must be tuple of "
     "ints, not float"),
    (lambda x: F.max_pool2d(x[:, :0], 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
     "for input, but got:[2, 0, 5, 6]"),
    (lambda x: F.max_pool2d(x > 0, 2), NotImplementedError,
     "\"max_pool2d\" not implemented for 'Bool'"),
    (lambda x: F.max_pool1d(x[0], 2, padding=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got "
     "padding=2 and kernel_size=2"),
    (lambda x: F.max_pool1d(x[0], 7), RuntimeError,
     "max_pool1d() Invalid computed output size: 0"),
    (lambda x: F.max_pool1d(x, 2), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
     "dim batch size for input, but got:[2, 3, 5, 6]"),
    (lambda x: F.max_pool1d(x[0], 0), RuntimeError,
     "max_pool1d() kernel_size must be greater than zero, but got 0"),
    (lambda x: F.max_pool1d(x[0], 2, 0), RuntimeError,
     "max_pool1d() stride must be greater than zero, but got 0"),
    (lambda x: F.max_pool1d(x[0], (2, 2)), RuntimeError,
     "max_pool1d() kernel_size must be an int, list of ints or tuple of "
     "ints of size 1 but got size 2"),
    (lambda x: F.avg_pool2d(x, 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    (lambda x: F.avg_pool2d(x, 2, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=2 and dilation=1"),
    (lambda x: F.avg_pool2d(x[None], 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
     "for input, but got:[1, 2, 3, 5, 6]"),
    (lambda x: F.avg_pool2d(x, 2, 1, (1, 1, 1)), RuntimeError,
     "avg_pool2d: padding must either be a single int, or a tuple of two "
     "ints"),
    (lambda x: F.avg_pool1d(x[0], 7), RuntimeError,
     "Given input size: (5x1x6). Calculated output size: (5x1x0). Output "
     "size is too small"),
    (lambda x: F.avg_pool1d(x, 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for "
     "argument #1 'self' (while checking arguments for avg_pool1d)"),
    (lambda x: F.avg_pool1d(x[0], (2, 2)), RuntimeError,
     "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
    (lambda x: F.adaptive_avg_pool2d(x, (-1, 2)), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or "
     "equal to 0 but received {-1, 2}"),
    (lambda x: F.adaptive_avg_pool2d(x, (1, 2, 3)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    (lambda x: F.adaptive_avg_pool2d(x[0, 0, 0], 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [6]"),
    (lambda x: F.adaptive_avg_pool2d(x[:, :, :0], 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for "
     "non-batch dimensions, but input has sizes [2, 3, 0, 6] with "
     "dimension 2 being empty"),
    (lambda x: F.adaptive_avg_pool1d(x[0], (1, 2)), RuntimeError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int "
     "(got 2)"),
    (lambda x: F.adaptive_max_pool2d(x, (-1, 2)), RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, 3, -1, 2]"),
    (lambda x: F.adaptive_max_pool2d(x[0, 0, 0], 2), RuntimeError,
     "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [6]"),
    (lambda x: F.adaptive_max_pool1d(x, 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for "
     "argument #1 'self' (while checking arguments for "
     "adaptive_max_pool1d)"),
    (lambda x: F.pixel_shuffle(x[:, :, :5], 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be "
     "divisible by the square of upscale_factor, but input.size(-3)=3 is "
     "not divisible by 4"),
    (lambda x: F.pixel_shuffle(x[0, 0], 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got "
     "input with 2 dimension(s)"),
    (lambda x: F.pixel_shuffle(x, 0), RuntimeError,
     "pixel_shuffle expects a positive upscale_factor, but got 0"),
    (lambda x: F.pixel_unshuffle(x, 2), RuntimeError,
     "pixel_unshuffle expects height to be divisible by downscale_factor, "
     "but input.size(-2)=5 is not divisible by 2"),
    (lambda x: F.pixel_unshuffle(x[:, :, :4, :5], 2), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, "
     "but input.size(-1)=5 is not divisible by 2"),
    (lambda x: F.pixel_unshuffle(x, -1), RuntimeError,
     "pixel_unshuffle expects a positive downscale_factor, but got -1"),
    (lambda x: F.interpolate(x), ValueError,
     "either size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=3, scale_factor=2), ValueError,
     "only one of size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=3, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes: "
     "linear | bilinear | bicubic | trilinear"),
    (lambda x: F.interpolate(x, size=(3,)), ValueError,
     "Input and output must have the same number of spatial dimensions, "
     "but got input with spatial dimensions of [5, 6] and output size of "
     "(3,). Please provide input tensor in (N, C, d1, d2, ...,dK) format "
     "and output size in (o1, o2, ...,oK) format."),
    (lambda x: F.interpolate(x, scale_factor=(2.0, 1, 3)), ValueError,
     "Input and scale_factor must have the same number of spatial "
     "dimensions, but got input with spatial dimensions of [5, 6] and "
     "scale_factor of shape (2.0, 1, 3). Please provide input tensor in "
     "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
     "format."),
    (lambda x: F.interpolate(x, size=(3.0, 2)), TypeError,
     "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
     "Tuple[int, int, int], but got size with types [<class 'float'>, "
     "<class 'int'>]"),
    (lambda x: F.interpolate(x, size=3, recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful with an explicit "
     "size."),
    (lambda x: F.interpolate(x, size=3, mode="linear"), NotImplementedError,
     "Got 4D input, but linear mode needs 3D input"),
    (lambda x: F.interpolate(x[0], size=3, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    (lambda x: F.interpolate(x, size=3, mode="foo"), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for "
     "the modes: nearest | linear | bilinear | bicubic | trilinear | "
     "lanczos | area | nearest-exact (got foo)"),
    (lambda x: F.interpolate(x, scale_factor=0.1), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 5,"
     " W: 6) output (H: 0, W: 0)"),
    (lambda x: F.interpolate(x[0], size=0, mode="linear"), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (W: 6)"
     " and output (W: 0)"),
    (lambda x: F.interpolate(x, size=3, antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos "
     "modes and requires a 4-D tensor as input"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS,
                         ids=[e[2][:50] for e in ERRORS])
def test_errors(device, rng, fn, exc, msg):
    x = tensor(rng.standard_normal((2, 3, 5, 6)), device)
    with pytest.raises(exc) as info:
        fn(x)
    assert str(info.value) == msg


def test_errors_match_torch_when_present(rng):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    a = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    for fn, exc, msg in ERRORS:
        pairs = []
        for lib_f, x in ((F, pygpu.tensor(a)), (TF, torch.tensor(a))):
            code = fn.__code__
            g = dict(fn.__globals__, F=lib_f)
            with pytest.raises(Exception) as info:
                type(fn)(code, g)(x)
            pairs.append((info.type, str(info.value)))
        assert pairs[0][1] == pairs[1][1], pairs
        assert issubclass(pairs[0][0], pairs[1][0]), pairs


# -------------------------------------------------------------- modules


def test_modules_call_their_functions(device, rng):
    a = distinct(rng, (2, 4, 8, 9))
    x = tensor(a, device)
    pairs = [
        (nn.MaxPool2d(3, 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1)),
        (nn.MaxPool2d((2, 3), ceil_mode=True),
         lambda t: F.max_pool2d(t, (2, 3), ceil_mode=True)),
        (nn.AvgPool2d(3, 2, 1, count_include_pad=False, divisor_override=4),
         lambda t: F.avg_pool2d(t, 3, 2, 1, False, False, 4)),
        (nn.AdaptiveAvgPool2d((3, None)),
         lambda t: F.adaptive_avg_pool2d(t, (3, None))),
        (nn.AdaptiveMaxPool2d(5), lambda t: F.adaptive_max_pool2d(t, 5)),
        (nn.Upsample(scale_factor=1.5, mode="bilinear"),
         lambda t: F.interpolate(t, scale_factor=1.5, mode="bilinear")),
        (nn.Upsample(size=(4, 5)), lambda t: F.interpolate(t, size=(4, 5))),
        (nn.UpsamplingNearest2d(scale_factor=2),
         lambda t: F.interpolate(t, scale_factor=2)),
        (nn.UpsamplingBilinear2d(size=7),
         lambda t: F.interpolate(t, size=7, mode="bilinear",
                                 align_corners=True)),
        (nn.PixelShuffle(2), lambda t: F.pixel_shuffle(t, 2)),
        (nn.PixelUnshuffle(2), lambda t: F.pixel_unshuffle(t[..., :8], 2)),
    ]
    for module, fn in pairs:
        got = module(x[..., :8] if isinstance(module, nn.PixelUnshuffle)
                     else x)
        np.testing.assert_array_equal(host(got), host(fn(x)))
    y = x[:, :, 0]
    for module, fn in [
            (nn.MaxPool1d(3, 2, 1), lambda t: F.max_pool1d(t, 3, 2, 1)),
            (nn.AvgPool1d(3, 2, 1), lambda t: F.avg_pool1d(t, 3, 2, 1)),
            (nn.AdaptiveAvgPool1d(4), lambda t: F.adaptive_avg_pool1d(t, 4)),
            (nn.AdaptiveMaxPool1d(4), lambda t: F.adaptive_max_pool1d(t, 4)),
            (nn.Upsample(size=11, mode="linear"),
             lambda t: F.interpolate(t, 11, mode="linear"))]:
        np.testing.assert_array_equal(host(module(y)), host(fn(y)))
    vals, idx = nn.MaxPool2d(2, return_indices=True)(x)
    ref = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(idx.cpu().numpy(), ref[1].cpu().numpy())
    vals, idx = nn.AdaptiveMaxPool1d(3, return_indices=True)(y)
    np.testing.assert_array_equal(
        idx.cpu().numpy(),
        F.adaptive_max_pool1d(y, 3, True)[1].cpu().numpy())


REPRS = [
    (lambda: nn.MaxPool1d(3), "MaxPool1d(kernel_size=3, stride=3, "
     "padding=0, dilation=1, ceil_mode=False)"),
    (lambda: nn.MaxPool2d(3, 2, 1, return_indices=True), "MaxPool2d("
     "kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"),
    (lambda: nn.MaxPool2d((2, 3)), "MaxPool2d(kernel_size=(2, 3), "
     "stride=(2, 3), padding=0, dilation=1, ceil_mode=False)"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), "
     "padding=(0,))"),
    (lambda: nn.AvgPool2d(3, divisor_override=2), "AvgPool2d(kernel_size=3,"
     " stride=3, padding=0)"),
    (lambda: nn.AvgPool2d((2, 3), (1, 2)), "AvgPool2d(kernel_size=(2, 3), "
     "stride=(1, 2), padding=0)"),
    (lambda: nn.AdaptiveAvgPool1d(3), "AdaptiveAvgPool1d(output_size=3)"),
    (lambda: nn.AdaptiveAvgPool2d((2, None)),
     "AdaptiveAvgPool2d(output_size=(2, None))"),
    (lambda: nn.AdaptiveMaxPool1d(2), "AdaptiveMaxPool1d(output_size=2)"),
    (lambda: nn.AdaptiveMaxPool2d(5, return_indices=True),
     "AdaptiveMaxPool2d(output_size=5)"),
    (lambda: nn.Upsample(scale_factor=2),
     "Upsample(scale_factor=2.0, mode='nearest')"),
    (lambda: nn.Upsample(size=(3, 4), mode="bilinear"),
     "Upsample(size=(3, 4), mode='bilinear')"),
    (lambda: nn.Upsample(scale_factor=(2, 3)),
     "Upsample(scale_factor=(2.0, 3.0), mode='nearest')"),
    (lambda: nn.UpsamplingNearest2d(scale_factor=2),
     "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"),
    (lambda: nn.UpsamplingBilinear2d(size=3),
     "UpsamplingBilinear2d(size=3, mode='bilinear')"),
    (lambda: nn.PixelShuffle(3), "PixelShuffle(upscale_factor=3)"),
    (lambda: nn.PixelUnshuffle(2), "PixelUnshuffle(downscale_factor=2)"),
]


@pytest.mark.parametrize("make,text", REPRS, ids=[r[1] for r in REPRS])
def test_module_reprs(make, text):
    assert repr(make()) == text


def test_module_reprs_match_torch_when_present():
    torch = pytest.importorskip("torch")
    for make, _ in REPRS:
        g = dict(make.__globals__, nn=torch.nn)
        assert repr(type(make)(make.__code__, g)()) == repr(make())


def test_names_exported():
    for name in ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
                 "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                 "adaptive_max_pool1d", "adaptive_max_pool2d",
                 "max_pool2d_with_indices", "interpolate", "upsample",
                 "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
                 "pixel_unshuffle"):
        assert callable(getattr(F, name)), name
    for name in ("MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
                 "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
                 "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample",
                 "UpsamplingNearest2d", "UpsamplingBilinear2d",
                 "PixelShuffle", "PixelUnshuffle"):
        assert issubclass(getattr(nn, name), nn.Module), name
