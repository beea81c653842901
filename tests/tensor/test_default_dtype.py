"""set_default_dtype / get_default_dtype: factories, Python floats in
tensor() and promotion, true division and the floating functions of
integer tensors follow the process-wide default; non-floating dtypes are
refused with torch's TypeError."""
import threading

import numpy as np
import pytest

import pygpu


@pytest.fixture
def default_dtype():
    """Set the default for one test, float32 again afterwards."""
    yield pygpu.set_default_dtype
    pygpu.set_default_dtype(pygpu.float32)


@pytest.mark.parametrize("dt", [pygpu.float64, pygpu.float16], ids=repr)
def test_factories_and_promotion_follow(device, default_dtype, dt):
    default_dtype(dt)
    assert pygpu.get_default_dtype() is dt
    made = [pygpu.zeros(2, device=device), pygpu.ones(2, device=device),
            pygpu.empty(2, device=device), pygpu.rand(2, device=device),
            pygpu.randn(2, device=device), pygpu.full((2,), 1.5,
                                                      device=device),
            pygpu.tensor([1.5, 2.0], device=device),
            pygpu.tensor(0.5, device=device), pygpu.Tensor(3),
            pygpu.Tensor([1, 2])]
    assert all(x.dtype is dt for x in made)
    i = pygpu.tensor([1, 2], device=device)
    assert pygpu.full((2,), 3, device=device).dtype is pygpu.int64
    assert pygpu.tensor([1, 2]).dtype is pygpu.int64
    assert (i / 2).dtype is dt and (i / i).dtype is dt
    assert (i * 1.5).dtype is dt and (i ** 0.5).dtype is dt
    assert pygpu.exp(i).dtype is dt and i.clamp(min=0.5).dtype is dt
    assert pygpu.result_type(i, 1.5) is dt
    assert pygpu.finfo().dtype == repr(dt).split(".")[1]
    np.testing.assert_allclose((i / 4).tolist(), [0.25, 0.5])
    # explicit dtypes and float tensors are untouched
    assert pygpu.zeros(1, dtype=pygpu.float32).dtype is pygpu.float32
    f = pygpu.ones(2, device=device, dtype=pygpu.float32)
    assert (f * 2.5).dtype is pygpu.float32
    assert pygpu.from_numpy(np.zeros(2)).dtype is pygpu.float64


def test_refuses_other_dtypes(default_dtype):
    for bad in (pygpu.int64, "float64", None, 1.0):
        with pytest.raises(TypeError, match="only floating-point types are "
                                            "supported as the default type"):
            pygpu.set_default_dtype(bad)
    assert pygpu.get_default_dtype() is pygpu.float32
    default_dtype(pygpu.float64)
    default_dtype(pygpu.float32)
    assert pygpu.zeros(1).dtype is pygpu.float32


def test_process_wide(default_dtype):
    default_dtype(pygpu.float64)
    seen = []
    th = threading.Thread(target=lambda: seen.append(pygpu.zeros(1).dtype))
    th.start()
    th.join()
    assert seen == [pygpu.float64]  # not per thread, as torch's
