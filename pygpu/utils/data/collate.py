"""default_collate and default_convert: how a DataLoader turns the samples
of a batch into batched tensors (torch.utils.data's rules)."""
import collections.abc
import re

import numpy as np

import pygpu

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, "
        "numbers, dicts or lists; found {}")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _is_numpy(x):
    return type(x).__module__ == "numpy" and not isinstance(
        x, (np.str_, np.bytes_))


def default_convert(data):
    """NumPy arrays and scalars (not strings or objects) become tensors;
    mappings, namedtuples, tuples (as lists) and other sequences are
    converted element by element; everything else comes back as is."""
    if isinstance(data, pygpu.Tensor):
        return data
    if _is_numpy(data):
        if (isinstance(data, np.ndarray)
                and _NP_STR_OBJ.search(data.dtype.str) is not None):
            return data
        return pygpu.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v)
                               for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if (isinstance(data, collections.abc.Sequence)
            and not isinstance(data, (str, bytes))):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_tensors(batch):
    return pygpu.stack(batch, 0)


def default_collate(batch):
    """A list of samples -> one batch: tensors stacked along a new first
    dimension; NumPy arrays and scalars likewise, as tensors; Python
    floats a float64 tensor, ints (and bools) an int64 (bool) tensor;
    strings a list; mappings, namedtuples and sequences collated field by
    field (tuples into lists), recursively."""
    elem = batch[0]
    if isinstance(elem, pygpu.Tensor):
        return _collate_tensors(batch)
    if _is_numpy(elem):
        if isinstance(elem, (np.ndarray, np.memmap)):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return _collate_tensors([pygpu.as_tensor(b) for b in batch])
        if elem.shape == ():
            return pygpu.as_tensor(np.asarray(batch))
        raise TypeError(_ERR.format(type(elem)))
    if isinstance(elem, float):
        return pygpu.tensor(batch, dtype=pygpu.float64)
    if isinstance(elem, int):
        return pygpu.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return type(elem)({k: default_collate([d[k] for d in batch])
                               for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError(
                "each element in list of batch should be of equal size")
        transposed = [list(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))
