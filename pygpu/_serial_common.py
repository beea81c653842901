"""What pygpu.save / pygpu.load's formats share: the errors a bad file
raises, the dtype tables, and placing a host array where map_location
sends it."""
import pickle
import threading

import numpy as np

from . import _C

# pygpu's dtypes by name, with the NumPy dtype of their bytes in a file
# (bfloat16: its 16 bits, as uint16; NumPy has no bfloat16).
RAW = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
       "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
       "bool": np.bool_, "bfloat16": np.uint16}
MAX_DIMS = 16  # pygpu's limit on a tensor's dims


class BadFile(pickle.UnpicklingError, RuntimeError):
    """A malformed checkpoint: an UnpicklingError, as pygpu.load has
    always raised, and a RuntimeError, as torch.load raises for a bad
    archive."""


def malformed(msg):
    return BadFile(f"pygpu.load: malformed file: {msg}")


def not_the_file(e):
    """Marks e as an error that load passes on as it is."""
    e._pygpu_not_the_file = True
    return e


def dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def check_int(x, what, low=0):
    if type(x) is not int or x < low:
        raise malformed(f"{what} is {x!r}, not an int >= {low}")
    return x


def check_ints(xs, what):
    if not isinstance(xs, (tuple, list, _C.Size)) or len(xs) > MAX_DIMS:
        raise malformed(f"{what} is {xs!r}, not a tuple of at most "
                        f"{MAX_DIMS} ints")
    return tuple(check_int(x, what) for x in xs)


def check_view(numel, offset, shape, strides):
    """Checks that a view (in elements) lies inside a storage of numel
    elements, in Python ints (no overflow)."""
    offset = check_int(offset, "a tensor's storage offset")
    shape = check_ints(shape, "a tensor's size")
    strides = check_ints(strides, "a tensor's stride")
    if len(shape) != len(strides):
        raise malformed(f"a tensor has size {shape} but stride {strides}")
    if 0 in shape:
        end = offset
    else:
        end = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if end > numel:
        raise malformed(f"a tensor of size {shape}, stride {strides} and "
                        f"storage offset {offset} reaches element {end} of "
                        f"a storage of {numel} elements")
    return offset, shape, strides


def device_of(where):
    return where if isinstance(where, _C.device) else _C.device(where)


def check_device(dev):
    if dev.type == "cpu":
        return
    if dev.type != "cuda":
        raise not_the_file(RuntimeError(
            f"pygpu.load: pygpu has no device {dev.type!r}; pass "
            f"map_location='cpu' (or a CUDA device)"))
    if not _C._cuda_is_available():
        raise not_the_file(RuntimeError(
            "Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False. If you are running on a "
            "CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the "
            "CPU."))
    n = _C._cuda_device_count()
    if (dev.index or 0) >= n:
        raise not_the_file(RuntimeError(
            f"Attempting to deserialize object on CUDA device {dev.index} "
            f"but torch.cuda.device_count() is {n}. Please use torch.load "
            f"with map_location to map your storages to an existing "
            f"device."))


def saved_device(location):
    """The device a location string names (a malformed one raises)."""
    if not isinstance(location, (str, _C.device)):
        raise malformed(f"a location is {location!r}")
    try:
        dev = device_of(location)
    except Exception as e:
        raise malformed(f"bad location {location!r}") from e
    if dev.type not in ("cpu", "cuda"):
        raise not_the_file(RuntimeError(
            f"pygpu.load: a storage was saved on {location!r}, a device "
            f"pygpu does not have; pass map_location='cpu'"))
    return dev


def host_tensor(host, dtype):
    """A 1-d host array of RAW[dtype] as a CPU tensor of dtype, sharing
    its memory where pygpu can (every dtype but bfloat16)."""
    if dtype == "bfloat16":
        wide = (host.astype(np.uint32) << 16).view(np.float32)
        with np.errstate(all="ignore"):
            return _C.tensor(wide, dtype=_C.bfloat16)
    try:
        return _C.from_numpy(host)
    except MemoryError:
        raise
    except Exception as e:
        raise not_the_file(e)


def place(cpu, location, map_location):
    """A CPU tensor saved at location, moved where map_location sends it:
    a device or string, a dict {saved: new}, or a callable(cpu tensor,
    location) returning a tensor or None."""
    saved = None
    try:
        if callable(map_location):
            out = map_location(cpu, location)
            if out is not None:
                if not isinstance(out, _C.Tensor):
                    raise TypeError(f"map_location returned "
                                    f"{type(out).__name__}, not a Tensor")
                return out
            saved = saved_device(location)
            dev = saved
        elif isinstance(map_location, dict):
            key = str(location)
            dev = device_of(map_location[key]) if key in map_location \
                else saved_device(location)
        elif map_location is None:
            dev = saved_device(location)
        else:
            dev = device_of(map_location)
    except BadFile:
        raise
    except Exception as e:  # map_location's own error
        raise not_the_file(e)
    check_device(dev)
    if dev.type == "cpu":
        return cpu
    try:
        return cpu.to(dev)
    except Exception as e:  # out of memory on the device, ...
        raise not_the_file(e)


def host_bytes(t):
    """The values of a contiguous tensor as a 1-d host array of
    RAW[dtype] (a view of a CPU tensor's memory where pygpu can give one;
    bfloat16 through float32, exactly)."""
    t = t.detach()
    if t.dtype == _C.bfloat16:
        wide = np.ascontiguousarray(t.float().cpu().numpy()).reshape(-1)
        return (wide.view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(t.cpu().numpy()).reshape(-1)


# The globals that load(weights_only=True) allows besides its own:
# {(module, name): object}, changed under the lock.
_safe = {}
_safe_lock = threading.Lock()


def _safe_key(entry):
    if isinstance(entry, tuple) and len(entry) == 2 and \
            isinstance(entry[1], str):
        obj, full = entry
        module, _, name = full.rpartition(".")
    else:
        obj = entry
        module = getattr(obj, "__module__", None)
        name = getattr(obj, "__qualname__", None)
    if not module or not name:
        raise TypeError(f"{entry!r} is not a class or function (or an "
                        f"(object, 'module.name') pair) to allow")
    return (module, name), obj


def add_safe_globals(entries):
    with _safe_lock:
        for entry in entries:
            key, obj = _safe_key(entry)
            _safe[key] = obj


def safe_globals_now():
    with _safe_lock:
        return dict(_safe)


def set_safe_globals(found):
    with _safe_lock:
        _safe.clear()
        _safe.update(found)


def safe_global(module, name):
    """The object allowed under module.name, or None."""
    with _safe_lock:
        return _safe.get((module, name))
