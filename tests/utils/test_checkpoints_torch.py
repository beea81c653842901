"""pygpu.save / pygpu.load and torch's checkpoint format: the files of
tests/data/checkpoints/ (written by torch with
scripts/make_checkpoint_fixtures.py) load without torch and equal the
values torch recorded; the archive pygpu writes has torch's layout;
malformed archives raise a clear error; and, where torch imports, files
cross both ways."""
import collections
import fractions
import io
import json
import os
import pickle
import struct
import zipfile
import zlib

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu._torch_save import TorchGlobal

from conftest import HAS_CUDA, ROOT

DATA = os.path.join(ROOT, "tests", "data", "checkpoints")
with open(os.path.join(DATA, "expected.json")) as _f:
    EXPECTED = json.load(_f)["files"]
PT_FILES = ["tutorial_20_16_4.pt", "shared_views.pt", "dtypes.pt",
            "dtypes_big_endian.pt", "legacy.pt"]


@pytest.fixture(scope="module")
def values():
    with np.load(os.path.join(DATA, "expected.npz")) as z:
        return {k: z[k] for k in z.files}


def host(t):
    t = t.detach().cpu()
    return t.to(pygpu.is_floating_point(t) and pygpu.float64 or
                pygpu.int64).numpy()


def walk(obj, path):
    for part in path.split("/"):
        obj = obj[int(part)] if isinstance(obj, (list, tuple)) else \
            obj[part]
    return obj


def check_against_expected(fname, back, values):
    base = {}
    for name, want in EXPECTED[fname].items():
        t = walk(back, name)
        assert str(t.dtype) == "pygpu." + want["dtype"], name
        assert list(t.shape) == want["shape"], name
        if t.numel() > 1:
            assert list(t.stride()) == want["stride"], name
        assert t.requires_grad == want["requires_grad"], name
        assert isinstance(t, nn.Parameter) == (want["type"] ==
                                               "Parameter"), name
        np.testing.assert_array_equal(host(t), values[f"{fname}:{name}"],
                                      err_msg=name)
        if t.numel():  # views of one storage share memory again
            start = t.data_ptr() - want["offset"] * t.element_size()
            assert base.setdefault(want["storage"], start) == start, name


@pytest.mark.parametrize("fname", PT_FILES)
def test_torch_files_load_without_torch(fname, values):
    back = pygpu.load(os.path.join(DATA, fname))
    check_against_expected(fname, back, values)


def test_pygpu_pickle_format_still_loads():
    """A file of the plain pickle format pygpu.save wrote before it wrote
    torch's (made by that version)."""
    back = pygpu.load(os.path.join(DATA, "pygpu_pickle_format.pt"))
    assert isinstance(back, collections.OrderedDict)
    assert back._metadata == {"": {"version": 1}}
    w = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(host(back["w"]), w)
    np.testing.assert_array_equal(host(back["t"]), w.T)
    assert back["v"].data_ptr() == back["w"].data_ptr() + 4 * 4
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["bf"].dtype == pygpu.bfloat16
    assert back["bf"].tolist() == [1.5, -2.25]
    assert back["i"].tolist() == list(range(5))
    assert back["b"].tolist() == [True, False]


def test_state_dict_metadata_and_other_values():
    back = pygpu.load(os.path.join(DATA, "shared_views.pt"))
    assert isinstance(back["sd"], collections.OrderedDict)
    assert back["sd"]._metadata == {"": {"version": 2}}
    assert back["list"][1:] == [7, 2.5, "s", (True, None)]
    assert back["shape"] == pygpu.Size([4, 6])
    assert back["dtype"] is pygpu.float16
    sd = pygpu.load(os.path.join(DATA, "tutorial_20_16_4.pt"))
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert sd._metadata[""] == {"version": 1}


def test_views_write_through_after_load():
    back = pygpu.load(os.path.join(DATA, "shared_views.pt"))["sd"]
    before = host(back["x"])
    back["x"].add_(1.0)
    after = (before.astype(np.float32) + np.float32(1)).astype(np.float64)
    np.testing.assert_array_equal(host(back["row"]), after[1])
    np.testing.assert_array_equal(host(back["t"]), after.T)
    np.testing.assert_array_equal(host(back["other"]), before)


def test_tutorial_model_runs_the_torch_weights(rng):
    sd = pygpu.load(os.path.join(DATA, "tutorial_20_16_4.pt"))
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    model.load_state_dict(sd)
    x = rng.standard_normal((5, 20))
    w = {k: host(v) for k, v in sd.items()}
    h = np.maximum(x @ w["0.weight"].T + w["0.bias"], 0)
    want = h @ w["2.weight"].T + w["2.bias"]
    got = host(model(pygpu.tensor(x.astype(np.float32))))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fname", ["tutorial_20_16_4.pt", "shared_views.pt",
                                   "dtypes.pt", "dtypes_big_endian.pt"])
def test_mmap_load(fname, values, tmp_path):
    path = tmp_path / fname
    path.write_bytes(open(os.path.join(DATA, fname), "rb").read())
    before = path.read_bytes()
    back = pygpu.load(path, mmap=True)
    check_against_expected(fname, back, values)
    for name, want in EXPECTED[fname].items():  # copy-on-write pages
        t = walk(back, name)
        if t.dtype == pygpu.float32 and t.numel() and not t.requires_grad:
            t.detach().fill_(123.0)
    assert path.read_bytes() == before
    with open(path, "rb") as f:
        again = pygpu.load(f, mmap=True)
    check_against_expected(fname, again, values)


def test_mmap_views_the_file_without_a_copy(tmp_path):
    x = pygpu.arange(1 << 16, dtype=pygpu.float32)
    pygpu.save({"x": x}, tmp_path / "m.pt")
    back = pygpu.load(tmp_path / "m.pt", mmap=True)["x"]
    assert back.tolist() == x.tolist()
    z = zipfile.ZipFile(tmp_path / "m.pt")
    info = z.getinfo("m/data/0")
    with open(tmp_path / "m.pt", "rb") as f:
        f.seek(info.header_offset + 26)
        n, e = struct.unpack("<HH", f.read(4))
    start = info.header_offset + 30 + n + e
    # the tensor's memory is the map of the file: same page offset, and the
    # address lies in a file-backed mapping of this process
    assert back.data_ptr() % 4096 == start % 4096
    with open("/proc/self/maps") as maps:
        rows = [r.split() for r in maps]
    hit = [r for r in rows if len(r) >= 6 and r[5].endswith("m.pt") and
           int(r[0].split("-")[0], 16) <= back.data_ptr() <
           int(r[0].split("-")[1], 16)]
    assert hit


def test_mmap_needs_a_path_and_a_zip(tmp_path):
    buf = io.BytesIO()
    pygpu.save({"x": pygpu.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        pygpu.load(buf, mmap=True)
    with pytest.raises(RuntimeError, match="zip checkpoints only"):
        pygpu.load(os.path.join(DATA, "legacy.pt"), mmap=True)


@pytest.mark.parametrize("fname,dtype", [("complex64.pt", "complex64"),
                                         ("uint16.pt", "uint16")])
def test_dtype_pygpu_lacks_is_named(fname, dtype):
    with pytest.raises(RuntimeError, match=f"dtype torch.{dtype}, which "
                                           f"pygpu does not have") as e:
        pygpu.load(os.path.join(DATA, fname))
    assert not isinstance(e.value, pickle.UnpicklingError)


def test_map_location_forms():
    p = os.path.join(DATA, "tutorial_20_16_4.pt")
    seen = []
    sd = pygpu.load(p, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cpu"] * 4 and sd["0.bias"].device.type == "cpu"
    assert pygpu.load(p, map_location={"cpu": "cpu"})["0.bias"].device == \
        pygpu.device("cpu")
    assert pygpu.load(p, map_location="cpu")["2.bias"].shape == (4,)


# -- what pygpu writes --------------------------------------------------------

def test_archive_layout(tmp_path, rng):
    x = pygpu.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    pygpu.save({"x": x, "row": x[2], "h": x.half()}, tmp_path / "model.pt")
    z = zipfile.ZipFile(tmp_path / "model.pt")
    assert z.testzip() is None  # every CRC right
    names = z.namelist()
    assert names[0] == "model/data.pkl"
    assert set(names) == {
        "model/data.pkl", "model/.format_version",
        "model/.storage_alignment", "model/byteorder", "model/data/0",
        "model/data/1", "model/version", "model/.data/serialization_id"}
    assert z.read("model/byteorder") == b"little"
    assert z.read("model/version") == b"3\n"
    assert len(z.read("model/.data/serialization_id")) == 40
    raw = (tmp_path / "model.pt").read_bytes()
    for info in z.infolist():
        n, e = struct.unpack("<HH", raw[info.header_offset + 26:
                                        info.header_offset + 30])
        assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename
        assert info.compress_type == zipfile.ZIP_STORED
    pkl = z.read("model/data.pkl")
    assert pkl[:2] == b"\x80\x02"
    assert b"torch._utils\n_rebuild_tensor_v2" in pkl
    assert b"torch\nFloatStorage" in pkl and b"torch\nHalfStorage" in pkl
    assert np.array_equal(np.frombuffer(z.read("model/data/0"), np.float32),
                          host(x).reshape(-1))
    buf = io.BytesIO()
    pygpu.save(x, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16",
                                   "bfloat16", "int64", "int32", "uint8",
                                   "bool"])
def test_round_trip_of_every_dtype(dtype, rng):
    v = rng.standard_normal((4, 6)) * 30
    t = pygpu.tensor(v > 0 if dtype == "bool" else
                     np.abs(v) if dtype == "uint8" else v,
                     dtype=getattr(pygpu, dtype))
    obj = {"t": t, "s": t[1:, ::2], "T": t.T, "0d": t[1, 1], "e": t[:0],
           "flip": t.flip(0) if hasattr(t, "flip") else t}
    buf = io.BytesIO()
    pygpu.save(obj, buf)
    back = pygpu.load(io.BytesIO(buf.getvalue()))
    for k, want in obj.items():
        assert back[k].dtype == want.dtype and back[k].shape == want.shape
        np.testing.assert_array_equal(host(back[k]), host(want), k)
    assert back["s"].stride() == t[1:, ::2].stride()


def test_cuda_location_without_cuda(tmp_path):
    if HAS_CUDA:
        pytest.skip("needs a machine without CUDA")
    data = archive({"w": tensor_record(pid("0", "FloatStorage", 2,
                                           "cuda:0"), 0, (2,), (1,))},
                   {"data/0": b"\0" * 8})
    with pytest.raises(RuntimeError, match="Attempting to deserialize "
                                           "object on a CUDA device") as e:
        pygpu.load(io.BytesIO(data))
    assert not isinstance(e.value, pickle.UnpicklingError)
    back = pygpu.load(io.BytesIO(data), map_location="cpu")
    assert back["w"].tolist() == [0.0, 0.0]


@pytest.mark.cuda
def test_cuda_tensors_save_with_their_location(tmp_path, rng):
    x = pygpu.tensor(rng.standard_normal((3, 4)), device="cuda")
    pygpu.save({"x": x, "row": x[1], "bf": x.bfloat16()}, tmp_path / "g.pt")
    pkl = zipfile.ZipFile(tmp_path / "g.pt").read("g/data.pkl")
    assert b"cuda:0" in pkl and b"cpu" not in pkl
    back = pygpu.load(tmp_path / "g.pt")
    assert back["x"].device.type == "cuda"
    np.testing.assert_array_equal(host(back["x"]), host(x))
    np.testing.assert_array_equal(host(back["bf"]), host(x.bfloat16()))
    assert back["row"].data_ptr() == back["x"].data_ptr() + \
        4 * x.element_size()
    cpu = pygpu.load(tmp_path / "g.pt", map_location="cpu")
    assert cpu["x"].device.type == "cpu"


@pytest.mark.cuda
def test_torch_fixture_to_cuda(values):
    back = pygpu.load(os.path.join(DATA, "shared_views.pt"),
                      map_location="cuda")
    assert back["sd"]["x"].device.type == "cuda"
    check_against_expected("shared_views.pt", back, values)
    back = pygpu.load(os.path.join(DATA, "dtypes.pt"), map_location="cuda",
                      mmap=True)
    check_against_expected("dtypes.pt", back, values)


class Unseekable(io.RawIOBase):
    def __init__(self, data):
        self.src = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self.src.readinto(b)


def test_unseekable_files(values):
    for fname in ("shared_views.pt", "legacy.pt"):
        data = open(os.path.join(DATA, fname), "rb").read()
        check_against_expected(fname, pygpu.load(Unseekable(data)), values)

    class Sink(io.RawIOBase):
        def __init__(self):
            self.parts = []

        def writable(self):
            return True

        def write(self, b):
            self.parts.append(bytes(b))
            return len(b)

    out = Sink()
    pygpu.save({"x": pygpu.arange(5)}, out)
    assert pygpu.load(io.BytesIO(b"".join(out.parts)))["x"].tolist() == \
        list(range(5))


# -- weights_only -------------------------------------------------------------

def test_weights_only_refuses_other_globals(tmp_path):
    pygpu.save({"f": fractions.Fraction(1, 3), "w": pygpu.ones(2)},
               tmp_path / "f.pt")
    with pytest.raises(pickle.UnpicklingError) as e:
        pygpu.load(tmp_path / "f.pt")
    assert "Weights only load failed" in str(e.value)
    assert "Unsupported global: GLOBAL fractions.Fraction was not an " \
           "allowed global by default" in str(e.value)
    back = pygpu.load(tmp_path / "f.pt", weights_only=False)
    assert back["f"] == fractions.Fraction(1, 3)
    assert back["w"].tolist() == [1.0, 1.0]


def test_weights_only_refuses_code():
    data = archive({"x": Call("posix", "system", ("true",))}, {})
    with pytest.raises(pickle.UnpicklingError,
                       match="GLOBAL posix.system was not an allowed"):
        pygpu.load(io.BytesIO(data))


# -- malformed archives -------------------------------------------------------

class Call:
    """A call of module.name(*args) in a crafted data.pkl."""

    def __init__(self, module, name, args):
        self.fn, self.args = TorchGlobal.get(module, name), args


class Pid:
    def __init__(self, value):
        self.value = value


class _Crafter(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def _save_global(self, obj):
        self.write(pickle.GLOBAL +
                   f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[TorchGlobal] = _save_global

    def persistent_id(self, obj):
        return obj.value if type(obj) is Pid else None

    def reducer_override(self, obj):
        if type(obj) is Call:
            return obj.fn, obj.args
        return NotImplemented


def pid(key, cls, numel, location="cpu"):
    return Pid(("storage", TorchGlobal.get("torch", cls), key, location,
                numel))


def tensor_record(storage, offset, size, stride, requires_grad=False):
    return Call("torch._utils", "_rebuild_tensor_v2",
                (storage, offset, size, stride, requires_grad,
                 collections.OrderedDict()))


def archive(obj, records, version=b"3\n", byteorder=b"little",
            compression=zipfile.ZIP_STORED):
    """A zip checkpoint of obj (Call and Pid inside) and the records
    {name: bytes}."""
    pkl = io.BytesIO()
    _Crafter(pkl, protocol=2).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        z.writestr("archive/data.pkl", pkl.getvalue())
        if byteorder is not None:
            z.writestr("archive/byteorder", byteorder)
        for name, data in records.items():
            z.writestr(f"archive/{name}", data)
        if version is not None:
            z.writestr("archive/version", version)
    return out.getvalue()


def one(size, stride, offset=0, numel=4, nbytes=16, cls="FloatStorage",
        requires_grad=False):
    return archive({"w": tensor_record(pid("0", cls, numel), offset, size,
                                       stride, requires_grad)},
                   {"data/0": b"\x01" * nbytes})


def test_crafted_archive_loads():
    back = pygpu.load(io.BytesIO(one((2, 2), (2, 1))))
    assert back["w"].shape == (2, 2)
    back = pygpu.load(io.BytesIO(one((2,), (0,), offset=3)))
    assert back["w"].stride() == (0,)


def bomb():
    """data/0 declares 2 GiB in a file of a few hundred bytes."""
    good = bytearray(one((2,), (1,)))
    name = b"archive/data/0"
    at = good.find(b"PK\x01\x02")
    while good[at + 46:at + 46 + len(name)] != name or \
            struct.unpack("<H", good[at + 28:at + 30])[0] != len(name):
        at = good.find(b"PK\x01\x02", at + 1)
    good[at + 20:at + 28] = struct.pack("<II", 0x7FFFFFF0, 0x7FFFFFF0)
    return bytes(good)


def pointing_at_another_record():
    """data/1's central entry points at data/0's local header."""
    good = bytearray(archive(
        {"a": tensor_record(pid("0", "FloatStorage", 4), 0, (4,), (1,)),
         "b": tensor_record(pid("1", "FloatStorage", 4), 0, (4,), (1,))},
        {"data/0": b"\x01" * 16, "data/1": b"\x02" * 16}))
    z = zipfile.ZipFile(io.BytesIO(bytes(good)))
    first = z.getinfo("archive/data/0").header_offset
    name = b"archive/data/1"
    at = good.find(b"PK\x01\x02")
    while good[at + 46:at + 46 + len(name)] != name:
        at = good.find(b"PK\x01\x02", at + 1)
    good[at + 42:at + 46] = struct.pack("<I", first)
    return bytes(good)


MALFORMED = {
    "storage record short": (lambda: one((4,), (1,), nbytes=12),
                             "holds 12 bytes, not the 16"),
    "size past storage": (lambda: one((5,), (1,)), "reaches element 5"),
    "stride past storage": (lambda: one((2, 2), (3, 1)), "reaches element"),
    "offset past storage": (lambda: one((2,), (1,), offset=3),
                            "reaches element 5"),
    "negative size": (lambda: one((-1,), (1,)), "not an int >= 0"),
    "negative stride": (lambda: one((2,), (-1,), offset=2),
                        "not an int >= 0"),
    "negative offset": (lambda: one((1,), (1,), offset=-1),
                        "not an int >= 0"),
    "huge size": (lambda: one((2 ** 62, 2 ** 62), (1, 1)),
                  "reaches element"),
    "size and stride differ": (lambda: one((2, 2), (1,)), "but stride"),
    "too many dims": (lambda: one((1,) * 17, (1,) * 17), "at most 16"),
    "huge storage": (lambda: one((2,), (1,), numel=2 ** 60),
                     "not the 4611686018427387904"),
    "negative storage size": (lambda: one((2,), (1,), numel=-4),
                              "size -4"),
    "float offset": (lambda: one((2,), (1,), offset=0.5), "offset"),
    "requires_grad not a bool": (lambda: one((2,), (1,), requires_grad=1),
                                 "requires_grad"),
    "bool byte 2": (lambda: archive(
        {"w": tensor_record(pid("0", "BoolStorage", 2), 0, (2,), (1,))},
        {"data/0": b"\x00\x02"}), "byte other than 0 and 1"),
    "missing storage record": (lambda: archive(
        {"w": tensor_record(pid("0", "FloatStorage", 1), 0, (1,), (1,))},
        {}), "no record archive/data/0"),
    "unknown persistent id": (lambda: archive(
        {"w": Pid(("module", "x"))}, {}), "unknown persistent id"),
    "storage class not a class": (lambda: archive(
        {"w": Pid(("storage", "FloatStorage", "0", "cpu", 1))}, {}),
        "storage's class"),
    "tensor of no storage": (lambda: archive(
        {"w": tensor_record(3, 0, (1,), (1,))}, {}), "storage is int"),
    "unknown version": (lambda: archive({}, {}, version=b"99\n"),
                        "version 99, but the maximum supported version "
                        "for reading is 10"),
    "version not a number": (lambda: archive({}, {}, version=b"x"),
                             "version record"),
    "no version": (lambda: archive({}, {}, version=None),
                   "no version record"),
    "bad byteorder": (lambda: archive({}, {}, byteorder=b"middle"),
                      "byteorder"),
    "compressed record": (lambda: archive(
        {"w": tensor_record(pid("0", "FloatStorage", 1), 0, (1,), (1,))},
        {"data/0": b"\0" * 4}, compression=zipfile.ZIP_DEFLATED),
        "compressed"),
    "zip bomb": (lambda: archive(
        {}, {"data/0": b"\0" * (10 << 20)},
        compression=zipfile.ZIP_DEFLATED), "compressed"),
    "declared size past the file": (bomb, "past the end"),
    "entry pointing at another record": (pointing_at_another_record,
                                         "bad local header for "
                                         "archive/data/1"),
    "no data.pkl": (lambda: b"".join(_no_pkl()), "no data.pkl"),
    "empty zip": (lambda: b"PK\x05\x06" + b"\0" * 18, "no records"),
    "bad pickle": (lambda: _with_pkl(b"\x80\x02}q\x00(X"), "malformed"),
}


def _no_pkl():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/version", b"3\n")
    yield out.getvalue()


def _with_pkl(pkl):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/version", b"3\n")
    return out.getvalue()


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_archives(name):
    make, message = MALFORMED[name]
    with pytest.raises(pickle.UnpicklingError) as e:
        pygpu.load(io.BytesIO(make()))
    assert isinstance(e.value, RuntimeError)
    assert message in str(e.value), str(e.value)


def test_truncations_of_a_good_archive():
    buf = io.BytesIO()
    pygpu.save({"w": pygpu.randn(16, 16), "b": pygpu.ones(3)}, buf)
    good = buf.getvalue()
    for n in list(range(0, len(good), 97)) + [len(good) - 1]:
        with pytest.raises(pickle.UnpicklingError):
            pygpu.load(io.BytesIO(good[:n]))


def test_legacy_truncations_and_damage():
    good = open(os.path.join(DATA, "legacy.pt"), "rb").read()
    for n in range(0, len(good), 41):
        with pytest.raises(pickle.UnpicklingError):
            pygpu.load(io.BytesIO(good[:n]))
    rng = np.random.default_rng(5)
    for _ in range(100):
        data = bytearray(good)
        data[int(rng.integers(len(data)))] = int(rng.integers(256))
        try:
            pygpu.load(io.BytesIO(bytes(data)))
        except pickle.UnpicklingError:
            pass


# -- with torch ---------------------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_pygpu_file_loads_in_torch(torch, tmp_path, rng):
    x = pygpu.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    sd = collections.OrderedDict(
        x=x, row=x[1], t=x.T, cols=x[:, 2:4], e=x[2:3].expand(5, 6),
        bf=pygpu.tensor(rng.standard_normal(5), dtype=pygpu.bfloat16),
        h=x.half()[1:, ::2], d=pygpu.tensor(rng.standard_normal(3)),
        i=pygpu.arange(7), i32=pygpu.arange(3, dtype=pygpu.int32),
        u8=pygpu.tensor([0, 7, 255], dtype=pygpu.uint8),
        b=pygpu.tensor([True, False]), empty=pygpu.empty(0, 3),
        p=nn.Parameter(pygpu.randn(3)),
        g=pygpu.randn(2).requires_grad_())
    sd._metadata = collections.OrderedDict({"": {"version": 1}})
    pygpu.save({"sd": sd, "n": 3, "dt": pygpu.float16,
                "dev": pygpu.device("cpu"), "size": x.shape},
               tmp_path / "p.pt")
    back = torch.load(tmp_path / "p.pt", weights_only=True)
    bsd = back["sd"]
    assert list(bsd) == list(sd) and bsd._metadata == {"": {"version": 1}}
    for k, v in sd.items():
        b = bsd[k]
        assert str(b.dtype) == str(v.dtype).replace("pygpu", "torch"), k
        assert tuple(b.shape) == tuple(v.shape), k
        assert b.stride() == v.stride() or v.numel() <= 1, k
        assert b.requires_grad == v.requires_grad, k
        np.testing.assert_array_equal(
            b.detach().to(torch.float64 if b.is_floating_point() else
                          torch.int64).numpy(), host(v), k)
    assert isinstance(bsd["p"], torch.nn.Parameter)
    ptr = bsd["x"].untyped_storage().data_ptr()
    for k in ("row", "t", "cols", "e"):
        assert bsd[k].untyped_storage().data_ptr() == ptr, k
    assert bsd["row"].storage_offset() == 6
    assert back["dt"] is torch.float16 and back["size"] == torch.Size([4, 6])
    assert back["dev"] == torch.device("cpu") and back["n"] == 3
    m = torch.load(tmp_path / "p.pt", weights_only=True, mmap=True)
    assert torch.equal(m["sd"]["x"], bsd["x"])


def test_torch_file_loads_in_pygpu(torch, tmp_path):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(5, 8, generator=g)
    sd = collections.OrderedDict(
        x=x, t=x.T, s=x[1:, ::3], e=x[0].expand(3, 8),
        bf=torch.randn(4, generator=g).bfloat16(),
        h=torch.randn(2, 3, generator=g).half().T,
        i=torch.arange(6).reshape(2, 3)[:, 1:],
        b=torch.tensor([[True], [False]]), z=torch.zeros(0, 2),
        p=torch.nn.Parameter(torch.randn(2, generator=g)))
    for name, kw in (("new", {}),
                     ("old", {"_use_new_zipfile_serialization": False})):
        path = tmp_path / f"{name}.pt"
        torch.save(sd, path, **kw)
        for mmap in ((False, True) if name == "new" else (False,)):
            back = pygpu.load(path, mmap=mmap)
            for k, v in sd.items():
                b = back[k]
                assert tuple(b.shape) == tuple(v.shape), k
                assert b.stride() == v.stride() or v.numel() <= 1, k
                want = v.detach().to(torch.float64 if v.is_floating_point()
                                     else torch.int64).numpy()
                np.testing.assert_array_equal(host(b), want, k)
            assert isinstance(back["p"], nn.Parameter)
            isz = back["x"].element_size()
            assert back["s"].data_ptr() == back["x"].data_ptr() + 8 * isz
            assert back["t"].data_ptr() == back["x"].data_ptr()


def test_crc32_options(tmp_path):
    assert pygpu.serialization.get_crc32_options() is True
    x = pygpu.arange(100.0)
    try:
        pygpu.serialization.set_crc32_options(False)
        assert pygpu.serialization.get_crc32_options() is False
        pygpu.save({"x": x}, tmp_path / "n.pt")
    finally:
        pygpu.serialization.set_crc32_options(True)
    z = zipfile.ZipFile(tmp_path / "n.pt")
    assert z.getinfo("n/data/0").CRC == 0
    assert pygpu.load(tmp_path / "n.pt")["x"].tolist() == x.tolist()
    pygpu.save({"x": x}, tmp_path / "c.pt")
    assert zipfile.ZipFile(tmp_path / "c.pt").testzip() is None


@pytest.mark.parametrize("start", [0, 1, 0xFFFFFFFF, 0x1234ABCD])
def test_crc32_matches_zlib(start, rng):
    # the carry-less multiply's folding (64 bytes and more) and the bit
    # loop (tails, short inputs, CPUs without it) against zlib's, at every
    # length around the 16- and 64-byte steps and at unaligned starts
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    for n in list(range(0, 200)) + [255, 256, 257, 1023, 1024, 4095, 4999]:
        for off in (0, 1, 7):
            chunk = data[off:off + n]
            assert pygpu._C._crc32(chunk, start) == zlib.crc32(chunk, start)
    assert pygpu._C._crc32(data) == zlib.crc32(data)
    # continuing over pieces gives the whole's CRC
    crc = 0
    for i in range(0, len(data), 333):
        crc = pygpu._C._crc32(memoryview(data)[i:i + 333], crc)
    assert crc == zlib.crc32(data)


def test_crc32_inputs(rng):
    big = rng.standard_normal(1 << 18).astype(np.float32)  # GIL released
    assert pygpu._C._crc32(big) == zlib.crc32(big)
    assert pygpu._C._crc32(bytearray(b"pygpu")) == zlib.crc32(b"pygpu")
    assert pygpu._C._crc32(b"x", -1) == zlib.crc32(b"x", 0xFFFFFFFF)
    assert isinstance(pygpu._C._crc32_fast(), bool)
    with pytest.raises(TypeError):
        pygpu._C._crc32("text")
    with pytest.raises(TypeError):
        pygpu._C._crc32()
    with pytest.raises(TypeError):
        pygpu._C._crc32(b"", 0, 0)
    with pytest.raises((BufferError, TypeError, ValueError)):
        pygpu._C._crc32(memoryview(big)[::2])


def test_crc32_of_records_across_steps(tmp_path, rng):
    # records shorter than, equal to and longer than the writer's step
    step = pygpu._torch_zip._CRC_STEP
    sd = {f"t{n}": pygpu.from_numpy(
        rng.integers(0, 256, n, dtype=np.uint8)) for n in
        (0, 1, 63, 64, step - 1, step, step + 1, 2 * step + 5)}
    pygpu.save(sd, tmp_path / "s.pt")
    z = zipfile.ZipFile(tmp_path / "s.pt")
    assert z.testzip() is None
    back = pygpu.load(tmp_path / "s.pt")
    for k, v in sd.items():
        assert np.array_equal(back[k].numpy(), v.numpy())


def test_rebuild_tensor_v3_over_untyped_storage():
    # torch writes _rebuild_tensor_v3 over an UntypedStorage (numel in
    # bytes) for the dtypes without a storage class of their own
    def v3(dtype, numel=8):
        storage = Pid(("storage", TorchGlobal.get("torch.storage",
                                                  "UntypedStorage"),
                       "0", "cpu", numel))
        return archive({"w": Call("torch._utils", "_rebuild_tensor_v3",
                                  (storage, 1, (1,), (1,), False,
                                   collections.OrderedDict(),
                                   TorchGlobal.get("torch", dtype)))},
                       {"data/0": np.array([1.5, -2.0], "<f4").tobytes()})
    back = pygpu.load(io.BytesIO(v3("float32")))
    assert back["w"].dtype == pygpu.float32 and back["w"].tolist() == [-2.0]
    with pytest.raises(RuntimeError, match="dtype torch.uint16"):
        pygpu.load(io.BytesIO(v3("uint16")))
    with pytest.raises(pickle.UnpicklingError, match="holds 8 bytes, not "
                                                     "the 9"):
        pygpu.load(io.BytesIO(v3("float32", numel=9)))


def test_safe_globals(tmp_path):
    ser = pygpu.serialization
    pygpu.save({"f": fractions.Fraction(2, 3)}, tmp_path / "f.pt")
    with pytest.raises(pickle.UnpicklingError,
                       match=r"add_safe_globals\(\[Fraction\]\)"):
        pygpu.load(tmp_path / "f.pt")
    with ser.safe_globals([fractions.Fraction]):
        assert fractions.Fraction in ser.get_safe_globals()
        assert pygpu.load(tmp_path / "f.pt")["f"] == fractions.Fraction(2, 3)
    assert fractions.Fraction not in ser.get_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        pygpu.load(tmp_path / "f.pt")
    try:
        ser.add_safe_globals([(fractions.Fraction, "fractions.Fraction")])
        assert pygpu.load(tmp_path / "f.pt")["f"] == fractions.Fraction(2, 3)
    finally:
        ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    with pytest.raises(TypeError, match="not a class or function"):
        ser.add_safe_globals([3])


def test_unknown_storage_class_is_a_bad_file():
    """A storage class torch does not have (a damaged name) is a global
    the restricted unpickler refuses, not a dtype pygpu lacks."""
    buf = io.BytesIO()
    pygpu.save({"a": pygpu.rand(3)}, buf)
    data = buf.getvalue().replace(b"FloatStorage", b"FlOatStorage")
    with pytest.raises(pickle.UnpicklingError, match="FlOatStorage"):
        pygpu.load(io.BytesIO(data))
