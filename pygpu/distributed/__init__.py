"""pygpu.distributed: torch.distributed's API on existing engines.

    import pygpu.distributed as dist
    dist.init_process_group("mpi")          # or backend=None
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

Backends: "mpi" (CPU tensors, through mpi4py; imported only when a group
that uses it is created) and, where registered, "nccl" for CUDA tensors.
Start the processes with ``python -m pygpu.distributed.run
--nproc_per_node N script.py`` (or ``pygpu-run``).  See
docs/distributed.md for the design and the differences from torch.
"""
import importlib.util as _util

from . import backend
from ._c10d import (GroupMember, ProcessGroup, all_gather,
                    all_gather_into_tensor, all_reduce, barrier, broadcast,
                    default_pg_timeout, destroy_process_group, get_backend,
                    get_process_group_ranks, get_rank, get_world_size, group,
                    init_process_group, irecv, is_initialized, isend,
                    new_group, recv, reduce, reduce_scatter_tensor, send)
from .backend import Backend, ReduceOp, Work, register_backend
from .store import FileStore, PrefixStore, Store, TCPStore

__all__ = [
    "is_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "init_process_group", "destroy_process_group",
    "get_rank", "get_world_size", "get_backend", "new_group",
    "get_process_group_ranks", "ProcessGroup", "GroupMember", "group",
    "ReduceOp", "Work", "Backend", "register_backend", "all_reduce",
    "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "send", "recv", "isend", "irecv", "barrier",
    "Store", "TCPStore", "FileStore", "PrefixStore", "default_pg_timeout",
    "backend",
]


def is_available():
    """True: the package works (each backend tells its own availability)."""
    return True


def is_mpi_available():
    """True when mpi4py can be imported (without importing it)."""
    return _util.find_spec("mpi4py") is not None


def is_nccl_available():
    """True when an NCCL backend is registered and can load."""
    if "nccl" not in backend.backends():
        return False
    try:
        cls, _ = backend.backend_class("nccl")
    except ImportError:
        return False
    return bool(cls.is_available())
