"""pygpu.nn.functional: interpolation and pixel shuffling.

Composed of tensor ops that carry their own gradients, like the pools
(pooling.py): resizing works one axis at a time with index_select (the
neighbours' positions and weights from NumPy tables); 'area' is the
adaptive average pool; pixel (un)shuffle is a reshape and a permute.  The
sizes, defaults, checks and messages follow torch's."""
import numpy as np

from ... import _C
from .adaptive_pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from .pooling import _float_only

__all__ = ["interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle"]


_MODES = ("nearest | linear | bilinear | bicubic | trilinear | lanczos | "
          "area | nearest-exact")


def _nearest_index(size, out, scale, exact, shortcuts):
    """torch's nearest source index per output position, in float32:
    floor(o * s) ('nearest') or floor((o + 0.5) * s) ('nearest-exact'),
    s = 1 / scale_factor when one was given, else size / out.  With
    shortcuts (torch's CPU rule for 2-D 'nearest'), out == size copies and
    out == 2 * size repeats each element twice, whatever the scale."""
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 \
        else np.float32(size) / np.float32(out)
    o = np.arange(out, dtype=np.float32)
    if exact:
        src = np.floor((o + np.float32(0.5)) * s)
    elif shortcuts and out == size:
        return np.arange(out)
    elif shortcuts and out == 2 * size:
        return np.arange(out) >> 1
    else:
        src = np.floor(o * s)
    return np.minimum(src.astype(np.int64), size - 1)


def _linear_weights(size, out, scale, align_corners, dtype):
    """(i0, i1, l0, l1): the two source positions of each output position
    and their weights, as torch computes them (in float32, or float64 for
    float64 input)."""
    ft = np.float64 if dtype is _C.float64 else np.float32
    if align_corners:
        ratio = ft(size - 1) / ft(out - 1) if out > 1 else ft(0)
    elif scale is not None and scale > 0:
        ratio = ft(1.0 / scale)
    else:
        ratio = ft(size) / ft(out)
    o = np.arange(out, dtype=ft)
    if align_corners:
        src = ratio * o
    else:
        src = np.maximum(ratio * (o + ft(0.5)) - ft(0.5), ft(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    l1 = np.clip(src - i0.astype(ft), 0, 1).astype(ft)
    i1 = i0 + (i0 < size - 1)
    return i0, i1, (1 - l1).astype(ft), l1


def _resize_axis(x, dim, size, out, scale, mode, align_corners):
    """x resized along dim from size to out elements."""
    dev = x.device
    if mode in ("nearest", "nearest-exact"):
        index = _nearest_index(size, out, scale, mode == "nearest-exact",
                               x.dim() == 4)
        if np.array_equal(index, np.arange(size)):
            return x
        return x.index_select(dim, _C.tensor(index, device=dev))
    if out == size:
        return x
    i0, i1, l0, l1 = _linear_weights(size, out, scale, align_corners,
                                     x.dtype)
    shape = [1] * x.dim()
    shape[dim] = out
    w0 = _C.tensor(l0, device=dev).to(x.dtype).reshape(tuple(shape))
    w1 = _C.tensor(l1, device=dev).to(x.dtype).reshape(tuple(shape))
    return (x.index_select(dim, _C.tensor(i0, device=dev)) * w0
            + x.index_select(dim, _C.tensor(i1, device=dev)) * w1)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def interpolate(input, size=None, scale_factor=None, mode="nearest",
                align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dims of an (N, C, L), (N, C, H, W) or (N, C, D,
    H, W) input to `size`, or to floor(in * scale_factor).  Modes:
    'nearest' (torch's floor rule), 'nearest-exact', 'linear' (3-D),
    'bilinear' (4-D), 'trilinear' (5-D), one axis after another; 'area'
    (adaptive average pooling, 3-D and 4-D).  Without recompute_scale_factor a
    given scale_factor is the one the source positions use, as in
    torch."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be "
                         "defined")
    scales = [None] * max(dim, 0)
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial "
                    "dimensions, but got input with spatial dimensions of "
                    f"{list(input.shape[2:])} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    "format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(v) for v in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or "
                    "Tuple[int, int] or Tuple[int, int, int], but got size "
                    f"with types {[type(v) for v in size]}")
            out = [int(v) for v in size]
        else:
            out = [int(size)] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of "
                    "spatial dimensions, but got input with spatial "
                    f"dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [int(input.shape[2 + i] * scales[i]) for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an "
                         "explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = [None] * max(dim, 0)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos")
                          and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, "
                         "bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias:
        raise NotImplementedError("pygpu's interpolate has no antialias "
                                  "mode")
    linear = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if mode in linear and input.dim() in (3, 4, 5) \
            and input.dim() != linear[mode]:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} "
                                  f"mode needs {linear[mode]}D input")
    if input.dim() not in (3, 4, 5) or mode not in (
            "nearest", "nearest-exact", "area", "bicubic", "lanczos",
            *linear):
        raise NotImplementedError(
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            f"{input.dim()}D) for the modes: {_MODES} (got {mode})")
    if mode in ("bicubic", "lanczos") or (mode == "area" and dim == 3):
        raise NotImplementedError(f"pygpu's interpolate does not implement "
                                  f"mode '{mode}' for {input.dim()}D input")
    if mode == "area":
        pool = adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d
        return pool(input, out if dim == 2 else out[0])
    sizes = [int(n) for n in input.shape[2:]]
    if min(sizes) <= 0 or min(out) <= 0:
        names = ("D", "H", "W")[3 - dim:]
        got_in = ", ".join(f"{n}: {v}" for n, v in zip(names, sizes))
        got_out = ", ".join(f"{n}: {v}" for n, v in zip(names, out))
        joint = " and output" if dim == 1 else " output"
        raise RuntimeError("Input and output sizes should be greater than "
                           f"0, but got input ({got_in}){joint} "
                           f"({got_out})")
    _float_only(input, f"upsample_{mode.replace('-', '_')}{dim}d")
    result = input
    for i in range(dim):
        result = _resize_axis(result, 2 + i, sizes[i], out[i], scales[i],
                              mode, align_corners)
    if result is input:
        result = input.clone()
    return result


def upsample(input, size=None, scale_factor=None, mode="nearest",
             align_corners=None):
    """interpolate under its old name."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(..., mode='nearest') under its old name."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(..., mode='bilinear', align_corners=True) under its old
    name."""
    return interpolate(input, size, scale_factor, mode="bilinear",
                       align_corners=True)


# ---------------------------------------------------------- pixel shuffle


def pixel_shuffle(input, upscale_factor):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): channel c * r * r +
    i * r + j goes to pixel (h * r + i, w * r + j) of channel c."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 "
                           f"dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if r <= 0:
        raise RuntimeError("pixel_shuffle expects a positive upscale_factor,"
                           f" but got {r}")
    *lead, c, h, w = (int(n) for n in input.shape)
    if c % (r * r) != 0:
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be "
            "divisible by the square of upscale_factor, but "
            f"input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    order = list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2]
    return x.permute(order).reshape(tuple(lead) + (c // (r * r), h * r,
                                                   w * r))


def pixel_unshuffle(input, downscale_factor):
    """pixel_shuffle's inverse: (*, C, H * r, W * r) -> (*, C * r * r, H,
    W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least "
                           f"3 dimensions, but got input with {input.dim()}"
                           " dimension(s)")
    if r <= 0:
        raise RuntimeError("pixel_unshuffle expects a positive "
                           f"downscale_factor, but got {r}")
    *lead, c, h, w = (int(n) for n in input.shape)
    if h % r != 0:
        raise RuntimeError("pixel_unshuffle expects height to be divisible "
                           f"by downscale_factor, but input.size(-2)={h} is "
                           f"not divisible by {r}")
    if w % r != 0:
        raise RuntimeError("pixel_unshuffle expects width to be divisible "
                           f"by downscale_factor, but input.size(-1)={w} is "
                           f"not divisible by {r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    order = list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3]
    return x.permute(order).reshape(tuple(lead) + (c * r * r, h // r,
                                                   w // r))
