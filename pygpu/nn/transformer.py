"""pygpu.nn: MultiheadAttention and the transformer encoder, with torch's
parameter and submodule names, so that state_dicts load across."""
import copy
import warnings

from .. import _C
from . import functional as F
from . import init
from ._functional.attention import _float_mask, multi_head_attention_forward
from .container import ModuleList
from .dropout import Dropout
from .layers import GELU, Linear, ReLU
from .module import Module
from .normalization import LayerNorm
from .parameter import Parameter

__all__ = ["MultiheadAttention", "TransformerEncoderLayer",
           "TransformerEncoder"]


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's output projection: a Linear under torch's
    class name, so reprs and state_dicts read as torch's."""


class MultiheadAttention(Module):
    """Attention over num_heads heads of embed_dim // num_heads features.

    Parameters as torch's: in_proj_weight (3 * embed_dim, embed_dim), or
    q_proj_weight, k_proj_weight (embed_dim, kdim) and v_proj_weight
    (embed_dim, vdim) when kdim or vdim differ from embed_dim;
    in_proj_bias (3 * embed_dim) and out_proj (a Linear) with bias=True;
    bias_k and bias_v (1, 1, embed_dim) with add_bias_kv.  Projections are
    xavier_uniform_, biases zero, bias_k/bias_v xavier_normal_.

    forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False) returns
    (output, weights): input (L, N, E), or (N, L, E) with batch_first, or
    unbatched (L, E); weights (N, L, S) averaged over heads, else
    (N, num_heads, L, S), or None unless need_weights.  A bool mask's True
    keeps a key out; a float mask is added to the scores."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True,
                 add_bias_kv=False, add_zero_attn=False, kdim=None,
                 vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = (self.kdim == embed_dim and
                                    self.vdim == embed_dim)
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(
                _C.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(
                _C.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(
                _C.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(
                _C.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_C.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(_C.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(_C.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None,
                need_weights=True, attn_mask=None, average_attn_weights=True,
                is_causal=False):
        batched = query.dim() == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (t.transpose(1, 0) for t in (query, key))
                    value = key
            else:
                query, key, value = (t.transpose(1, 0)
                                     for t in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
            self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights


# ------------------------------------------------------------ the encoder

def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _is_causal_mask(mask, size):
    """Whether a float mask is exactly the square causal one of size
    (-inf above the diagonal, 0 elsewhere)."""
    if tuple(mask.shape) != (size, size):
        return False
    rows = _C.arange(size, device=mask.device).unsqueeze(1)
    above = _C.arange(size, device=mask.device).unsqueeze(0) > rows
    causal = _C.zeros((size, size), dtype=mask.dtype, device=mask.device)
    return bool((mask == causal.masked_fill_(above, float("-inf"))).all())


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual
    connection and a LayerNorm (after the sum, or before the block with
    norm_first=True), as torch's: submodules self_attn, linear1, dropout,
    linear2, norm1, norm2, dropout1, dropout2.  activation is "relu",
    "gelu" or a callable.  forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1,
                 activation=F.relu, layer_norm_eps=1e-5, batch_first=False,
                 norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None,
                is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask,
                                   src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                          is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask,
                           key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer (submodules layers.0, layers.1,
    ...), then norm when given.  forward(src, mask=None,
    src_key_padding_mask=None, is_causal=None): is_causal None finds out
    whether mask is the square causal mask.  enable_nested_tensor and
    mask_check are kept for torch's signature; pygpu has no nested
    tensors, so they change nothing."""

    def __init__(self, encoder_layer, num_layers, norm=None,
                 enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer)
                                  for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None,
                is_causal=None):
        if mask is not None and src_key_padding_mask is not None and \
                mask.dtype != src_key_padding_mask.dtype:
            warnings.warn("Support for mismatched src_key_padding_mask and "
                          "mask is deprecated. Use same type for both "
                          "instead.", stacklevel=2)
        src_key_padding_mask = _float_mask(
            src_key_padding_mask, "src_key_padding_mask", src.dtype)
        mask = _float_mask(mask, "mask", src.dtype)
        if is_causal is None:
            is_causal = False
            if mask is not None:
                batch_first = self.layers[0].self_attn.batch_first \
                    if len(self.layers) else False
                seq = src.shape[0] if src.dim() == 2 else \
                    src.shape[1 if batch_first else 0]
                is_causal = _is_causal_mask(mask, seq)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output
