"""nn.Module bookkeeping: registration, iteration, in-place conversions,
state_dict and its errors, repr, Parameter."""
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
from pygpu import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = nn.Parameter(pygpu.ones(3))
        self.register_buffer("steps", pygpu.zeros(1, dtype=pygpu.int64))
        self.register_buffer("tmp", pygpu.zeros(2), persistent=False)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(3, 2))

    def forward(self, x):
        return self.head(self.fc(x) * self.scale)


def test_registration_and_iteration():
    net = Net()
    assert [k for k, _ in net.named_parameters()] == [
        "scale", "fc.weight", "fc.bias", "head.1.weight", "head.1.bias"]
    assert [k for k, _ in net.named_buffers()] == ["steps", "tmp"]
    assert [k for k, _ in net.named_children()] == ["fc", "head"]
    assert [k for k, _ in net.named_modules()] == [
        "", "fc", "head", "head.0", "head.1"]
    assert len(list(net.parameters())) == 5
    assert len(list(net.modules())) == 5
    assert list(net.children()) == [net.fc, net.head]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert net._parameters["scale"] is net.scale


def test_add_module_register_parameter_and_reassignment():
    m = nn.Module()
    m.add_module("lin", nn.Linear(2, 2))
    m.register_parameter("p", None)
    assert m.p is None and list(m.named_parameters())[0][0] == "lin.weight"
    m.p = nn.Parameter(pygpu.zeros(2))
    assert [k for k, _ in m.named_parameters()][0] == "p"  # own first
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as "
                                        "parameter 'p'"):
        m.p = pygpu.zeros(2)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", pygpu.zeros(1))
    del m.lin
    assert "lin" not in m._modules and not hasattr(m, "lin")
    m.p = None
    assert list(m.parameters()) == []
    shared = nn.Linear(2, 2)
    m.a, m.b = shared, shared
    assert len(list(m.parameters())) == 2  # shared once


def test_to_keeps_parameter_identity_and_casts(device):
    net = Net()
    before = list(net.parameters())
    assert net.to(device) is net
    assert all(a is b for a, b in zip(before, net.parameters()))
    assert all(p.device.type == device for p in net.parameters())
    net.double()
    assert net.fc.weight.dtype == pygpu.float64
    assert net.steps.dtype == pygpu.int64  # integer buffers keep theirs
    net.half()
    assert all(p.dtype == pygpu.float16 for p in net.parameters())
    net.to(pygpu.device(device), pygpu.float32)
    assert net.fc.weight.dtype == pygpu.float32
    assert isinstance(net.fc.weight, nn.Parameter)
    net.cpu().float()
    assert net.fc.weight.device.type == "cpu"
    with pytest.raises(TypeError, match="floating point"):
        net.to(pygpu.int64)
    y = net(pygpu.randn(5, 4))
    assert y.shape == (5, 2)


@pytest.mark.cuda
def test_cuda_method_moves_in_place():
    net = Net()
    w = net.fc.weight
    net.cuda(0)
    assert w.device == pygpu.device("cuda:0") and net.fc.weight is w


def test_train_eval_apply():
    net = Net()
    assert net.training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 2
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_state_dict_round_trip(rng):
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["scale", "steps", "fc.weight", "fc.bias",
                        "head.1.weight", "head.1.bias"]
    assert not isinstance(sd["fc.weight"], nn.Parameter)
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    x = pygpu.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    w = b.fc.weight
    b.load_state_dict(a.state_dict())
    assert b.fc.weight is w  # copied in place
    b.load_state_dict(a.state_dict(), assign=True)
    assert isinstance(b.fc.weight, nn.Parameter)


def test_load_state_dict_errors():
    lin = nn.Linear(3, 4)
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": pygpu.zeros(4, 3)})
    assert str(e.value) == ('Error(s) in loading state_dict for Linear:\n\t'
                            'Missing key(s) in state_dict: "bias". ')
    sd = OrderedDict(weight=pygpu.zeros(4, 3), bias=pygpu.zeros(4),
                     extra=pygpu.zeros(1))
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Linear:\n\t'
                            'Unexpected key(s) in state_dict: "extra". ')
    res = lin.load_state_dict(sd, strict=False)
    assert res.unexpected_keys == ["extra"] and res.missing_keys == []
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": pygpu.zeros(4, 5),
                             "bias": pygpu.zeros(4)}, strict=False)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Linear:\n\tsize mismatch for "
        "weight: copying a param with shape pygpu.Size([4, 5]) from "
        "checkpoint, the shape in current model is pygpu.Size([4, 3]).")
    with pytest.raises(TypeError, match="dict-like"):
        lin.load_state_dict([1])


def test_repr_layout():
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(inplace=True),
                        nn.Sequential(nn.Flatten(), nn.Identity()))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=True)\n"
        "  (1): ReLU(inplace=True)\n"
        "  (2): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Identity()\n"
        "  )\n"
        ")")
    assert repr(nn.Linear(2, 3, bias=False)) == \
        "Linear(in_features=2, out_features=3, bias=False)"


def test_parameter(device):
    p = nn.Parameter(pygpu.ones(2, 2, device=device))
    assert p.requires_grad and p.grad is None
    assert not nn.Parameter(pygpu.ones(1), requires_grad=False).requires_grad
    assert p.requires_grad_(False) is p and not p.requires_grad
    q = p + 1
    assert type(q) is pygpu.Tensor and q.sum().item() == 8.0
    assert type(p @ p) is pygpu.Tensor
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert nn.Parameter().shape == (0,)


def test_data_setter_rebinds(device):
    t = pygpu.ones(3, device=device)
    other = pygpu.zeros(2, 2, dtype=pygpu.float64)
    t.data = other
    assert t.shape == (2, 2) and t.dtype == pygpu.float64
    assert t.device.type == "cpu"
    other.fill_(5.0)
    assert t.sum().item() == 20.0  # shares other's memory
    with pytest.raises(TypeError):
        t.data = 3


def test_forward_missing():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)
