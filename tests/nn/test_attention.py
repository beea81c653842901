"""F.scaled_dot_product_attention and nn.MultiheadAttention: values against
NumPy float64 for every float dtype, masks (bool, float, causal, fully
masked rows), grouped heads, gradients by gradcheck, the module's
parameters, init, masks, unbatched input and batch_first, torch's errors,
and (when torch is importable) torch's outputs with the same weights."""
import math

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from pygpu.nn import functional as F

DTYPES = ["float32", "float64", "float16", "bfloat16"]
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2,
        "bfloat16": 1e-2}


def tensor(a, dtype="float64", device="cpu", requires_grad=False):
    if np.asarray(a).dtype == bool:
        return pygpu.tensor(np.asarray(a), device=device)
    t = pygpu.tensor(np.asarray(a, dtype=np.float64), device=device)
    return t.to(getattr(pygpu, dtype)).requires_grad_(requires_grad)


def npy(t):
    t = t.detach().cpu()
    if t.dtype in (pygpu.float16, pygpu.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


def softmax_ref(s):
    """softmax over the last axis; rows that are all -inf give 0."""
    dead = np.all(s == -np.inf, axis=-1, keepdims=True)
    s = np.where(dead, 0.0, s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.where(dead, 0.0, e / e.sum(axis=-1, keepdims=True))


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        L, S = s.shape[-2:]
        mask = np.tril(np.ones((L, S), dtype=bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return softmax_ref(s) @ v


SHAPES = [  # query, key, value
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)),
    ((2, 4, 8), (2, 5, 8), (2, 5, 3)),
    ((4, 8), (5, 8), (5, 6)),
    ((2, 2, 3, 4, 8), (2, 2, 3, 5, 8), (2, 2, 3, 5, 6)),
    ((2, 3, 4, 8), (1, 3, 5, 8), (1, 3, 5, 6)),  # broadcast batch
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: str(s[0]))
@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_values(device, rng, shapes, dtype):
    q, k, v = (tensor(rng.standard_normal(s), dtype, device) for s in shapes)
    got = F.scaled_dot_product_attention(q, k, v)
    assert got.dtype == q.dtype
    ref = sdpa_ref(npy(q), npy(k), npy(v))
    assert tuple(got.shape) == ref.shape
    r = RTOL[dtype]
    np.testing.assert_allclose(npy(got), ref, rtol=r * 4, atol=r * 2)


@pytest.mark.parametrize("kind", ["bool", "bool_full", "float", "causal",
                                  "causal_long_query", "scale"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_masks(device, rng, kind, dtype):
    L = 7 if kind == "causal_long_query" else 4
    q = tensor(rng.standard_normal((2, 3, L, 8)), dtype, device)
    k = tensor(rng.standard_normal((2, 3, 5, 8)), dtype, device)
    v = tensor(rng.standard_normal((2, 3, 5, 6)), dtype, device)
    kw, mask, causal, scale = {}, None, False, None
    if kind == "bool":
        mask = rng.random((L, 5)) > 0.4
        mask[:, 0] = True
        kw["attn_mask"] = tensor(mask, device=device)
    elif kind == "bool_full":
        mask = rng.random((2, 3, L, 5)) > 0.5
        kw["attn_mask"] = tensor(mask, device=device)
    elif kind == "float":
        mask = rng.standard_normal((1, 3, L, 5))
        mask[0, 1, 2, 3] = -np.inf
        kw["attn_mask"] = tensor(mask, dtype, device)
        mask = npy(kw["attn_mask"])
    elif kind.startswith("causal"):
        causal = kw["is_causal"] = True
    else:
        scale = kw["scale"] = 0.7
    got = F.scaled_dot_product_attention(q, k, v, **kw)
    ref = sdpa_ref(npy(q), npy(k), npy(v), mask, causal, scale)
    r = RTOL[dtype]
    np.testing.assert_allclose(npy(got), ref, rtol=r * 4, atol=r * 2)


def test_sdpa_causal_is_top_left(device):
    # query i sees keys 0..i: with one key the first query sees only it
    q = pygpu.randn(3, 4, device=device)
    k = pygpu.randn(5, 4, device=device)
    v = pygpu.tensor(np.eye(5)[:, :5], dtype=pygpu.float32, device=device)
    w = npy(F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert w[0].tolist() == [1, 0, 0, 0, 0]
    assert (w[1, 2:] == 0).all() and (w[2, 3:] == 0).all()
    np.testing.assert_allclose(w.sum(1), 1, rtol=1e-6)


def test_sdpa_fully_masked_rows(device, rng):
    q = tensor(rng.standard_normal((2, 4, 8)), device=device,
               requires_grad=True)
    k = tensor(rng.standard_normal((2, 5, 8)), device=device,
               requires_grad=True)
    v = tensor(rng.standard_normal((2, 5, 3)), device=device,
               requires_grad=True)
    mask = np.ones((4, 5), dtype=bool)
    mask[1] = False
    for m in (tensor(mask, device=device),
              tensor(np.where(mask, 0.0, -np.inf), device=device)):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        o = npy(out)
        assert (o[:, 1] == 0).all() and np.isfinite(o).all()
        np.testing.assert_allclose(o, sdpa_ref(npy(q), npy(k), npy(v), mask),
                                   rtol=1e-12)
        q.grad = k.grad = v.grad = None
        out.sum().backward()
        for t in (q, k, v):
            assert np.isfinite(npy(t.grad)).all()
        assert (npy(q.grad)[:, 1] == 0).all()


def test_sdpa_gqa(device, rng):
    q = tensor(rng.standard_normal((2, 6, 4, 8)), device=device)
    k = tensor(rng.standard_normal((2, 2, 5, 8)), device=device)
    v = tensor(rng.standard_normal((2, 3, 5, 4)), device=device)
    got = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    kr = np.repeat(npy(k), 3, axis=1)
    vr = np.repeat(npy(v), 2, axis=1)
    np.testing.assert_allclose(npy(got), sdpa_ref(npy(q), kr, vr),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match="Number of heads in key and value "
                       "must divide the number of heads in query"):
        F.scaled_dot_product_attention(q[:, :4], k[:, :1].expand(2, 3, 5, 8),
                                       v[:, :2], enable_gqa=True)


def test_sdpa_empty(device, rng):
    q = tensor(rng.standard_normal((2, 0, 8)), device=device)
    k = tensor(rng.standard_normal((2, 5, 8)), device=device)
    v = tensor(rng.standard_normal((2, 5, 6)), device=device)
    assert tuple(F.scaled_dot_product_attention(q, k, v).shape) == (2, 0, 6)
    q = tensor(rng.standard_normal((2, 4, 8)), device=device)
    out = F.scaled_dot_product_attention(q, k[:, :0], v[:, :0])
    assert tuple(out.shape) == (2, 4, 6) and (npy(out) == 0).all()


def test_sdpa_dropout(device):
    pygpu.manual_seed(3)
    q = pygpu.randn(1, 400, 4, device=device)
    k = pygpu.randn(1, 6, 4, device=device)
    v = pygpu.ones(1, 6, 1, device=device)
    plain = npy(F.scaled_dot_product_attention(q, k, v))
    np.testing.assert_allclose(plain, 1, rtol=1e-6)
    out = npy(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    assert not np.allclose(out, 1)  # weights were dropped and rescaled
    assert abs(out.mean() - 1) < 0.1  # but the expectation is kept
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert (npy(zero) == 0).all()


@pytest.mark.parametrize("kind", ["plain", "float_mask", "bool_mask",
                                  "causal", "scale_gqa"])
def test_sdpa_gradcheck(device, rng, kind):
    q = tensor(rng.standard_normal((2, 2, 3, 4)), device=device,
               requires_grad=True)
    k = tensor(rng.standard_normal((2, 1 if kind == "scale_gqa" else 2, 4,
                                    4)), device=device, requires_grad=True)
    v = tensor(rng.standard_normal(tuple(k.shape[:-1]) + (3,)),
               device=device, requires_grad=True)
    args = [q, k, v]
    if kind == "float_mask":
        args.append(tensor(rng.standard_normal((3, 4)), device=device,
                           requires_grad=True))
        assert gradcheck(lambda a, b, c, m: F.scaled_dot_product_attention(
            a, b, c, attn_mask=m), args)
        return
    kw = {}
    if kind == "bool_mask":
        m = rng.random((2, 1, 3, 4)) > 0.4
        m[..., 0] = True
        kw["attn_mask"] = tensor(m, device=device)
    elif kind == "causal":
        kw["is_causal"] = True
    elif kind == "scale_gqa":
        kw.update(scale=0.3, enable_gqa=True)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(
        a, b, c, **kw), args)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_gradient_dtypes(device, rng, dtype, masked):
    shapes = [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]
    low = [tensor(rng.standard_normal(s), dtype, device, True)
           for s in shapes]
    ref = [tensor(npy(t), "float64", device, True) for t in low]
    g = rng.standard_normal((2, 3, 4, 6))
    kw = {}
    if masked:
        m = rng.random((4, 5)) > 0.4
        m[:, 0] = True
        kw["attn_mask"] = tensor(m, device=device)
    F.scaled_dot_product_attention(*low, **kw).backward(
        tensor(g, dtype, device))
    F.scaled_dot_product_attention(*ref, **kw).backward(
        tensor(npy(tensor(g, dtype, device)), "float64", device))
    r = RTOL[dtype] * (3 if dtype == "bfloat16" else 1)
    for a, b in zip(low, ref):
        assert a.grad.dtype == a.dtype
        np.testing.assert_allclose(npy(a.grad), npy(b.grad), rtol=r * 4,
                                   atol=r * 4)


def test_sdpa_errors(device):
    q = pygpu.randn(2, 3, 4, 8, device=device)
    k = pygpu.randn(2, 3, 5, 8, device=device)
    v = pygpu.randn(2, 3, 5, 6, device=device)
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(RuntimeError, match=r"Expected query, key, and value "
                       r"to all be  at least 2 dimensional, but got "
                       r"query.dim: 1 key.dim: 4 and value.dim: 4 instead."):
        sdpa(pygpu.randn(8, device=device), k, v)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to "
                       "have the same dtype, but got query.dtype: double "
                       "key.dtype: float and value.dtype: float instead."):
        sdpa(q.double(), k, v)
    with pytest.raises(RuntimeError, match="expected scalar type Float but "
                       "found Long"):
        sdpa(q.long(), k.long(), v.long())
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be "
                       "set when is_causal=True"):
        sdpa(q, k, v, attn_mask=pygpu.ones(4, 5, device=device).bool(),
             is_causal=True)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be "
                       "bool or float or to match query dtype, but got "
                       "attn_mask.dtype: long int and  query.dtype: float "
                       "instead."):
        sdpa(q, k, v, attn_mask=pygpu.zeros(4, 5, dtype=pygpu.int64,
                                            device=device))
    with pytest.raises(RuntimeError, match="attn_mask.dtype: double"):
        sdpa(q, k, v, attn_mask=pygpu.zeros(4, 5, dtype=pygpu.float64,
                                            device=device))
    with pytest.raises(RuntimeError, match="last dim"):
        sdpa(q, k[..., :7], v)
    with pytest.raises(RuntimeError, match="sequence length"):
        sdpa(q, k, v[..., :4, :])


# ------------------------------------------------------------------- MHA

def mha_ref(x_q, x_k, x_v, w_in, b_in, w_out, b_out, heads, mask=None):
    """NumPy multi-head attention over (L, N, E) inputs with a packed
    projection; mask: float (L, S) added, or None.  (output, weights
    averaged over heads)."""
    E = x_q.shape[-1]
    D = E // heads
    wq, wk, wv = np.split(w_in, 3)
    bq, bk, bv = np.split(b_in, 3)

    def split(x):  # (S, N, E) -> (N, H, S, D)
        return x.reshape(x.shape[0], x.shape[1], heads, D).transpose(1, 2, 0,
                                                                      3)
    q, k, v = split(x_q @ wq.T + bq), split(x_k @ wk.T + bk), \
        split(x_v @ wv.T + bv)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(D)
    if mask is not None:
        s = s + mask
    w = softmax_ref(s)
    o = (w @ v).transpose(2, 0, 1, 3).reshape(x_q.shape[0], x_q.shape[1], E)
    return o @ w_out.T + b_out, w.mean(1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("self_attention", [True, False])
def test_mha_values(device, rng, dtype, self_attention):
    pygpu.manual_seed(1)
    m = nn.MultiheadAttention(8, 2, device=device,
                              dtype=getattr(pygpu, dtype))
    with pygpu.no_grad():
        m.in_proj_bias.copy_(tensor(rng.standard_normal(24) * 0.1, dtype,
                                    device))
        m.out_proj.bias.copy_(tensor(rng.standard_normal(8) * 0.1, dtype,
                                     device))
    xq = tensor(rng.standard_normal((4, 3, 8)), dtype, device)
    xk = xq if self_attention else tensor(rng.standard_normal((5, 3, 8)),
                                          dtype, device)
    xv = xk if self_attention else tensor(rng.standard_normal((5, 3, 8)),
                                          dtype, device)
    S = xk.shape[0]
    mask = rng.standard_normal((4, S))
    mask[2, 1] = -np.inf
    M = tensor(mask, dtype, device)
    out, w = m(xq, xk, xv, attn_mask=M)
    assert out.dtype == xq.dtype and tuple(out.shape) == (4, 3, 8)
    assert tuple(w.shape) == (3, 4, S)
    ref_o, ref_w = mha_ref(npy(xq), npy(xk), npy(xv), npy(m.in_proj_weight),
                           npy(m.in_proj_bias), npy(m.out_proj.weight),
                           npy(m.out_proj.bias), 2, npy(M))
    r = RTOL[dtype] * (2 if dtype == "bfloat16" else 1)
    np.testing.assert_allclose(npy(out), ref_o, rtol=r * 4, atol=r * 4)
    np.testing.assert_allclose(npy(w), ref_w, rtol=r * 4, atol=r * 2)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_mha_gradient_dtypes(device, rng, dtype):
    pygpu.manual_seed(8)
    low = nn.MultiheadAttention(8, 2, device=device,
                                dtype=getattr(pygpu, dtype))
    ref = nn.MultiheadAttention(8, 2, device=device, dtype=pygpu.float64)
    ref.load_state_dict({n: tensor(npy(t), "float64", device)
                         for n, t in low.state_dict().items()})
    x = tensor(rng.standard_normal((4, 3, 8)), dtype, device, True)
    x64 = tensor(npy(x), "float64", device, True)
    g = tensor(rng.standard_normal((4, 3, 8)), dtype, device)
    low(x, x, x)[0].backward(g)
    ref(x64, x64, x64)[0].backward(tensor(npy(g), "float64", device))
    r = RTOL[dtype] * (3 if dtype == "bfloat16" else 1)
    np.testing.assert_allclose(npy(x.grad), npy(x64.grad), rtol=r * 4,
                               atol=r * 4)
    grads = dict(ref.named_parameters())
    for n, p in low.named_parameters():
        assert p.grad.dtype == p.dtype
        np.testing.assert_allclose(npy(p.grad), npy(grads[n].grad),
                                   rtol=r * 4, atol=r * 4, err_msg=n)


def test_mha_parameters_and_init(device):
    pygpu.manual_seed(0)
    m = nn.MultiheadAttention(64, 4, device=device)
    names = dict(m.named_parameters())
    assert list(names) == ["in_proj_weight", "in_proj_bias",
                           "out_proj.weight", "out_proj.bias"]
    assert list(m.state_dict()) == list(names)
    assert tuple(m.in_proj_weight.shape) == (192, 64)
    assert m.head_dim == 16 and m._qkv_same_embed_dim
    w = npy(m.in_proj_weight)
    bound = math.sqrt(6 / (64 + 192))  # xavier_uniform_
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01
    assert (npy(m.in_proj_bias) == 0).all()
    assert (npy(m.out_proj.bias) == 0).all()
    assert m.q_proj_weight is None and m.bias_k is None
    s = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, bias=False,
                              add_bias_kv=True, device=device,
                              dtype=pygpu.float64)
    assert list(dict(s.named_parameters())) == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k",
        "bias_v", "out_proj.weight"]
    assert tuple(s.k_proj_weight.shape) == (8, 5)
    assert tuple(s.v_proj_weight.shape) == (8, 3)
    assert tuple(s.bias_k.shape) == (1, 1, 8)
    assert s.in_proj_weight is None and s.in_proj_bias is None
    assert s.out_proj.bias is None
    assert all(p.dtype == pygpu.float64 and p.device.type == device
               for p in s.parameters())
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): "
                       "NonDynamicallyQuantizableLinear(in_features=64, "
                       "out_features=64, bias=True)\n)")
    assert isinstance(m.out_proj, nn.Linear)


def test_mha_shapes_batch_first_unbatched(device, rng):
    m = nn.MultiheadAttention(6, 3, dtype=pygpu.float64, device=device)
    b = nn.MultiheadAttention(6, 3, batch_first=True, dtype=pygpu.float64,
                              device=device)
    b.load_state_dict(m.state_dict())
    x = tensor(rng.standard_normal((4, 2, 6)), device=device)
    kv = tensor(rng.standard_normal((5, 2, 6)), device=device)
    out, w = m(x, kv, kv)
    out_b, w_b = b(x.transpose(0, 1), kv.transpose(0, 1),
                   kv.transpose(0, 1))
    assert tuple(out_b.shape) == (2, 4, 6)
    np.testing.assert_allclose(npy(out_b), npy(out).transpose(1, 0, 2),
                               rtol=1e-12)
    np.testing.assert_allclose(npy(w_b), npy(w), rtol=1e-12)
    # unbatched: each batch element on its own
    kpm = np.array([False, True, False, False, True])
    am = rng.random((3, 4, 5)) > 0.7
    am[..., 0] = False
    for k in range(2):
        o1, w1 = m(x[:, k], kv[:, k], kv[:, k],
                   key_padding_mask=tensor(kpm, device=device),
                   attn_mask=tensor(am, device=device),
                   average_attn_weights=False)
        assert tuple(o1.shape) == (4, 6) and tuple(w1.shape) == (3, 4, 5)
        kpm2 = np.zeros((2, 5), dtype=bool)
        kpm2[k] = kpm
        am2 = np.zeros((6, 4, 5), dtype=bool)
        am2[3 * k:3 * k + 3] = am
        o2, w2 = m(x, kv, kv, key_padding_mask=tensor(kpm2, device=device),
                   attn_mask=tensor(am2, device=device),
                   average_attn_weights=False)
        np.testing.assert_allclose(npy(o1), npy(o2)[:, k], rtol=1e-12)
        np.testing.assert_allclose(npy(w1), npy(w2)[k], rtol=1e-12)
        assert (npy(w1)[:, :, [1, 4]] == 0).all()
        assert (npy(w1)[am] == 0).all()


def test_mha_masks_need_weights_and_causal(device, rng):
    m = nn.MultiheadAttention(4, 2, dtype=pygpu.float64, device=device)
    x = tensor(rng.standard_normal((5, 2, 4)), device=device)
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    cm = tensor(causal, device=device)
    bm = tensor(causal != 0, device=device)
    o_f, w_f = m(x, x, x, attn_mask=cm)
    o_b, w_b = m(x, x, x, attn_mask=bm)
    np.testing.assert_allclose(npy(o_b), npy(o_f), rtol=1e-12)
    assert (npy(w_f)[:, np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]]
            == 0).all()
    o_n, w_n = m(x, x, x, attn_mask=cm, need_weights=False)
    assert w_n is None
    np.testing.assert_allclose(npy(o_n), npy(o_f), rtol=1e-12)
    # the is_causal hint: with need_weights=False the mask is the causal one
    o_c, _ = m(x, x, x, attn_mask=cm, need_weights=False, is_causal=True)
    np.testing.assert_allclose(npy(o_c), npy(o_f), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the "
                       "is_causal hint"):
        m(x, x, x, is_causal=True)
    # a float key_padding_mask is added
    kpm = rng.standard_normal((2, 5))
    o_k, w_k = m(x, x, x, key_padding_mask=tensor(kpm, device=device),
                 average_attn_weights=False)
    ref_o, _ = mha_ref(npy(x), npy(x), npy(x), npy(m.in_proj_weight),
                       npy(m.in_proj_bias), npy(m.out_proj.weight),
                       npy(m.out_proj.bias), 2,
                       kpm[:, None, None, :])
    np.testing.assert_allclose(npy(o_k), ref_o, rtol=1e-10)
    assert tuple(w_k.shape) == (2, 2, 5, 5)


def test_mha_dropout_training_and_eval(device, rng):
    pygpu.manual_seed(5)
    m = nn.MultiheadAttention(4, 2, dropout=0.5, device=device)
    x = pygpu.randn(6, 3, 4, device=device)
    a, wa = m(x, x, x, average_attn_weights=False)
    b, _ = m(x, x, x)
    assert not np.allclose(npy(a), npy(b))
    # the weights returned are the dropped ones (zeros, the rest doubled),
    # as torch returns them
    w = npy(wa)
    assert (w == 0).mean() > 0.3 and not np.allclose(w.sum(-1), 1)
    m.eval()
    c, wc = m(x, x, x)
    d, _ = m(x, x, x)
    np.testing.assert_array_equal(npy(c), npy(d))
    np.testing.assert_allclose(npy(wc).sum(-1), 1, rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(kdim=3, vdim=5),
                                dict(add_bias_kv=True, add_zero_attn=True)])
def test_mha_gradcheck(device, rng, kw):
    pygpu.manual_seed(2)
    m = nn.MultiheadAttention(4, 2, dtype=pygpu.float64, device=device, **kw)
    q = tensor(rng.standard_normal((3, 2, 4)), device=device,
               requires_grad=True)
    k = tensor(rng.standard_normal((2, 2, kw.get("kdim", 4))), device=device,
               requires_grad=True)
    v = tensor(rng.standard_normal((2, 2, kw.get("vdim", 4))), device=device,
               requires_grad=True)
    mask = tensor(rng.standard_normal((3, 2)), device=device)
    assert gradcheck(lambda a, b, c: m(a, b, c, attn_mask=mask)[0],
                     (q, k, v))
    # the parameters, through the functional form
    sep = "kdim" in kw
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]

    def by_params(*ps):
        p = dict(zip(names, ps))
        return F.multi_head_attention_forward(
            q.detach(), k.detach(), v.detach(), 4, 2,
            p.get("in_proj_weight"), p.get("in_proj_bias"), p.get("bias_k"),
            p.get("bias_v"), m.add_zero_attn, 0.0, p["out_proj.weight"],
            p["out_proj.bias"], use_separate_proj_weight=sep,
            q_proj_weight=p.get("q_proj_weight"),
            k_proj_weight=p.get("k_proj_weight"),
            v_proj_weight=p.get("v_proj_weight"))[1]  # the weights
    assert gradcheck(by_params, params)
    out_w = params[names.index("out_proj.weight")]
    assert gradcheck(lambda w: F.multi_head_attention_forward(
        q.detach(), k.detach(), v.detach(), 4, 2, *[
            params[names.index(n)].detach() if n in names else None
            for n in ("in_proj_weight", "in_proj_bias", "bias_k", "bias_v")],
        m.add_zero_attn, 0.0, w, params[names.index("out_proj.bias")],
        use_separate_proj_weight=sep, need_weights=False,
        q_proj_weight=params[0].detach() if sep else None,
        k_proj_weight=params[1].detach() if sep else None,
        v_proj_weight=params[2].detach() if sep else None)[0], (out_w,))


def test_mha_errors(device):
    with pytest.raises(AssertionError,
                       match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be "
                       "greater than 0, got embed_dim=0 and num_heads=2"):
        nn.MultiheadAttention(0, 2)
    m = nn.MultiheadAttention(4, 2, device=device)
    x = pygpu.randn(3, 2, 4, device=device)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or "
                       "batched 3D tensor but received 4-D query tensor"):
        m(x[None], x[None], x[None])
    with pytest.raises(AssertionError, match="For batched \\(3-D\\) `query`, "
                       "expected `key` and `value` to be 3-D but found 2-D "
                       "and 3-D tensors respectively"):
        m(x, x[0], x)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask "
                       r"is .*\[2, 3\].*, but should be \(3, 3\)."):
        m(x, x, x, attn_mask=pygpu.zeros(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask "
                       r"is .*, but should be \(4, 3, 3\)."):
        m(x, x, x, attn_mask=pygpu.zeros(2, 3, 3, device=device))
    with pytest.raises(AssertionError, match="only bool and floating types of "
                       "attn_mask are supported"):
        m(x, x, x, attn_mask=pygpu.zeros(3, 3, dtype=pygpu.int64,
                                         device=device))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape"
                       r"\[1\] to be 3, but got 2"):
        m(x, x, x, key_padding_mask=pygpu.zeros(2, 2, device=device).bool())
    with pytest.raises(AssertionError, match="was expecting embedding "
                       "dimension of 4, but got 5"):
        m(pygpu.randn(3, 2, 5, device=device), x, x)
    with pytest.warns(UserWarning, match="Support for mismatched "
                      "key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=pygpu.zeros(2, 3, device=device).bool(),
          attn_mask=pygpu.zeros(3, 3, device=device))


# ------------------------------------------------------------ with torch

def test_sdpa_against_torch(rng):
    torch = pytest.importorskip("torch")
    q, k, v = (rng.standard_normal(s) for s in
               [(2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)])
    g = rng.standard_normal((2, 3, 4, 5))
    bm = rng.random((4, 6)) > 0.5
    bm[2] = False  # a fully masked row: zeros in both
    fm = rng.standard_normal((3, 4, 6))
    for kw in [dict(), dict(is_causal=True), dict(scale=0.2),
               dict(attn_mask=bm), dict(attn_mask=fm)]:
        tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        pt = [pygpu.tensor(a, requires_grad=True) for a in (q, k, v)]
        tkw = {a: torch.tensor(b) if isinstance(b, np.ndarray) else b
               for a, b in kw.items()}
        pkw = {a: pygpu.tensor(b) if isinstance(b, np.ndarray) else b
               for a, b in kw.items()}
        to = torch.nn.functional.scaled_dot_product_attention(*tt, **tkw)
        po = F.scaled_dot_product_attention(*pt, **pkw)
        np.testing.assert_allclose(npy(po), to.detach().numpy(), rtol=1e-10,
                                   atol=1e-14)
        to.backward(torch.tensor(g))
        po.backward(pygpu.tensor(g))
        for a, b in zip(pt, tt):
            np.testing.assert_allclose(npy(a.grad), b.grad.numpy(),
                                       rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True),
                                dict(kdim=5, vdim=7), dict(add_bias_kv=True),
                                dict(add_zero_attn=True), dict(bias=False)])
def test_mha_against_torch(rng, kw):
    torch = pytest.importorskip("torch")
    tm = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64, **kw)
    pm = nn.MultiheadAttention(8, 2, dtype=pygpu.float64, **kw)
    assert list(pm.state_dict()) == list(tm.state_dict())
    pm.load_state_dict({a: pygpu.tensor(b.numpy())
                        for a, b in tm.state_dict().items()})
    first = (3, 4) if kw.get("batch_first") else (4, 3)
    kfirst = (3, 5) if kw.get("batch_first") else (5, 3)
    q = rng.standard_normal(first + (8,))
    k = rng.standard_normal(kfirst + (kw.get("kdim", 8),))
    v = rng.standard_normal(kfirst + (kw.get("vdim", 8),))
    am = rng.standard_normal((4, 5))
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[1, 2] = True
    for extra in [dict(), dict(attn_mask=am), dict(key_padding_mask=kpm),
                  dict(attn_mask=am > 0.5, key_padding_mask=kpm),
                  dict(average_attn_weights=False),
                  dict(need_weights=False, attn_mask=am)]:
        tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
        pq, pk, pv = (pygpu.tensor(a, requires_grad=True) for a in (q, k, v))
        to, tw = tm(tq, tk, tv, **{a: torch.tensor(b) if isinstance(
            b, np.ndarray) else b for a, b in extra.items()})
        po, pw = pm(pq, pk, pv, **{a: pygpu.tensor(b) if isinstance(
            b, np.ndarray) else b for a, b in extra.items()})
        np.testing.assert_allclose(npy(po), to.detach().numpy(), rtol=1e-10,
                                   atol=1e-13)
        if tw is None:
            assert pw is None
        else:
            np.testing.assert_allclose(npy(pw), tw.detach().numpy(),
                                       rtol=1e-10, atol=1e-13)
        to.sum().backward()
        po.sum().backward()
        for a, b in ((pq, tq), (pk, tk), (pv, tv)):
            np.testing.assert_allclose(npy(a.grad), b.grad.numpy(),
                                       rtol=1e-9, atol=1e-12)
        grads = {n: p.grad for n, p in tm.named_parameters()}
        for n, p in pm.named_parameters():
            np.testing.assert_allclose(npy(p.grad), grads[n].numpy(),
                                       rtol=1e-9, atol=1e-12)
            p.grad = None
        tm.zero_grad()


# ------------------------------------------------------ the encoder

def layer_norm_ref(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(v + eps) * w
    return y if b is None else y + b


def encoder_layer_ref(layer, x, mask=None, norm_first=False):
    """One TransformerEncoderLayer in NumPy float64 ((S, N, E) input,
    relu, no dropout), from the layer's own parameters."""
    a = layer.self_attn
    p = {n: npy(t) for n, t in layer.named_parameters()}

    def sa(h):
        return mha_ref(h, h, h, p["self_attn.in_proj_weight"],
                       p["self_attn.in_proj_bias"],
                       p["self_attn.out_proj.weight"],
                       p["self_attn.out_proj.bias"], a.num_heads, mask)[0]

    def ff(h):
        h = np.maximum(h @ p["linear1.weight"].T + p["linear1.bias"], 0)
        return h @ p["linear2.weight"].T + p["linear2.bias"]

    def n1(h):
        return layer_norm_ref(h, p["norm1.weight"], p["norm1.bias"])

    def n2(h):
        return layer_norm_ref(h, p["norm2.weight"], p["norm2.bias"])
    if norm_first:
        x = x + sa(n1(x))
        return x + ff(n2(x))
    x = n1(x + sa(x))
    return n2(x + ff(x))


def causal_mask(n):
    return np.triu(np.full((n, n), -np.inf), 1)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_encoder_layer_values(device, rng, norm_first, dtype):
    pygpu.manual_seed(4)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                       norm_first=norm_first, device=device,
                                       dtype=getattr(pygpu, dtype))
    with pygpu.no_grad():  # non-trivial norms and biases
        for n, t in layer.named_parameters():
            if "norm" in n or "bias" in n:
                t.copy_(tensor(rng.standard_normal(tuple(t.shape)) * 0.3 +
                               (1.0 if n.endswith("norm1.weight") or
                                n.endswith("norm2.weight") else 0.0),
                               dtype, device))
    x = tensor(rng.standard_normal((5, 3, 8)), dtype, device)
    M = tensor(causal_mask(5), dtype, device)
    got = layer(x, src_mask=M)
    assert got.dtype == x.dtype and tuple(got.shape) == (5, 3, 8)
    ref = encoder_layer_ref(layer, npy(x), npy(M), norm_first)
    r = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2,
         "bfloat16": 5e-2}[dtype]
    np.testing.assert_allclose(npy(got), ref, rtol=r * 4, atol=r * 4)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_encoder_layer_gradient_dtypes(device, rng, dtype):
    pygpu.manual_seed(9)
    low = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, device=device,
                                     dtype=getattr(pygpu, dtype))
    ref = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, device=device,
                                     dtype=pygpu.float64)
    ref.load_state_dict({n: tensor(npy(t), "float64", device)
                         for n, t in low.state_dict().items()})
    x = tensor(rng.standard_normal((5, 2, 8)), dtype, device, True)
    x64 = tensor(npy(x), "float64", device, True)
    M = causal_mask(5)
    g = tensor(rng.standard_normal((5, 2, 8)), dtype, device)
    low(x, src_mask=tensor(M, dtype, device)).backward(g)
    ref(x64, src_mask=tensor(M, "float64", device)).backward(
        tensor(npy(g), "float64", device))
    r = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 6e-2}[dtype]
    np.testing.assert_allclose(npy(x.grad), npy(x64.grad), rtol=r * 4,
                               atol=r * 4)
    grads = dict(ref.named_parameters())
    for n, p in low.named_parameters():
        assert p.grad.dtype == p.dtype
        scale = np.abs(npy(grads[n].grad)).max() + 1
        np.testing.assert_allclose(npy(p.grad), npy(grads[n].grad),
                                   rtol=r * 4, atol=r * 4 * scale, err_msg=n)


def test_encoder_layer_structure():
    layer = nn.TransformerEncoderLayer(8, 2)
    assert [n for n, _ in layer.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
        "dropout1", "dropout2"]
    assert list(layer.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias",
        "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.norm1.eps == 1e-5 and not layer.norm_first
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    g = nn.TransformerEncoderLayer(8, 2, activation="gelu", bias=False,
                                   layer_norm_eps=1e-6, batch_first=True)
    assert g.activation is F.gelu and g.activation_relu_or_gelu == 2
    assert g.linear1.bias is None and g.self_attn.in_proj_bias is None
    assert g.norm2.eps == 1e-6 and g.self_attn.batch_first
    c = nn.TransformerEncoderLayer(8, 2, activation=F.silu)
    assert c.activation is F.silu and c.activation_relu_or_gelu == 0
    with pytest.raises(RuntimeError,
                       match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_encoder_layer_callable_activation_and_dropout(device, rng):
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5,
                                       activation=nn.Tanh(), device=device)
    x = pygpu.randn(3, 2, 4, device=device)
    a, b = layer(x), layer(x)
    assert not np.allclose(npy(a), npy(b))
    layer.eval()
    np.testing.assert_array_equal(npy(layer(x)), npy(layer(x)))


def test_encoder_layer_gradcheck(device, rng):
    pygpu.manual_seed(6)
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0,
                                           norm_first=norm_first,
                                           device=device,
                                           dtype=pygpu.float64)
        x = tensor(rng.standard_normal((3, 2, 4)), device=device,
                   requires_grad=True)
        kpm = tensor(np.array([[False, False, True], [False] * 3]),
                     device=device)
        assert gradcheck(lambda v: layer(v, src_key_padding_mask=kpm), (x,))


def test_encoder_stack(device, rng):
    pygpu.manual_seed(7)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                       batch_first=True, device=device,
                                       dtype=pygpu.float64)
    norm = nn.LayerNorm(8, device=device, dtype=pygpu.float64)
    enc = nn.TransformerEncoder(layer, 3, norm=norm)
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert enc.layers[0] is not layer and enc.layers[0] is not enc.layers[1]
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    np.testing.assert_array_equal(npy(enc.layers[2].linear1.weight),
                                  npy(layer.linear1.weight))
    keys = list(enc.state_dict())
    assert keys[0] == "layers.0.self_attn.in_proj_weight"
    assert keys[-2:] == ["norm.weight", "norm.bias"]
    with pygpu.no_grad():
        enc.layers[1].linear2.weight.mul_(2.0)
    x = tensor(rng.standard_normal((2, 5, 8)), device=device)
    M = tensor(causal_mask(5), device=device)
    got = enc(x, mask=M)
    h = x
    for mod in enc.layers:
        h = mod(h, src_mask=M)
    np.testing.assert_allclose(npy(got), npy(norm(h)), rtol=1e-12)
    # the causal mask is found, and the hint and a bool mask agree
    np.testing.assert_allclose(npy(enc(x, mask=M, is_causal=True)),
                               npy(got), rtol=1e-12)
    np.testing.assert_allclose(
        npy(enc(x, mask=tensor(causal_mask(5) != 0, device=device))),
        npy(got), rtol=1e-12)
    # unbatched (S, E)
    np.testing.assert_allclose(npy(enc(x[1], mask=M)), npy(got)[1],
                               rtol=1e-10)
    with pytest.raises(AssertionError, match="only bool and floating types "
                       "of mask are supported"):
        enc(x, mask=pygpu.zeros(5, 5, dtype=pygpu.int64, device=device))


def test_is_causal_detection(device):
    from pygpu.nn.transformer import _is_causal_mask
    M = tensor(causal_mask(4), device=device)
    assert _is_causal_mask(M, 4)
    assert not _is_causal_mask(M, 5)
    assert not _is_causal_mask(M * 0, 4)
    assert not _is_causal_mask(tensor(causal_mask(4).T, device=device), 4)


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True),
                                dict(activation="gelu", batch_first=True),
                                dict(bias=False)])
def test_encoder_against_torch(rng, kw):
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                          dtype=torch.float64, **kw)
    te = torch.nn.TransformerEncoder(
        tl, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64),
        enable_nested_tensor=False)
    pl = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                    dtype=pygpu.float64, **kw)
    pe = nn.TransformerEncoder(pl, 2, norm=nn.LayerNorm(8,
                                                        dtype=pygpu.float64))
    assert list(te.state_dict()) == list(pe.state_dict())
    pe.load_state_dict({a: pygpu.tensor(b.numpy())
                        for a, b in te.state_dict().items()})
    x = rng.standard_normal((3, 5, 8) if kw.get("batch_first") else
                            (5, 3, 8))
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[0, 4] = True
    for extra in [dict(), dict(mask=causal_mask(5)),
                  dict(mask=causal_mask(5) != 0, src_key_padding_mask=kpm),
                  dict(mask=causal_mask(5), is_causal=True)]:
        tx = torch.tensor(x, requires_grad=True)
        px = pygpu.tensor(x, requires_grad=True)
        to = te(tx, **{a: torch.tensor(b) if isinstance(b, np.ndarray)
                       else b for a, b in extra.items()})
        po = pe(px, **{a: pygpu.tensor(b) if isinstance(b, np.ndarray)
                       else b for a, b in extra.items()})
        np.testing.assert_allclose(npy(po), to.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)
        to.sum().backward()
        po.sum().backward()
        np.testing.assert_allclose(npy(px.grad), tx.grad.numpy(),
                                   rtol=1e-8, atol=1e-12)
