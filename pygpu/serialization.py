"""pygpu.save / pygpu.load: torch's checkpoint format.

save writes what torch.save writes (the zip format of torch >= 1.6, read
by torch.load and by pygpu.load): an archive whose top folder is the
file's stem ('archive' for a file object), holding data.pkl (the object,
pickled with protocol 2 as torch: tensors as torch._utils._rebuild_tensor_v2
records over storages given as persistent ids, Parameters as
_rebuild_parameter records), one record data/<key> per storage, its bytes
64-byte aligned in the file, and the records byteorder ('little'),
version, .format_version, .storage_alignment and .data/serialization_id.
Tensors that share memory are written as views of one storage and load
back sharing it (_torch_save.py says how); CUDA tensors are saved with
location 'cuda:N', their bytes copied to the host; bfloat16 is written as
torch's BFloat16Storage bytes.

load reads torch's zip checkpoints, the older format torch.save writes with
_use_new_zipfile_serialization=False, and the plain pickles that pygpu.save
wrote before (_serial_pygpu.py), telling them apart by their first bytes.
A tensor comes back on its saved device or where map_location sends it: a
device or string (every storage goes there), a dict {saved location: new
location}, or a callable(cpu_tensor, saved_location) returning a tensor (or
None for the default), called once per storage.  weights_only=True, the
default as in torch >= 2.6, unpickles with an allowlist (containers,
numbers, strings, tensors, Parameters, devices, dtypes, Size and
OrderedDict, and what add_safe_globals allows); any other global raises
pickle.UnpicklingError naming it, so a crafted file cannot run code.  weights_only=False loads any object (and,
as torch >= 2.6, does not warn).

mmap=True (zip checkpoints given by path or by a file object with a name)
maps the file instead of reading it: each storage's CPU tensors view the
file's pages, copy-on-write (writing to a tensor changes the process's copy
of those pages only, never the file), so no full copy is made.  Storages
that need converting are still copied: bfloat16 (widened through float32),
a big-endian file (byte-swapped), and storages moved to a CUDA device.

Malformed files.  A truncated or corrupted file (a bad archive, a record
past the end of the file or compressed, an unknown version, bad pickle
opcodes, a record with missing or wrong fields, a storage record of
another size than its storage, a view reaching past its storage, negative
sizes, a bool storage with a byte other than 0 or 1) raises
pickle.UnpicklingError (of a class that is also a RuntimeError, which
torch raises for a bad archive) whose message says what was wrong; never
another exception type, and the storages read never hold more bytes than
the file.  Errors that are not the file's fault keep their types: OSError
reading the file, the RuntimeError for a CUDA location on a machine
without that device or a dtype pygpu does not have (complex64, int8,
uint16, ...), whatever a map_location callable raises.
"""
import io
import os
import pickle
from typing import IO, Any, Union

from . import _C
from . import _serial_common, _serial_pygpu
from ._serial_common import BadFile, malformed
from ._serial_pygpu import (_rebuild_storage, _rebuild_tensor,  # noqa: F401
                            _rebuild_view)
from ._torch_load import is_legacy, load_legacy, load_zip
from ._torch_save import save as _save_zip

__all__ = ["save", "load", "set_crc32_options", "get_crc32_options",
           "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

DEFAULT_PROTOCOL = 2
_options = {"crc32": True}


def set_crc32_options(compute_crc32: bool) -> None:
    """Whether save computes each record's CRC-32 (True, the default, as
    in torch).  Without it save writes 0 instead and is faster on large
    checkpoints: pygpu.load and torch.load do not check the CRC, but zip
    tools report the records as corrupted."""
    _options["crc32"] = bool(compute_crc32)


def get_crc32_options() -> bool:
    """Whether save computes each record's CRC-32."""
    return _options["crc32"]


def add_safe_globals(safe_globals) -> None:
    """Allows load(weights_only=True) to load these globals too: classes
    or functions, or (object, "module.name") pairs for an object to give
    under another name.  Only for globals you trust: unpickling calls
    them."""
    _serial_common.add_safe_globals(safe_globals)


def clear_safe_globals() -> None:
    """Forgets the globals add_safe_globals allowed."""
    _serial_common.set_safe_globals({})


def get_safe_globals() -> list:
    """The objects add_safe_globals allowed."""
    return list(_serial_common.safe_globals_now().values())


class safe_globals:
    """with safe_globals([...]): add_safe_globals for the block only."""

    def __init__(self, safe_globals):
        self.entries = list(safe_globals)

    def __enter__(self):
        self.before = _serial_common.safe_globals_now()
        _serial_common.add_safe_globals(self.entries)
        return self

    def __exit__(self, *exc):
        _serial_common.set_safe_globals(self.before)


def _rebuild_parameter(data, requires_grad):
    """The record of pickle.dumps(Parameter): a detached tensor and its
    flag."""
    from .nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise malformed(f"a Parameter's data is {type(data).__name__}")
    return Parameter(data, requires_grad)


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        return stem or "archive"
    return "archive"


def save(obj: Any, f: Union[str, "os.PathLike[str]", IO[bytes]],
         pickle_protocol: int = DEFAULT_PROTOCOL) -> None:
    """Write obj (tensors, state dicts, nested containers, or any
    picklable object) to a path or a binary file object in torch's zip
    checkpoint format; tensors that share memory are written as views of
    one storage."""
    crc32 = _options["crc32"]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            _save_zip(obj, out, pickle_protocol, _archive_name(f), crc32)
    else:
        _save_zip(obj, f, pickle_protocol, _archive_name(f), crc32)


def _seekable(f):
    try:
        return f.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def _mmap_path(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    name = getattr(f, "name", None)
    if isinstance(name, (str, bytes, os.PathLike)) and hasattr(f, "fileno"):
        return name
    raise ValueError("pygpu.load: mmap=True needs a path or a file object "
                     "opened from one")


def _load(f, map_location, weights_only, mmap_path):
    start = f.tell()
    head = f.read(14)
    f.seek(start)
    if head[:4] == b"PK\x03\x04" or head[:4] == b"PK\x05\x06":
        return load_zip(f, map_location, weights_only, mmap_path)
    if mmap_path is not None:
        raise RuntimeError("pygpu.load: mmap=True reads zip checkpoints "
                           "only (torch's format since 1.6), not this file")
    if is_legacy(head):
        size = f.seek(0, os.SEEK_END) - start
        f.seek(start)
        return load_legacy(f, size, map_location, weights_only)
    return _serial_pygpu.load(f, map_location, weights_only)


def load(f: Union[str, "os.PathLike[str]", IO[bytes]],
         map_location: Any = None, weights_only: bool = True,
         mmap: bool = False) -> Any:
    """Read a checkpoint written by pygpu.save or torch.save (or the plain
    pickle of older pygpu.save).  A malformed file raises
    pickle.UnpicklingError."""
    mmap_path = _mmap_path(f) if mmap else None
    own = open(f, "rb") if isinstance(f, (str, os.PathLike)) else None
    try:
        src = own or f
        if not _seekable(src):
            src = io.BytesIO(src.read())
        try:
            return _load(src, map_location, weights_only, mmap_path)
        except Exception as e:
            if isinstance(e, (BadFile, OSError)) or \
                    getattr(e, "_pygpu_not_the_file", False):
                raise
            if isinstance(e, pickle.UnpicklingError):  # the pickle module's
                raise malformed(str(e)) from e
            raise malformed(f"{type(e).__name__}: {e}") from e
    finally:
        if own is not None:
            own.close()
