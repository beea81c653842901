"""pygpu.nn: MultiheadAttention and the transformer encoder, with torch's
parameter and submodule names, so that state_dicts load across."""
from .. import _C
from . import init
from ._functional.attention import multi_head_attention_forward
from .layers import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention"]


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
