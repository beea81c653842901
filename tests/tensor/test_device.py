"""pygpu.device: parsing, attributes, equality, hashing, repr, errors."""
import pickle

import pytest

import pygpu


@pytest.mark.parametrize("spec,type_,index,text", [
    ("cpu", "cpu", None, "cpu"),
    ("cuda", "cuda", None, "cuda"),
    ("cuda:0", "cuda", 0, "cuda:0"),
    ("cuda:3", "cuda", 3, "cuda:3"),
    (("cuda", 1), "cuda", 1, "cuda:1"),
    ("mps", "mps", None, "mps"),
    (2, "cuda", 2, "cuda:2"),
])
def test_parse(spec, type_, index, text):
    d = pygpu.device(spec)
    assert d.type == type_
    assert d.index == index
    assert str(d) == text


def test_two_arguments_and_copy():
    assert pygpu.device("cuda", 1) == pygpu.device("cuda:1")
    d = pygpu.device("cuda:0")
    assert pygpu.device(d) == d


def test_repr():
    assert repr(pygpu.device("cuda:0")) == "device(type='cuda', index=0)"
    assert repr(pygpu.device("cpu")) == "device(type='cpu')"


def test_equality_and_hash():
    a, b = pygpu.device("cuda:0"), pygpu.device(("cuda", 0))
    assert a == b and hash(a) == hash(b)
    assert a != pygpu.device("cuda:1")
    assert a != pygpu.device("cuda")
    assert pygpu.device("cpu") != pygpu.device("cuda")
    assert len({a, b, pygpu.device("cpu"), pygpu.device("cpu")}) == 2
    assert (a == "cuda:0") is False


def test_pickle():
    for spec in ("cpu", "cuda:1", "cuda"):
        d = pygpu.device(spec)
        assert pickle.loads(pickle.dumps(d)) == d


@pytest.mark.parametrize("bad", [
    "gpu", "cuda:-1", "cuda:x", "", "cuda:0:1", "cuda:", "CUDA", " cuda",
    "cuda:01", "cuda:1 ",
])
def test_bad_strings(bad):
    with pytest.raises((RuntimeError, ValueError)) as e:
        pygpu.device(bad)
    if bad:
        assert bad.strip() in str(e.value) or "device" in str(e.value)


@pytest.mark.parametrize("bad", [3.5, None, [1], b"cuda", ("cuda", "0"),
                                 ("cuda", 1.0)])
def test_bad_types(bad):
    with pytest.raises((TypeError, RuntimeError)):
        pygpu.device(bad)


def test_negative_index():
    with pytest.raises(RuntimeError):
        pygpu.device("cuda", -1)
    with pytest.raises(RuntimeError):
        pygpu.device(-1)


def test_type_is_read_only():
    d = pygpu.device("cuda:0")
    with pytest.raises(AttributeError):
        d.index = 3


def test_mps_parses_but_holds_nothing():
    assert pygpu.backends.mps.is_available() is False
    with pytest.raises(RuntimeError, match="mps"):
        pygpu.zeros(2, device="mps")
    with pytest.raises(RuntimeError, match="mps"):
        pygpu.tensor([1.0]).to("mps")
