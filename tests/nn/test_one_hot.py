"""nn.functional.one_hot against NumPy, with torch's checks."""
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 0), (1,), ()])
@pytest.mark.parametrize("num_classes", [-1, 9])
def test_one_hot_against_numpy(device, rng, shape, num_classes):
    a = rng.integers(0, 9, shape)
    if a.size == 0 and num_classes == -1:
        num_classes = 9  # inferring needs an element
    t = pygpu.tensor(a, device=device)
    got = F.one_hot(t, num_classes)
    c = int(a.max()) + 1 if num_classes == -1 else num_classes
    want = (a[..., None] == np.arange(c)).astype(np.int64)
    assert got.dtype == pygpu.int64 and got.device == t.device
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_one_hot_of_a_transposed_index(device, rng):
    a = rng.integers(0, 5, (4, 3))
    t = pygpu.tensor(a, device=device).t()
    np.testing.assert_array_equal(F.one_hot(t, 5).cpu().numpy(),
                                  (a.T[..., None] == np.arange(5)))


@pytest.mark.parametrize("values,num_classes,message", [
    ([0, -1], -1, "Class values must be non-negative."),
    ([0, 3], 3, "Class values must be smaller than num_classes."),
    ([], -1, "Can not infer total number of classes from empty tensor."),
])
def test_one_hot_errors(device, values, num_classes, message):
    t = pygpu.tensor(values, dtype=pygpu.int64, device=device)
    with pytest.raises(RuntimeError, match=message):
        F.one_hot(t, num_classes)


def test_one_hot_wants_int64():
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(pygpu.tensor([1.0, 2.0]))
