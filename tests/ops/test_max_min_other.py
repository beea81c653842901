"""max(input, other) and min(input, other), functions and methods: the
elementwise maximum and minimum (torch's overload), with broadcasting,
NaN propagation and maximum's gradient; the dim forms unchanged."""
import numpy as np
import pytest

import pygpu

from conftest import host


@pytest.mark.parametrize("name,npop", [("max", np.maximum),
                                       ("min", np.minimum)])
def test_elementwise_form(device, rng, name, npop):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4,))
    a[0, 1] = np.nan
    ta, tb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    ref = npop(a, b)
    for got in (getattr(pygpu, name)(ta, tb), getattr(ta, name)(tb),
                getattr(ta, name)(other=tb), getattr(pygpu, name)(ta,
                                                                   other=tb)):
        assert tuple(got.shape) == (3, 4)
        np.testing.assert_array_equal(host(got), ref)
    # still the reductions with a dim
    v, i = getattr(pygpu, name)(ta[1:], 1)
    np.testing.assert_array_equal(host(v), getattr(np, name)(a[1:], 1))
    np.testing.assert_array_equal(host(getattr(ta, name)()),
                                  getattr(np, name)(a))
    r = getattr(ta, name)(dim=0, keepdim=True)
    assert tuple(r.values.shape) == (1, 4)


def test_mixed_dtypes_and_gradient(device):
    a = pygpu.tensor([1.0, 5.0, 3.0], device=device, requires_grad=True)
    b = pygpu.tensor([4.0, 2.0, 3.0], device=device, requires_grad=True)
    m = pygpu.max(a, b)
    m.backward(pygpu.tensor([1.0, 10.0, 100.0], device=device))
    ga, gb = host(a.grad), host(b.grad)
    # maximum's rule: a tie splits the gradient in halves
    assert ga.tolist() == [0.0, 10.0, 50.0]
    assert gb.tolist() == [1.0, 0.0, 50.0]
    i = pygpu.tensor([1, 7], device=device)
    assert host(pygpu.min(i, pygpu.tensor([2.5, 2.5], device=device))
                ).tolist() == [1.0, 2.5]


def test_errors(device):
    a = pygpu.ones(3, device=device)
    with pytest.raises(RuntimeError, match="must match the size"):
        pygpu.max(a, pygpu.ones(4, device=device))
