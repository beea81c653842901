"""pygpu.nn.functional: adaptive pooling, 1-D and 2-D, max and average,
over torch's windows: output position i of an axis of n inputs and o
outputs covers [floor(i * n / o), ceil((i + 1) * n / o)).  Max pools read
the windows through pooling.py's tables (one index_select per axis, a
shorter window repeating its last position); average pools of unequal
windows are a product with an (o, n) averaging matrix per axis.  Composed
of tensor ops with gradients, like pooling.py."""
import numpy as np

from ... import _C
from .pooling import (_batched, _check_1d_input, _float_only, _max_windows,
                      _one_int, _unbatch, avg_pool2d)

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d"]


def _adaptive_table(size, out):
    """(out, kmax) positions of torch's adaptive windows along one axis,
    [floor(i * size / out), ceil((i + 1) * size / out)), a shorter window
    repeating its last position; and each window's length."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    kmax = int((end - start).max()) if out > 0 else 0
    table = np.minimum(start[:, None] + np.arange(kmax)[None, :],
                       end[:, None] - 1)
    return table.astype(np.int64), end - start


def _adaptive_sizes(output_size, input, n, wrong_length):
    """The n output sizes (an int repeats), None taking the input's;
    wrong_length is the message for another count."""
    if isinstance(output_size, (list, tuple)):
        sizes = tuple(output_size)
    else:
        sizes = (output_size,) * n
    if len(sizes) != n:
        raise RuntimeError(wrong_length)
    return tuple(int(input.shape[-n + i]) if v is None else int(v)
                 for i, v in enumerate(sizes))


def _adaptive_checks(fn, input, dims, shape_msg):
    """torch's checks of an adaptive pool's input: its number of dims,
    and no empty dim but the batch."""
    if input.dim() not in dims:
        raise RuntimeError(shape_msg)
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(
                f"{fn}(): Expected input to have non-zero size for "
                f"non-batch dimensions, but input has sizes "
                f"{list(input.shape)} with dimension {i} being empty")


def adaptive_avg_pool2d(input, output_size):
    """The mean over torch's adaptive windows: output row i covers input
    rows [floor(i * H / OH), ceil((i + 1) * H / OH)), likewise columns.
    output_size is an int or a pair whose None entries keep the input's
    size."""
    sizes = _adaptive_sizes(output_size, input, 2,
                            "adaptive_avg_pool2d: output_size must be 2")
    if min(sizes) < 0:
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater "
            f"than or equal to 0 but received {{{sizes[0]}, {sizes[1]}}}")
    _adaptive_checks("adaptive_avg_pool2d", input, (3, 4),
                     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but "
                     f"got {list(input.shape)}")
    _float_only(input, "adaptive_avg_pool2d")
    h, w = input.shape[-2], input.shape[-1]
    oh, ow = sizes
    if oh == 1 and ow == 1:
        return input.mean(dim=(-2, -1), keepdim=True)
    if oh > 0 and ow > 0 and h % oh == 0 and w % ow == 0:
        return avg_pool2d(input, (h // oh, w // ow))
    # Unequal windows: the mean of each axis's windows as a product with
    # a (out, in) averaging matrix, rows then columns.
    result = input
    for dim, (n, o) in ((-1, (w, ow)), (-2, (h, oh))):
        table, length = _adaptive_table(n, o)
        weights = np.zeros((o, n))
        for i in range(o):
            weights[i, table[i, 0]:table[i, 0] + length[i]] = 1.0 / length[i]
        mat = _C.tensor(weights, dtype=input.dtype, device=input.device)
        if dim == -1:
            result = _C.matmul(result, mat.t())
        else:
            result = _C.matmul(mat, result)
    return result


def _adaptive_1d_size(name, input, output_size):
    """The int output size of a 1-d adaptive pool of an (N, C, L) or
    (C, L) input, checked in torch's words."""
    _check_1d_input(input, name)
    return _one_int(output_size, name, "output_size")


def adaptive_avg_pool1d(input, output_size):
    """adaptive_avg_pool2d's rule along the last dim of an (N, C, L) or
    (C, L) input."""
    output_size = _adaptive_1d_size("adaptive_avg_pool1d", input, output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2),
                               (1, output_size)).squeeze(-2)


def _adaptive_max(x, sizes):
    """(values, indices) of a 4-D x over adaptive windows."""
    h, w = x.shape[-2], x.shape[-1]
    rows, _ = _adaptive_table(h, sizes[0])
    cols, _ = _adaptive_table(w, sizes[1])
    if rows.size == 0 or cols.size == 0:
        shape = tuple(x.shape[:2]) + sizes
        return (x.new_full(shape, 0.0),
                _C.zeros(shape, dtype=_C.int64, device=x.device))
    return _max_windows(x, rows, cols, w)


def adaptive_max_pool2d_with_indices(input, output_size,
                                     return_indices=False):
    """(values, indices) of adaptive_max_pool2d."""
    sizes = _adaptive_sizes(output_size, input, 2,
                            "adaptive_max_pool2d(): internal error: "
                            "output_size.size() must be 2")
    _adaptive_checks("adaptive_max_pool2d", input, (3, 4),
                     "adaptive_max_pool2d(): Expected 3D or 4D tensor, but "
                     f"got: {list(input.shape)}")
    if min(sizes) < 0:
        shape = list(input.shape[:-2]) + list(sizes)
        raise RuntimeError(f"Trying to create tensor with negative "
                           f"dimension {min(sizes)}: {shape}")
    _float_only(input, "adaptive_max_pool2d")
    x, added = _batched(input, 4)
    return _unbatch(_adaptive_max(x, sizes), added)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over torch's adaptive windows (see
    adaptive_avg_pool2d); with return_indices, also each maximum's flat
    offset in its input plane."""
    values, indices = adaptive_max_pool2d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d_with_indices(input, output_size,
                                     return_indices=False):
    """(values, indices) of adaptive_max_pool1d."""
    output_size = _adaptive_1d_size("adaptive_max_pool1d", input, output_size)
    _adaptive_checks("adaptive_max_pool1d", input, (2, 3), "")
    if output_size < 0:
        shape = list(input.shape[:-1]) + [output_size]
        raise RuntimeError(f"Trying to create tensor with negative "
                           f"dimension {output_size}: {shape}")
    _float_only(input, "adaptive_max_pool1d")
    x, added = _batched(input, 3)
    values, indices = _adaptive_max(x.unsqueeze(2), (1, int(output_size)))
    return _unbatch((values.squeeze(2), indices.squeeze(2)), added)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """adaptive_max_pool2d's rule along the last dim of an (N, C, L) or
    (C, L) input."""
    values, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (values, indices) if return_indices else values
