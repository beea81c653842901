"""dtypes: names, aliases, itemsize, NumPy mapping, promotion."""
import numpy as np
import pytest

import pygpu


@pytest.mark.parametrize("dt,size,npdt", [
    (pygpu.float32, 4, np.float32), (pygpu.float16, 2, np.float16),
    (pygpu.float64, 8, np.float64), (pygpu.int64, 8, np.int64),
])
def test_table(dt, size, npdt):
    assert dt.itemsize == size
    assert dt.numpy_dtype == np.dtype(npdt)
    assert dt.is_floating_point == (npdt != np.int64)


def test_aliases_and_repr():
    assert pygpu.half is pygpu.float16
    assert pygpu.double is pygpu.float64
    assert pygpu.long is pygpu.int64
    assert pygpu.float is pygpu.float32
    assert repr(pygpu.float16) == "pygpu.float16"


def test_default_dtype_is_float32():
    assert pygpu.zeros(2).dtype is pygpu.float32
    assert pygpu.tensor([1.5]).dtype is pygpu.float32
    assert pygpu.tensor([1, 2]).dtype is pygpu.int64
    assert pygpu.tensor(np.zeros(2)).dtype is pygpu.float64


def test_not_constructible():
    with pytest.raises(TypeError):
        pygpu.dtype()


def test_bad_dtype_argument():
    with pytest.raises(TypeError):
        pygpu.zeros(2, dtype="float32")
    with pytest.raises(TypeError):
        pygpu.zeros(2, dtype=np.float32)
