"""set_default_device / get_default_device and `with pygpu.device(...)`:
factories given no device= follow the default, per thread as torch's;
blocks nest and restore; the default dtype reaches arange, linspace, eye
and nn layers' parameters.  pygpu.accelerator."""
import threading

import numpy as np
import pytest

import pygpu
from pygpu import nn


@pytest.fixture(autouse=True)
def restore_defaults():
    yield
    pygpu.set_default_device(None)
    pygpu.set_default_dtype(pygpu.float32)


def _made(**kw):
    """One tensor from each factory that follows the default device."""
    return {
        "empty": pygpu.empty(2, **kw), "zeros": pygpu.zeros(2, **kw),
        "ones": pygpu.ones(2, 3, **kw), "full": pygpu.full((2,), 1.5, **kw),
        "rand": pygpu.rand(2, **kw), "randn": pygpu.randn(2, **kw),
        "arange": pygpu.arange(3, **kw),
        "linspace": pygpu.linspace(0, 1, 3, **kw), "eye": pygpu.eye(2, **kw),
        "tensor": pygpu.tensor([1.0, 2.0], **kw),
        "as_tensor": pygpu.as_tensor([1.0], **kw),
        "randint": pygpu.randint(0, 5, (3,), **kw),
        "randperm": pygpu.randperm(4, **kw),
        "normal": pygpu.normal(0.0, 1.0, (2,), **kw),
    }


def test_unset_is_cpu():
    assert pygpu.get_default_device() == pygpu.device("cpu")
    assert all(t.device.type == "cpu" for t in _made().values())


def test_set_default_device(device):
    pygpu.set_default_device(device)
    want = pygpu.zeros(1, device=device).device
    assert pygpu.get_default_device() == want
    for name, t in _made().items():
        assert t.device == want, name
    # an explicit device wins; *_like and tensor methods follow the tensor
    assert pygpu.zeros(1, device="cpu").device.type == "cpu"
    c = pygpu.from_numpy(np.ones(2))
    assert c.device.type == "cpu"  # from_numpy shares memory: always CPU
    assert pygpu.zeros_like(c).device.type == "cpu"
    assert c.new_zeros(2).device.type == "cpu"
    # tensor(t) follows the default once one is set, as torch's
    assert pygpu.tensor(c).device == want
    layer = nn.Linear(3, 2)
    assert layer.weight.device == want and layer.bias.device == want
    pygpu.set_default_device(None)
    assert pygpu.get_default_device() == pygpu.device("cpu")
    assert pygpu.zeros(1).device.type == "cpu"


def test_context_manager_nests_and_restores(device):
    outer = pygpu.device(device)
    with outer as d:
        assert d is outer
        assert pygpu.ones(1).device == pygpu.ones(1, device=device).device
        with pygpu.device("cpu"):
            assert pygpu.ones(1).device.type == "cpu"
            assert pygpu.get_default_device() == pygpu.device("cpu")
            with outer:  # the same object entered again
                assert pygpu.zeros(1).device.type == outer.type
            assert pygpu.zeros(1).device.type == "cpu"
        assert pygpu.zeros(1).device.type == outer.type
    assert pygpu.get_default_device() == pygpu.device("cpu")
    # a block restores a default set before it, also after an error
    pygpu.set_default_device("cpu")
    with pytest.raises(ZeroDivisionError):
        with pygpu.device(device):
            1 / 0
    assert pygpu._C._get_default_device() == pygpu.device("cpu")


def test_tensor_keeps_its_device_without_a_default():
    t = pygpu.ones(2)
    assert pygpu._C._get_default_device() is None
    assert pygpu.tensor(t).device == t.device


def test_per_thread():
    pygpu.set_default_device("cuda:0")  # only recorded: no CUDA needed
    seen = []

    def work():
        seen.append(pygpu.get_default_device())
        seen.append(pygpu.zeros(1).device)
        with pygpu.device("cpu"):
            seen.append(pygpu._C._get_default_device())

    th = threading.Thread(target=work)
    th.start()
    th.join()
    assert seen == [pygpu.device("cpu")] * 3
    assert pygpu.get_default_device() == pygpu.device("cuda", 0)
    with pygpu.device("cpu"):
        assert pygpu.zeros(1).device.type == "cpu"
    assert pygpu._C._get_default_device() == pygpu.device("cuda", 0)


def test_errors():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        pygpu.set_default_device("xpu")
    with pytest.raises(TypeError):
        pygpu.set_default_device(1.5)
    assert pygpu.get_default_device() == pygpu.device("cpu")
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        pygpu.device("cpu").__exit__(None, None, None)


@pytest.mark.skipif(pygpu.cuda.is_available(), reason="needs no CUDA")
def test_cuda_default_without_cuda_fails_at_the_factory():
    pygpu.set_default_device("cuda")
    with pytest.raises(RuntimeError):
        pygpu.zeros(1)
    with pytest.raises(RuntimeError):
        pygpu.get_default_device()  # the index needs a CUDA device
    assert pygpu.zeros(1, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("dt", [pygpu.float64, pygpu.float16,
                                pygpu.bfloat16], ids=repr)
def test_default_dtype_reaches_ranges_and_layers(dt):
    pygpu.set_default_dtype(dt)
    assert pygpu.arange(0.0, 2.0, 0.5).dtype is dt
    assert pygpu.arange(3).dtype is pygpu.int64
    assert pygpu.linspace(0, 1, 5).dtype is dt
    assert pygpu.eye(3).dtype is dt
    layer = nn.Linear(4, 3)
    assert layer.weight.dtype is dt and layer.bias.dtype is dt
    assert nn.Linear(4, 3, dtype=pygpu.float32).weight.dtype is \
        pygpu.float32


def test_accelerator():
    acc = pygpu.accelerator
    assert acc.is_available() == pygpu.cuda.is_available()
    assert acc.device_count() == pygpu.cuda.device_count()
    built = pygpu._C._cuda_is_built()
    assert acc.current_accelerator() == (pygpu.device("cuda") if built
                                         else None)
    if acc.is_available():
        assert acc.current_accelerator(check_available=True) == \
            pygpu.device("cuda")
        assert acc.current_device_index() == pygpu.cuda.current_device()
    else:
        assert acc.current_accelerator(check_available=True) is None
        assert acc.device_count() == 0
        with pytest.raises(RuntimeError):
            acc.current_device_index()


@pytest.mark.cuda
def test_accelerator_on_cuda():
    acc = pygpu.accelerator
    assert acc.is_available() and acc.device_count() >= 1
    acc.set_device_index(0)
    assert acc.current_device_index() == 0
    x = pygpu.ones(1000, device="cuda") * 2
    acc.synchronize()
    assert x.sum().item() == 2000.0
