"""pygpu.nn.functional: max and average pooling (adaptive pools are in
adaptive_pooling.py, interpolation and pixel shuffling in upsampling.py).

Everything here is composed of tensor ops that carry their own gradients,
so each function runs on every device and float dtype those ops do and
needs no backward of its own.  Pooling reads the windows through one
(out, k) table of input positions per spatial axis: the input is padded
with the reduction's neutral value (-inf for max, 0 for sums) by
concatenation, each kernel position's elements over all windows are one
strided slice of the padded input (adaptive windows: one index_select per
axis), and the kh * kw slices, stacked on a new first dim, are reduced
over it.  The sizes, defaults, checks and messages follow torch's."""
import contextlib

import numpy as np

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d"]

_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)
_SCALAR_NAME = {_C.int64: "Long", _C.int32: "Int", _C.uint8: "Byte",
                _C.bool: "Bool"}
# What max pooling pads with: below every value of the dtype.
_LOWEST = {_C.int64: -(1 << 63), _C.int32: -(1 << 31), _C.uint8: 0}


def _float_only(input, what):
    if input.dtype not in _FLOATS:
        name = _SCALAR_NAME.get(input.dtype, str(input.dtype))
        raise NotImplementedError(f'"{what}" not implemented for '
                                  f"'{name}'")


def _ints(value, n, message, where):
    """value as a tuple of n ints (an int repeats); message on another
    length; where ("fn(): argument 'name' (position k)") names it in the
    TypeError for a non-int."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
        if len(value) == 1:
            value = value * n
        if len(value) != n:
            raise RuntimeError(message)
    else:
        value = (value,) * n
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{where} must be tuple of ints, not "
                            f"{type(v).__name__}")
    return tuple(int(v) for v in value)


def _pool_args(fn, kernel_size, stride, padding, dilation):
    """torch's 2-D argument parsing: (kernel, stride, padding, dilation)
    as pairs, stride None or empty meaning the kernel."""
    def where(name, position):
        return f"{fn}(): argument '{name}' (position {position})"

    kernel = _ints(kernel_size, 2, f"{fn}: kernel_size must either be a "
                   "single int, or a tuple of two ints",
                   where("kernel_size", 2))
    if stride is None or (isinstance(stride, (list, tuple))
                          and len(stride) == 0):
        stride = kernel
    else:
        stride = _ints(stride, 2, f"{fn}: stride must either be omitted, "
                       "a single int, or a tuple of two ints",
                       where("stride", 3))
    padding = _ints(padding, 2, f"{fn}: padding must either be a single "
                    "int, or a tuple of two ints", where("padding", 4))
    dilation = _ints(dilation, 2, f"{fn}: dilation must be either a single "
                     "int, or a tuple of two ints", where("dilation", 5))
    return kernel, stride, padding, dilation


def _out_len(size, k, s, p, d, ceil_mode):
    """torch's pooled length of one axis (with its per-axis checks)."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel "
                           f"size, but got pad={p}, kernel_size={k} and "
                           f"dilation={d}")
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool2d(input, kernel, stride, padding, dilation, out):
    """torch's pool2d shape check, after the output size is known;
    padding None skips the check of padding against the plain kernel,
    which torch makes where it computes indices (max pooling with
    return_indices or a gradient to record, and avg pooling)."""
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but "
                           f"got kH: {kernel[0]} kW: {kernel[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got "
                           f"dH: {stride[0]} dW: {stride[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"dilationH: {dilation[0]} "
                           f"dilationW: {dilation[1]}")
    if padding is not None and (padding[0] > kernel[0] // 2
                                or padding[1] > kernel[1] // 2):
        raise RuntimeError(f"pad should be smaller than or equal to half of "
                           f"kernel size, but got padW = {padding[1]}, "
                           f"padH = {padding[0]}, kW = {kernel[1]}, "
                           f"kH = {kernel[0]}")
    shape = tuple(input.shape)
    if input.dim() not in (3, 4) or 0 in shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with "
                           "optional 0 dim batch size for input, but got:"
                           f"{list(shape)}")
    c, h, w = shape[-3:]
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated "
                           f"output size: ({c}x{out[0]}x{out[1]}). Output "
                           "size is too small")


# ------------------------------------------------------ window gathering


def _axis_table(size, out, k, s, p, d):
    """(out, k) input positions of the windows along one axis; those < 0
    or >= size lie in the padding."""
    return (np.arange(out)[:, None] * s - p
            + np.arange(k)[None, :] * d).astype(np.int64)


def _pad(x, dim, low, high, fill):
    """x with `low` and `high` elements of `fill` added along dim."""
    parts = []
    for n in (low, high):
        shape = list(x.shape)
        shape[dim] = n
        parts.append(x.new_full(tuple(shape), fill) if n > 0 else None)
    if parts[0] is None and parts[1] is None:
        return x
    return _C.cat([t for t in (parts[0], x, parts[1]) if t is not None],
                  dim)


def _axis_take(x, dim, table, fill):
    """(y, slices): y holds along dim the elements x[table] (`fill` outside
    x) so that slices[j] (a slice along dim) picks table[:, j].  Evenly
    spaced positions (every pooling window) make y the padded x and the
    slices strided; others (adaptive windows) one index_select."""
    out, k = table.shape
    low = max(0, -int(table.min()))
    high = max(0, int(table.max()) - (x.shape[dim] - 1))
    steps = np.diff(table, axis=0)
    if out == 1 or (np.all(steps == steps.flat[0]) and steps.flat[0] > 0):
        step = int(steps.flat[0]) if out > 1 else 1
        starts = [int(table[0, j]) + low for j in range(k)]
        return _pad(x, dim, low, high, fill), [
            slice(b, b + (out - 1) * step + 1, step) for b in starts]
    index = _C.tensor(table.T.reshape(-1) + low, device=x.device)
    return _pad(x, dim, low, high, fill).index_select(dim, index), [
        slice(j * out, (j + 1) * out) for j in range(k)]


def _windows(x, rows, cols, fill):
    """(kh * kw, N, C, OH, OW): the windows of a 4-D x read through the
    (OH, kh) row and (OW, kw) column tables, one plane per kernel
    position in torch's scan order (rows, then columns)."""
    n, c = x.shape[0], x.shape[1]
    (oh, kh), (ow, kw) = rows.shape, cols.shape
    if rows.size == 0 or cols.size == 0:
        return x.new_full((kh * kw, n, c, oh, ow), fill)
    x, row_slices = _axis_take(x, 2, rows, fill)
    x, col_slices = _axis_take(x, 3, cols, fill)
    return _C.stack([x[:, :, r, q] for r in row_slices
                     for q in col_slices], 0)


def _first_inside(table):
    """table with each position before the input (< 0) replaced by its
    window's first position >= 0: the index torch reports for a maximum
    that no input element beats."""
    inside = np.where(table >= 0, table, np.iinfo(np.int64).max).min(
        axis=1, keepdims=True)
    return np.where(table >= 0, table, inside)


def _covered(table, size):
    """Whether every window of the table reads an input element."""
    inside = (table >= 0) & (table < size)
    return bool(inside.any(axis=1).all())


def _max_windows(x, rows, cols, width, need_indices=True):
    """Values and flat input indices of the maxima of the windows (the
    first of equal maxima, as torch scans a window).  When a gradient is
    to be recorded, the maxima are found without one and the values read
    again with a gather at their indices, whose backward is one
    scatter-add (far cheaper than the window stack's); a window of
    padding alone (no input element to gather) keeps the stack's.
    Without need_indices (and no gradient) the indices are None."""
    gather = _records_grad(x) and _covered(rows, x.shape[2]) \
        and _covered(cols, width)
    with no_grad() if gather else contextlib.nullcontext():
        win = _windows(x, rows, cols, _LOWEST.get(x.dtype, float("-inf")))
        if not (need_indices or gather):
            return win.amax(dim=0), None
        values, arg = win.max(dim=0)
        rows, cols = _first_inside(rows), _first_inside(cols)
        flat = (rows.T[:, None, :, None] * width
                + cols.T[None, :, None, :]).reshape(
                    (win.shape[0], 1, 1) + tuple(values.shape[-2:]))
        table = _C.tensor(flat, device=x.device).expand(tuple(win.shape))
        indices = table.gather(0, arg.unsqueeze(0)).squeeze(0)
    if gather:
        n, c, oh, ow = values.shape
        values = x.reshape(n, c, x.shape[2] * width).gather(
            2, indices.reshape(n, c, oh * ow)).reshape(n, c, oh, ow)
    return values, indices


def _batched(input, ndim):
    """(input with a batch dim, whether one was added)."""
    if input.dim() == ndim - 1:
        return input.unsqueeze(0), True
    return input, False


def _unbatch(result, added):
    if not added:
        return result
    if isinstance(result, tuple):
        return tuple(r.squeeze(0) for r in result)
    return result.squeeze(0)


# --------------------------------------------------------------- max pool


def _max_pool2d(input, kernel, stride, padding, dilation, ceil_mode,
                strict):
    """(values, indices) of a 3-D or 4-D input, arguments as pairs;
    strict adds the check torch makes on its index-computing path, and
    without it the indices may be None."""
    if input.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor "
                           "expected for input")
    h, w = input.shape[-2], input.shape[-1]
    out = tuple(_out_len(n, k, s, p, d, ceil_mode) for n, k, s, p, d in
                zip((h, w), kernel, stride, padding, dilation))
    _check_pool2d(input, kernel, stride, padding if strict else None,
                  dilation, out)
    if input.dtype is _C.bool:
        _float_only(input, "max_pool2d")
    x, added = _batched(input, 4)
    rows = _axis_table(h, out[0], kernel[0], stride[0], padding[0],
                       dilation[0])
    cols = _axis_table(w, out[1], kernel[1], stride[1], padding[1],
                       dilation[1])
    values, indices = _max_windows(x, rows, cols, w, need_indices=strict)
    if added:
        values = values.squeeze(0)
        indices = None if indices is None else indices.squeeze(0)
    return values, indices


def _records_grad(input):
    return input.requires_grad and _C._is_grad_enabled()


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0,
                            dilation=1, ceil_mode=False,
                            return_indices=False):
    """(values, indices) of the 2-D max pooling; indices are flat
    offsets into each input plane (row * W + column)."""
    args = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    return _max_pool2d(input, *args, ceil_mode, True)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum of each kernel_size window of the last two dims of an
    (N, C, H, W) or (C, H, W) input, windows `stride` apart (default:
    kernel_size) over the input padded with -inf, elements `dilation`
    apart; ceil_mode keeps a last partial window.  With return_indices,
    also each maximum's flat offset in its input plane."""
    args = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    strict = return_indices or _records_grad(input)
    values, indices = _max_pool2d(input, *args, ceil_mode, strict)
    return (values, indices) if return_indices else values


def _pool1d_arg(value, name):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise RuntimeError(f"max_pool1d() {name} must be an int, list "
                               "of ints or tuple of ints of size 1 but got "
                               f"size {len(value)}")
        value = value[0]
    return int(value)


def _max_pool1d_args(input, kernel_size, stride, padding, dilation,
                     ceil_mode):
    """torch's max_pool1d checks; (kernel, stride, padding, dilation)."""
    shape = tuple(input.shape)
    if input.dim() not in (2, 3) or 0 in shape[-2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) "
                           "tensor with optional 0 dim batch size for "
                           f"input, but got:{list(shape)}")
    k = _pool1d_arg(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple))
                                and len(stride) == 0) \
        else _pool1d_arg(stride, "stride")
    p = _pool1d_arg(padding, "padding")
    d = _pool1d_arg(dilation, "dilation")
    return k, s, p, d


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0,
                            dilation=1, ceil_mode=False,
                            return_indices=False):
    """(values, indices) of the 1-D max pooling of an (N, C, L) or (C, L)
    input; indices are offsets along L."""
    k, s, p, d = _max_pool1d_args(input, kernel_size, stride, padding,
                                  dilation, ceil_mode)
    values, indices = _max_pool2d(input.unsqueeze(-2), (1, k), (1, s),
                                  (0, p), (1, d), ceil_mode, True)
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """max_pool2d's rule along the last dim of an (N, C, L) or (C, L)
    input; indices are offsets along L."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding,
                                       dilation, ceil_mode)
    k, s, p, d = _max_pool1d_args(input, kernel_size, stride, padding,
                                  dilation, ceil_mode)
    for name, v in (("kernel_size", k), ("stride", s), ("dilation", d)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than "
                               f"zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, "
                           f"but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half "
                           f"of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    n = input.shape[-1]
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) \
        // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: "
                           f"{out}")
    return _max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d),
                       ceil_mode, False)[0].squeeze(-2)


# --------------------------------------------------------------- avg pool


def _avg_divisor(size, out, k, s, p):
    """Per output position along one axis: the window's length within the
    padded input, and within the input itself (torch's rule)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    padded = end - start
    real = np.minimum(end, size) - np.maximum(start, 0)
    return padded, real


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each kernel_size window of the last two dims of an
    (N, C, H, W) or (C, H, W) input, windows `stride` apart (default:
    kernel_size) over the input zero-padded by `padding`.  The divisor is
    the window's size within the padded input (count_include_pad, clipped
    at the padded edge by ceil_mode's last window), or its count of input
    elements, or divisor_override."""
    if input.dim() not in (3, 4):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with "
                           "optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size,
                                            stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    h, w = input.shape[-2], input.shape[-1]
    out = tuple(_out_len(n, k, s, p, 1, ceil_mode) for n, k, s, p in
                zip((h, w), kernel, stride, padding))
    _check_pool2d(input, kernel, stride, padding, (1, 1), out)
    _float_only(input, "avg_pool2d")
    x, added = _batched(input, 4)
    rows = _axis_table(h, out[0], kernel[0], stride[0], padding[0], 1)
    cols = _axis_table(w, out[1], kernel[1], stride[1], padding[1], 1)
    sums = _windows(x, rows, cols, 0.0).sum(dim=0)
    if divisor_override is not None:
        return _unbatch(sums / float(divisor_override), added)
    (ph, rh), (pw, rw) = (_avg_divisor(n, o, k, s, p) for n, o, k, s, p in
                          zip((h, w), out, kernel, stride, padding))
    divisor = np.outer(ph, pw) if count_include_pad else np.outer(rh, rw)
    if np.all(divisor == divisor.flat[0]):
        return _unbatch(sums / float(divisor.flat[0]), added)
    divisor = _C.tensor(divisor.astype(np.float64), dtype=x.dtype,
                        device=x.device)
    return _unbatch(sums / divisor, added)


def _check_1d_input(input, fn):
    """torch's check of a 1-D pool's (N, C, L) or (C, L) input, for the
    pools whose checks go through its argument checker (fn's name)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got "
                           f"{input.dim()}-dimensional tensor for argument "
                           f"#1 'self' (while checking arguments for {fn})")


def _one_int(value, fn, name):
    """An argument given as a value or a sequence of one, in torch's words
    for fn()."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise RuntimeError(f"{fn}() argument '{name}' should contain "
                               f"one int (got {len(value)})")
        value = value[0]
    return value


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """avg_pool2d's rule along the last dim of an (N, C, L) or (C, L)
    input."""
    _check_1d_input(input, "avg_pool1d")
    kernel = _one_int(kernel_size, "avg_pool1d", "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple))
                                          and len(stride) == 0) \
        else _one_int(stride, "avg_pool1d", "stride")
    padding = _one_int(padding, "avg_pool1d", "padding")
    return avg_pool2d(input.unsqueeze(-2), (1, kernel), (1, stride),
                      (0, padding), ceil_mode,
                      count_include_pad).squeeze(-2)
