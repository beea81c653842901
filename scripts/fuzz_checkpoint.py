"""A fuzz family for checkpoints (scripts/fuzz.py runs it with its own):
a random state dict (every dtype, views sharing a storage, strided,
expanded, 0-d and empty tensors, a Parameter) saved by pygpu.save must
load back equal, sharing what it shared; then the archive is damaged
(truncated, bytes overwritten anywhere or in its headers, data.pkl and
size fields, records dropped) and pygpu.load must either load it or raise
pickle.UnpicklingError (or the RuntimeError of a location or dtype pygpu
cannot place), with a message: never another class, a crash or a huge
allocation.  The family takes (rng, h), h being the fuzz module with its
checker and the device under test."""
import io
import pickle
import struct
import zipfile

import numpy as np

import pygpu

FAMILIES = ["checkpoint"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32",
          "uint8", "bool"]


def _tensor(rng, dtype, device):
    shape = [int(rng.integers(0, 5)) for _ in range(int(rng.integers(0, 4)))]
    v = rng.standard_normal(shape) * 20
    if dtype == "bool":
        v = v > 0
    elif dtype == "uint8":
        v = np.abs(v)
    return pygpu.tensor(v, dtype=getattr(pygpu, dtype), device=device)


def _views(rng, t):
    out = [t]
    if t.dim() >= 2:
        out.append(t.transpose(0, 1))
    if t.dim() >= 1 and t.shape[0] > 1:
        out.append(t[1:])
        out.append(t[::2])
    if t.dim() == 1 and t.shape[0] == 1:
        out.append(t.expand(3))
    return [out[int(i)] for i in rng.integers(0, len(out),
                                               int(rng.integers(1, 4)))]


def state_dict(rng, device):
    sd = {}
    for i in range(int(rng.integers(1, 6))):
        base = _tensor(rng, DTYPES[int(rng.integers(len(DTYPES)))], device)
        for j, v in enumerate(_views(rng, base)):
            sd[f"t{i}.{j}"] = v
    if rng.random() < 0.3:
        sd["p"] = pygpu.nn.Parameter(pygpu.randn(2, device=device))
    return sd


def _host(t):
    t = t.detach().cpu()
    return t.to(pygpu.float64 if pygpu.is_floating_point(t) else
                pygpu.int64).numpy()


def mutate(rng, good):
    """A damaged copy of the archive good."""
    data = bytearray(good)
    kind = int(rng.integers(6))
    if kind == 0:  # truncated
        return bytes(data[:int(rng.integers(0, len(data)))])
    if kind == 1:  # a few random bytes anywhere
        for _ in range(int(rng.integers(1, 5))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        return bytes(data)
    z = zipfile.ZipFile(io.BytesIO(good))
    infos = z.infolist()
    info = infos[int(rng.integers(len(infos)))]
    if kind == 2:  # inside one record's header or data.pkl
        at = info.header_offset
        span = 30 + len(info.filename) + 80
        if info.filename.endswith("data.pkl"):
            span += info.file_size
        for _ in range(int(rng.integers(1, 4))):
            i = at + int(rng.integers(span))
            if i < len(data):
                data[i] = int(rng.integers(256))
        return bytes(data)
    cd = data.rfind(b"PK\x05\x06")
    start = struct.unpack("<I", data[cd + 16:cd + 20])[0]
    if kind == 3:  # the central directory's fields
        for _ in range(int(rng.integers(1, 4))):
            i = start + int(rng.integers(max(1, len(data) - start)))
            data[i] = int(rng.integers(256))
        return bytes(data)
    if kind == 4:  # a size or offset field of one central entry: extremes
        at = data.find(b"PK\x01\x02", start)
        for _ in range(int(rng.integers(len(infos)))):
            at = data.find(b"PK\x01\x02", at + 1)
        if at < 0:
            return bytes(data)
        field = [16, 20, 24, 42][int(rng.integers(4))]  # crc, sizes, offset
        value = [0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE,
                 int(rng.integers(1 << 32))][int(rng.integers(6))]
        data[at + field:at + field + 4] = struct.pack("<I", value)
        return bytes(data)
    out = io.BytesIO()  # records dropped or shortened, re-zipped
    with zipfile.ZipFile(out, "w") as dst:
        for other in infos:
            body = z.read(other.filename)
            if other is info:
                if rng.random() < 0.5:
                    continue
                body = body[:int(rng.integers(0, len(body) + 1))]
            dst.writestr(other.filename, body)
    return out.getvalue()


def fam_checkpoint(rng, h):
    sd = state_dict(rng, h.DEVICE)
    buf = io.BytesIO()
    pygpu.save(sd, buf)
    good = buf.getvalue()
    back = pygpu.load(io.BytesIO(good))
    for k, v in sd.items():
        b = back[k]
        if b.dtype != v.dtype or b.shape != v.shape or \
                not np.array_equal(_host(b), _host(v)):
            raise h.Wrong(f"{k}: {v!r} came back as {b!r}")
    for _ in range(3):
        bad = mutate(rng, good)
        try:
            pygpu.load(io.BytesIO(bad))
        except pickle.UnpicklingError as e:
            if not str(e):
                raise h.Unclean("an UnpicklingError without a message")
        except RuntimeError as e:  # a location or dtype pygpu lacks
            if not ("CUDA" in str(e) or "pygpu does not have" in str(e) or
                    "device" in str(e)):
                raise h.Unclean(f"RuntimeError: {e}") from e
        except Exception as e:  # noqa: BLE001 - what the check is for
            raise h.Unclean(f"{type(e).__name__}: {e}") from e
