"""The direct convolution (_C._conv2d_direct, conv2d's path where nothing
is recorded): against the float64 NumPy reference of test_conv.py over
every option it takes, degenerate shapes, the choice conv2d makes, the
same bits on any number of threads, its refusal to be recorded, and its
errors."""
import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.nn import functional as F

from conftest import BF16, F16, F32, F64, rel_err
from test_conv import f64, ref_conv2d

TOL = {F32: 1e-5, F64: 1e-12, F16: 1e-2, BF16: 2e-2}

# (N, C, H, W), (Cout, kh, kw), stride, padding, dilation, groups, bias
CASES = [
    ((2, 3, 9, 11), (5, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((3, 1, 28, 28), (6, 5, 5), (1, 1), (0, 0), (1, 1), 1, True),
    ((2, 6, 12, 12), (16, 5, 5), (1, 1), (0, 0), (1, 1), 1, False),
    ((2, 4, 7, 13), (8, 2, 3), (2, 1), (1, 2), (2, 1), 2, True),
    ((1, 4, 5, 5), (4, 3, 3), (1, 2), (1, 1), (1, 1), 4, True),  # depthwise
    ((2, 3, 6, 6), (17, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),  # 1x1
    ((2, 2, 4, 4), (3, 4, 4), (1, 1), (2, 2), (1, 1), 1, True),
    ((2, 2, 30, 35), (9, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((1, 2, 3, 3), (2, 3, 3), (3, 3), (0, 0), (1, 1), 1, False),
    ((1, 6, 5, 19), (12, 3, 2), (2, 3), (0, 1), (1, 3), 3, True),
    ((2, 1, 1, 1), (3, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    ((1, 2, 2, 9), (2, 1, 9), (1, 1), (0, 4), (1, 1), 1, True),
]


def _case(case, dtype, device, rng):
    shape, (cout, kh, kw), s, p, d, g, bias = case
    x = rng.standard_normal(shape)
    w = rng.standard_normal((cout, shape[1] // g, kh, kw))
    b = rng.standard_normal(cout) if bias else None
    tx = pygpu.tensor(x, dtype=dtype, device=device)
    tw = pygpu.tensor(w, dtype=dtype, device=device)
    tb = None if b is None else pygpu.tensor(b, dtype=dtype, device=device)
    ref = ref_conv2d(f64(tx), f64(tw), None if tb is None else f64(tb),
                     s, p, d, g)
    return tx, tw, tb, ref, (s, p, d, g)


def _direct(tx, tw, tb, s, p, d, g):
    return _C._conv2d_direct(tx, tw, tb, *d, *p, *s, g)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_reference(device, dtype, case):
    rng = np.random.default_rng(case)
    tx, tw, tb, ref, (s, p, d, g) = _case(CASES[case], dtype, device, rng)
    out = _direct(tx, tw, tb, s, p, d, g)
    assert out.shape == ref.shape and out.dtype == dtype
    assert out.device == tx.device
    assert rel_err(f64(out), ref) < TOL[dtype]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("case", [0, 3, 4, 9])
def test_half_on_cuda(dtype, case):
    """float16 and bfloat16 sum in float on the GPU and round once."""
    rng = np.random.default_rng(case)
    tx, tw, tb, ref, (s, p, d, g) = _case(CASES[case], dtype, "cuda", rng)
    out = _direct(tx, tw, tb, s, p, d, g)
    assert out.dtype == dtype
    assert rel_err(f64(out), ref) < TOL[dtype]


@pytest.mark.cuda
@pytest.mark.parametrize("case", range(len(CASES)))
def test_cuda_matches_cpu(case):
    """The GPU's and the CPU's sums, in the same order, agree to rounding
    (float64: the CPU's FMAs round once where the GPU rounds twice)."""
    rng = np.random.default_rng(case)
    tx, tw, tb, _, (s, p, d, g) = _case(CASES[case], F64, "cpu", rng)
    cpu = _direct(tx, tw, tb, s, p, d, g)
    gpu = _direct(tx.cuda(), tw.cuda(), None if tb is None else tb.cuda(),
                  s, p, d, g)
    assert rel_err(f64(gpu), f64(cpu)) < 1e-13


def test_empty_batch(device):
    x = pygpu.randn(0, 3, 6, 6, device=device)
    w = pygpu.randn(4, 3, 3, 3, device=device)
    out = _C._conv2d_direct(x, w, pygpu.randn(4, device=device), 1, 1, 0,
                            0, 1, 1, 1)
    assert out.shape == (0, 4, 4, 4)


def test_non_contiguous_inputs(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 7, 9))
    w = rng.standard_normal((9, 4, 3, 3))
    b = rng.standard_normal(8)
    tx = pygpu.tensor(x, dtype=F32, device=device).permute(0, 3, 1, 2)
    tw = pygpu.tensor(w, dtype=F32, device=device).transpose(0, 1)
    tb = pygpu.tensor(b, dtype=F32, device=device)[::2]
    assert not tx.is_contiguous() and not tw.is_contiguous()
    ref = ref_conv2d(f64(tx), f64(tw), f64(tb), 1, 1, 1, 1)
    out = _C._conv2d_direct(tx, tw, tb, 1, 1, 1, 1, 1, 1, 1)
    assert rel_err(f64(out), ref) < TOL[F32]


def test_same_bits_on_any_thread_count():
    rng = np.random.default_rng(3)
    x = pygpu.tensor(rng.standard_normal((16, 6, 12, 12)), dtype=F32)
    w = pygpu.tensor(rng.standard_normal((16, 6, 5, 5)), dtype=F32)
    b = pygpu.tensor(rng.standard_normal(16), dtype=F32)
    old = pygpu.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            pygpu.set_num_threads(n)
            outs.append(_C._conv2d_direct(x, w, b, 1, 1, 2, 1, 1, 1, 1)
                        .numpy())
    finally:
        pygpu.set_num_threads(old)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[0], outs[2])


# ------------------------------------------------- conv2d's choice of path

def _lenet2(grad):
    rng = np.random.default_rng(11)
    x = pygpu.tensor(rng.standard_normal((4, 6, 12, 12)), dtype=F32)
    w = pygpu.tensor(rng.standard_normal((16, 6, 5, 5)), dtype=F32)
    b = pygpu.tensor(rng.standard_normal(16), dtype=F32)
    return x, w.requires_grad_(grad), b


def test_conv2d_runs_direct_when_nothing_is_recorded():
    x, w, b = _lenet2(True)
    with pygpu.no_grad():
        out = F.conv2d(x, w, b)
    recorded = F.conv2d(x, w, b)
    assert out.grad_fn is None and recorded.grad_fn is not None
    ref = ref_conv2d(f64(x), f64(w), f64(b))
    assert rel_err(f64(out), ref) < TOL[F32]
    assert rel_err(f64(recorded), ref) < TOL[F32]
    direct = _C._conv2d_direct(x, w.detach(), b, 1, 1, 0, 0, 1, 1, 1)
    assert np.array_equal(out.numpy(), direct.numpy())


def test_conv2d_recorded_keeps_its_gradients():
    x, w, b = _lenet2(True)
    out = F.conv2d(x, w, b)
    g = pygpu.ones_like(out)
    out.backward(g)
    # d(sum out)/dw[o, c, i, j] = sum over n, oh, ow of x[n, c, oh+i, ow+j]
    xs = f64(x)
    ref = np.stack([xs[:, :, i:i + 8, j:j + 8].sum(axis=(0, 2, 3))
                    for i in range(5) for j in range(5)], axis=-1)
    ref = np.broadcast_to(ref.reshape(1, 6, 5, 5), (16, 6, 5, 5))
    assert rel_err(f64(w.grad), ref) < 1e-5


# ------------------------------------------------------------- refusals

def test_refuses_to_be_recorded():
    x, w, b = _lenet2(True)
    with pytest.raises(RuntimeError, match="records no gradient"):
        _C._conv2d_direct(x, w, b, 1, 1, 0, 0, 1, 1, 1)


def test_errors(device):
    x = pygpu.randn(2, 4, 6, 6, device=device)
    w = pygpu.randn(3, 4, 3, 3, device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Float"):
        _C._conv2d_direct(x, w.double(), None, 1, 1, 0, 0, 1, 1, 1)
    with pytest.raises(RuntimeError, match="do not fit"):
        _C._conv2d_direct(x, w, None, 1, 1, 0, 0, 1, 1, 2)
    with pytest.raises(RuntimeError, match="1-dimensional with 3"):
        _C._conv2d_direct(x, w, pygpu.randn(4, device=device), 1, 1, 0, 0,
                          1, 1, 1)
    with pytest.raises(RuntimeError, match="4-D"):
        _C._conv2d_direct(x[0], w, None, 1, 1, 0, 0, 1, 1, 1)
    with pytest.raises(RuntimeError, match="stride should be greater"):
        _C._conv2d_direct(x, w, None, 1, 1, 0, 0, 0, 1, 1)
    with pytest.raises(RuntimeError, match="output of size"):
        _C._conv2d_direct(x, pygpu.randn(3, 4, 7, 7, device=device), None,
                          1, 1, 0, 0, 1, 1, 1)
    with pytest.raises(NotImplementedError, match="Long"):
        _C._conv2d_direct(x.long(), w.long(), None, 1, 1, 0, 0, 1, 1, 1)
    with pytest.raises(TypeError):
        _C._conv2d_direct(x, w, 3, 1, 1, 0, 0, 1, 1, 1)


def test_cpu_half_is_refused():
    x = pygpu.randn(1, 2, 4, 4, dtype=F16)
    w = pygpu.randn(2, 2, 3, 3, dtype=F16)
    with pytest.raises(NotImplementedError, match="Half"):
        _C._conv2d_direct(x, w, None, 1, 1, 0, 0, 1, 1, 1)
