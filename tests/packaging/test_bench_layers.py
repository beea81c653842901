"""python -m benchmarks --suite layers at tiny sizes: every case checked
against its NumPy reference and timed; a wrong convolution is refused."""
import json

import pytest

import pygpu

from conftest import import_from_root

import_from_root("benchmarks")
from benchmarks.runner import layers, main  # noqa: E402

TINY = dict(CONVS=(("lenet conv1", 2, 1, 9, 3, 5, 0, False),
                   ("resnet 3x3", 2, 4, 6, 5, 3, 1, True)),
            BN_SHAPE=(3, 4, 5, 5), LN_SHAPE=(6, 8), CNN_BATCH=4)
CASES = {"conv2d lenet conv1 forward", "conv2d lenet conv1 forward+backward",
         "conv2d resnet 3x3 forward", "conv2d resnet 3x3 forward+backward",
         "BatchNorm2d forward+backward", "LayerNorm forward+backward",
         "digits CNN train step b=4"}
ARGS = ["--suite", "layers", "--reps", "2", "--quick", "--device", "cpu"]


@pytest.fixture(autouse=True)
def tiny(monkeypatch):
    pygpu._C._set_poison(False)  # the runner times real work
    for name, value in TINY.items():
        monkeypatch.setattr(layers, name, value)


def test_layers_suite_checks_and_times_every_case(tmp_path):
    assert main(ARGS + ["--out", str(tmp_path), "--pause", "0"]) == 0
    with open(tmp_path / "results.json") as f:
        data = json.load(f)
    assert not data["refused"]
    got = {r["case"] for r in data["rows"] if r["impl"] == "pygpu"}
    assert got == CASES
    assert all(r["value"] > 0 for r in data["rows"])


def test_a_wrong_convolution_is_refused(tmp_path, monkeypatch):
    conv = pygpu.nn.functional.conv2d
    monkeypatch.setattr(pygpu.nn.functional, "conv2d",
                        lambda x, w, b=None, **kw: conv(x, w, b, **kw) * 1.01)
    assert main(ARGS + ["--out", str(tmp_path), "--pause", "0"]) == 1
    with open(tmp_path / "results.json") as f:
        refused = {(r["case"], r["impl"]) for r in json.load(f)["refused"]}
    assert refused == {(c, "pygpu") for c in CASES if c.startswith("conv2d")}
