"""autocast: products cast float32 inputs to float16 inside, nothing
changes outside; nesting, enabled=False, decorators and threads."""
import threading
import warnings

import numpy as np
import pytest

import pygpu
from pygpu import nn

from conftest import rel_err


def fp16_kwargs(device):
    """float16 on the CPU too (its default is bfloat16)."""
    return {"dtype": pygpu.float16} if device == "cpu" else {}


def products(device):
    a = pygpu.randn(4, 8, device=device)
    b = pygpu.randn(8, 3, device=device)
    w = pygpu.randn(3, 8, device=device)
    bias = pygpu.randn(3, device=device)
    f = nn.functional
    return {
        "matmul": lambda: pygpu.matmul(a, b),
        "@": lambda: a @ b,
        "method": lambda: a.matmul(b),
        "mm": lambda: pygpu.mm(a, b),
        "bmm": lambda: pygpu.bmm(a.unsqueeze(0), b.unsqueeze(0)),
        "linear": lambda: f.linear(a, w, bias),
        "linear_relu": lambda: f.linear_relu(a, w, bias),
        "Linear": lambda: nn.Linear(8, 3, device=device)(a),
    }


def test_products_inside_and_outside(device):
    ops = products(device)
    with pygpu.autocast(device, **fp16_kwargs(device)):
        assert pygpu.is_autocast_enabled(device)
        for name, op in ops.items():
            assert op().dtype == pygpu.float16, name
        x = pygpu.randn(3, device=device)
        assert pygpu.relu(x).dtype == pygpu.float32
        assert (x + x).dtype == pygpu.float32
        d = pygpu.randn(2, 2, dtype=pygpu.float64, device=device)
        assert (d @ d).dtype == pygpu.float64  # float64 is not cast
    assert not pygpu.is_autocast_enabled(device)
    for name, op in ops.items():
        assert op().dtype == pygpu.float32, name


def test_values_match_float16_reference(device, rng):
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    ta = pygpu.tensor(a, device=device)
    tb = pygpu.tensor(b, device=device)
    with pygpu.amp.autocast(device, **fp16_kwargs(device)):
        got = (ta @ tb).detach().cpu().detach().numpy()
    ref = a.astype(np.float16).astype(np.float64) @ \
        b.astype(np.float16).astype(np.float64)
    assert rel_err(got, ref) < 1e-2


def test_nesting_and_disabled_inside(device):
    a = pygpu.randn(2, 2, device=device)
    kw = fp16_kwargs(device)
    with pygpu.autocast(device, **kw):
        with pygpu.autocast(device, enabled=False):
            assert (a @ a).dtype == pygpu.float32
            assert not pygpu.is_autocast_enabled(device)
            with pygpu.autocast(device, **kw):
                assert (a @ a).dtype == pygpu.float16
            assert (a @ a).dtype == pygpu.float32
        assert (a @ a).dtype == pygpu.float16
        ctx = pygpu.autocast(device, **kw)
        with ctx:
            with ctx:  # the same object entered twice
                pass
            assert pygpu.is_autocast_enabled(device)
    assert (a @ a).dtype == pygpu.float32


def test_state_restored_after_exception(device):
    with pytest.raises(ZeroDivisionError):
        with pygpu.autocast(device, **fp16_kwargs(device)):
            1 / 0
    assert not pygpu.is_autocast_enabled(device)


def test_decorator(device):
    @pygpu.autocast(device, **fp16_kwargs(device))
    def run(a):
        return a @ a

    a = pygpu.randn(3, 3, device=device)
    assert run(a).dtype == pygpu.float16
    assert (a @ a).dtype == pygpu.float32


def test_state_is_per_thread(device):
    a = pygpu.randn(2, 2, device=device)
    seen = {}
    started, done = threading.Event(), threading.Event()

    def other():
        started.wait()
        seen["enabled"] = pygpu.is_autocast_enabled(device)
        seen["dtype"] = (a @ a).dtype
        with pygpu.autocast(device, **fp16_kwargs(device)):
            seen["inner"] = (a @ a).dtype
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with pygpu.autocast(device, **fp16_kwargs(device)):
        started.set()
        done.wait(10)
        assert (a @ a).dtype == pygpu.float16
    t.join()
    assert seen == {"enabled": False, "dtype": pygpu.float32,
                    "inner": pygpu.float16}
    assert (a @ a).dtype == pygpu.float32


def test_device_types_are_separate():
    with pygpu.autocast("cuda"):
        assert pygpu.is_autocast_enabled("cuda")
        assert pygpu.is_autocast_enabled()
        assert not pygpu.is_autocast_enabled("cpu")
        a = pygpu.randn(2, 2)
        assert (a @ a).dtype == pygpu.float32  # CPU tensors untouched
    assert pygpu.get_autocast_dtype("cuda") == pygpu.float16


def test_cpu_default_dtype_and_bad_arguments():
    assert pygpu.autocast("cpu").fast_dtype is pygpu.bfloat16
    assert pygpu.get_autocast_dtype("cpu") is pygpu.bfloat16
    with pytest.warns(UserWarning, match="CPU autocast.*Disabling"):
        ctx = pygpu.autocast("cpu", dtype=pygpu.float64)
    with ctx:
        assert not pygpu.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast"):
        pygpu.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = pygpu.autocast("cuda", dtype=pygpu.float64)
    with ctx:
        assert not pygpu.is_autocast_enabled("cuda")
    with pygpu.autocast("cpu", enabled=False):  # no dtype needed
        pass


def test_cuda_amp_alias():
    import pygpu.cuda.amp
    with pytest.warns(FutureWarning, match="deprecated"):
        ctx = pygpu.cuda.amp.autocast()
    assert isinstance(ctx, pygpu.amp.autocast)
    with ctx:
        assert pygpu.is_autocast_enabled("cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = pygpu.cuda.amp.autocast(enabled=False)
    with ctx:
        assert not pygpu.is_autocast_enabled("cuda")


def test_tutorial_model_under_autocast(device, rng):
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    x = pygpu.tensor(rng.standard_normal((32, 784)).astype(np.float32),
                     device=device)
    with pygpu.autocast(device, **fp16_kwargs(device)):
        y = model(x)
    assert y.dtype == pygpu.float16
    assert model[0].weight.dtype == pygpu.float32
    ref = model(x).detach().cpu().detach().numpy()
    assert rel_err(y.detach().cpu().detach().numpy(), ref) < 1e-2
