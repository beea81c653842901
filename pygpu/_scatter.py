"""scatter / Tensor.scatter_ with torch's forms: scatter(dim, index, src)
and scatter(dim, index, value).  Composed of ops that record their own
gradients: the flat offset of every index element into a contiguous copy
of self, then one indexed store (`copy[offsets] = values`), which keeps
the last of repeated offsets on the CPU (torch leaves the choice
unspecified) and gives every src element the gradient at its offset, as
torch's scatter backward (a gather) does."""
from . import _C

__all__ = ["scatter"]


def _check(self, dim, index, src):
    if not isinstance(index, _C.Tensor) or index.dtype != _C.int64:
        raise RuntimeError("scatter(): Expected dtype int64 for index")
    if src is not None and src.dtype != self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to "
                           "src.dtype")
    nd = max(self.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range "
                         f"of [{-nd}, {nd - 1}], but got {dim})")
    if max(index.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of "
                           "dimensions as self tensor")
    if src is not None and max(src.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of "
                           "dimensions as src tensor")
    dim %= nd
    shape = list(self.shape) or [1]
    ishape = list(index.shape) or [1]
    sshape = (list(src.shape) or [1]) if src is not None else None
    for d in range(nd):
        if (d != dim and ishape[d] > shape[d]) or \
                (sshape is not None and ishape[d] > sshape[d]):
            raise RuntimeError(
                f"Expected index {ishape} to be smaller than self {shape} "
                f"apart from dimension {dim}"
                + (f" and to be smaller size than src {sshape}"
                   if sshape is not None else ""))
    return dim, shape, ishape


def _offsets(index, dim, shape, ishape):
    """The flat offset into a contiguous tensor of `shape` of every element
    of index (reshaped to ishape), as one int64 tensor of ishape."""
    idx = index.reshape(ishape)
    if idx.numel():
        lo, hi = idx.min().item(), idx.max().item()
        bad = lo if lo < 0 else (hi if hi >= shape[dim] else None)
        if bad is not None:
            raise RuntimeError(f"index {bad} is out of bounds for dimension "
                               f"{dim} with size {shape[dim]}")
    stride, strides = 1, [0] * len(shape)
    for d in reversed(range(len(shape))):
        strides[d] = stride
        stride *= shape[d]
    pos = idx * strides[dim]
    for d in range(len(shape)):
        if d != dim:
            view = [1] * len(shape)
            view[d] = ishape[d]
            along = _C.arange(ishape[d], dtype=_C.int64, device=index.device)
            pos = pos + along.reshape(view) * strides[d]
    return pos


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """scatter(input, dim, index, src) or scatter(input, dim, index,
    value=...): a copy of input with src's elements (or value) written at
    the positions index gives along dim."""
    if reduce is not None:
        raise NotImplementedError(
            "pygpu's scatter does not implement reduce=; use scatter_add "
            "for reduce='add'")
    if isinstance(src, _C.Tensor):
        if value is not None:
            raise TypeError("scatter() got both src and value")
    elif src is not None:  # scatter(dim, index, 2.0): the value form
        src, value = None, src
    elif value is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or "
                        "'value'")
    dim, shape, ishape = _check(input, dim, index, src)
    flat = input.reshape(-1).clone()
    if index.numel():
        pos = _offsets(index, dim, shape, ishape).reshape(-1)
        if src is None:
            flat[pos] = value
        else:
            part = src.reshape(list(src.shape) or [1])
            part = part[tuple(slice(0, n) for n in ishape)]
            flat[pos] = part.reshape(-1)
    return flat.reshape(tuple(input.shape))


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In-place scatter: self takes scatter(self, dim, index, ...)."""
    return self.copy_(scatter(self, dim, index, src, value, reduce=reduce))
