"""The NCCL backend of pygpu.distributed, for CUDA tensors.

NCCL is not linked into pygpu: the C layer loads libnccl.so.2 when it is
first needed (PYGPU_NCCL_LIBRARY, when set, is the only file tried; else
the loader's search, the CUDA toolkit pygpu was built with, and the NCCL
of pip's ``nvidia-nccl`` wheels found on ``sys.path``), so ``import pygpu``
works without it and ``is_nccl_available()`` says whether it can be used.

What the rest of the package relies on:

``NcclBackend(store, rank, world_size, timeout=None)``
    ``store`` is torch-like: ``set(key, value)``, ``get(key) -> bytes``
    (waiting until the key is there).  Rank 0 makes NCCL's unique id and
    sets it in the store; the other ranks get it.  The communicator is on
    the current CUDA device.  ``timeout`` (a ``datetime.timedelta``,
    seconds, or None for none) bounds the set-up and each call's queueing.

Every operation takes contiguous CUDA tensors on the backend's device,
works in place, runs on the current stream and returns a ``Work``:
``all_reduce(tensor, op)``, ``broadcast(tensor, src)``,
``reduce(tensor, dst, op)``, ``all_gather(tensor_list, tensor)``,
``all_gather_into_tensor(output, input)``,
``reduce_scatter_tensor(output, input, op)``, ``send(tensor, dst)``,
``recv(tensor, src)``, ``barrier()``; ``op`` is a ReduceOp member or its
name (SUM, AVG, MAX, MIN, PRODUCT).  ``abort()`` and ``shutdown()`` end
it.

``Work.wait()`` returns True once later work on the current stream is
ordered after the operation (it is: the operation was queued on that
stream), raising RuntimeError if NCCL reported an asynchronous error;
``Work.synchronize()`` also blocks until the device is done;
``Work.result()`` is the list of tensors the operation wrote.
"""
import datetime
import itertools
import os
import sys

from .. import _C
from .. import cuda as _cuda

__all__ = ["NcclBackend", "Work", "is_nccl_available",
           "nccl_unavailable_reason", "nccl_version"]

_SONAME = "libnccl.so.2"
# Backends are made in the same order on every rank: the n-th one of each
# process meets the others under the n-th key.
_instances = itertools.count()


def _wheel_paths():
    """libnccl.so.2 of pip's NVIDIA NCCL wheels (as torch installs them)."""
    found = []
    for entry in sys.path:
        if not isinstance(entry, str) or not entry:
            continue
        path = os.path.join(entry, "nvidia", "nccl", "lib", _SONAME)
        if os.path.isfile(path) and path not in found:
            found.append(path)
    return found


def nccl_unavailable_reason():
    """None when NCCL can be used, else why not."""
    return _C._nccl_load(_wheel_paths())


def is_nccl_available():
    """True when the NCCL library could be loaded."""
    return nccl_unavailable_reason() is None


def nccl_version():
    """(major, minor, patch) of the NCCL loaded, or None."""
    nccl_unavailable_reason()
    return _C._nccl_version()


def _op_name(op):
    name = getattr(op, "name", op)
    if not isinstance(name, str):
        raise TypeError(f"op must be a ReduceOp or its name, not "
                        f"{type(op).__name__}")
    return name


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Work:
    """An operation queued on the current stream."""

    def __init__(self, backend, result=()):
        self._backend = backend
        self._result = list(result)

    def wait(self, timeout=None):
        """True; RuntimeError if NCCL reported an asynchronous error.
        Work queued later on the current stream runs after the operation."""
        self._backend._check()
        return True

    def synchronize(self):
        """Block until the device has finished the operation."""
        _cuda.synchronize(self._backend.device)
        self._backend._check()

    def is_completed(self):
        """Whether the operation has finished (synchronizes the device)."""
        self.synchronize()
        return True

    def result(self):
        """The tensors the operation wrote."""
        return list(self._result)


class NcclBackend:
    """One rank's NCCL communicator, set up through a store."""

    name = "nccl"

    def __init__(self, store, rank, world_size, timeout=None):
        why = nccl_unavailable_reason()
        if why is not None:
            raise RuntimeError(f"the NCCL backend is not available: {why}")
        if not isinstance(rank, int) or not isinstance(world_size, int):
            raise TypeError("rank and world_size must be int")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is out of range for world_size "
                             f"{world_size}")
        self.rank = rank
        self.world_size = world_size
        self.timeout = _seconds(timeout)
        self.device = _cuda.current_device()
        key = f"pygpu/nccl/unique_id/{next(_instances)}"
        if rank == 0:
            unique_id = _C._nccl_unique_id()
            store.set(key, unique_id)
        else:
            unique_id = bytes(store.get(key))
        self._comm = _C.NcclComm(unique_id, world_size, rank, self.device,
                                 self.timeout)

    def __repr__(self):
        return (f"<NcclBackend rank={self.rank} world_size={self.world_size}"
                f" device=cuda:{self.device}>")

    def _check(self):
        error = self._comm.async_error()
        if error is not None:
            raise RuntimeError(error)

    def all_reduce(self, tensor, op="SUM"):
        self._comm.all_reduce(tensor, _op_name(op))
        return Work(self, [tensor])

    def broadcast(self, tensor, src):
        self._comm.broadcast(tensor, src)
        return Work(self, [tensor])

    def reduce(self, tensor, dst, op="SUM"):
        self._comm.reduce(tensor, _op_name(op), dst)
        return Work(self, [tensor])

    def all_gather_into_tensor(self, output, input):
        self._comm.all_gather_into_tensor(output, input)
        return Work(self, [output])

    def all_gather(self, tensor_list, tensor):
        """Rank i's tensor into tensor_list[i], through one flat buffer."""
        if len(tensor_list) != self.world_size:
            raise ValueError(f"all_gather(): tensor_list has "
                             f"{len(tensor_list)} tensors, world_size is "
                             f"{self.world_size}")
        n = tensor.numel()
        for out in tensor_list:
            if out.numel() != n or out.dtype != tensor.dtype:
                raise ValueError("all_gather(): every output tensor must "
                                 "have the input's size and dtype")
        flat = tensor.new_empty((self.world_size * n,))
        self._comm.all_gather_into_tensor(flat, tensor)
        for i, out in enumerate(tensor_list):
            out.copy_(flat.narrow(0, i * n, n).view(out.shape))
        return Work(self, tensor_list)

    def reduce_scatter_tensor(self, output, input, op="SUM"):
        self._comm.reduce_scatter_tensor(output, input, _op_name(op))
        return Work(self, [output])

    def send(self, tensor, dst):
        self._comm.send(tensor, dst)
        return Work(self)

    def recv(self, tensor, src):
        self._comm.recv(tensor, src)
        return Work(self, [tensor])

    def group_start(self):
        self._comm.group_start()

    def group_end(self):
        self._comm.group_end()

    def barrier(self):
        """Every rank reaches this point: an all_reduce of one element,
        then the device synchronized."""
        one = _C.ones(1, device=f"cuda:{self.device}")
        self._comm.all_reduce(one, "SUM")
        work = Work(self)
        work.synchronize()
        return work

    def abort(self):
        self._comm.abort()

    def shutdown(self):
        self._comm.destroy()
