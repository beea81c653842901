"""pygpu.save / load: round trips, map_location, the restricted
unpickler; pickling and deepcopy of tensors and Parameters."""
import copy
import io
import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
from pygpu import nn

from conftest import HAS_CUDA


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.detach().cpu().detach().numpy(), b.detach().cpu().detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64"])
def test_tensor_round_trip(device, dtype, tmp_path, rng):
    t = pygpu.tensor(rng.standard_normal((3, 5)) * 100,
                     dtype=getattr(pygpu, dtype), device=device)
    path = tmp_path / "t.pt"
    pygpu.save(t, path)
    back = pygpu.load(path)
    same(back, t)
    assert back.device == t.device
    same(pygpu.load(str(path), map_location="cpu"), t.cpu())


def test_nested_containers_and_views(device, rng):
    x = pygpu.tensor(rng.standard_normal((4, 6)), device=device)
    obj = {"sd": OrderedDict(w=x, b=x[1]), "list": [x.T, 3, 2.5, "s"],
           "t": (True, None, pygpu.tensor(7)), "shape": x.shape,
           "dev": x.device, "dtype": pygpu.float16, "n": {1, 2}}
    buf = io.BytesIO()
    pygpu.save(obj, buf)
    buf.seek(0)
    back = pygpu.load(buf)
    assert isinstance(back["sd"], OrderedDict)
    same(back["sd"]["w"], x)
    same(back["sd"]["b"], x[1])
    same(back["list"][0], x.T.contiguous())
    assert back["list"][1:] == [3, 2.5, "s"]
    assert back["t"][:2] == (True, None) and back["t"][2].item() == 7
    assert back["shape"] == x.shape and back["dev"] == x.device
    assert back["dtype"] is pygpu.float16 and back["n"] == {1, 2}


def test_state_dict_round_trip_into_model(device, tmp_path, rng):
    a = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    b = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    pygpu.save(a.state_dict(), tmp_path / "sd.pt")
    b.load_state_dict(pygpu.load(tmp_path / "sd.pt"))
    x = pygpu.tensor(rng.standard_normal((3, 5)).astype(np.float32),
                     device=device)
    same(a(x), b(x))


def test_map_location_forms(tmp_path):
    t = pygpu.arange(6) if hasattr(pygpu, "arange") else \
        pygpu.tensor([0, 1, 2, 3, 4, 5])
    pygpu.save({"a": t}, tmp_path / "m.pt")
    p = tmp_path / "m.pt"
    assert pygpu.load(p, map_location=pygpu.device("cpu"))["a"].device == \
        pygpu.device("cpu")
    assert pygpu.load(p, map_location={"cpu": "cpu"})["a"].device.type == \
        "cpu"
    seen = []
    back = pygpu.load(p, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cpu"] and back["a"].tolist() == list(range(6))


@pytest.mark.skipif(HAS_CUDA, reason="needs a machine without CUDA")
def test_missing_cuda_device_error(tmp_path):
    payload = (b"\x00" * 8, "float64", (1,), "cuda:0")

    class Fake:
        def __reduce__(self):
            return pygpu.serialization._rebuild_tensor, payload

    # a file of pygpu's own pickle format, which load still reads
    (tmp_path / "c.pt").write_bytes(pickle.dumps({"w": Fake()}))
    with pytest.raises(RuntimeError) as e:
        pygpu.load(tmp_path / "c.pt")
    assert str(e.value) == (
        "Attempting to deserialize object on a CUDA device but "
        "torch.cuda.is_available() is False. If you are running on a "
        "CPU-only machine, please use torch.load with "
        "map_location=torch.device('cpu') to map your storages to the CPU.")
    back = pygpu.load(tmp_path / "c.pt", map_location="cpu")
    assert back["w"].tolist() == [0.0]
    back = pygpu.load(tmp_path / "c.pt", map_location={"cuda:0": "cpu"})
    assert back["w"].device.type == "cpu"


@pytest.mark.cuda
def test_cuda_tensor_comes_back_on_cuda(tmp_path):
    t = pygpu.randn(3, device="cuda")
    pygpu.save(t, tmp_path / "g.pt")
    assert pygpu.load(tmp_path / "g.pt").device.type == "cuda"
    assert pygpu.load(tmp_path / "g.pt", map_location="cpu").device.type \
        == "cpu"
    assert pickle.loads(pickle.dumps(t)).device.type == "cuda"
    assert copy.deepcopy(t).device.type == "cuda"


class Evil:
    def __reduce__(self):
        return os.system, ("echo pwned > /dev/null",)


def test_weights_only_refuses_code(tmp_path):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"w": pygpu.zeros(2), "x": Evil()}, f)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load "
                                                     "failed"):
        pygpu.load(path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only"):
        pygpu.load(io.BytesIO(pickle.dumps(Evil())))
    module = nn.Linear(2, 2)
    pygpu.save(module, tmp_path / "mod.pt")
    with pytest.raises(pickle.UnpicklingError):
        pygpu.load(tmp_path / "mod.pt")
    whole = pygpu.load(tmp_path / "mod.pt", weights_only=False)
    same(whole.weight, module.weight)
    assert isinstance(whole.weight, nn.Parameter)


def test_truncated_zip_is_malformed(tmp_path):
    (tmp_path / "z.pt").write_bytes(b"PK\x03\x04rest")
    with pytest.raises(RuntimeError, match="zip") as e:
        pygpu.load(tmp_path / "z.pt")
    assert isinstance(e.value, pickle.UnpicklingError)


def test_pickle_and_deepcopy(device, rng):
    t = pygpu.tensor(rng.standard_normal((2, 3)), device=device)
    same(pickle.loads(pickle.dumps(t)), t)
    c = copy.deepcopy(t)
    same(c, t)
    c.fill_(0)
    assert t.detach().cpu().detach().numpy().any()  # a copy, not a view
    p = nn.Parameter(t, requires_grad=False)
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, nn.Parameter) and not q.requires_grad
    same(q.detach(), t)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).to(device)
    model(t.float())
    clone = copy.deepcopy(model)
    assert clone[0].weight is not model[0].weight
    same(clone(t.float()), model(t.float()))
