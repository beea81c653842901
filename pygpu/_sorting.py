"""sort, argsort, topk, kthvalue, median, mode and unique.

All of them stand on one op, ``_C._sort_indices(input, dim, descending)``
(csrc/ops/ops_sort.c, the SORT kind: a merge sort per line on the CPU, a
bitonic sort on CUDA): the int64 indices that sort every line along dim,
NaN the largest, ties in the order of their index (stable).  Values are
``_C._sorted_values``: the input gathered at the chosen indices, recorded
with the op's own Node (SortBackward0, TopkBackward0, ...;
csrc/autograd/autograd_sort.c), whose gradient is scattered back through
the indices, torch's rule for these ops.  Selections (kthvalue, median,
mode) pick positions of the sorted indices with tensor ops on the input's
device: no Python loop over elements.
"""
import builtins

from . import _C
from . import return_types
from ._C import Tensor

__all__ = ["sort", "argsort", "topk", "kthvalue", "median", "mode",
           "unique"]

# which Node _C._sorted_values records (csrc/autograd/autograd.h)
_SORT, _TOPK, _KTHVALUE, _MEDIAN_ALL, _MEDIAN, _MODE = range(6)
_FLOATS = (_C.float32, _C.float64, _C.float16, _C.bfloat16)


def _check(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be "
                        f"Tensor, not {type(input).__name__}")


def _dim(input, dim):
    """dim checked and made non-negative (0 for a 0-d input)."""
    nd = builtins.max(input.ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, builtins.bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if dim < -nd or dim >= nd:
        raise IndexError(f"Dimension out of range (expected to be in range "
                         f"of [{-nd}, {nd - 1}], but got {dim})")
    return dim + nd if dim < 0 else dim


def _lines(input, dim):
    """input seen with at least one dim (a 0-d tensor as one element),
    dim made non-negative."""
    d = _dim(input, dim)
    return (input.reshape(1) if input.ndim == 0 else input), d


def _size(x, d):
    return x.shape[d]


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) of input sorted along dim; NaN is the largest.
    Ties keep their order (the sort is always stable)."""
    _check(input, "sort")
    x, d = _lines(input, dim)
    ix = _C._sort_indices(x, d, builtins.bool(descending))
    values = _C._sorted_values(x, d, ix, False, _SORT)
    if input.ndim == 0:
        values, ix = values.reshape(()), ix.reshape(())
    return return_types.sort(values, ix)


def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort input along dim (as sort's)."""
    _check(input, "argsort")
    x, d = _lines(input, dim)
    ix = _C._sort_indices(x, d, builtins.bool(descending))
    return ix.reshape(()) if input.ndim == 0 else ix


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) elements along dim and their indices, in
    order (NaN is the largest)."""
    _check(input, "topk")
    x, d = _lines(input, dim)
    if not 0 <= k <= _size(x, d):
        raise RuntimeError("selected index k out of range")
    ix = _C._sort_indices(x, d, builtins.bool(largest))
    ix = ix.narrow(d, 0, k).contiguous()
    values = _C._sorted_values(x, d, ix, False, _TOPK)
    if input.ndim == 0 and k == 1:
        values, ix = values.reshape(()), ix.reshape(())
    return return_types.topk(values, ix)


def _pick(x, d, ix, pos, keepdim, ndim0, which):
    """values and indices at positions pos (int64, x's shape with dim d of
    size 1) of the sorted indices ix, recorded as op `which`."""
    sel = ix.gather(d, pos)
    squeeze = not keepdim and not ndim0
    values = _C._sorted_values(x, d, sel, squeeze, which)
    if ndim0:
        return values.reshape(()), sel.reshape(())
    return values, (sel.squeeze(d) if squeeze else sel)


def _positions(x, d, value):
    shape = list(x.shape)
    shape[d] = 1
    return _C.full(shape, value, dtype=_C.int64, device=x.device)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element along dim (k from 1) and its index."""
    _check(input, "kthvalue")
    x, d = _lines(input, dim)
    n = _size(x, d)
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have "
                         f"non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for "
                           f"dimension {d}")
    ix = _C._sort_indices(x, d, False)
    values, sel = _pick(x, d, ix, _positions(x, d, k - 1), keepdim,
                        input.ndim == 0, _KTHVALUE)
    return return_types.kthvalue(values, sel)


def median(input, dim=None, keepdim=False):
    """The lower median of all elements (a 0-d tensor), or along dim a
    (values, indices) pair.  A line with a NaN has the median NaN (the
    first NaN's index), as in torch."""
    _check(input, "median")
    if dim is None:
        flat = input.reshape(-1)
        if flat.shape[0] == 0:
            if input.dtype not in _FLOATS:
                raise RuntimeError("median(): an empty tensor of an integer "
                                   "dtype has no median")
            return _C.full((), float("nan"), dtype=input.dtype,
                           device=input.device)
        return _median(flat, 0, False, False, _MEDIAN_ALL)[0]
    x, d = _lines(input, dim)
    values, sel = _median(x, d, keepdim, input.ndim == 0, _MEDIAN)
    return return_types.median(values, sel)


def _median(x, d, keepdim, ndim0, which):
    """The lower median along d and its index (a NaN's when a line has
    one), recorded as op `which`."""
    n = _size(x, d)
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have "
                         f"non-zero size.")
    ix = _C._sort_indices(x, d, False)
    pos = _positions(x, d, (n - 1) // 2)
    if x.dtype in _FLOATS:
        nans = x.detach().isnan().sum(d, keepdim=True)
        # a NaN sorts last: the first of them is at n - nans
        pos = pos + (nans > 0).long() * ((n - (n - 1) // 2) - nans)
    return _pick(x, d, ix, pos, keepdim, ndim0, which)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest among equally
    frequent ones) and an index of it (its last occurrence)."""
    _check(input, "mode")
    x, d = _lines(input, dim)
    n = _size(x, d)
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have "
                         f"non-zero size.")
    ix = _C._sort_indices(x, d, False)
    s = x.detach().gather(d, ix)
    # runs of equal values along the sorted line: r = the run of each
    # position, count[r] = its length
    start = _C.ones(s.shape, dtype=_C.int64, device=s.device)
    if n > 1:
        start[_slice(s.ndim, d, 1, None)] = (
            s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)).long()
    run = start.cumsum(d) - 1
    count = _C.zeros(s.shape, dtype=_C.int64, device=s.device)
    count = count.scatter_add(d, run, _C.ones_like(run))
    best = count.argmax(d, keepdim=True)      # the first: the smallest
    last = count.cumsum(d).gather(d, best) - 1  # the run's last position
    values, sel = _pick(x, d, ix, last, keepdim, input.ndim == 0, _MODE)
    return return_types.mode(values, sel)


def _slice(ndim, d, lo, hi):
    return tuple(slice(lo, hi) if i == d else slice(None)
                 for i in range(ndim))


def _unique_flat(input, return_inverse, return_counts):
    flat = input.reshape(-1)
    n = flat.shape[0]
    ix = _C._sort_indices(flat, 0, False)
    s = flat.gather(0, ix)
    start = _C.ones((n,), dtype=_C.bool, device=flat.device)
    if n > 1:
        start[1:] = s[1:] != s[:-1]
    values = s[start]
    out = [values]
    if return_inverse or return_counts:
        run = start.long().cumsum(0) - 1
    if return_inverse:
        inv = _C.zeros((n,), dtype=_C.int64, device=flat.device)
        out.append(inv.scatter_add(0, ix, run).reshape(input.shape))
    if return_counts:
        counts = _C.zeros((values.shape[0],), dtype=_C.int64,
                          device=flat.device)
        out.append(counts.scatter_add(0, run, _C.ones_like(run)))
    return out


def _unique_dim(input, dim, return_inverse, return_counts):
    d = _dim(input, dim)
    if input.ndim == 0:
        raise IndexError(f"Dimension out of range (expected to be in range "
                         f"of [-1, 0], but got {dim})")
    m = input.shape[d]
    order = [d] + [i for i in range(input.ndim) if i != d]
    x = input.permute(order).contiguous()
    rows = x.reshape(m, -1)
    c = rows.shape[1]
    # a stable sort by each column from the last: the rows in
    # lexicographic order
    perm = _C.arange(m, device=input.device)
    for col in range(c - 1, -1, -1):
        key = rows[:, col].index_select(0, perm)
        perm = perm.index_select(0, _C._sort_indices(key, 0, False))
    s = rows.index_select(0, perm)
    start = _C.ones((m,), dtype=_C.bool, device=input.device)
    if m > 1 and c > 0:
        start[1:] = (s[1:] != s[:-1]).any(1)
    elif m > 1:
        start[1:] = False
    values = x.index_select(0, perm)[start].permute(
        _inverse_order(order)).contiguous()
    out = [values]
    if return_inverse or return_counts:
        run = start.long().cumsum(0) - 1
    if return_inverse:
        inv = _C.zeros((m,), dtype=_C.int64, device=input.device)
        out.append(inv.scatter_add(0, perm, run))
    if return_counts:
        counts = _C.zeros((int(start.sum().item()),), dtype=_C.int64,
                          device=input.device)
        out.append(counts.scatter_add(0, run, _C.ones_like(run)))
    return out


def _inverse_order(order):
    inv = [0] * len(order)
    for i, o in enumerate(order):
        inv[o] = i
    return inv


def unique(input, sorted=True, return_inverse=False, return_counts=False,
           dim=None):
    """The distinct elements of input, in ascending order (NaNs each
    distinct, last); with return_inverse the index of each input element
    in them, with return_counts how often each occurs.  With dim, the
    distinct slices along dim, in lexicographic order."""
    _check(input, "unique")
    if dim is None:
        out = _unique_flat(input, return_inverse, return_counts)
    else:
        out = _unique_dim(input, dim, return_inverse, return_counts)
    return out[0] if len(out) == 1 else tuple(out)
