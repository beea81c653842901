"""pygpu.nn.functional: embedding.

A lookup is one ``index_select`` of weight's rows by the flattened
indices, reshaped to ``(*input.shape, embedding_dim)``; index_select's own
rule gives the gradient (the output's rows added into zeros at their
indices).  padding_idx and scale_grad_by_freq change only that gradient:
a hook on the gathered rows zeroes the rows looked up at padding_idx (with
``where``, so a NaN gradient there is dropped too, as torch drops it) and
divides each row by the number of times its index occurs in the input.
max_norm renormalises, under no_grad and before the lookup, each looked-up
row whose norm exceeds max_norm to max_norm / (norm + 1e-7) of itself, in
weight's memory, as torch's embedding_renorm_ does.
"""
from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["embedding"]

_INDEX_DTYPES = (_C.int64, _C.int32)
_HALF = (_C.float16, _C.bfloat16)


def _check_indices(input):
    if input.dtype not in _INDEX_DTYPES:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the "
            "following scalar types: Long, Int; but got "
            f"{input.type()} instead (while checking arguments for "
            "embedding)")


def _padding_row(padding_idx, num_embeddings):
    """padding_idx as a row number (negative counts from the end), or -1
    for none; torch's check and message."""
    if padding_idx is None:
        return -1
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


@no_grad()
def _renorm_(weight, flat, max_norm, norm_type):
    """Rows of weight that flat looks up with a norm_type-norm above
    max_norm scaled by max_norm / (norm + 1e-7), in place."""
    if flat.numel() == 0:
        return
    rows = flat.unique()
    picked = weight.index_select(0, rows)
    work = picked.float() if picked.dtype in _HALF else picked
    norms = work.norm(norm_type, dim=1, keepdim=True)
    scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    weight[rows] = (work * scale).to(weight.dtype)


def _gradient_hook(flat, num_embeddings, padding_row, by_freq):
    """The hook on the gathered rows: zero at padding_row, divided by each
    index's count when by_freq."""
    def hook(grad):
        if by_freq:
            counts = _C.zeros(num_embeddings, dtype=_C.int64,
                              device=flat.device)
            counts.index_add_(0, flat, _C.ones(flat.numel(), dtype=_C.int64,
                                               device=flat.device))
            grad = grad / counts.index_select(0, flat).unsqueeze(1)
        if padding_row >= 0:
            grad = _C.where((flat != padding_row).unsqueeze(1), grad, 0.0)
        return grad
    return hook


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """weight's rows picked by the integer indices of input (int64 or
    int32, any shape): a tensor of shape (*input.shape, weight.size(1)).

    padding_idx: the row whose gradient stays zero (negative counts from
    the end).  max_norm: looked-up rows with a larger norm_type-norm are
    rescaled to that norm in place first.  scale_grad_by_freq: each row's
    gradient divided by its index's count in input.  An index outside
    [0, weight.size(0)) raises IndexError("index out of range in self") on
    the CPU and, on CUDA, a CudaError (torch's device-side assert, though
    the context stays usable) naming the index.
    """
    if sparse:
        raise NotImplementedError(
            "embedding(sparse=True): pygpu has no sparse tensors, so no "
            "sparse gradients; use sparse=False")
    _check_indices(input)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    padding_row = _padding_row(padding_idx, num)
    flat = input.reshape(-1)
    if max_norm is not None:
        flat = flat.contiguous()
        _renorm_(weight, flat, max_norm, norm_type)
    rows = weight.index_select(0, flat)
    if rows.requires_grad and (padding_row >= 0 or scale_grad_by_freq):
        rows.register_hook(_gradient_hook(flat, num, padding_row,
                                          scale_grad_by_freq))
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))
