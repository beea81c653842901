"""pygpu.nn.functional: scaled dot-product attention and the multi-head
attention forward.

Both are the math form over batched matmul and softmax, so autograd
records the steps:

    scores  = (query * scale) @ key^T       (..., L, S), any leading dims,
                                            broadcast as matmul does
    scores  = where(mask, scores, -inf)     a bool mask: True takes part
            | scores + mask                 a float mask is added
    weights = softmax(scores, -1)           rows with no key taking part
                                            give zeros, not NaN
    out     = dropout(weights, p) @ value   (..., L, Ev)

is_causal is torch's top-left causal mask (query i sees keys 0..i), made
from two aranges.  enable_gqa lets the query have a multiple of key's and
value's heads (dim -3): each group of query heads reads one head,
through an expand, as torch's repeat_interleave.

A row whose keys are all masked has softmax(-inf, ..., -inf) = NaN; such
rows are set to 0 before the softmax (so no NaN reaches the gradient) and
their weights to 0 after, as torch's math backend does.  The rows are
found from the mask, which is usually much smaller than the scores.

multi_head_attention_forward follows torch.nn.functional's: the packed or
separate input projections, bias_k/bias_v and add_zero_attn appending one
key, static_k/static_v, masks made float (bool True = masked out there,
the opposite of scaled_dot_product_attention's), key_padding_mask added
to attn_mask, the output projection, and the head-averaged weights.  The
heads live in a dim of their own, (N, H, L, D), rather than torch's
(N * H, L, D).
"""
import math
import warnings

from ... import _C
from ..dropout import dropout

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_FLOATS = (_C.float32, _C.float64, _C.float16, _C.bfloat16)
_C_NAME = {_C.float32: "float", _C.float64: "double", _C.float16: "c10::Half",
           _C.bfloat16: "c10::BFloat16", _C.int64: "long int",
           _C.int32: "int", _C.uint8: "unsigned char", _C.bool: "bool"}
_SCALAR_NAME = {_C.float32: "Float", _C.float64: "Double",
                _C.float16: "Half", _C.bfloat16: "BFloat16",
                _C.int64: "Long", _C.int32: "Int", _C.uint8: "Byte",
                _C.bool: "Bool"}


def _causal_mask(L, S, device):
    """(L, S) bool: True where key j <= query i (top-left aligned)."""
    rows = _C.arange(L, device=device).unsqueeze(1)
    return rows >= _C.arange(S, device=device).unsqueeze(0)


def _dead_rows(mask):
    """Where a row of the mask lets no key take part (keepdim), or None."""
    if mask.shape[-1] == 0:
        return None
    if mask.dtype == _C.bool:
        return ~mask.any(-1, keepdim=True)
    return (mask == float("-inf")).all(-1, keepdim=True)


def _attend(query, key, value, mask, dropout_p, scale, training=True,
            causal=False):
    """The math form: (output, weights after dropout, as torch returns
    them).  mask: None, bool (True takes part) or float (added); causal:
    mask is the causal one, under which every query sees at least key
    0."""
    scores = _C.matmul(query * scale, key.transpose(-2, -1))
    dead = None
    if mask is not None:
        if mask.dtype == _C.bool:
            scores = _C.where(mask, scores, float("-inf"))
        else:
            scores = scores + mask
        dead = None if causal else _dead_rows(mask)
        if dead is not None:
            scores = _C.where(dead, 0.0, scores)
    weights = _C.softmax(scores, -1, None)
    if dead is not None:
        weights = _C.where(dead, 0.0, weights)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training)
    return _C.matmul(weights, value), weights


def _check_sdpa(query, key, value, attn_mask, is_causal):
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 "
            f"dimensional, but got query.dim: {query.dim()} key.dim: "
            f"{key.dim()} and value.dim: {value.dim()} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got "
            f"query.dtype: {_C_NAME[query.dtype]} key.dtype: "
            f"{_C_NAME[key.dtype]} and value.dtype: {_C_NAME[value.dtype]} "
            "instead.")
    if query.dtype not in _FLOATS:
        raise RuntimeError(f"expected scalar type Float but found "
                           f"{_SCALAR_NAME[query.dtype]}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not "
                "be set when is_causal=True")
        if attn_mask.dtype not in (_C.bool, query.dtype):
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match "
                f"query dtype, but got attn_mask.dtype: "
                f"{_C_NAME[attn_mask.dtype]} and  query.dtype: "
                f"{_C_NAME[query.dtype]} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query's last dim "
            f"({query.shape[-1]}) and key's ({key.shape[-1]}) differ")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: key's sequence length "
            f"({key.shape[-2]}) and value's ({value.shape[-2]}) differ")


def _group_heads(t, groups):
    """(..., Hk, S, E) -> (..., Hk * groups, S, E), head h reading head
    h // groups."""
    shape = tuple(t.shape)
    t = t.unsqueeze(-3).expand(shape[:-2] + (groups,) + shape[-2:])
    return t.reshape(shape[:-3] + (shape[-3] * groups,) + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two
    dims, any leading (broadcast) dims: query (..., L, E), key (..., S, E),
    value (..., S, Ev) -> (..., L, Ev).

    attn_mask: bool (True = takes part) or of query's dtype (added),
    broadcastable to (..., L, S).  is_causal: query i sees keys 0..i.
    scale defaults to 1 / sqrt(E).  dropout_p drops attention weights
    (always, as torch: pass 0 in eval).  enable_gqa: key and value may
    have fewer heads (dim -3) than query, dividing its count."""
    _check_sdpa(query, key, value, attn_mask, is_causal)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and \
            query.shape[-3] != key.shape[-3]:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide "
                               "the number of heads in query")
        key = _group_heads(key, hq // hk)
        value = _group_heads(value, hq // hv)
    mask = attn_mask
    if is_causal:
        mask = _causal_mask(query.shape[-2], key.shape[-2], query.device)
    out, _ = _attend(query, key, value, mask, dropout_p, scale,
                     causal=is_causal)
    return out


# ------------------------------------------------ multi-head attention

def _float_mask(mask, name, dtype):
    """A bool mask as a float one (-inf where True), torch's check."""
    if mask is None:
        return None
    if mask.dtype != _C.bool and mask.dtype not in _FLOATS:
        raise AssertionError(f"only bool and floating types of {name} are "
                             "supported")
    if mask.dtype == _C.bool:
        return _C.zeros(tuple(mask.shape), dtype=dtype,
                        device=mask.device).masked_fill_(mask, float("-inf"))
    return mask


def _check_mha_shapes(query, key, value, key_padding_mask, attn_mask,
                      num_heads):
    """True for batched (3-D) input; torch's checks and messages."""
    q, k, v = query.dim(), key.dim(), value.dim()
    if q == 3:
        if k != 3 or v != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be "
                f"3-D but found {k}-D and {v}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be "
                f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be "
                f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                "instead")
        return True
    if q == 2:
        if k != 2 or v != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to "
                f"be 2-D but found {k}-D and {v}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to "
                f"be `None` or 1-D but found {key_padding_mask.dim()}-D "
                "tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be "
                    f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                    "instead")
            want = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != want:
                raise AssertionError(f"Expected `attn_mask` shape to be "
                                     f"{want} but got "
                                     f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor "
                         f"but received {q}-D query tensor")


def _project(query, key, value, in_proj_weight, in_proj_bias, separate):
    """q, k, v of shape (L|S, N, E): one product for self-attention, two
    when key is value, three otherwise."""
    linear = _C._linear
    if separate is not None:
        wq, wk, wv = separate
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias.chunk(3)
        return (linear(query, wq, bq), linear(key, wk, bk),
                linear(value, wv, bv))
    E = query.shape[-1]
    if query is key and key is value:
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    wq, wkv = in_proj_weight.split([E, 2 * E])
    bq = bkv = None
    if in_proj_bias is not None:
        bq, bkv = in_proj_bias.split([E, 2 * E])
    if key is value:
        k, v = linear(key, wkv, bkv).chunk(2, -1)
        return linear(query, wq, bq), k, v
    wk, wv = wkv.chunk(2)
    bk, bv = (None, None) if bkv is None else bkv.chunk(2)
    return (linear(query, wq, bq), linear(key, wk, bk),
            linear(value, wv, bv))


def _heads(t, n, h, d):
    """(S, N, H * d) -> (N, H, S, d)."""
    return t.reshape(t.shape[0], n, h, d).permute(1, 2, 0, 3)


def _pad_column(mask):
    """One zero column appended to a float mask's last dim."""
    if mask is None:
        return None
    zero = _C.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype,
                    device=mask.device)
    return _C.cat([mask, zero], -1)


def multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
        in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
        out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
        need_weights=True, attn_mask=None, use_separate_proj_weight=False,
        q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
        static_k=None, static_v=None, average_attn_weights=True,
        is_causal=False):
    """Multi-head attention over (L, N, E) query and (S, N, Ek|Ev) key and
    value (or unbatched (L, E), (S, E)): (output, weights), weights None
    unless need_weights, averaged over the heads when
    average_attn_weights.  Masks: attn_mask (L, S) or (N * num_heads, L,
    S), key_padding_mask (N, S); bool True (or -inf) keeps a key out."""
    batched = _check_mha_shapes(query, key, value, key_padding_mask,
                                attn_mask, num_heads)
    if not batched:
        query, key, value = (query.unsqueeze(1), key.unsqueeze(1),
                             value.unsqueeze(1))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if key_padding_mask is not None and attn_mask is not None and \
            key_padding_mask.dtype != attn_mask.dtype:
        warnings.warn("Support for mismatched key_padding_mask and attn_mask "
                      "is deprecated. Use same type for both instead.",
                      stacklevel=2)
    key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask",
                                   query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use "
            "the Transformer module method `generate_square_subsequent_mask` "
            "to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask
    else:
        attn_mask = _float_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = False
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of "
                             f"{embed_dim_to_check}, but got {E}")
    D = E // num_heads
    if D * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads "
                             f"{num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match "
                f"value's {value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight),
                        ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but "
                                     f"{name}_proj_weight is None")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match "
                                 f"value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but "
                                 "in_proj_weight is None")
        separate = None
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias,
                       separate)
    S = key.shape[0]
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, "
                    f"but should be {(L, S)}.")
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (N * num_heads, L, S):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, "
                    f"but should be {(N * num_heads, L, S)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is "
                               "not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _C.cat([k, bias_k.reshape(1, 1, E).expand(1, N, E)])
        v = _C.cat([v, bias_v.reshape(1, 1, E).expand(1, N, E)])
        attn_mask = _pad_column(attn_mask)
        key_padding_mask = _pad_column(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    q = _heads(q, N, num_heads, D)
    k = _static(static_k, "static_k", N, num_heads, D) \
        if static_k is not None else _heads(k, N, num_heads, D)
    v = _static(static_v, "static_v", N, num_heads, D) \
        if static_v is not None else _heads(v, N, num_heads, D)
    if add_zero_attn:
        zeros = _C.zeros((N, num_heads, 1, D), dtype=k.dtype, device=k.device)
        k = _C.cat([k, zeros], 2)
        v = _C.cat([v, zeros.to(v.dtype)], 2)
        attn_mask = _pad_column(attn_mask)
        key_padding_mask = _pad_column(key_padding_mask)
    S = k.shape[2]
    mask = None
    if attn_mask is not None:
        mask = attn_mask.reshape(N, num_heads, L, S) \
            if attn_mask.dim() == 3 else attn_mask
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != N:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be "
                                 f"{N}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != S:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be "
                                 f"{S}, but got {key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(N, 1, 1, S)
        mask = kpm if mask is None else mask + kpm
    if is_causal:
        mask = _causal_mask(L, S, q.device)
    if not training:
        dropout_p = 0.0
    out, weights = _attend(q, k, v, mask, dropout_p, 1.0 / math.sqrt(D),
                           training, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(L, N, E)
    out = _C._linear(out, out_proj_weight, out_proj_bias)
    if not need_weights:
        return (out if batched else out.squeeze(1)), None
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        out, weights = out.squeeze(1), weights.squeeze(0)
    return out, weights


def _static(t, name, n, h, d):
    """static_k / static_v of shape (N * H, S, D) -> (N, H, S, D)."""
    if t.shape[0] != n * h:
        raise AssertionError(f"expecting {name}.size(0) of {n * h}, but got "
                             f"{t.shape[0]}")
    if t.shape[2] != d:
        raise AssertionError(f"expecting {name}.size(2) of {d}, but got "
                             f"{t.shape[2]}")
    return t.reshape(n, h, t.shape[1], d)
