"""F.embedding and nn.Embedding: the lookup against NumPy for every float
dtype and index dtype and shape, the weight's gradient (padding_idx,
scale_grad_by_freq) by gradcheck and by formula, max_norm's renormalisation
in place, the module's init, repr, state_dict and from_pretrained, and
torch's errors."""
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.autograd import gradcheck
from pygpu.nn import functional as F

DTYPES = ["float32", "float64", "float16", "bfloat16"]
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2,
        "bfloat16": 1e-2}


def tensor(a, dtype, device, **kw):
    t = pygpu.tensor(np.asarray(a, dtype=np.float64), device=device)
    return t.to(getattr(pygpu, dtype)).requires_grad_(
        kw.get("requires_grad", False))


def npy(t):
    t = t.detach().cpu()
    if t.dtype in (pygpu.float16, pygpu.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 1, 4), (), (0,),
                                   (3, 0, 2)])
def test_lookup(device, rng, dtype, index_dtype, shape):
    w = rng.standard_normal((7, 5))
    idx = rng.integers(0, 7, shape)
    W = tensor(w, dtype, device)
    I = pygpu.tensor(idx, dtype=getattr(pygpu, index_dtype), device=device)
    got = F.embedding(I, W)
    assert got.dtype == W.dtype and tuple(got.shape) == shape + (5,)
    ref = npy(W)[idx]
    np.testing.assert_array_equal(npy(got), ref)  # a copy of rows: exact


def test_lookup_strided_index_and_weight(device, rng):
    w = rng.standard_normal((5, 9))
    idx = rng.integers(0, 9, (4, 3))
    W = pygpu.tensor(w, device=device).T  # (9, 5), not contiguous
    I = pygpu.tensor(idx, device=device).T  # (3, 4), not contiguous
    np.testing.assert_array_equal(F.embedding(I, W).cpu().numpy(),
                                  w.T[idx.T])


def test_integer_weight(device):
    W = pygpu.tensor([[1, 2], [3, 4]], device=device)
    assert F.embedding(pygpu.tensor([1, 0, 1], device=device),
                       W).tolist() == [[3, 4], [1, 2], [3, 4]]


def dense_grad(idx, g, num, padding=-1, by_freq=False):
    """The weight's gradient by formula: rows of g added at their
    indices, divided by each index's count, none at padding."""
    flat, rows = idx.reshape(-1), g.reshape(idx.size, -1)
    out = np.zeros((num, rows.shape[1]))
    counts = np.bincount(flat, minlength=num)
    for k, i in enumerate(flat):
        if i != padding:
            out[i] += rows[k] / (counts[i] if by_freq else 1)
    return out


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("by_freq", [False, True])
def test_gradient_by_formula(device, rng, padding_idx, by_freq):
    w = rng.standard_normal((6, 3))
    idx = rng.integers(0, 6, (4, 5))
    idx[0, :3] = 2
    idx[1, 0] = 5
    g = rng.standard_normal((4, 5, 3))
    W = tensor(w, "float64", device, requires_grad=True)
    out = F.embedding(pygpu.tensor(idx, device=device), W,
                      padding_idx=padding_idx, scale_grad_by_freq=by_freq)
    np.testing.assert_array_equal(npy(out), w[idx])
    out.backward(pygpu.tensor(g, device=device))
    pad = -1 if padding_idx is None else padding_idx % 6
    ref = dense_grad(idx, g, 6, pad, by_freq)
    np.testing.assert_allclose(npy(W.grad), ref, rtol=1e-12, atol=1e-14)
    if pad >= 0:
        assert (npy(W.grad)[pad] == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gradient_dtypes(device, rng, dtype):
    w = rng.standard_normal((5, 4))
    idx = rng.integers(0, 5, (3, 6))
    g = rng.standard_normal((3, 6, 4))
    W = tensor(w, dtype, device, requires_grad=True)
    out = F.embedding(pygpu.tensor(idx, device=device), W, padding_idx=1,
                      scale_grad_by_freq=True)
    out.backward(tensor(g, dtype, device))
    assert W.grad.dtype == W.dtype
    ref = dense_grad(idx, npy(tensor(g, dtype, "cpu")), 5, 1, True)
    np.testing.assert_allclose(npy(W.grad), ref, rtol=RTOL[dtype] * 2,
                               atol=RTOL[dtype] * 2)


@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_gradcheck(device, rng, padding_idx):
    # the padding row's lookups are masked out of the checked function:
    # by design its gradient is zero although the output reads it
    W = tensor(rng.standard_normal((4, 3)), "float64", device,
               requires_grad=True)
    idx = pygpu.tensor([[0, 2, 2], [3, 0, 1]], device=device)
    pad = 4 if padding_idx is None else padding_idx % 4
    keep = (idx != pad).unsqueeze(-1).double()
    assert gradcheck(lambda w: F.embedding(idx, w, padding_idx) * keep, (W,))


def test_nan_gradient_at_padding_is_dropped(device):
    W = pygpu.ones(3, 2, device=device, requires_grad=True)
    out = F.embedding(pygpu.tensor([0, 1, 0], device=device), W,
                      padding_idx=0)
    g = pygpu.tensor([[float("nan")] * 2, [1.0, 2.0], [float("inf")] * 2],
                     device=device)
    out.backward(g)
    assert W.grad.tolist() == [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]


def test_no_grad_and_frozen_weight(device, rng):
    W = tensor(rng.standard_normal((4, 3)), "float32", device,
               requires_grad=True)
    idx = pygpu.tensor([1, 1], device=device)
    with pygpu.no_grad():
        out = F.embedding(idx, W, padding_idx=1, scale_grad_by_freq=True)
    assert not out.requires_grad
    e = nn.Embedding(4, 3, _freeze=True, device=device)
    assert not e.weight.requires_grad and not e(idx).requires_grad


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_max_norm_renormalises_in_place(device, rng, norm_type, dtype):
    w = rng.standard_normal((6, 4)) * 2
    w[3] *= 0.01  # a looked-up row under the bound stays as it is
    idx = np.array([[0, 3, 3], [5, 0, 1]])
    W = tensor(w, dtype, device, requires_grad=True)
    before = npy(W)
    version = W._version
    out = F.embedding(pygpu.tensor(idx, device=device), W, max_norm=1.5,
                      norm_type=norm_type)
    assert W._version > version
    norms = np.linalg.norm(before, ord=norm_type, axis=1)
    ref = before.copy()
    for i in {0, 1, 3, 5}:
        if norms[i] > 1.5:
            ref[i] *= 1.5 / (norms[i] + 1e-7)
    np.testing.assert_allclose(npy(W), ref, rtol=RTOL[dtype] * 2,
                               atol=RTOL[dtype])
    np.testing.assert_array_equal(npy(W)[[2, 4]], before[[2, 4]])
    np.testing.assert_array_equal(npy(W)[3], before[3])
    np.testing.assert_array_equal(npy(out), npy(W)[idx])
    # the lookup after the renorm is what gets the gradient
    out.sum().backward()
    assert npy(W.grad)[0].tolist() == [2.0] * 4


def test_max_norm_empty_index(device):
    W = pygpu.ones(3, 2, device=device) * 5
    out = F.embedding(pygpu.zeros(0, dtype=pygpu.int64, device=device), W,
                      max_norm=1.0)
    assert tuple(out.shape) == (0, 2) and W.tolist()[0] == [5.0, 5.0]


def test_errors(device):
    W = pygpu.randn(5, 3, device=device)
    with pytest.raises(RuntimeError, match=r"Expected tensor for argument #1 "
                       r"'indices' to have one of the following scalar types: "
                       r"Long, Int; but got pygpu\..*FloatTensor instead "
                       r"\(while checking arguments for embedding\)"):
        F.embedding(pygpu.tensor([1.0], device=device), W)
    with pytest.raises(RuntimeError, match="ByteTensor"):
        F.embedding(pygpu.tensor([1], dtype=pygpu.uint8, device=device), W)
    for bad in ([5], [-1], [[0, 7]]):
        if device == "cpu":
            with pytest.raises(IndexError,
                               match="^index out of range in self$"):
                F.embedding(pygpu.tensor(bad, device=device), W)
        else:  # torch's device-side assert, without the dead context
            with pytest.raises(pygpu.CudaError,
                               match=r"device-side assert triggered .*index "
                               r"-?\d is out of bounds for dimension 0 "
                               r"with size 5"):
                F.embedding(pygpu.tensor(bad, device=device), W)
            assert F.embedding(pygpu.tensor([4], device=device), W) \
                .cpu().tolist() == W[4:].cpu().tolist()
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(pygpu.tensor([1], device=device), pygpu.randn(5))
    for pad in (5, -6):
        with pytest.raises(AssertionError,
                           match="Padding_idx must be within num_embeddings"):
            F.embedding(pygpu.tensor([1], device=device), W, padding_idx=pad)
        with pytest.raises(AssertionError,
                           match="Padding_idx must be within num_embeddings"):
            nn.Embedding(5, 3, padding_idx=pad)
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(pygpu.tensor([1], device=device), W, sparse=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(5, 3, sparse=True)


@pytest.mark.parametrize("dtype", [None, "float64", "float16", "bfloat16"])
def test_module_init(device, dtype):
    pygpu.manual_seed(0)
    dt = getattr(pygpu, dtype) if dtype else pygpu.float32
    e = nn.Embedding(400, 50, padding_idx=-3, device=device, dtype=dt)
    assert e.padding_idx == 397
    assert e.weight.dtype == dt and e.weight.device.type == device
    assert tuple(e.weight.shape) == (400, 50) and e.weight.requires_grad
    w = npy(e.weight)
    assert (w[397] == 0).all()
    others = np.delete(w, 397, axis=0)
    assert abs(others.mean()) < 0.02 and abs(others.std() - 1.0) < 0.02
    x = pygpu.tensor([[397, 1], [2, 397]], device=device)
    e(x).sum().backward()
    g = npy(e.weight.grad)
    assert (g[397] == 0).all() and (g[1] == 1).all()
    assert g.sum() == 2 * 50


def test_module_forward_and_state_dict(device, rng):
    e = nn.Embedding(6, 3, max_norm=2.0, norm_type=1.0,
                     scale_grad_by_freq=True, device=device)
    assert list(dict(e.named_parameters())) == ["weight"]
    f = nn.Embedding(6, 3, device=device)
    f.load_state_dict(e.state_dict())
    np.testing.assert_array_equal(npy(f.weight), npy(e.weight))
    idx = pygpu.tensor(rng.integers(0, 6, (2, 5)), device=device)
    out = e(idx)
    assert (np.abs(npy(e.weight)).sum(1)[np.unique(idx.cpu().numpy())]
            <= 2.0 + 1e-5).all()
    np.testing.assert_array_equal(npy(out), npy(e.weight)[idx.cpu().numpy()])


def test_module_repr():
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Embedding(10, 3, padding_idx=-1, max_norm=1.0,
                             norm_type=1.0, scale_grad_by_freq=True)) == \
        ("Embedding(10, 3, padding_idx=9, max_norm=1.0, norm_type=1.0, "
         "scale_grad_by_freq=True)")


def test_weight_argument_and_from_pretrained(device, rng):
    w = pygpu.tensor(rng.standard_normal((4, 2)), device=device)
    e = nn.Embedding(4, 2, _weight=w)
    assert e.weight.requires_grad
    np.testing.assert_array_equal(npy(e.weight), npy(w))
    with pytest.raises(AssertionError, match="Shape of weight does not match "
                       "num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=w)
    p = nn.Embedding.from_pretrained(w)
    assert (p.num_embeddings, p.embedding_dim) == (4, 2)
    assert not p.weight.requires_grad
    assert p.weight.data_ptr() == w.data_ptr()  # shares, as torch
    np.testing.assert_array_equal(npy(p(pygpu.tensor([3, 0], device=device))),
                                  npy(w)[[3, 0]])
    q = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=1)
    assert q.weight.requires_grad and q.padding_idx == 1
    assert npy(q.weight)[1].tolist() == npy(w)[1].tolist()  # not zeroed
    with pytest.raises(AssertionError, match="Embeddings parameter is "
                       "expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(pygpu.randn(4))


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    w = rng.standard_normal((7, 4))
    idx = rng.integers(0, 7, (3, 5))
    g = rng.standard_normal((3, 5, 4))
    for kw in [dict(padding_idx=3, scale_grad_by_freq=True),
               dict(max_norm=1.2, norm_type=3.0)]:
        tw = torch.tensor(w, requires_grad=True)
        pw = pygpu.tensor(w, requires_grad=True)
        to = torch.nn.functional.embedding(torch.tensor(idx), tw, **kw)
        po = F.embedding(pygpu.tensor(idx), pw, **kw)
        to.backward(torch.tensor(g))
        po.backward(pygpu.tensor(g))
        np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(pw.detach().numpy(), tw.detach().numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(),
                                   rtol=1e-12)
