"""Module forward hooks: register_forward_pre_hook and
register_forward_hook with torch's order, replacement rules, with_kwargs,
prepend, always_call, and removal through the handle."""
import warnings

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.utils.hooks import RemovableHandle


class Affine(nn.Module):
    def forward(self, x, scale=1.0):
        return x * scale + 1


def test_order_and_arguments():
    m, log = Affine(), []
    x = pygpu.tensor([1.0, 2.0])
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", mod,
                                                              args)))
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre2",)))
    m.register_forward_hook(lambda mod, args, out: log.append(("post1",
                                                               out)))
    m.register_forward_hook(lambda mod, args, out: log.append(("post2",)))
    y = m(x)
    assert [e[0] for e in log] == ["pre1", "pre2", "post1", "post2"]
    assert log[0][1] is m and log[0][2][0] is x and len(log[0][2]) == 1
    assert log[2][1] is y
    assert y.tolist() == [2.0, 3.0]


def test_prepend_runs_first():
    m, log = Affine(), []
    m.register_forward_pre_hook(lambda *a: log.append("a"))
    m.register_forward_pre_hook(lambda *a: log.append("b"), prepend=True)
    m.register_forward_hook(lambda *a: log.append("c"))
    m.register_forward_hook(lambda *a: log.append("d"), prepend=True)
    m(pygpu.ones(1))
    assert log == ["b", "a", "d", "c"]


def test_pre_hook_replaces_input():
    m = Affine()
    x = pygpu.tensor([1.0, 2.0])
    h = m.register_forward_pre_hook(lambda mod, args: args[0] * 10)
    assert m(x).tolist() == [11.0, 21.0]  # a single value becomes (value,)
    h.remove()
    m.register_forward_pre_hook(lambda mod, args: (args[0], 3.0))
    assert m(x).tolist() == [4.0, 7.0]  # a tuple is the new args


def test_pre_hook_with_kwargs():
    m = Affine()
    seen = []

    def hook(mod, args, kwargs):
        seen.append(dict(kwargs))
        return args, {"scale": 5.0}

    m.register_forward_pre_hook(hook, with_kwargs=True)
    assert m(pygpu.tensor([1.0]), scale=2.0).tolist() == [6.0]
    assert seen == [{"scale": 2.0}]
    m2 = Affine()
    m2.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        m2(pygpu.ones(1))


def test_forward_hook_replaces_output():
    m = Affine()
    m.register_forward_hook(lambda mod, args, out: out * 2)
    m.register_forward_hook(lambda mod, args, out: None)  # keeps it
    m.register_forward_hook(lambda mod, args, out: out - 1)
    assert m(pygpu.tensor([1.0])).tolist() == [3.0]


def test_forward_hook_with_kwargs():
    m, seen = Affine(), []

    def hook(mod, args, kwargs, out):
        seen.append((kwargs, out.tolist()))

    m.register_forward_hook(hook, with_kwargs=True)
    m(pygpu.tensor([2.0]), scale=3.0)
    assert seen == [({"scale": 3.0}, [7.0])]


def test_remove_and_context_manager():
    m, log = Affine(), []
    h1 = m.register_forward_hook(lambda *a: log.append(1))
    h2 = m.register_forward_pre_hook(lambda *a: log.append(2),
                                     with_kwargs=True)
    assert isinstance(h1, RemovableHandle) and h1.id != h2.id
    h1.remove()
    h1.remove()  # twice: nothing
    h2.remove()
    assert h2.id not in m._forward_pre_hooks_with_kwargs
    m(pygpu.ones(1))
    assert log == []
    with m.register_forward_hook(lambda *a: log.append(3)):
        m(pygpu.ones(1))
    m(pygpu.ones(1))
    assert log == [3]


def test_always_call_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m, log = Bad(), []
    m.register_forward_hook(lambda mod, args, out: log.append(("plain",
                                                               out)))
    m.register_forward_hook(lambda mod, args, out: log.append(("always",
                                                               out)),
                            always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(pygpu.ones(1))
    assert log == [("always", None)]

    def failing(mod, args, out):
        raise KeyError("second")

    m2 = Bad()
    m2.register_forward_hook(failing, always_call=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="boom"):
            m2(pygpu.ones(1))
    assert any("always_call=True" in str(x.message) for x in w)


def test_hooks_inside_sequential_and_fused_pairs(rng):
    lin, relu = nn.Linear(3, 4), nn.ReLU()
    seq = nn.Sequential(lin, relu, nn.Linear(4, 2))
    x = pygpu.tensor(rng.standard_normal((5, 3)), dtype=pygpu.float32)
    y0 = seq(x).detach().numpy().copy()  # the plan fuses lin + relu
    seen = []
    h = lin.register_forward_hook(lambda mod, a, out: seen.append(out) or
                                  out * 0)
    y1 = seq(x).detach().numpy()
    assert len(seen) == 1 and seen[0].shape == (5, 4)
    # lin's output zeroed: relu(0) = 0, so only the last bias is left
    want = np.broadcast_to(seq[2].bias.detach().numpy(), (5, 2))
    np.testing.assert_allclose(y1, want, rtol=1e-6)
    h.remove()
    np.testing.assert_allclose(seq(x).detach().numpy(), y0, rtol=1e-6)
    p = relu.register_forward_pre_hook(lambda mod, a: a[0] * 0 - 1)
    np.testing.assert_allclose(seq(x).detach().numpy(), want, rtol=1e-6)
    p.remove()


def test_register_module_and_buffer_exist():
    m = nn.Module()
    m.register_module("child", nn.ReLU())
    m.add_module("other", nn.Tanh())
    m.register_buffer("running", pygpu.zeros(2))
    assert list(dict(m.named_children())) == ["child", "other"]
    assert list(m.state_dict()) == ["running"]
