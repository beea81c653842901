"""What runs in a DataLoader worker process: the fetchers (shared with the
main process), get_worker_info, the wrapper that carries an exception's
traceback back, and the worker's loop."""
import io
import os
import pickle
import random
import sys
import traceback

import numpy as np

import pygpu

from .collate import default_collate
from .dataset import TensorDataset

_WATCHDOG_S = 0.5  # how often an idle worker checks that its parent lives
_worker_info = None


class WorkerInfo:
    """id, num_workers, seed and dataset (this worker's copy) of the
    worker process asking; read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to "
                               f"{self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """In a DataLoader worker: its WorkerInfo (id, num_workers, seed,
    dataset).  In the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text, to be
    raised again in the main process."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        try:  # a class defined in a function cannot travel back
            pickle.dumps(self.exc_type)
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    """KeyError shows repr(message); this keeps the lines readable."""

    def __repr__(self):
        return self


class _IterableEnd:
    """A worker's IterableDataset copy is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


def _tensor_batch(dataset, index):
    """A TensorDataset's batch by one gather per tensor: the same tensors
    default_collate would stack from the single items."""
    idx = pygpu.from_numpy(np.asarray(index, dtype=np.int64))
    out = []
    for t in dataset.tensors:
        if t.dim() == 0:
            raise IndexError("a 0-d tensor has no rows")
        out.append(t[idx if t.device == idx.device else idx.to(t.device)])
    return out


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.fast = (auto_collation and collate_fn is default_collate
                     and isinstance(dataset, TensorDataset)
                     and type(dataset).__getitem__
                     is TensorDataset.__getitem__
                     and getattr(dataset, "__getitems__", None) is None
                     and len(dataset.tensors) > 0)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.fast and len(index):
            try:
                return _tensor_batch(self.dataset, index)
            except Exception:
                pass  # the item-by-item path raises the item's own error
        if isinstance(index, np.ndarray):  # a batch of the array path
            index = index.tolist()
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            data = getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.ended = False
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = IterFetcher if iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _tensor_from_array(array):
    return pygpu.from_numpy(array)


class _Pickler(pickle.Pickler):
    """Sends a CPU tensor that needs no grad as its NumPy array (one copy
    into the message, none on the way out of it)."""

    def reducer_override(self, obj):
        if (isinstance(obj, pygpu.Tensor) and obj.device.type == "cpu"
                and not obj.requires_grad and obj.dtype != pygpu.bfloat16):
            return _tensor_from_array, (obj.numpy(),)
        return NotImplemented


def _dumps(obj):
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getbuffer()


def worker_loop(iterable, dataset, index_conn, result_conn, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id,
                num_workers, to_close):
    """Serves (epoch, task, index) messages from index_conn with
    (epoch, task, batch) on result_conn until it gets None, its parent
    dies or the main process stops reading."""
    global _worker_info
    for conn in to_close:  # the main process's ends, inherited by fork
        conn.close()
    parent = os.getppid()
    seed = base_seed + worker_id
    random.seed(seed)
    pygpu.manual_seed(seed)
    pygpu.set_num_threads(1)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers,
                              seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:
        init_error = ExceptionWrapper(where=where)
    epoch, ended = None, False
    try:
        while True:
            if not index_conn.poll(_WATCHDOG_S):
                if os.getppid() != parent:
                    break
                continue
            msg = index_conn.recv()
            if msg is None:
                break
            ep, task, index = msg
            if ep != epoch:  # a new epoch: a fresh pass over the dataset
                epoch, ended, fetcher = ep, False, None
            if ended:
                continue
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    if fetcher is None:
                        fetcher = make_fetcher(iterable, dataset,
                                               auto_collation, collate_fn,
                                               drop_last)
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data, ended = _IterableEnd(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where=where)
            try:
                payload = _dumps((ep, task, data))
            except Exception:
                payload = _dumps((ep, task, ExceptionWrapper(where=where)))
            result_conn.send_bytes(payload)
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the main process went away or stopped reading
