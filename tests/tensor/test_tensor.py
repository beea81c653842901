"""Tensors: creation, attributes, moving between devices and dtypes, NumPy
interop, Python conversions, repr, and the errors of each."""
import numpy as np
import pytest

import pygpu

from conftest import emptied_list, rel_err

DTYPES = [pygpu.float32, pygpu.float16, pygpu.float64, pygpu.int64]
SHAPES = [(), (0,), (1,), (7,), (3, 0), (1, 1), (3, 5), (2, 3, 4),
          (2, 1, 3, 1)]


def sample(rng, shape, dt):
    if dt is pygpu.int64:
        return rng.integers(-1000, 1000, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(dt.numpy_dtype)


@pytest.mark.parametrize("dt", DTYPES, ids=repr)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_round_trip(device, rng, dt, shape):
    a = sample(rng, shape, dt)
    t = pygpu.tensor(a, device=device)
    assert t.shape == shape and t.dtype is dt
    assert t.device == pygpu.device(device if device == "cpu" else "cuda:0")
    back = t.cpu().numpy()
    assert back.dtype == a.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)


def test_attributes(device):
    t = pygpu.zeros(2, 3, 4, device=device)
    assert isinstance(t.shape, pygpu.Size) and isinstance(t.shape, tuple)
    assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4)
    assert t.size(1) == 3 and t.size(-1) == 4
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24 and len(t) == 2
    assert t.is_cuda == (device == "cuda")
    assert t.element_size() == 4 and t.nbytes == 96
    assert t.stride() == (12, 4, 1) and t.is_contiguous()
    assert repr(t.shape) == "pygpu.Size([2, 3, 4])"
    with pytest.raises(IndexError):
        t.size(3)
    with pytest.raises(TypeError):
        len(pygpu.tensor(1.0))


@pytest.mark.parametrize("factory,value", [
    (pygpu.zeros, 0.0), (pygpu.ones, 1.0),
    (lambda *s, **k: pygpu.full(s, 2.5, **k), 2.5),
])
@pytest.mark.parametrize("dt", DTYPES, ids=repr)
def test_factories(device, factory, value, dt):
    for shape in [(0,), (3,), (2, 3), ()]:
        t = factory(*shape, dtype=dt, device=device)
        assert t.shape == shape and t.dtype is dt
        expect = np.full(shape, value).astype(dt.numpy_dtype)
        np.testing.assert_array_equal(t.cpu().numpy(), expect)


def test_factory_size_forms(device):
    assert pygpu.zeros((2, 3), device=device).shape == (2, 3)
    assert pygpu.zeros([2, 3], device=device).shape == (2, 3)
    assert pygpu.zeros(size=(2, 3), device=device).shape == (2, 3)
    assert pygpu.ones(pygpu.Size([4]), device=device).shape == (4,)
    assert pygpu.empty(5, device=device).shape == (5,)
    assert pygpu.full((2,), 7, device=device).dtype is pygpu.int64
    assert pygpu.full((2,), 7.0, device=device).dtype is pygpu.float32


def test_size_list_emptied_by_index(device):
    for make in (pygpu.zeros, pygpu.ones, pygpu.empty, pygpu.rand):
        lst = emptied_list(2, 3, 4)
        assert make(lst, device=device).shape == (2, 3, 4)
        assert lst == []
    lst = emptied_list(5, 6)
    assert pygpu.Size(lst) == (5, 6) and lst == []
    lst = emptied_list(2, 7)
    assert pygpu.zeros(1, device=device).new_zeros(lst).shape == (2, 7)


def test_byte_counts_past_int64_are_errors():
    """Bytes of a shape are counted with the overflow check allocation
    has: an expanded tensor of 2**62 float32 (2**64 bytes) has no byte
    count, and cannot be pinned into 0 bytes."""
    e = pygpu.ones(1).expand(2**62)
    assert e.numel() == 2**62
    for f in (lambda: e.nbytes, lambda: e.pin_memory()):
        with pytest.raises(RuntimeError, match=r"Storage size calculation "
                           r"overflowed with sizes=\[4611686018427387904\]"):
            f()
    assert pygpu.ones(1).expand(2**40).nbytes == 2**42


def test_like_factories(device):
    t = pygpu.ones(2, 3, dtype=pygpu.float64, device=device)
    for f in (pygpu.zeros_like, pygpu.ones_like, pygpu.empty_like,
              pygpu.rand_like, pygpu.randn_like):
        r = f(t)
        assert r.shape == t.shape and r.dtype is t.dtype
        assert r.device == t.device
    assert pygpu.full_like(t, 3).cpu().numpy().tolist() == [[3.0] * 3] * 2
    assert pygpu.zeros_like(t, dtype=pygpu.float16).dtype is pygpu.float16


@pytest.mark.parametrize("bad", [(-1,), (2, -3)])
def test_negative_sizes(device, bad):
    for f in (pygpu.zeros, pygpu.ones, pygpu.empty, pygpu.rand, pygpu.randn):
        with pytest.raises(RuntimeError, match="negative dimension"):
            f(*bad, device=device)


def test_bad_size_types():
    with pytest.raises(TypeError):
        pygpu.zeros(2.5)
    with pytest.raises(TypeError):
        pygpu.zeros("3")
    with pytest.raises(TypeError):
        pygpu.zeros(2, devices="cpu")
    with pytest.raises(RuntimeError):
        pygpu.zeros(*([1] * 17))


def test_tensor_from_python():
    assert pygpu.tensor(3.5).shape == ()
    assert pygpu.tensor(3.5).item() == 3.5
    assert pygpu.tensor(7).item() == 7 and isinstance(pygpu.tensor(7).item(),
                                                       int)
    assert pygpu.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert pygpu.tensor([True, False]).tolist() == [1, 0]
    assert pygpu.tensor([]).shape == (0,)
    t = pygpu.tensor([1, 2], dtype=pygpu.float16)
    assert t.dtype is pygpu.float16 and t.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("bad", [[[1, 2], [3]], [1, [2, 3]]])
def test_ragged_lists(bad):
    with pytest.raises(ValueError):
        pygpu.tensor(bad)


@pytest.mark.parametrize("bad", ["abc", ["a", "b"], None, [None], {1: 2},
                                 [1 + 2j], object()])
def test_non_numeric(bad):
    with pytest.raises((TypeError, ValueError)):
        pygpu.tensor(bad)


def test_tensor_copies_numpy():
    a = np.arange(6, dtype=np.float32)
    t = pygpu.tensor(a)
    a[0] = 100
    assert t[0].item() == 0.0


def test_from_numpy_shares_memory(rng):
    a = rng.standard_normal((3, 4))
    t = pygpu.from_numpy(a)
    assert t.dtype is pygpu.float64 and t.shape == (3, 4)
    a[1, 2] = 42.0
    assert t[1, 2].item() == 42.0
    n = t.numpy()
    n[0, 0] = -7.0
    assert a[0, 0] == -7.0
    assert np.shares_memory(n, a)


def test_from_numpy_strided(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = pygpu.from_numpy(a[::2, 1::2])
    np.testing.assert_array_equal(t.numpy(), a[::2, 1::2])
    assert not t.is_contiguous()
    t2 = pygpu.from_numpy(a.T)
    np.testing.assert_array_equal(t2.contiguous().numpy(), a.T)


def test_from_numpy_errors():
    with pytest.raises(TypeError):
        pygpu.from_numpy([1, 2])
    with pytest.raises(TypeError):
        pygpu.from_numpy(np.zeros(3, dtype=np.int16))
    with pytest.raises(ValueError, match="negative"):
        pygpu.from_numpy(np.zeros(3)[::-1])
    with pytest.raises(TypeError):
        pygpu.from_numpy(np.zeros(3, dtype=">f8"))


def test_numpy_keeps_tensor_alive():
    n = pygpu.ones(1000).numpy()
    import gc
    gc.collect()
    assert n.sum() == 1000


def test_to_semantics(device):
    t = pygpu.ones(2, 3)
    assert t.to("cpu") is t
    assert t.to(pygpu.float32) is t
    assert t.cpu() is t and t.float() is t
    assert t.to(pygpu.float64).dtype is pygpu.float64
    assert t.double().dtype is pygpu.float64
    assert t.half().dtype is pygpu.float16
    assert t.long().dtype is pygpu.int64
    assert t.to(device, pygpu.float16).dtype is pygpu.float16
    other = pygpu.zeros(1, dtype=pygpu.float64, device=device)
    moved = t.to(other)
    assert moved.dtype is pygpu.float64 and moved.device == other.device
    assert t.to(device=device, dtype=pygpu.float16).dtype is pygpu.float16
    c = t.to("cpu", copy=True)
    assert c is not t and c.tolist() == t.tolist()
    d = t.to(device)
    assert d.to(device) is d
    with pytest.raises(TypeError):
        t.to(3.5)
    with pytest.raises(RuntimeError):
        t.to("gpu")


@pytest.mark.parametrize("src", DTYPES, ids=repr)
@pytest.mark.parametrize("dst", DTYPES, ids=repr)
def test_dtype_conversion(device, rng, src, dst):
    a = sample(rng, (5, 7), src)
    if src.is_floating_point:
        a = (a * 10).astype(src.numpy_dtype)  # values with integer parts
    t = pygpu.tensor(a, device=device).to(dst)
    ref = a.astype(dst.numpy_dtype)  # NumPy truncates float->int too
    np.testing.assert_array_equal(t.cpu().numpy(), ref)


def test_float16_rounding_matches_numpy(device, rng):
    a = rng.standard_normal(10000) * 1000
    t = pygpu.tensor(a, device=device).half()
    np.testing.assert_array_equal(t.cpu().numpy(), a.astype(np.float16))
    special = np.array([0.0, -0.0, np.inf, -np.inf, 65504.0, 65520.0, 1e-8,
                        6.0e-8, 2.0 ** -24, -2.0 ** -25])
    t = pygpu.tensor(special, device=device).half()
    with np.errstate(over="ignore"):
        ref = special.astype(np.float16)
    np.testing.assert_array_equal(t.cpu().numpy(), ref)
    nan = pygpu.tensor([np.nan], device=device).half().cpu().numpy()
    assert np.isnan(nan[0])


def test_item_and_conversions(device):
    t = pygpu.tensor([2.5], device=device)
    assert t.item() == 2.5 and float(t) == 2.5 and int(t) == 2 and bool(t)
    assert pygpu.tensor(0.0, device=device).item() == 0.0
    assert not bool(pygpu.tensor([0.0], device=device))
    i = pygpu.tensor([3], device=device)
    assert [10, 20, 30, 40][i] == 40
    big = pygpu.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="6 elements cannot be converted"):
        big.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(big)
    with pytest.raises(RuntimeError):
        pygpu.zeros(0, device=device).item()


def test_tolist(device):
    t = pygpu.tensor([[1.5, 2.0], [3.0, -4.25]], device=device)
    assert t.tolist() == [[1.5, 2.0], [3.0, -4.25]]
    assert pygpu.tensor(5, device=device).tolist() == 5
    assert pygpu.zeros(2, 0, device=device).tolist() == [[], []]


def test_array_protocol(rng):
    a = rng.standard_normal((3, 2)).astype(np.float32)
    t = pygpu.from_numpy(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.shares_memory(np.asarray(t), a)
    c = np.array(t, copy=True)
    assert not np.shares_memory(c, a)
    d = np.asarray(t, dtype=np.float64)
    assert d.dtype == np.float64
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        # NumPy 1.x reads copy=False as "copy if needed".
        with pytest.raises(ValueError):
            np.array(t, dtype=np.float64, copy=False)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float32), a)


def test_legacy_constructor():
    t = pygpu.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype is pygpu.float32
    assert pygpu.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert pygpu.Tensor([1, 2]).dtype is pygpu.float32


def test_subclass_keeps_data():
    class Param(pygpu.Tensor):
        pass
    base = pygpu.tensor([1.0, 2.0])
    p = Param(base)
    assert isinstance(p, Param) and p.tolist() == [1.0, 2.0]
    p.name = "w"  # subclasses and tensors take attributes
    assert p.name == "w"


def test_reference_cycle_is_collected():
    import gc
    import weakref
    t = pygpu.ones(10)
    t.me = t
    r = weakref.ref(t)
    del t
    gc.collect()
    assert r() is None


@pytest.mark.cuda
def test_cuda_numpy_error():
    t = pygpu.ones(2, device="cuda")
    with pytest.raises(TypeError) as e:
        t.numpy()
    assert str(e.value) == (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
        "to copy the tensor to host memory first.")
    with pytest.raises(TypeError):
        np.asarray(t)
    np.testing.assert_array_equal(t.numpy(force=True), [1, 1])


@pytest.mark.cuda
def test_cuda_device_attribute_and_moves(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    t = pygpu.from_numpy(a).cuda()
    assert t.device == pygpu.device("cuda:0") and t.is_cuda
    assert t.cuda() is t and t.to("cuda:0") is t
    assert str(t.device) == "cuda:0"
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    # a non-contiguous view moves as its values
    np.testing.assert_array_equal(t.T.cpu().numpy(), a.T)
    np.testing.assert_array_equal(pygpu.from_numpy(a).T.cuda().cpu().numpy(),
                                  a.T)


@pytest.mark.cuda
def test_pin_memory(rng):
    a = rng.standard_normal((64, 64)).astype(np.float32)
    t = pygpu.from_numpy(a)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.pin_memory() is p
    np.testing.assert_array_equal(p.numpy(), a)
    np.testing.assert_array_equal(p.cuda().cpu().numpy(), a)


@pytest.mark.cuda
@pytest.mark.parametrize("pinned", [False, True])
def test_copy_across_devices_into_an_existing_tensor(rng, pinned):
    """copy_ between the host (pinned or not) and CUDA, straight into the
    destination or through a staged copy: another dtype, a transposed or
    broadcast source, a strided destination, 0 elements."""
    a = rng.standard_normal((33, 17)).astype(np.float32)
    d = pygpu.from_numpy(a).cuda()

    def host(shape, dtype=pygpu.float32):
        h = pygpu.full(shape, float("nan"), dtype=dtype)
        return h.pin_memory() if pinned else h

    out = host((33, 17))
    assert out.copy_(d) is out and out.is_pinned() == pinned
    np.testing.assert_array_equal(out.numpy(), a)
    out64 = host((33, 17), pygpu.float64)
    np.testing.assert_array_equal(out64.copy_(d).numpy(), a.astype(np.float64))
    outT = host((17, 33))
    np.testing.assert_array_equal(outT.copy_(d.T).numpy(), a.T)
    np.testing.assert_array_equal(host((33, 17)).copy_(d[0]).numpy(),
                                  np.broadcast_to(a[0], (33, 17)))
    wide = host((33, 34))
    wide[:, ::2].copy_(d)
    np.testing.assert_array_equal(wide.numpy()[:, ::2], a)
    assert np.isnan(wide.numpy()[:, 1::2]).all()
    assert host((0, 17)).copy_(d[:0]).shape == (0, 17)
    # and back: host to an existing CUDA tensor
    back = pygpu.full((33, 17), float("nan"), device="cuda")
    np.testing.assert_array_equal(back.copy_(out).cpu().numpy(), a)
    half = pygpu.full((17, 33), float("nan"), dtype=pygpu.float16,
                      device="cuda")
    np.testing.assert_array_equal(half.copy_(out.T).cpu().numpy(),
                                  a.T.astype(np.float16))


def test_pin_memory_without_cuda():
    if pygpu.cuda.is_available():
        pytest.skip("GPU present")
    with pytest.raises(RuntimeError):
        pygpu.ones(3).pin_memory()


class TestRandom:
    def test_seeded_reproducible(self, device):
        pygpu.manual_seed(1234)
        a = pygpu.rand(1000, device=device).cpu().numpy()
        b = pygpu.randn(7, 3, device=device).cpu().numpy()
        pygpu.manual_seed(1234)
        np.testing.assert_array_equal(pygpu.rand(1000, device=device).cpu()
                                      .numpy(), a)
        np.testing.assert_array_equal(pygpu.randn(7, 3, device=device).cpu()
                                      .numpy(), b)
        c = pygpu.rand(1000, device=device).cpu().numpy()
        assert not np.array_equal(a, c)  # the stream moves on

    @pytest.mark.parametrize("dt", [pygpu.float32, pygpu.float16,
                                    pygpu.float64], ids=repr)
    def test_distributions(self, device, dt):
        pygpu.manual_seed(7)
        u = pygpu.rand(200_001, dtype=dt, device=device).cpu().numpy()
        assert u.dtype == dt.numpy_dtype
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.astype(np.float64).mean() - 0.5) < 0.01
        n = pygpu.randn(200_001, dtype=dt, device=device).cpu().numpy()
        n = n.astype(np.float64)
        assert np.all(np.isfinite(n))
        assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02

    def test_integer_dtype_refused(self, device):
        with pytest.raises(RuntimeError, match="floating point"):
            pygpu.rand(3, dtype=pygpu.int64, device=device)

    def test_initial_seed(self):
        pygpu.manual_seed(99)
        assert pygpu.initial_seed() == 99

    @pytest.mark.cuda
    def test_cpu_and_cuda_agree(self):
        pygpu.manual_seed(5)
        a = pygpu.rand(1001).numpy()
        pygpu.manual_seed(5)
        b = pygpu.rand(1001, device="cuda").cpu().numpy()
        np.testing.assert_array_equal(a, b)
        pygpu.manual_seed(5)
        a = pygpu.randn(1001, dtype=pygpu.float64).numpy()
        pygpu.manual_seed(5)
        b = pygpu.randn(1001, dtype=pygpu.float64, device="cuda").cpu().numpy()
        assert rel_err(b, a) < 1e-12


class TestRepr:
    def test_basic(self):
        t = pygpu.tensor([[0.1, -1.2]])
        assert repr(t) == "tensor([[ 0.1000, -1.2000]])"
        assert repr(pygpu.tensor([1.0, 2.0])) == "tensor([1., 2.])"
        assert repr(pygpu.tensor([1, 2])) == "tensor([1, 2])"
        assert repr(pygpu.tensor(1.5)) == "tensor(1.5000)"
        assert repr(pygpu.tensor([])) == "tensor([])"
        assert repr(pygpu.zeros(0, 3)) == "tensor([], size=(0, 3))"

    def test_dtype_shown(self):
        assert repr(pygpu.tensor([1.0], dtype=pygpu.float64)) == \
            "tensor([1.], dtype=pygpu.float64)"
        assert "dtype=pygpu.float16" in repr(pygpu.ones(2).half())

    def test_multi_row_alignment(self):
        t = pygpu.tensor([[1.5, 2.0], [3.0, -4.25]])
        assert repr(t) == "tensor([[ 1.5000,  2.0000],\n        [ 3.0000, -4.2500]])"

    def test_scientific(self):
        assert "e+" in repr(pygpu.tensor([1e-5, 1e5]))

    def test_summarized(self):
        r = repr(pygpu.zeros(2000))
        assert "..." in r and r.count("0.") == 6

    @pytest.mark.cuda
    def test_cuda(self):
        t = pygpu.tensor([[0.1, -1.2]], device="cuda")
        assert repr(t) == "tensor([[ 0.1000, -1.2000]], device='cuda:0')"


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like",
                                "rand_like", "randn_like"])
def test_like_takes_requires_grad(fn):
    t = pygpu.ones(2)
    r = getattr(pygpu, fn)(t, requires_grad=True)
    assert r.requires_grad and r.is_leaf and r.grad_fn is None
    assert not getattr(pygpu, fn)(t, requires_grad=False).requires_grad
    if fn not in ("rand_like", "randn_like"):
        with pytest.raises(RuntimeError, match="only Tensors of floating "
                           "point and complex dtype can require gradients"):
            getattr(pygpu, fn)(t.long(), requires_grad=True)


def test_cuda_memory_fraction_getter_is_exported():
    assert "get_per_process_memory_fraction" in pygpu.cuda.__all__
    assert (pygpu.cuda.get_per_process_memory_fraction
            is pygpu.cuda.memory.get_per_process_memory_fraction)
