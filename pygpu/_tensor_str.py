"""repr(tensor) in torch's style: 4 decimals (or scientific notation when
the magnitudes call for it), aligned columns, summarised past 1000
elements, the dtype when it is not a default one, and the device when it
is not the CPU."""
import numpy as np

_PRECISION = 4
_THRESHOLD = 1000
_EDGEITEMS = 3
_DEFAULT_DTYPES = ("float32", "int64", "bool")


def _host(t):
    """t's values as a NumPy array (bfloat16, which NumPy lacks, as
    float32: it holds each of them exactly)."""
    if repr(t.dtype) == "pygpu.bfloat16":
        t = t.float()
    return t.cpu().numpy()


def _formatter(values, is_float):
    """A function formatting one element, all of the same width."""
    if values.dtype == np.bool_:
        width = 5 if not values.all() else 4
        return lambda v: str(bool(v)).rjust(width)
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


def _edges(t):
    """A NumPy copy of what a summary shows of t: along every dim longer
    than 2 * _EDGEITEMS, its first and last _EDGEITEMS entries, taken with
    views so that only those elements are ever copied."""
    for d, n in enumerate(t.shape):
        if n > 2 * _EDGEITEMS:
            keep = (slice(None),) * d
            head = _edges(t[keep + (slice(0, _EDGEITEMS),)])
            tail = _edges(t[keep + (slice(n - _EDGEITEMS, n),)])
            return np.concatenate([head, tail], axis=d)
    return _host(t)


def _format(arr, shape, fmt, indent, summarize):
    """arr holds the elements shown of a tensor of the given shape (its
    edges only where shape[d] is summarised)."""
    if arr.ndim == 0:
        return fmt(arr.item())
    fold = summarize and shape[0] > 2 * _EDGEITEMS
    if arr.ndim == 1:
        items = [fmt(v) for v in arr]
    else:
        items = [_format(sub, shape[1:], fmt, indent + 1, summarize)
                 for sub in arr]
    if fold:
        items = items[:_EDGEITEMS] + ["..."] + items[_EDGEITEMS:]
    if arr.ndim == 1:
        return "[" + ", ".join(items) + "]"
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(items) + "]"


def tensor_repr(t):
    from .autograd.grad_mode import no_grad
    with no_grad():
        text = _repr(t.detach())
    if t.grad_fn is not None:
        return text[:-1] + f", grad_fn=<{t.grad_fn.name()}>)"
    if t.requires_grad:
        return text[:-1] + ", requires_grad=True)"
    return text


def _repr(t):
    dtype = t.dtype
    shape = tuple(t.shape)
    numel = t.numel()
    summarize = numel > _THRESHOLD
    suffix = []
    if numel == 0:
        body = "[]"
        if len(shape) != 1:
            suffix.append(f"size={shape}")
    else:
        arr = _edges(t) if summarize else _host(t)
        if dtype.is_floating_point:
            arr = arr.astype(np.float64)
        fmt = _formatter(arr, dtype.is_floating_point)
        body = _format(arr, shape, fmt, len("tensor("), summarize)
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    name = repr(dtype).split(".")[-1]
    if name not in _DEFAULT_DTYPES or (numel == 0 and name != "float32"):
        suffix.append(f"dtype={dtype!r}")
    return "tensor(" + ", ".join([body] + suffix) + ")"
