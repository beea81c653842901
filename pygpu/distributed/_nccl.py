"""The NCCL backend of pygpu.distributed, for CUDA tensors.

NCCL is not linked into pygpu: the C layer loads libnccl.so.2 when it is
first needed (PYGPU_NCCL_LIBRARY, when set, is the only file tried; else
pip's ``nvidia-nccl-cu*`` package next to pygpu, the loader's search and
``CUDA_HOME``, then the NCCL of pip's ``nvidia-nccl`` wheels found on
``sys.path``), so ``import pygpu`` works without it and
``is_nccl_available()`` says whether it can be used.

``NcclBackend`` follows the backend interface of
pygpu.distributed.backend (registered there as "nccl", serving "cuda"):

``NcclBackend(store, rank, world_size, timeout=None)``
    ``store`` is the group's private store: ``set(key, value)``,
    ``get(key) -> bytes`` (waiting until the key is there).  Rank 0 makes
    NCCL's unique id and sets it in the store; the other ranks get it.
    The communicator is on the current CUDA device.  ``timeout`` (a
    ``datetime.timedelta``, seconds, or None for none) bounds the set-up
    and each call's queueing.  ``new_group(ranks, store, timeout)`` makes
    a subgroup's communicator the same way.

Every operation takes CUDA tensors on the backend's device (a
non-contiguous one through a contiguous copy, written back), works in
place, runs on the current stream and returns a ``Work``:
``all_reduce(tensor, op)``, ``broadcast(tensor, src)``,
``reduce(tensor, dst, op)``, ``all_gather(tensor_list, tensor)``,
``all_gather_into_tensor(output, input)``,
``reduce_scatter_tensor(output, input, op)``, ``send(tensor, dst)``,
``recv(tensor, src)`` (``tag`` accepted and unused: NCCL matches sends
and receives by order; ``src`` must be given), ``barrier()``; ``op`` is a
ReduceOp member or its name (SUM, AVG, MAX, MIN, PRODUCT).  ``abort()`` and ``shutdown()`` end
it.

``Work.wait()`` returns True once later work on the current stream is
ordered after the operation (an event recorded after it, waited for by
the stream current at wait()), raising RuntimeError if NCCL reported an
asynchronous error;
``Work.synchronize()`` also blocks until the device is done;
``Work.result()`` is the list of tensors the operation wrote.
"""
import datetime
import os
import sys

from .. import _C
from .. import cuda as _cuda
from . import backend as _backend

__all__ = ["NcclBackend", "Work", "is_nccl_available",
           "nccl_unavailable_reason", "nccl_version"]

_SONAME = "libnccl.so.2"
# The group's store is private to it, so one key serves every group.
_ID_KEY = "nccl/unique_id"


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


class Work(_backend.Work):
    """An operation queued on the current stream."""

    def __init__(self, backend, result=(), copy_back=()):
        super().__init__("nccl", backend.timeout or float("inf"))
        self._backend = backend
        self._result = list(result)
        # (tensor, contiguous stand-in) pairs: written back when queued,
        # which orders the copy after the operation on the stream.
        for dst, tmp in copy_back:
            dst.copy_(tmp)
        # Marks the end of the operation on the stream it was queued on,
        # so that wait() can order another current stream after it.
        self._event = _cuda.Event()
        self._event.record()

    def _test(self):
        self._backend._check()
        return True

    def wait(self, timeout=None):
        """True; RuntimeError if NCCL reported an asynchronous error.
        Work queued later on the current stream (whichever it is now)
        runs after the operation."""
        self._event.wait()
        self._backend._check()
        self._done = True
        return True

    def synchronize(self):
        """Block until the device has finished the operation."""
        self._event.synchronize()
        self._backend._check()

    def is_completed(self):
        """Whether the operation has finished (synchronizes the device)."""
        self.synchronize()
        return True

    def result(self):
        """The tensors the operation wrote."""
        return list(self._result)


def _contiguous(tensor, pairs):
    """tensor, or a contiguous copy of it noted in pairs for copying
    back."""
    if tensor.is_contiguous():
        return tensor
    tmp = tensor.contiguous()
    pairs.append((tensor, tmp))
    return tmp


class NcclBackend(_backend.Backend):
    """One rank's NCCL communicator, set up through a store."""

    name = "nccl"
    devices = ("cuda",)

    @classmethod
    def is_available(cls):
        """NCCL loads and there is a GPU for it (backend=None leaves it
        out otherwise)."""
        return _cuda.is_available() and is_nccl_available()

    def __init__(self, store, rank, world_size, timeout=None):
        why = nccl_unavailable_reason()
        if why is not None:
            raise RuntimeError(f"the NCCL backend is not available: {why}")
        if not isinstance(rank, int) or not isinstance(world_size, int):
            raise TypeError("rank and world_size must be int")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is out of range for world_size "
                             f"{world_size}")
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.timeout = _seconds(timeout)
        self.device = _cuda.current_device()
        if rank == 0:
            unique_id = _C._nccl_unique_id()
            store.set(_ID_KEY, unique_id)
        else:
            unique_id = bytes(store.get(_ID_KEY))
        self._comm = _C.NcclComm(unique_id, world_size, rank, self.device,
                                 self.timeout)

    def __repr__(self):
        return (f"<NcclBackend rank={self.rank} world_size={self.world_size}"
                f" device=cuda:{self.device}>")

    def _check(self):
        error = self._comm.async_error()
        if error is not None:
            raise RuntimeError(error)

    def new_group(self, ranks, store, timeout):
        """The subgroup's communicator on its members, None elsewhere."""
        if self.rank not in ranks:
            return None
        return NcclBackend(store, list(ranks).index(self.rank), len(ranks),
                           timeout)

    def all_reduce(self, tensor, op="SUM"):
        pairs = []
        self._comm.all_reduce(_contiguous(tensor, pairs), _op_name(op))
        return Work(self, [tensor], pairs)

    def broadcast(self, tensor, src):
        pairs = []
        self._comm.broadcast(_contiguous(tensor, pairs), src)
        return Work(self, [tensor], pairs)

    def reduce(self, tensor, dst, op="SUM"):
        pairs = []
        self._comm.reduce(_contiguous(tensor, pairs), _op_name(op), dst)
        return Work(self, [tensor], pairs)

    def all_gather_into_tensor(self, output, input):
        pairs = []
        self._comm.all_gather_into_tensor(_contiguous(output, pairs),
                                          input.contiguous())
        return Work(self, [output], pairs)

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
        self._comm.all_gather_into_tensor(flat, tensor.contiguous())
        for i, out in enumerate(tensor_list):
            out.copy_(flat.narrow(0, i * n, n).view(out.shape))
        return Work(self, tensor_list)

    def reduce_scatter_tensor(self, output, input, op="SUM"):
        pairs = []
        self._comm.reduce_scatter_tensor(_contiguous(output, pairs),
                                         input.contiguous(), _op_name(op))
        return Work(self, [output], pairs)

    def send(self, tensor, dst, tag=0):
        self._comm.send(tensor.contiguous(), dst)
        return Work(self)

    def recv(self, tensor, src, tag=0):
        if src is None:
            raise RuntimeError("the NCCL backend needs the source rank of "
                               "a recv (NCCL has no receive from any "
                               "source)")
        pairs = []
        self._comm.recv(_contiguous(tensor, pairs), src)
        work = Work(self, [tensor], pairs)
        work._source = src
        return work

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
