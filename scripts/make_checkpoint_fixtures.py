#!/usr/bin/env python3
"""Writes the checkpoints that tests/utils/test_checkpoints_torch.py and
tests/utils/test_safetensors.py load without torch, into
tests/data/checkpoints/, with torch and safetensors:

  tutorial_20_16_4.pt           the tutorial's model (Linear, ReLU,
                                Linear), 20-16-4 to keep the file small:
                                its state_dict, OrderedDict with _metadata
  shared_views.pt               views of one storage (a row, a transpose,
                                columns, an expanded row), a Parameter, a
                                tensor that requires grad, containers
  dtypes.pt                     every dtype pygpu has, contiguous, strided,
                                0-d and empty
  dtypes_big_endian.pt          dtypes.pt with byteorder 'big' (torch
                                writes the machine's order; the storages
                                are swapped here, and torch reads it back)
  legacy.pt                     shared_views' tensors in torch's format
                                before the zip one
  complex64.pt, uint16.pt       dtypes pygpu does not have
  tutorial_20_16_4.safetensors  the same state dict, with metadata
  dtypes.safetensors            every dtype pygpu has
  expected.npz                  every tensor's values in float64 (bool,
                                ints as int64), keyed 'file:name'
  expected.json                 per file and tensor: dtype, shape, stride,
                                storage offset, requires_grad, type, and
                                which tensors share a storage

pygpu_pickle_format.pt, beside them, is not written here: pygpu.save made
it when it still wrote a plain pickle, to check that load reads those.

    PYTHONPATH=... python scripts/make_checkpoint_fixtures.py [DIR]
"""
import collections
import io
import json
import os
import sys
import zipfile

import numpy as np
import torch
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int64, torch.int32, torch.uint8, torch.bool]


def tutorial():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4))
    return model.state_dict()


def shared_views():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 6, generator=g)
    sd = collections.OrderedDict(
        x=x, row=x[1], t=x.T, cols=x[:, 2:4], e=x[2:3].expand(5, 6),
        other=x.clone())
    sd._metadata = collections.OrderedDict({"": {"version": 2}})
    return {"sd": sd,
            "p": torch.nn.Parameter(torch.randn(3, generator=g)),
            "frozen": torch.nn.Parameter(torch.ones(2),
                                         requires_grad=False),
            "grad": torch.randn(2, generator=g).requires_grad_(),
            "list": [x[3], 7, 2.5, "s", (True, None)],
            "shape": x.shape, "dtype": torch.float16}


def dtypes():
    g = torch.Generator().manual_seed(2)
    out = {}
    for dt in DTYPES:
        name = str(dt).split(".")[1]
        v = torch.randn(3, 5, generator=g) * 50
        if dt == torch.bool:
            t = v > 0
        elif dt == torch.uint8:
            t = v.abs().to(dt)
        else:
            t = v.to(dt)
        out[name] = t
        out[name + "_strided"] = t[::2, 1::2]
        out[name + "_0d"] = t[1, 1].clone()
        out[name + "_empty"] = t[:0]
    return out


def tensors(obj, prefix=""):
    """(name, tensor) of every tensor in obj, by path."""
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from tensors(v, f"{prefix}/{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from tensors(v, f"{prefix}/{i}" if prefix else str(i))


def describe(obj, fname, arrays):
    out = {}
    storages = {}
    for name, t in tensors(obj):
        arrays[f"{fname}:{name}"] = (
            t.detach().to(torch.float64).numpy()
            if t.dtype.is_floating_point else
            t.detach().to(torch.int64).numpy())
        ptr = t.untyped_storage().data_ptr()
        out[name] = {"dtype": str(t.dtype).split(".")[1],
                     "shape": list(t.shape), "stride": list(t.stride()),
                     "offset": t.storage_offset(),
                     "requires_grad": t.requires_grad,
                     "type": type(t).__name__,
                     "storage": storages.setdefault(ptr, len(storages))}
    return out


def big_endian(data):
    """A zip checkpoint with its storages byte-swapped and byteorder
    'big'."""
    src = zipfile.ZipFile(io.BytesIO(data))
    pkl = src.read("dtypes/data.pkl")
    sizes = {}

    class Scan(__import__("pickle").Unpickler):
        def persistent_load(self, pid):
            sizes[pid[2]] = pid[1].dtype.itemsize
            return torch.UntypedStorage(0)

        def find_class(self, module, name):
            if module == "torch._utils":
                return lambda *a: None
            return super().find_class(module, name)

    Scan(io.BytesIO(pkl)).load()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename.endswith("/byteorder"):
                body = b"big"
            elif "/data/" in info.filename and \
                    not info.filename.endswith("serialization_id"):
                key = info.filename.rsplit("/", 1)[1]
                isz = sizes[key]
                if isz > 1:
                    body = np.frombuffer(body, f"<u{isz}").astype(
                        f">u{isz}").tobytes()
            dst.writestr(info.filename, body)
    return out.getvalue()


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(ROOT, "tests", "data", "checkpoints")
    os.makedirs(out_dir, exist_ok=True)
    arrays, meta = {}, {}

    def put(fname, obj, **kw):
        path = os.path.join(out_dir, fname)
        torch.save(obj, path, **kw)
        meta[fname] = describe(obj, fname, arrays)

    put("tutorial_20_16_4.pt", tutorial())
    put("shared_views.pt", shared_views())
    put("dtypes.pt", dtypes())
    legacy = {k: v for k, v in shared_views().items() if k != "dtype"}
    put("legacy.pt", legacy, _use_new_zipfile_serialization=False)
    torch.save({"c": torch.zeros(2, dtype=torch.complex64)},
               os.path.join(out_dir, "complex64.pt"))
    torch.save({"u": torch.zeros(2, dtype=torch.uint16)},
               os.path.join(out_dir, "uint16.pt"))

    with open(os.path.join(out_dir, "dtypes.pt"), "rb") as f:
        swapped = big_endian(f.read())
    path = os.path.join(out_dir, "dtypes_big_endian.pt")
    with open(path, "wb") as f:
        f.write(swapped)
    back = torch.load(path, weights_only=True)
    for k, v in dtypes().items():
        assert torch.equal(back[k], v), k
    meta["dtypes_big_endian.pt"] = describe(dtypes(), "dtypes_big_endian.pt",
                                            arrays)

    sd = {k: v.contiguous() for k, v in tutorial().items()}
    save_file(sd, os.path.join(out_dir, "tutorial_20_16_4.safetensors"),
              metadata={"format": "pt", "model": "20-16-4"})
    meta["tutorial_20_16_4.safetensors"] = describe(
        sd, "tutorial_20_16_4.safetensors", arrays)
    dts = {k: v.contiguous() for k, v in dtypes().items()
           if not k.endswith("_strided")}
    save_file(dts, os.path.join(out_dir, "dtypes.safetensors"))
    meta["dtypes.safetensors"] = describe(dts, "dtypes.safetensors", arrays)

    np.savez_compressed(os.path.join(out_dir, "expected.npz"), **arrays)
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"torch": torch.__version__, "files": meta}, f, indent=1,
                  sort_keys=True)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(out_dir, n))
                for n in os.listdir(out_dir))
    print(f"{len(os.listdir(out_dir))} files, {total} bytes in {out_dir}")


if __name__ == "__main__":
    main()
