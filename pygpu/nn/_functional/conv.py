"""pygpu.nn.functional: convolutions, unfold/fold and padding.

One C primitive pair does the sliding windows: unfold (im2col) and fold
(col2im), each the other's gradient (csrc/ops/ops_im2col.c).  The rest is
composed from ops that have gradients already:

- conv2d: the columns of the input (N, C*kh*kw, L) times the weight seen
  as (G, Cout/G, K) in one batched matmul, plus the bias; a 1x1 stride-1
  unpadded convolution uses the input itself as its columns.  The columns
  hold N*C*kh*kw*L elements (kh*kw times the input's size).  Where nothing
  is recorded, a float32 or float64 CPU convolution with a column stride
  of 1 and a small weight (_DIRECT_MACS multiply-adds per output position
  and group at most) runs the direct loop instead (_C._conv2d_direct,
  csrc/cpu/cpu_conv.c): no columns, each output row summed in registers.
  Other CPU convolutions that record nothing make columns of more than
  _CHUNK_BYTES a few images at a time, each chunk's product written into
  its part of the result.
- conv_transpose2d: the weight's transpose times the input, then fold.
- conv1d and conv_transpose1d: the 2-D forms with a height of 1.
- pad: cat with constant blocks ('constant'), index_select with an index
  of the source positions ('reflect', 'replicate', 'circular').
"""
from ... import _C
from ..._compare import _scalar_name

__all__ = ["unfold", "fold", "pad", "conv1d", "conv2d", "conv_transpose1d",
           "conv_transpose2d"]


def _pair_of(name, value):
    """torch's int-or-pair argument as a 2-tuple of ints."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got "
                           f"size {len(value)}")
    return tuple(int(v) for v in value)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of a (N, C, H, W) or (C, H, W) input as columns
    (N, C * kh * kw, L), block l's elements in column l (torch's unfold)."""
    k = _pair_of("kernel_size", kernel_size)
    d = _pair_of("dilation", dilation)
    p = _pair_of("padding", padding)
    s = _pair_of("stride", stride)
    return _C._im2col(input, *k, *d, *p, *s)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns (N, C * kh * kw, L) or (C * kh * kw, L) summed into an image
    of output_size: each block's elements added at its place, overlaps
    summed (torch's fold, unfold's adjoint)."""
    o = _pair_of("output_size", output_size)
    k = _pair_of("kernel_size", kernel_size)
    d = _pair_of("dilation", dilation)
    p = _pair_of("padding", padding)
    s = _pair_of("stride", stride)
    return _C._col2im(input, *o, *k, *d, *p, *s)


# ----------------------------------------------------------------- pad

def _shape_str(shape):
    return "[" + ", ".join(str(int(v)) for v in shape) + "]"


def _source_index(mode, n, left, right):
    """The source position of each output position along a dim of n
    elements padded by left and right (either may be negative)."""
    out = []
    for o in range(-left, n + right):
        if mode == "reflect":
            i = -o if o < 0 else (2 * (n - 1) - o if o >= n else o)
        elif mode == "replicate":
            i = min(max(o, 0), n - 1)
        else:  # circular
            i = o % n
        out.append(i)
    return out


def _check_pad_mode(input, pad, mode):
    """torch's checks of a non-constant pad: the dims it takes, the
    non-zero sizes, the pad sizes each mode allows."""
    nd = len(pad) // 2
    if not nd + 1 <= input.ndim <= nd + 2 or nd > 3:
        raise NotImplementedError(f"Padding size {len(pad)} is not supported "
                                  f"for {input.ndim}D input tensor.")
    shape = tuple(input.shape)
    if mode != "circular":
        batch_ok = input.ndim == nd + 2 or shape[0] != 0
        if not batch_ok or any(v == 0 for v in shape[1:]):
            raise RuntimeError(
                f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                f"possibly 0 batch size and other non-zero dimensions for "
                f"input, but got: {_shape_str(shape)}")
    for i in range(nd):
        dim = input.ndim - 1 - i
        n, left, right = shape[dim], pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                f"Argument #{4 + 2 * i}: Padding size should be less than "
                f"the corresponding input dimension, but got: padding "
                f"({left}, {right}) at dimension {dim} of input "
                f"{_shape_str(shape)}")
        if mode == "circular":
            if left > n or right > n:
                raise RuntimeError("Padding value causes wrapping around "
                                   "more than once.")
            if n + left + right <= 0:
                raise RuntimeError("Negative padding value is resulting in "
                                   "an empty dimension")
        elif n + left + right < 1:
            raise RuntimeError(
                f"input padded by ({left}, {right}) at dimension {dim} of "
                f"{_shape_str(shape)} is too small: calculated output size "
                f"{n + left + right} must be >= 1")


def _narrowed(x, dim, left, right):
    """x with -left / -right elements dropped at the ends of dim where
    those pads are negative."""
    start = -left if left < 0 else 0
    stop = x.shape[dim] + (right if right < 0 else 0)
    if stop - start < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start == 0 and stop == x.shape[dim]:
        return x
    return x.narrow(dim, start, stop - start)


def pad(input, pad, mode="constant", value=None):
    """input padded along its last len(pad) // 2 dims, the last dim first:
    pad = (left, right, top, bottom, front, back) as far as given;
    negative pads crop.  mode 'constant' fills with value (0 by default);
    'reflect' mirrors without the edge, 'replicate' repeats the edge,
    'circular' wraps around (1 to 3 padded dims, over inputs with one or
    two dims more)."""
    pad = [int(v) for v in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the "
            f"input dimension but got padding length {len(pad)} and input "
            f"of dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in '
                               f"value argument")
        _check_pad_mode(input, pad, mode)
    x = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if left == 0 and right == 0:
            continue
        if mode == "constant":
            x = _narrowed(x, dim, left, right)
            parts = []
            for width in (left, None, right):
                if width is None:
                    parts.append(x)
                elif width > 0:
                    shape = list(x.shape)
                    shape[dim] = width
                    parts.append(_C.full(tuple(shape), 0 if value is None
                                         else value, dtype=x.dtype,
                                         device=x.device))
            x = _C.cat(parts, dim) if len(parts) > 1 else x
        else:
            if mode == "circular":  # wraps around the cropped dim
                x = _narrowed(x, dim, left, right)
                left, right = max(left, 0), max(right, 0)
            index = _C.tensor(_source_index(mode, x.shape[dim], left, right),
                              dtype=_C.int64, device=x.device)
            x = x.index_select(dim, index)
    return x if x is not input else input.clone()


# ---------------------------------------------------------- convolutions

def _tuple_arg(name, value, nd):
    """An int or a list of nd ints, as torch's convolutions take them."""
    if isinstance(value, int):
        return (value,) * nd
    value = [int(v) for v in value]
    if len(value) == 1:
        return tuple(value) * nd
    if len(value) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} "
            f"values to match the convolution dimensions, but got "
            f"{name}={value}")
    return tuple(value)


def _check_common(input, weight, bias, nd, name, transposed, stride,
                  padding, dilation, groups):
    """torch's checks of a convolution's arguments, in its words; the
    spatial dims nd, name 'conv2d' etc."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input "
            f"to {name}, but got input of size: {_shape_str(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(
            f"expected stride to be a single integer value or a list of "
            f"{weight.ndim - 2} values to match the convolution dimensions, "
            f"but got stride={list(stride)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"{list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input.dtype)}"
                           f" but found {_scalar_name(weight.dtype)}")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input.dtype)}"
                           f" but found {_scalar_name(bias.dtype)}")
    wshape = _shape_str(weight.shape)
    if weight.shape[0] == 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least 1 at "
            f"dimension 0, but got weight of size {wshape} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by "
            f"{groups} at dimension 0, but got weight of size [{wshape}] "
            f"instead")
    channels = input.shape[1 if input.ndim == nd + 2 else 0]
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    out_channels = (weight.shape[1] * groups if transposed
                    else weight.shape[0])
    if channels != expected:
        head = "Given transposed=1" if transposed else f"Given groups={groups}"
        raise RuntimeError(
            f"{head}, weight of size {wshape}, expected input"
            f"{_shape_str(input.shape)} to have {expected} channels, but got "
            f"{channels} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        head = "Given transposed=1, weight" if transposed else "Given weight"
        raise RuntimeError(
            f"{head} of size {wshape}, expected bias to be 1-dimensional "
            f"with {out_channels} elements, but got bias of size "
            f"{_shape_str(bias.shape)} instead")


def _same_padding(weight, nd, dilation):
    """'same': the total padding d * (k - 1) of each dim, as (symmetric
    part, extra on the far side)."""
    sym, extra = [], []
    for i in range(nd):
        total = dilation[i] * (weight.shape[2 + i] - 1)
        sym.append(total // 2)
        extra.append(total - 2 * (total // 2))
    return sym, extra


def _autocast(input, weight, bias):
    """Under autocast on input's device, the floating operands in its
    dtype: convolutions are among torch's lower-precision ops."""
    on, dtype = _C._get_autocast_state(input.device.type)
    if not on:
        return input, weight, bias
    return tuple(t.to(dtype) if t is not None and t.dtype.is_floating_point
                 else t for t in (input, weight, bias))


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    """The convolution of nd (1 or 2) spatial dims, through conv2d's
    columns."""
    input, weight, bias = _autocast(input, weight, bias)
    stride = _tuple_arg("stride", stride, nd)
    extra = [0] * nd
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for "
                                   "strided convolutions")
            padding = None
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    dilation = _tuple_arg("dilation", dilation, nd)
    if padding is None:
        if weight.ndim == nd + 2:
            padding, extra = _same_padding(weight, nd, dilation)
        else:
            padding = (0,) * nd
    else:
        padding = _tuple_arg("padding", padding, nd)
    _check_common(input, weight, bias, nd, name, False, stride, padding,
                  dilation, groups)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    if any(extra):
        x = pad(x, [v for i in reversed(range(nd)) for v in (0, extra[i])])
    if nd == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, dilation = ((1,) + stride, (0,) + tuple(padding),
                                     (1,) + dilation)
    out = _conv2d(x, weight, bias, stride, tuple(padding), dilation, groups)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


# The direct loop's limit: (Cin / G) * kh * kw * (Cout / G) at most.  It
# sums a block of 8 output channels over one vector of 8 output columns
# from the image rows in place, which beats writing the columns and a
# BLAS product on small weights (LeNet's 1->6 and 6->16 5x5: 0.6-0.7x the
# time of the columns' path); on a ResNet block's 64->64 3x3 (36864) the
# BLAS product is twice as fast.
_DIRECT_MACS = 4096


# Columns of more bytes than this, on the CPU with nothing recorded, are
# made a few images at a time, each batch's product written into its part
# of the result: the columns stay in the cache and their memory is reused
# instead of mapped afresh.  A ResNet block (32x64x56x56, 3x3): 231 MB of
# columns at once, 330 ms on one thread; 7 MB at a time, 294 ms.
_CHUNK_BYTES = 8 << 20


def _recording(x, weight, bias):
    """Whether autograd records this convolution."""
    return _C._is_grad_enabled() and (
        x.requires_grad or weight.requires_grad
        or (bias is not None and bias.requires_grad))


def _direct(x, weight, bias, stride, groups):
    """Whether conv2d runs the direct loop: on the CPU in float32 or
    float64, at column stride 1, a small weight, nothing recorded."""
    if (x.device.type != "cpu" or stride[1] != 1
            or x.dtype not in (_C.float32, _C.float64)):
        return False
    if _recording(x, weight, bias):
        return False
    cout, cg, kh, kw = weight.shape
    return cg * kh * kw * (cout // groups) <= _DIRECT_MACS


def _conv2d(x, weight, bias, stride, padding, dilation, groups):
    """conv2d of a batched input after the checks: the direct loop where it
    serves (_direct), else columns, one batched matmul, bias."""
    n, c, h, w = x.shape
    cout, cg, kh, kw = weight.shape
    padded = (h + 2 * padding[0], w + 2 * padding[1])
    dk = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    if padded[0] < dk[0] or padded[1] < dk[1]:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({padded[0]} x "
            f"{padded[1]}). Kernel size: ({dk[0]} x {dk[1]}). Kernel size "
            f"can't be greater than actual input size")
    oh = (padded[0] - dk[0]) // stride[0] + 1
    ow = (padded[1] - dk[1]) // stride[1] + 1
    if _direct(x, weight, bias, stride, groups):
        return _C._conv2d_direct(x, weight, bias, *dilation, *padding,
                                 *stride, groups)
    k = cg * kh * kw
    one_by_one = (kh, kw) == (1, 1) and stride == (1, 1) and padding == (0, 0)
    per_image = k * groups * oh * ow * x.element_size()
    if (not one_by_one and x.device.type == "cpu" and n > 1
            and n * per_image > _CHUNK_BYTES
            and not _recording(x, weight, bias)):
        return _conv2d_chunked(x, weight, bias, stride, padding, dilation,
                               groups, (oh, ow),
                               max(1, _CHUNK_BYTES // per_image))
    if one_by_one:
        cols = x.reshape(n, c, h * w)
    else:
        cols = _C._im2col(x, kh, kw, *dilation, *padding, *stride)
    if groups == 1:
        out = weight.reshape(cout, k) @ cols
        bshape = (1, cout, 1)
    else:
        out = (weight.reshape(groups, cout // groups, k)
               @ cols.view(n, groups, k, oh * ow))
        bshape = (1, groups, cout // groups, 1)
    if bias is not None:  # in place: the product saved its inputs only
        out.add_(bias.view(bshape))
    return out.view(n, cout, oh, ow)


def _conv2d_chunked(x, weight, bias, stride, padding, dilation, groups,
                    out_hw, chunk):
    """_conv2d's product, `chunk` images' columns at a time, each written
    into its part of the result (nothing recorded)."""
    n = x.shape[0]
    cout, cg, kh, kw = weight.shape
    k, L = cg * kh * kw, out_hw[0] * out_hw[1]
    out = _C.empty((n, cout, L), dtype=x.dtype, device=x.device)
    if groups == 1:
        wm = weight.reshape(cout, k)
    else:
        wm = weight.reshape(groups, cout // groups, k)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        cols = _C._im2col(x[s:e], kh, kw, *dilation, *padding, *stride)
        if groups == 1:
            _C.matmul(wm, cols, out=out[s:e])
        else:
            _C.matmul(wm, cols.view(e - s, groups, k, L),
                      out=out[s:e].view(e - s, groups, cout // groups, L))
    if bias is not None:
        out.add_(bias.view(1, cout, 1))
    return out.view(n, cout, *out_hw)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    """1-D convolution (cross-correlation, as torch's) of a (N, Cin, L) or
    (Cin, L) input with a (Cout, Cin / groups, k) weight; padding an int,
    a 1-tuple, 'valid' or 'same' (stride 1)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1,
                 "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1,
           groups=1):
    """2-D convolution (cross-correlation, as torch's) of a (N, Cin, H, W)
    or (Cin, H, W) input with a (Cout, Cin / groups, kh, kw) weight;
    stride, padding and dilation an int or a pair, padding also 'valid'
    or 'same' (stride 1; an odd total pads the extra at the far side)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2,
                 "conv2d")


def _conv_transpose(input, weight, bias, stride, padding, output_padding,
                    groups, dilation, nd, name):
    """The transposed convolution of nd (1 or 2) spatial dims: the
    weight's transpose times the input, folded."""
    input, weight, bias = _autocast(input, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of "
                        f"ints, not str")
    stride = _tuple_arg("stride", stride, nd)
    padding = _tuple_arg("padding", padding, nd)
    output_padding = _tuple_arg("output_padding", output_padding, nd)
    dilation = _tuple_arg("dilation", dilation, nd)
    _check_common(input, weight, bias, nd, name, True, stride, padding,
                  dilation, groups)
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride,
                                                   dilation)):
        if nd == 1:
            detail = (f"output_padding: {output_padding[0]} stride: "
                      f"{stride[0]} dilation: {dilation[0]}")
        else:
            detail = (f"output_padding_height: {output_padding[0]} "
                      f"output_padding_width: {output_padding[1]} "
                      f"stride_height: {stride[0]} stride_width: "
                      f"{stride[1]} dilation_height: {dilation[0]} "
                      f"dilation_width: {dilation[1]}")
        raise RuntimeError(f"output padding must be smaller than either "
                           f"stride or dilation, but got {detail}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    if nd == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, output_padding, dilation = (
            (1,) + stride, (0,) + padding, (0,) + output_padding,
            (1,) + dilation)
    out = _conv_transpose2d(x, weight, bias, stride, padding, output_padding,
                            groups, dilation, name)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def _conv_transpose2d(x, weight, bias, stride, padding, output_padding,
                      groups, dilation, name):
    n, cin, h, w = x.shape
    _, cg, kh, kw = weight.shape
    cout = cg * groups
    size = [(v - 1) * s - 2 * p + d * (k - 1) + 1
            for v, s, p, d, k in zip((h, w), stride, padding, dilation,
                                     (kh, kw))]
    if size[0] < 1 or size[1] < 1:
        raise RuntimeError(
            f"{name}: the output of input {_shape_str(x.shape)} with "
            f"weight {_shape_str(weight.shape)}, stride={list(stride)}, "
            f"padding={list(padding)} and dilation={list(dilation)} would "
            f"have size ({size[0]} x {size[1]}), which is not positive")
    # fold straight to the padded size when an output padding below the
    # stride keeps the number of blocks; else fold, then pad with zeros
    # (no block reaches there).
    direct = [op < s for op, s in zip(output_padding, stride)]
    fold_size = [sz + (op if ok else 0)
                 for sz, op, ok in zip(size, output_padding, direct)]
    k = cg * kh * kw
    xs = x.reshape(n, cin, h * w)
    if groups == 1:
        cols = weight.reshape(cin, k).mT @ xs
    else:
        cols = (weight.reshape(groups, cin // groups, k).mT
                @ xs.view(n, groups, cin // groups, h * w))
        cols = cols.reshape(n, cout * kh * kw, h * w)
    out = _C._col2im(cols, *fold_size, kh, kw, *dilation, *padding, *stride)
    if not all(direct):
        out = pad(out, [0, 0 if direct[1] else output_padding[1],
                        0, 0 if direct[0] else output_padding[0]])
    if bias is not None:  # in place: fold saved nothing
        out.add_(bias.view(1, cout, 1, 1))
    return out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """The transposed 1-D convolution (conv1d's gradient with respect to
    its input) of a (N, Cin, L) or (Cin, L) input with a
    (Cin, Cout / groups, k) weight."""
    return _conv_transpose(input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """The transposed 2-D convolution (conv2d's gradient with respect to
    its input) of a (N, Cin, H, W) or (Cin, H, W) input with a
    (Cin, Cout / groups, kh, kw) weight; output_padding adds rows and
    columns at the far side (smaller than the stride or the dilation)."""
    return _conv_transpose(input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 2,
                           "conv_transpose2d")
