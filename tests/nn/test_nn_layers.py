"""Linear/ReLU/Identity/Flatten, Sequential (and its fused Linear+ReLU
plan), nn.init statistics, DataParallel, and the tutorial's model against
NumPy float64."""
import math
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import init, parallel

from conftest import RTOL, rel_err


def f64(t):
    return t.detach().cpu().detach().numpy().astype(np.float64)


def uniform_checks(values, a, b):
    """All in [a, b], mean and variance within 5 sigma of U(a, b)'s."""
    v = np.asarray(values, dtype=np.float64).ravel()
    n = v.size
    assert v.min() >= a and v.max() <= b
    assert v.min() < a + (b - a) * 0.01 and v.max() > b - (b - a) * 0.01
    var = (b - a) ** 2 / 12
    assert abs(v.mean() - (a + b) / 2) < 5 * math.sqrt(var / n)
    # the variance of a sample variance of U is (b-a)^4/180 / n
    assert abs(v.var() - var) < 5 * math.sqrt((b - a) ** 4 / 180 / n)


def test_linear_init_bounds_and_spread(device):
    lin = nn.Linear(400, 300, device=device)
    assert lin.weight.shape == (300, 400) and lin.bias.shape == (300,)
    assert lin.weight.device.type == device
    bound = 1 / math.sqrt(400)
    uniform_checks(f64(lin.weight), -bound, bound)
    assert np.all(np.abs(f64(lin.bias)) <= bound)
    assert f64(lin.bias).std() > bound / 3
    pygpu.manual_seed(3)
    a = nn.Linear(5, 4, device=device)
    pygpu.manual_seed(3)
    b = nn.Linear(5, 4, device=device)
    np.testing.assert_array_equal(f64(a.weight), f64(b.weight))
    assert nn.Linear(3, 2, bias=False, dtype=pygpu.float64).bias is None


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_linear_forward(device, dtype, rng):
    lin = nn.Linear(7, 5, device=device, dtype=getattr(pygpu, dtype))
    x = rng.standard_normal((2, 3, 7))
    y = lin(pygpu.tensor(x, dtype=getattr(pygpu, dtype), device=device))
    xr = f64(pygpu.tensor(x, dtype=getattr(pygpu, dtype)))
    ref = xr @ f64(lin.weight).T + f64(lin.bias)
    assert y.dtype == getattr(pygpu, dtype) and y.shape == (2, 3, 5)
    assert rel_err(f64(y), ref) <= max(RTOL[dtype], 1e-6) * 10


def test_relu_identity_flatten(device, rng):
    x = pygpu.tensor(rng.standard_normal((2, 3, 4)), device=device)
    np.testing.assert_array_equal(f64(nn.ReLU()(x)), np.maximum(f64(x), 0))
    assert nn.Identity(1, k=2)(x) is x
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    y = x.clone()
    nn.ReLU(inplace=True)(y)
    assert f64(y).min() >= 0


def test_sequential_container():
    layers = [nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)]
    s = nn.Sequential(*layers)
    assert len(s) == 3 and list(s) == layers
    assert s[0] is layers[0] and s[-1] is layers[2]
    with pytest.raises(IndexError):
        s[3]
    sub = s[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == layers[1:]
    assert [k for k, _ in sub.named_children()] == ["1", "2"]
    named = nn.Sequential(OrderedDict(fc=layers[0], act=layers[1]))
    assert [k for k, _ in named.named_parameters()] == ["fc.weight",
                                                        "fc.bias"]
    assert s.append(nn.Identity()) is s and len(s) == 4
    del s[0]
    assert [k for k, _ in s.named_children()] == ["0", "1", "2"]
    assert s[0] is layers[1]
    s[0] = nn.Identity()
    assert isinstance(s[0], nn.Identity)


def test_fused_equals_unfused_and_plan_follows_changes(device, rng):
    pygpu.manual_seed(int(rng.integers(1 << 30)))
    model = nn.Sequential(nn.Linear(30, 20), nn.ReLU(), nn.Linear(20, 10),
                          nn.ReLU(inplace=True), nn.Linear(10, 3)).to(device)
    x = pygpu.tensor(rng.standard_normal((6, 30)).astype(np.float32),
                     device=device)
    got = model(x)
    assert len(model._plan) == 3  # two fused pairs and the last Linear
    manual = x
    for m in model:
        manual = m(manual)
    np.testing.assert_allclose(f64(got), f64(manual), rtol=1e-6, atol=1e-6)
    model[1] = nn.Identity()  # the plan must be remade
    manual = model[2](model[0](x))
    manual = model[4](model[3](manual))
    np.testing.assert_allclose(f64(model(x)), f64(manual), rtol=1e-6,
                               atol=1e-6)
    assert f64(model[0](x)).min() < 0 and len(model._plan) == 4
    model.append(nn.ReLU())
    assert f64(model(x)).min() >= 0


def _relu_keeping_nan(a):
    """torch's relu: NaN stays NaN (np.maximum would too, but spelled out:
    the fused CUDA path once turned NaN into 0)."""
    return np.where(np.isnan(a) | (a > 0), a, 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_relu_keeps_nan(device, dtype, bias, rng):
    # A NaN in the input (row 1) and one in the weight (output feature 5):
    # relu(NaN) is NaN in torch, on the fused path of Sequential(Linear,
    # ReLU) and F.linear_relu as on the unfused one.
    F = pygpu.nn.functional
    dt = getattr(pygpu, dtype)
    x = rng.standard_normal((6, 24)).astype(np.float32)
    w = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    x[1, 3] = np.nan
    w[5, 7] = np.nan
    tx = pygpu.tensor(x, device=device).to(dt)
    tw = pygpu.tensor(w, device=device).to(dt)
    tb = pygpu.tensor(b, device=device).to(dt) if bias else None
    ref = f64(tx) @ f64(tw).T + (f64(tb) if bias else 0.0)
    ref = _relu_keeping_nan(ref)
    nan = np.isnan(ref)
    assert nan[1].all() and nan[:, 5].all() and nan.sum() == 6 + 16 - 1
    fused = f64(F.linear_relu(tx, tw, tb))
    unfused = f64(pygpu.relu(F.linear(tx, tw, tb)))
    for got in (fused, unfused):
        np.testing.assert_array_equal(np.isnan(got), nan)
        assert rel_err(got[~nan], ref[~nan]) <= RTOL[dtype] * 10
    np.testing.assert_allclose(fused, unfused, rtol=RTOL[dtype] * 10)
    if dtype == "float32":
        lin = nn.Linear(24, 16, bias=bias, device=device)
        with pygpu.no_grad():
            lin.weight.copy_(tw)
            if bias:
                lin.bias.copy_(tb)
        model = nn.Sequential(lin, nn.ReLU())
        got = f64(model(tx))
        assert len(model._plan) == 1  # the fused pair
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got, fused)


def test_init_functions_statistics(device):
    t = pygpu.empty(200, 300, device=device)
    init.kaiming_uniform_(t, nonlinearity="relu")
    b = math.sqrt(2.0) * math.sqrt(3.0 / 300)
    uniform_checks(f64(t), -b, b)
    init.xavier_uniform_(t, gain=2.0)
    a = 2.0 * math.sqrt(6.0 / 500)
    uniform_checks(f64(t), -a, a)
    for fn, std in ((lambda: init.kaiming_normal_(t, mode="fan_out"),
                     math.sqrt(2.0 / 1.0001) / math.sqrt(200)),
                    (lambda: init.xavier_normal_(t), math.sqrt(2.0 / 500)),
                    (lambda: init.normal_(t, 3.0, 0.5), 0.5)):
        fn()
        v = f64(t)
        n = v.size
        assert abs(v.std() - std) < 5 * std / math.sqrt(2 * n)
    assert abs(f64(t).mean() - 3.0) < 5 * 0.5 / math.sqrt(t.numel())
    assert f64(init.zeros_(t)).max() == 0 and f64(init.ones_(t)).min() == 1
    assert f64(init.constant_(t, 2.5)).max() == 2.5
    uniform_checks(f64(init.uniform_(t, -1, 3)), -1, 3)


def test_init_gains_and_fans():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == \
        math.sqrt(2 / (1 + 0.2 ** 2))
    assert init.calculate_gain("sigmoid") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("gelu")
    assert init._calculate_fan_in_and_fan_out(pygpu.empty(4, 3, 5, 2)) == \
        (30, 40)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(pygpu.empty(3))


def test_data_parallel_single_device(device, rng):
    model = nn.Linear(8, 3).to(device)
    dp = nn.DataParallel(model)
    x = pygpu.tensor(rng.standard_normal((5, 8)).astype(np.float32),
                     device=device)
    np.testing.assert_array_equal(f64(dp(x)), f64(model(x)))
    assert dp.module is model
    assert [k for k, _ in dp.named_parameters()] == ["module.weight",
                                                     "module.bias"]
    assert repr(dp).startswith("DataParallel(\n  (module): Linear(")
    assert nn.parallel.DataParallel is nn.DataParallel
    assert hasattr(pygpu.distributed, "init_process_group")


def test_scatter_replicate_gather_on_cpu_stand_ins(rng):
    """The several-device path, with the CPU standing in for each GPU."""
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    x = pygpu.tensor(rng.standard_normal((7, 6)).astype(np.float32))
    devices = ["cpu", "cpu", "cpu"]
    parts = parallel.scatter((x,), devices)
    assert [p[0].shape[0] for p in parts] == [3, 3, 1]
    replicas = parallel.replicate(model, devices)
    assert replicas[0] is not model
    assert isinstance(replicas[0][0].weight, nn.Parameter)
    assert replicas[0][0].weight is not model[0].weight
    outs = parallel.parallel_apply(replicas, parts, [{}] * 3)
    y = parallel.gather(outs, "cpu")
    np.testing.assert_allclose(f64(y), f64(model(x)), rtol=1e-6, atol=1e-6)
    two = parallel.scatter({"a": x, "k": 3}, ["cpu", "cpu"], dim=1)
    assert two[0]["a"].shape == (7, 3) and two[1]["k"] == 3
    pair = parallel.gather([(x, x), (x, x)], "cpu", dim=1)
    assert pair[0].shape == (7, 12)
    assert len(parallel.scatter(x[:1], devices)) == 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_tutorial_model_against_numpy(device, dtype, rng):
    dt = getattr(pygpu, dtype)
    pygpu.manual_seed(int(rng.integers(1 << 30)))
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device, dt)
    x = pygpu.tensor(rng.standard_normal((32, 784)), dtype=dt, device=device)
    y = model(x)
    assert y.shape == (32, 10) and y.dtype == dt
    assert y.device.type == device
    w = [f64(p) for p in model.parameters()]
    ref = np.maximum(f64(x) @ w[0].T + w[1], 0) @ w[2].T + w[3]
    assert rel_err(f64(y), ref) <= {"float32": 1e-5, "float64": 1e-12,
                                    "float16": 1e-2}[dtype]
