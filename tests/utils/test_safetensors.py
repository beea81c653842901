"""pygpu.utils.safetensors: round trips of every dtype (bfloat16 and
float16 bit for bit), the files of tests/data/checkpoints/ written by the
safetensors package, safe_open's lazy reads and slices, malformed files;
and, where the safetensors package imports, files crossing both ways."""
import json
import os

import numpy as np
import pytest

import pygpu
from pygpu.utils import safetensors as st

from conftest import ROOT

DATA = os.path.join(ROOT, "tests", "data", "checkpoints")
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32",
          "uint8", "bool"]


def host(t):
    t = t.detach().cpu()
    return t.to(pygpu.float64 if pygpu.is_floating_point(t) else
                pygpu.int64).numpy()


def bits(t):
    """The raw bits of a 16-bit float tensor, as uint16."""
    t = t.detach().cpu()
    if t.dtype == pygpu.bfloat16:
        return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16)
    return t.numpy().view(np.uint16)


def sample(rng):
    out = {}
    for d in DTYPES:
        v = rng.standard_normal((3, 5)) * 40
        t = pygpu.tensor(v > 0 if d == "bool" else
                         np.abs(v) if d == "uint8" else v,
                         dtype=getattr(pygpu, d))
        out[d] = t
        out[d + "_view"] = t[1:, ::2]
        out[d + "_0d"] = t[0, 0]
        out[d + "_empty"] = t[:0]
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, 3.0e38, 6.1e-5,
                        65504.0, 1.0 / 3])
    out["bf16_special"] = pygpu.tensor(special, dtype=pygpu.bfloat16)
    out["f16_special"] = pygpu.tensor(special, dtype=pygpu.float16)
    return out


def same(a, b, name=""):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), name
    if a.dtype in (pygpu.bfloat16, pygpu.float16):
        np.testing.assert_array_equal(bits(a), bits(b), name)
    else:
        np.testing.assert_array_equal(host(a), host(b), name)


def test_round_trip_bytes_and_file(tmp_path, rng):
    ts = sample(rng)
    meta = {"format": "pt", "note": "é"}
    back = st.load(st.save(ts, metadata=meta))
    assert set(back) == set(ts)
    for k in ts:
        same(back[k], ts[k], k)
    st.save_file(ts, tmp_path / "x.safetensors", metadata=meta)
    back = st.load_file(tmp_path / "x.safetensors")
    for k in ts:
        same(back[k], ts[k], k)
    with st.safe_open(tmp_path / "x.safetensors", framework="pt") as f:
        assert f.metadata() == meta
        assert f.keys() == sorted(ts)
        for k in ts:
            same(f.get_tensor(k), ts[k], k)


def test_layout(rng):
    data = st.save({"b": pygpu.ones(3, dtype=pygpu.float16),
                    "a": pygpu.arange(2)}, metadata={"k": "v"})
    n = int.from_bytes(data[:8], "little")
    assert (8 + n) % 8 == 0
    head = json.loads(data[8:8 + n])
    assert head["__metadata__"] == {"k": "v"}
    assert head["a"] == {"dtype": "I64", "shape": [2],
                         "data_offsets": [0, 16]}
    assert head["b"] == {"dtype": "F16", "shape": [3],
                         "data_offsets": [16, 22]}
    assert len(data) == 8 + n + 22
    assert np.frombuffer(data[8 + n:8 + n + 16], "<i8").tolist() == [0, 1]


@pytest.mark.parametrize("fname", ["tutorial_20_16_4.safetensors",
                                   "dtypes.safetensors"])
def test_files_of_the_safetensors_package(fname):
    with open(os.path.join(DATA, "expected.json")) as f:
        want = json.load(f)["files"][fname]
    with np.load(os.path.join(DATA, "expected.npz")) as z:
        values = {k: z[k] for k in z.files}
    back = st.load_file(os.path.join(DATA, fname))
    assert set(back) == set(want)
    for k, w in want.items():
        assert str(back[k].dtype) == "pygpu." + w["dtype"], k
        assert list(back[k].shape) == w["shape"], k
        np.testing.assert_array_equal(host(back[k]), values[f"{fname}:{k}"])
    with st.safe_open(os.path.join(DATA, fname)) as f:
        if fname.startswith("tutorial"):
            assert f.metadata() == {"format": "pt", "model": "20-16-4"}
        for k in f.keys():
            np.testing.assert_array_equal(host(f.get_tensor(k)),
                                          values[f"{fname}:{k}"])


def test_tutorial_weights_run(rng):
    sd = st.load_file(os.path.join(DATA, "tutorial_20_16_4.safetensors"))
    model = pygpu.nn.Sequential(pygpu.nn.Linear(20, 16), pygpu.nn.ReLU(),
                                pygpu.nn.Linear(16, 4))
    model.load_state_dict(sd)
    x = rng.standard_normal((3, 20))
    w = {k: host(v) for k, v in sd.items()}
    want = np.maximum(x @ w["0.weight"].T + w["0.bias"], 0) @ \
        w["2.weight"].T + w["2.bias"]
    np.testing.assert_allclose(host(model(pygpu.tensor(x.astype(
        np.float32)))), want, rtol=1e-5, atol=1e-5)


def test_safe_open_slices(tmp_path, rng):
    x = pygpu.tensor(rng.standard_normal((6, 8)))
    b = pygpu.tensor(rng.standard_normal((4, 4)), dtype=pygpu.bfloat16)
    st.save_file({"x": x, "b": b}, tmp_path / "s.safetensors")
    with st.safe_open(tmp_path / "s.safetensors", "pt") as f:
        s = f.get_slice("x")
        assert s.get_shape() == [6, 8] and s.get_dtype() == "F64"
        np.testing.assert_array_equal(host(s[1:4]), host(x)[1:4])
        np.testing.assert_array_equal(host(s[:, ::3]), host(x)[:, ::3])
        np.testing.assert_array_equal(host(s[2]), host(x)[2])
        sb = f.get_slice("b")
        assert sb.get_dtype() == "BF16"
        same(sb[1:3, 2:], b[1:3, 2:])
        assert f.offset_keys() == ["x", "b"]
        with pytest.raises(st.SafetensorError, match="does not contain "
                                                     "tensor nope"):
            f.get_tensor("nope")
    with pytest.raises(ValueError, match="framework"):
        st.safe_open(tmp_path / "s.safetensors", framework="flax")


def test_bad_arguments():
    with pytest.raises(TypeError, match="dict"):
        st.save([pygpu.ones(1)])
    with pytest.raises(TypeError, match="not a Tensor"):
        st.save({"a": np.ones(1)})
    with pytest.raises(TypeError, match="metadata"):
        st.save({"a": pygpu.ones(1)}, metadata={"k": 1})
    with pytest.raises(ValueError, match="__metadata__"):
        st.save({"__metadata__": pygpu.ones(1)})


def raw(head, data=b""):
    text = json.dumps(head).encode() if not isinstance(head, bytes) \
        else head
    return len(text).to_bytes(8, "little") + text + data


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
MALFORMED = {
    "short": (b"\x01\x00", "8-byte header length"),
    "huge header": ((2 ** 60).to_bytes(8, "little") + b"{}",
                    "a header of 1152921504606846976 bytes"),
    "header past the file": ((100).to_bytes(8, "little") + b"{}",
                             "in a file of 10"),
    "not json": (raw(b"{nope"), "not JSON"),
    "not utf-8": (raw(b"\xff\xfe"), "not JSON"),
    "not an object": (raw([1, 2]), "not a JSON object"),
    "bad metadata": (raw({"__metadata__": {"k": 1}}), "__metadata__"),
    "missing field": (raw({"a": {"dtype": "F32", "shape": [2]}}),
                      "not dtype, shape, data_offsets"),
    "unknown dtype": (raw({"a": dict(F32, dtype="F128")}, b"\0" * 8),
                      "unknown dtype 'F128'"),
    "dtype pygpu lacks": (raw({"a": dict(F32, dtype="I8",
                                         data_offsets=[0, 2])}, b"\0" * 2),
                          "I8 (torch.int8), which pygpu does not have"),
    "negative shape": (raw({"a": dict(F32, shape=[-2])}, b"\0" * 8),
                       "shape [-2]"),
    "offsets past data": (raw({"a": dict(F32, data_offsets=[0, 8])},
                              b"\0" * 4), "data buffer of 4 bytes"),
    "offsets reversed": (raw({"a": dict(F32, data_offsets=[8, 0])},
                             b"\0" * 8), "data_offsets [8, 0]"),
    "size mismatch": (raw({"a": dict(F32, shape=[3])}, b"\0" * 8),
                      "has 8 bytes"),
    "huge shape": (raw({"a": dict(F32, shape=[2 ** 40, 2 ** 40])},
                       b"\0" * 8), "has 8 bytes"),
    "hole": (raw({"a": dict(F32, data_offsets=[4, 12])}, b"\0" * 12),
             "hole or an overlap"),
    "overlap": (raw({"a": F32, "b": dict(F32, data_offsets=[4, 12])},
                    b"\0" * 12), "hole or an overlap"),
    "trailing bytes": (raw({"a": F32}, b"\0" * 9), "cover 8 bytes of a "
                                                   "9-byte"),
    "bool byte 2": (raw({"a": {"dtype": "BOOL", "shape": [2],
                               "data_offsets": [0, 2]}}, b"\x00\x02"),
                    "byte other than 0 and 1"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed(name, tmp_path):
    data, message = MALFORMED[name]
    with pytest.raises(st.SafetensorError) as e:
        st.load(data)
    assert message in str(e.value)
    (tmp_path / "m.safetensors").write_bytes(data)
    with pytest.raises(st.SafetensorError) as e:
        st.load_file(tmp_path / "m.safetensors")
    assert message in str(e.value)


def test_truncations(rng):
    good = st.save(sample(rng))
    for n in range(0, len(good), 37):
        with pytest.raises(st.SafetensorError):
            st.load(good[:n])


@pytest.mark.cuda
def test_cuda_device(tmp_path, rng):
    ts = sample(rng)
    st.save_file({k: v.to("cuda") for k, v in ts.items()},
                 tmp_path / "g.safetensors")
    back = st.load_file(tmp_path / "g.safetensors", device="cuda")
    for k in ts:
        assert back[k].device.type == "cuda"
        same(back[k], ts[k], k)
    with st.safe_open(tmp_path / "g.safetensors", "pt", device=0) as f:
        assert f.get_tensor("float32").device.type == "cuda"
        assert f.get_slice("bfloat16")[1:].device.type == "cuda"


def test_with_the_safetensors_package(tmp_path, rng):
    sn = pytest.importorskip("safetensors.numpy")
    ts = {k: v for k, v in sample(rng).items() if "bf" not in k and
          "bfloat16" not in k}
    data = st.save(ts, metadata={"k": "v"})
    back = sn.load(data)
    for k, v in ts.items():
        np.testing.assert_array_equal(back[k], v.contiguous().numpy(), k)
    arrays = {k: v.contiguous().numpy().copy() for k, v in ts.items()}
    arrays["i8"] = np.arange(3, dtype=np.int8)
    data = sn.save({k: v for k, v in arrays.items() if k != "i8"})
    mine = st.load(data)
    for k, v in ts.items():
        same(mine[k], v.contiguous(), k)
    with pytest.raises(st.SafetensorError, match="torch.int8"):
        st.load(sn.save(arrays))


def test_bfloat16_with_torch(tmp_path, rng):
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    b = pygpu.tensor(rng.standard_normal((3, 4)), dtype=pygpu.bfloat16)
    st.save_file({"b": b}, tmp_path / "b.safetensors")
    tb = stt.load_file(tmp_path / "b.safetensors")["b"]
    assert tb.dtype == torch.bfloat16
    np.testing.assert_array_equal(tb.view(torch.int16).numpy().view(
        np.uint16), bits(b))
    stt.save_file({"t": tb * 3}, tmp_path / "t.safetensors")
    back = st.load_file(tmp_path / "t.safetensors")["t"]
    np.testing.assert_array_equal(bits(back), (tb * 3).view(
        torch.int16).numpy().view(np.uint16))
