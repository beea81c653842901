"""DataLoader: batches from a dataset, in the main process or in worker
processes (torch.utils.data's semantics; see README.md for the
differences)."""
import itertools
import math
import time
import warnings

import pygpu

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None

from . import _random, _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import (BatchSampler, RandomSampler, Sampler,
                      SequentialSampler)

__all__ = ["DataLoader"]

_PIPE_BYTES = 1 << 20
_POLL_S = 0.1  # how often a waiting main process checks its workers


class _InfiniteConstantSampler(Sampler):
    """None forever: the index an IterableDataset's batches are made of."""

    def __iter__(self):
        while True:
            yield None


def _default_context():
    import multiprocessing
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods
                                       else None)


def _context(value, num_workers):
    """The multiprocessing context asked for (multiprocessing is imported
    only by loaders with workers)."""
    if value is None:
        return None
    import multiprocessing
    if num_workers == 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process "
            f"loading (num_workers > 0), but got num_workers={num_workers}")
    if isinstance(value, str):
        valid = multiprocessing.get_all_start_methods()
        if value not in valid:
            raise ValueError(
                f"multiprocessing_context option should specify a valid "
                f"start method in {valid!r}, but got "
                f"multiprocessing_context={value!r}")
        return multiprocessing.get_context(value)
    if not isinstance(value, multiprocessing.context.BaseContext):
        raise TypeError(
            "multiprocessing_context option should be a valid context "
            "object or a string specifying the start method, but got "
            f"multiprocessing_context={value}")
    return value


def _index_iter(sampler):
    """iter(sampler), or for a BatchSampler over the built-in sequential
    and random samplers the same batches as int64 arrays."""
    if isinstance(sampler, BatchSampler):
        arrays = sampler._arrays()
        if arrays is not None:
            return arrays
    return iter(sampler)


def _widen(conn):
    """A pipe of _PIPE_BYTES where the system allows it (Linux): a batch
    then crosses in one write, not in 64 KiB turns of both processes."""
    if fcntl is None:
        return
    try:
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (AttributeError, OSError):
        pass


def _wait(conns, timeout):
    from multiprocessing.connection import wait
    return wait(conns, timeout)


def _pin(data):
    if isinstance(data, pygpu.Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: _pin(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(v) for v in data)
    return data


class DataLoader:
    """Iterates over dataset in batches: see torch.utils.data.DataLoader.

    Map-style datasets are read through sampler (SequentialSampler, or
    RandomSampler when shuffle) grouped by BatchSampler(batch_size,
    drop_last), or through batch_sampler; IterableDatasets are read in
    order, num_workers copies at once with workers.  Each batch is made by
    collate_fn (default_collate; default_convert when batch_size is None).
    num_workers > 0 fetches in worker processes (fork where the platform
    has it), prefetch_factor batches ahead per worker, in the sampler's
    order; persistent_workers keeps them between epochs.  A TensorDataset
    with the default collate_fn is fetched one gather per batch.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None,
                 pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in "
                "multiprocessing.let num_workers > 0 to enable "
                "multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be "
                             "non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs "
                             "num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _context(multiprocessing_context,
                                                num_workers)
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(
                        "DataLoader with IterableDataset: expected "
                        f"unspecified {name} option, but got "
                        f"{name}={value}")
        if sampler is not None and shuffle not in (None, False):
            raise ValueError("sampler option is mutually exclusive with "
                             "shuffle")
        if batch_sampler is not None:
            if (batch_size != 1 or shuffle or sampler is not None
                    or drop_last):
                raise ValueError(
                    "batch_sampler option is mutually exclusive with "
                    "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is "
                "mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = (default_collate if self._auto_collation
                          else default_convert)
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in (
                "batch_size", "batch_sampler", "sampler", "drop_last",
                "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._closed:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        return _length(self.dataset, self._iterable, self.batch_size,
                       self.drop_last, self._index_sampler)


def _length(dataset, iterable, batch_size, drop_last, index_sampler):
    """Batches in an epoch: from len(dataset) for an IterableDataset (as
    many as its batches would be), else the index sampler's length."""
    if iterable:
        length = len(dataset)
        if batch_size is not None:
            if drop_last:
                return length // batch_size
            return math.ceil(length / batch_size)
        return length
    return len(index_sampler)


class _BaseIter:
    def __init__(self, loader):  # holds what it needs, not the loader
        self._dataset = loader.dataset
        self._batch_size = loader.batch_size
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._index_sampler = loader._index_sampler
        self._pin = loader.pin_memory and pygpu.cuda.is_available()
        if loader.pin_memory and not self._pin:
            warnings.warn("'pin_memory' argument is set as true but no "
                          "accelerator is found, then device pinned "
                          "memory won't be used.")
        self._timeout = loader.timeout
        self._sampler_iter = _index_iter(self._index_sampler)
        self._base_seed = _random.draw_seed(loader.generator)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return _length(self._dataset, self._iterable, self._batch_size,
                       self._drop_last, self._index_sampler)

    def _reset(self, loader):
        self._sampler_iter = _index_iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return _pin(data) if self._pin else data


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(
            self._iterable, self._dataset, self._auto_collation,
            self._collate_fn, self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


class _MultiProcessIter(_BaseIter):
    """Workers each read (epoch, task, index) from a pipe of their own and
    answer on another; tasks go round-robin, prefetch_factor per worker
    ahead, and come back in task order (any order with in_order=False)."""

    def __init__(self, loader):
        super().__init__(loader)
        n = loader.num_workers
        ctx = loader.multiprocessing_context or _default_context()
        forked = ctx.get_start_method() == "fork"
        self._in_order = loader.in_order
        self._prefetch = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._num_workers = n
        self._workers, self._index_conns, self._result_conns = [], [], []
        self._closed = False
        for wid in range(n):
            result_recv, result_send = ctx.Pipe(duplex=False)
            _widen(result_recv)
            index_recv, index_send = ctx.Pipe(duplex=False)
            self._index_conns.append(index_send)
            self._result_conns.append(result_recv)
            mine = self._index_conns + self._result_conns if forked else []
            w = ctx.Process(
                target=_worker.worker_loop,
                args=(self._iterable, self._dataset, index_recv, result_send,
                      self._auto_collation, self._collate_fn,
                      self._drop_last, self._base_seed,
                      loader.worker_init_fn, wid, n, mine),
                daemon=True)
            w.start()
            index_recv.close()
            result_send.close()
            self._workers.append(w)
        self._epoch = 0
        self._start_epoch()

    def _start_epoch(self):
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # task -> (worker,) or (worker, data)
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _reset(self, loader):
        super()._reset(loader)
        self._epoch += 1  # results of the last epoch still coming are dropped
        self._start_epoch()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return
        try:
            self._index_conns[wid].send((self._epoch, self._send_idx, index))
        except OSError:
            self._raise_dead(wid)
        self._task_info[self._send_idx] = (wid,)
        self._send_idx += 1

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2
                                         or self._active[info[0]]):
                    break
                # given out of order already, or its worker has ended
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            task, data = self._get_data()
            if isinstance(data, _worker._IterableEnd):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if task == self._rcvd_idx or not self._in_order:
                del self._task_info[task]
                if task == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process(data)
            self._task_info[task] += (data,)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _get_data(self):
        """The next (task, data) of this epoch from any worker; raises when
        a worker has died or after timeout seconds without one."""
        deadline = (time.monotonic() + self._timeout if self._timeout > 0
                    else None)
        while True:
            wait_s = _POLL_S
            if deadline is not None:
                wait_s = max(0.0, min(wait_s, deadline - time.monotonic()))
            ready = _wait(self._result_conns, wait_s)
            for conn in ready:
                try:
                    epoch, task, data = conn.recv()
                except (EOFError, OSError):
                    self._raise_dead(self._result_conns.index(conn))
                if epoch == self._epoch:
                    return task, data
            if not ready:
                if any(not w.is_alive() for w in self._workers):
                    self._raise_dead()
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after "
                                       f"{self._timeout} seconds")

    def _raise_dead(self, wid=None):
        """Raises the death of worker wid (whose pipe broke), or of those
        found dead."""
        if wid is not None:
            self._workers[wid].join(1.0)
            dead = [self._workers[wid]]
        else:
            dead = [w for w in self._workers if not w.is_alive()]
        self._shutdown()
        dead = dead or self._workers
        pids = ", ".join(str(w.pid) for w in dead)
        codes = ", ".join(str(w.exitcode) for w in dead)
        label = "pid" if len(dead) == 1 else "pid(s)"
        raise RuntimeError(
            f"DataLoader worker ({label} {pids}) exited unexpectedly with "
            f"exit code {codes}. Rerunning with num_workers=0 may give a "
            f"better error trace.")

    def _shutdown(self):
        if self._closed:
            return
        self._closed = True
        for conn in self._index_conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for conn in self._result_conns:  # a worker blocked on a full pipe
            conn.close()                 # gets a broken pipe and leaves
        for w in self._workers:
            w.join(1.0)
            if w.is_alive():
                w.terminate()
                w.join()
        for conn in self._index_conns:
            conn.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass
