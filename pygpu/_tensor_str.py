"""repr(tensor) in torch's style: 4 decimals (or scientific notation when
the magnitudes call for it), aligned columns, summarised past 1000
elements, the dtype when it is not a default one, and the device when it
is not the CPU."""
import numpy as np

_PRECISION = 4
_THRESHOLD = 1000
_EDGEITEMS = 3
_DEFAULT_DTYPES = ("float32", "int64")


def _formatter(values, is_float):
    """A function formatting one element, all of the same width."""
    if not is_float:
        width = max((len(str(int(v))) for v in values.flat), default=1)
        return lambda v: str(int(v)).rjust(width)
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size and np.all(finite == np.round(finite)):
        # whole numbers print as "1." unless they are huge
        if nonzero.size and nonzero.max() > 1e8:
            fmt = lambda v: f"{v:.{_PRECISION}e}"
        else:
            fmt = lambda v: (f"{v:.0f}." if np.isfinite(v) else str(v))
    elif nonzero.size and (nonzero.max() / nonzero.min() > 1000.0
                           or nonzero.max() > 1e8 or nonzero.min() < 1e-4):
        fmt = lambda v: f"{v:.{_PRECISION}e}"
    else:
        fmt = lambda v: f"{v:.{_PRECISION}f}"

    def text(v):
        v = float(v)
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        return fmt(v)

    width = max((len(text(v)) for v in values.flat), default=1)
    return lambda v: text(v).rjust(width)


def _summarized(arr, summarize):
    """The elements that will be shown (edges only when summarising)."""
    if not summarize or arr.ndim == 0:
        return arr
    parts = []
    for d in range(arr.ndim):
        if arr.shape[d] > 2 * _EDGEITEMS:
            idx = list(range(_EDGEITEMS)) + list(
                range(arr.shape[d] - _EDGEITEMS, arr.shape[d]))
            arr = np.take(arr, idx, axis=d)
        parts.append(arr)
    return arr


def _format(arr, fmt, indent, summarize):
    if arr.ndim == 0:
        return fmt(arr.item())
    if arr.ndim == 1:
        items = [fmt(v) for v in arr]
        if summarize and arr.shape[0] > 2 * _EDGEITEMS:
            items = items[:_EDGEITEMS] + ["..."] + items[-_EDGEITEMS:]
        return "[" + ", ".join(items) + "]"
    rows = [_format(sub, fmt, indent + 1, summarize) for sub in arr]
    if summarize and arr.shape[0] > 2 * _EDGEITEMS:
        rows = rows[:_EDGEITEMS] + ["..."] + rows[-_EDGEITEMS:]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def tensor_repr(t):
    arr = t.cpu().numpy()
    dtype = t.dtype
    is_float = dtype.is_floating_point
    if is_float:
        arr = arr.astype(np.float64)
    suffix = []
    summarize = arr.size > _THRESHOLD
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffix.append(f"size={tuple(arr.shape)}")
    else:
        fmt = _formatter(_summarized(arr, summarize), is_float)
        body = _format(arr, fmt, len("tensor("), summarize)
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    name = repr(dtype).split(".")[-1]
    if name not in _DEFAULT_DTYPES or (arr.size == 0 and name != "float32"):
        suffix.append(f"dtype={dtype!r}")
    return "tensor(" + ", ".join([body] + suffix) + ")"
