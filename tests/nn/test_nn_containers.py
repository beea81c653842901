"""nn.ModuleList, ModuleDict, ParameterList, ParameterDict: members
registered (parameters, state_dict keys as torch's, to(), zero_grad),
indexing and the dict/list methods, torch's reprs and errors."""
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
from pygpu import nn


def _lin(i=2, o=3):
    return nn.Linear(i, o)


# ------------------------------------------------------------- ModuleList

def test_modulelist_registers_and_indexes():
    layers = [_lin(), nn.ReLU(), _lin(3, 1)]
    ml = nn.ModuleList(layers)
    assert len(ml) == 3 and list(ml) == layers
    assert ml[0] is layers[0] and ml[-1] is layers[2]
    assert list(ml.state_dict()) == ["0.weight", "0.bias", "2.weight",
                                     "2.bias"]
    assert len(list(ml.parameters())) == 4
    sl = ml[1:]
    assert isinstance(sl, nn.ModuleList) and list(sl) == layers[1:]
    assert list(sl.state_dict()) == ["1.weight", "1.bias"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        ml[3]
    with pytest.raises(IndexError):
        ml[-4]


def test_modulelist_mutation_renumbers():
    a, b, c, d = _lin(), _lin(), _lin(), _lin()
    ml = nn.ModuleList([a, b])
    assert ml.append(c) is ml
    ml.extend([d])
    assert list(ml) == [a, b, c, d]
    ml.insert(1, nn.ReLU())
    assert [type(m).__name__ for m in ml] == ["Linear", "ReLU", "Linear",
                                              "Linear", "Linear"]
    del ml[1]
    assert list(ml) == [a, b, c, d]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    del ml[0:4:2]
    assert list(ml) == [b, d] and list(ml._modules) == ["0", "1"]
    ml[-1] = a
    assert list(ml) == [b, a]
    assert ml.pop(0) is b and list(ml) == [a]
    ml += [c]
    assert list(ml) == [a, c]
    both = ml + nn.ModuleList([d])
    assert isinstance(both, nn.ModuleList) and list(both) == [a, c, d]
    assert list(ml) == [a, c]  # + makes a new list
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(3)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        ml.append(3)


def test_modulelist_inside_a_model():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([_lin(4, 4) for _ in range(3)])

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x)
            return x

    net = Net()
    keys = list(net.state_dict())
    assert keys == [f"blocks.{i}.{w}" for i in range(3)
                    for w in ("weight", "bias")]
    net.double()
    assert all(p.dtype == pygpu.float64 for p in net.parameters())
    x = pygpu.randn(5, 4, dtype=pygpu.float64)
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_modulelist_repr_groups_repeats():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2),
                        nn.ReLU(), nn.Linear(2, 2)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3): ReLU()\n"
        "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
        ")")
    assert repr(nn.ModuleList()) == "ModuleList()"


# ------------------------------------------------------------- ModuleDict

def test_moduledict_is_an_ordered_dict_of_children():
    a, r = _lin(), nn.ReLU()
    md = nn.ModuleDict(OrderedDict([("z", a), ("act", r)]))
    assert list(md) == ["z", "act"] and list(md.keys()) == ["z", "act"]
    assert list(md.values()) == [a, r]
    assert list(md.items()) == [("z", a), ("act", r)]
    assert "z" in md and "q" not in md and len(md) == 2
    assert md["z"] is a
    assert list(md.state_dict()) == ["z.weight", "z.bias"]
    b = _lin(3, 3)
    md.update([("b", b)])
    md.update({"z": nn.Tanh()})  # replaces in place, keeps the order
    assert list(md) == ["z", "act", "b"]
    assert isinstance(md["z"], nn.Tanh)
    assert list(md.state_dict()) == ["b.weight", "b.bias"]
    assert md.pop("b") is b and "b" not in md
    del md["act"]
    assert list(md) == ["z"]
    with pytest.raises(KeyError):
        md["act"]
    md.clear()
    assert len(md) == 0 and list(md.parameters()) == []
    with pytest.raises(KeyError, match="already exists"):
        md["keys"] = _lin()  # would hide the method, as in torch
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("a", r, 1)])
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        md.update(3)
    assert repr(nn.ModuleDict({"act": nn.ReLU()})) == \
        "ModuleDict(\n  (act): ReLU()\n)"


# ---------------------------------------------------------- ParameterList

def test_parameterlist_wraps_and_registers(rng):
    raw = pygpu.tensor(rng.standard_normal((2, 3)), dtype=pygpu.float32)
    p = nn.Parameter(pygpu.ones(4))
    pl = nn.ParameterList([raw, p])
    assert len(pl) == 2
    assert isinstance(pl[0], nn.Parameter) and pl[0].requires_grad
    assert pl[1] is p and pl[-1] is p
    np.testing.assert_array_equal(pl[0].detach().numpy(), raw.numpy())
    assert list(pl.state_dict()) == ["0", "1"]
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(pygpu.zeros(1))
    pl[0] = pygpu.full((2,), 3.0)
    assert isinstance(pl[0], nn.Parameter) and pl[0].tolist() == [3.0, 3.0]
    sl = pl[1:]
    assert isinstance(sl, nn.ParameterList) and list(sl) == [pl[1], pl[2]]
    pl.append("not a tensor")  # kept as an object, not a parameter
    assert pl[3] == "not a tensor" and len(list(pl.parameters())) == 3
    with pytest.raises(IndexError):
        pl[4]
    with pytest.raises(TypeError, match="iterable"):
        pl.extend(pygpu.ones(2))
    pl.to(pygpu.float64)
    assert all(q.dtype == pygpu.float64 for q in pl.parameters())
    assert pl[1] is p  # converted in place


def test_parameterlist_in_model_and_repr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([pygpu.ones(2, 3), pygpu.ones(4)])

    m = M()
    assert list(m.state_dict()) == ["ps.0", "ps.1"]
    (m.ps[0].sum() * 2).backward()
    assert m.ps[0].grad.tolist() == [[2.0] * 3] * 2
    m.zero_grad()
    assert m.ps[0].grad is None
    assert repr(m.ps) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [pygpu.float32 of size 2x3]\n"
        "    (1): Parameter containing: [pygpu.float32 of size 4]\n"
        ")")


# ---------------------------------------------------------- ParameterDict

def test_parameterdict_is_a_dict_of_parameters():
    pd = nn.ParameterDict({"w": pygpu.ones(2), "b": pygpu.zeros(3)})
    # a plain dict is taken in sorted key order, as torch does
    assert list(pd) == ["b", "w"] and list(pd.state_dict()) == ["b", "w"]
    assert all(isinstance(v, nn.Parameter) for v in pd.values())
    assert "w" in pd and len(pd) == 2
    pd.update(OrderedDict([("z", pygpu.ones(1)), ("a", pygpu.ones(1))]))
    assert list(pd) == ["b", "w", "z", "a"]  # an OrderedDict keeps order
    assert pd.get("nope") is None and pd.get("nope", 3) == 3
    w = pd.pop("w")
    assert isinstance(w, nn.Parameter) and "w" not in pd
    assert "w" not in dict(pd.named_parameters())
    assert pd.setdefault("w", pygpu.ones(5)).shape == (5,)
    k, v = pd.popitem()
    assert k == "w" and v.shape == (5,)
    del pd["z"]
    assert list(pd.keys()) == ["b", "a"]
    c = pd.copy()
    assert isinstance(c, nn.ParameterDict) and list(c) == ["b", "a"]
    assert c["b"] is pd["b"]
    u = pd | {"q": pygpu.ones(1)}
    assert list(u) == ["b", "a", "q"] and "q" not in pd
    pd |= {"q": pygpu.ones(1)}
    assert list(pd) == ["b", "a", "q"]
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = pygpu.ones(1)
    with pytest.raises(KeyError, match="contain"):
        pd["a.b"] = pygpu.ones(1)
    with pytest.raises(KeyError):
        pd["missing"]


def test_parameterdict_in_model_to_and_repr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.pd = nn.ParameterDict(OrderedDict(
                [("scale", pygpu.ones(3)), ("shift", pygpu.zeros(3))]))

    m = M()
    assert list(m.state_dict()) == ["pd.scale", "pd.shift"]
    scale = m.pd["scale"]
    m.to(dtype=pygpu.float64)
    assert m.pd["scale"] is scale and scale.dtype == pygpu.float64
    sd = {k: v * 2 for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert m.pd["scale"].tolist() == [2.0, 2.0, 2.0]
    assert repr(m.pd) == (
        "ParameterDict(\n"
        "    (scale): Parameter containing: [pygpu.float64 of size 3]\n"
        "    (shift): Parameter containing: [pygpu.float64 of size 3]\n"
        ")")


@pytest.mark.cuda
def test_containers_move_to_cuda():
    m = nn.Module()
    m.ml = nn.ModuleList([nn.Linear(2, 2)])
    m.pl = nn.ParameterList([pygpu.ones(2)])
    m.pd = nn.ParameterDict({"a": pygpu.ones(2)})
    m.cuda()
    assert all(p.device.type == "cuda" for p in m.parameters())
    assert "(cuda:0)" in repr(m.pl) and "(cuda:0)" in repr(m.pd)
