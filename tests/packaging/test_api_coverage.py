"""Missing names say so: a torch name pygpu lacks raises AttributeError
naming it and pointing at docs/api_coverage.md, on pygpu, pygpu.nn,
pygpu.nn.functional and pygpu.Tensor; other names get Python's usual
error; names pygpu has never take that path.  docs/api_coverage.md is what
scripts/gen_api_coverage.py writes."""
import importlib.util
import os

import pytest

import pygpu
from pygpu import nn
from pygpu._missing import is_missing
from pygpu._torch_names import NAMES
from conftest import ROOT

NAMESPACES = [("torch", pygpu), ("torch.nn", nn),
              ("torch.nn.functional", nn.functional)]


def _first_missing(namespace, obj):
    return next(n for n in sorted(NAMES[namespace])
                if not hasattr(obj, n))


@pytest.mark.parametrize("namespace,mod", NAMESPACES,
                         ids=[n for n, _ in NAMESPACES])
def test_module_missing_names(namespace, mod):
    name = _first_missing(namespace, mod)
    with pytest.raises(AttributeError) as e:
        getattr(mod, name)
    msg = str(e.value)
    assert msg.startswith(f"pygpu does not implement {namespace}.{name} "
                          "yet")
    assert "docs/api_coverage.md" in msg and e.value.name == name
    with pytest.raises(AttributeError) as e:
        getattr(mod, "surely_not_a_torch_name")
    assert str(e.value) == (f"module '{mod.__name__}' has no attribute "
                            "'surely_not_a_torch_name'")
    assert not hasattr(mod, "surely_not_a_torch_name")


def test_known_examples():
    for obj, name, full in [(pygpu, "compile", "torch.compile"),
                            (nn, "Conv2d", "torch.nn.Conv2d"),
                            (nn.functional, "conv2d",
                             "torch.nn.functional.conv2d")]:
        if hasattr(obj, name):
            continue  # implemented since
        with pytest.raises(AttributeError, match=f"does not implement "
                                                 f"{full} yet"):
            getattr(obj, name)


def test_tensor_missing_names():
    t = pygpu.ones(2)
    name = next(n for n in sorted(NAMES["torch.Tensor"])
                if is_missing(pygpu.Tensor, n))
    for obj in (t, pygpu.Tensor, nn.Parameter(pygpu.ones(1))):
        with pytest.raises(AttributeError, match=f"pygpu does not implement "
                                                 f"torch.Tensor.{name} yet"):
            getattr(obj, name)
        assert not hasattr(obj, name)
    assert name not in dir(t)
    with pytest.raises(AttributeError) as e:
        t.surely_not_a_torch_name
    assert str(e.value) == ("'pygpu.Tensor' object has no attribute "
                            "'surely_not_a_torch_name'")
    setattr(t, name, 3)  # an instance's own attribute still wins
    assert getattr(t, name) == 3


@pytest.mark.parametrize("namespace,obj", NAMESPACES + [("torch.Tensor",
                                                         pygpu.Tensor)],
                         ids=[n for n, _ in NAMESPACES] + ["torch.Tensor"])
def test_implemented_names_never_say_missing(namespace, obj):
    have = [n for n in NAMES[namespace] if hasattr(obj, n)]
    assert len(have) > 10
    for n in have:
        assert not is_missing(obj, n), n
    for n in ("zeros", "Tensor", "nn", "device"):
        assert hasattr(pygpu, n)


def test_names_added_later_are_picked_up():
    name = _first_missing("torch.nn.functional", nn.functional)
    try:
        setattr(nn.functional, name, lambda: "now here")
        assert getattr(nn.functional, name)() == "now here"
    finally:
        delattr(nn.functional, name)
    with pytest.raises(AttributeError, match="does not implement"):
        getattr(nn.functional, name)


def test_coverage_doc_is_current():
    path = os.path.join(ROOT, "scripts", "gen_api_coverage.py")
    spec = importlib.util.spec_from_file_location("gen_api_coverage", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(ROOT, "docs", "api_coverage.md")) as f:
        current = f.read()
    assert current == gen.render(), (
        "docs/api_coverage.md is stale: run python "
        "scripts/gen_api_coverage.py")
    assert "`zeros`" in current and "`Linear`" in current
