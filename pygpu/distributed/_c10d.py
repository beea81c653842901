"""Process groups and the collectives with torch.distributed's names.

The front end checks arguments, translates global ranks into group
ranks and hands each call to the group's backend for the tensors'
device; with async_op=True it returns the backend's Work, otherwise it
waits for it (raising RuntimeError at the group's timeout).
"""
import datetime
import itertools
import os
import threading

from .. import _C
from . import backend as _backend
from .backend import ReduceOp
from .rendezvous import check_world, rendezvous
from .store import PrefixStore

__all__ = [
    "ProcessGroup", "GroupMember", "group", "init_process_group",
    "destroy_process_group", "is_initialized", "get_rank",
    "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
    "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "reduce_scatter_tensor", "send", "recv",
    "isend", "irecv", "barrier", "default_pg_timeout",
]

default_pg_timeout = datetime.timedelta(minutes=30)
_lock = threading.Lock()
_state = {"default": None, "groups": [], "inits": itertools.count()}
_DEFAULT_BACKENDS = {"cpu": "mpi", "cuda": "nccl"}


class ProcessGroup:
    """A set of ranks with one backend per tensor device type."""

    def __init__(self, backends, backend_name, rank, size, ranks, timeout,
                 store):
        self._backends = backends          # device type -> Backend
        self._name = backend_name
        self._rank = rank
        self._size = size
        self._ranks = list(ranks)          # global rank of each member
        self._timeout = timeout
        self._store = store

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return self._name

    def _backend(self, device):
        b = self._backends.get(device.type)
        if b is None:  # the backend that is there explains the refusal
            b = next(iter(self._backends.values()))
        return b

    def _group_rank(self, global_rank, what):
        if global_rank not in self._ranks:
            raise ValueError(
                f"{what} rank {global_rank} is not part of the group "
                f"(ranks {self._ranks})" if len(self._ranks) < 10 else
                f"{what} rank {global_rank} is not part of the group")
        return self._ranks.index(global_rank)

    def __repr__(self):
        return (f"<ProcessGroup {self._name} rank {self._rank} of "
                f"{self._size}>")


class GroupMember:
    """torch's markers: WORLD (the default group, once initialized) and
    NON_GROUP_MEMBER (what new_group returns where the caller is not in
    the group)."""
    NON_GROUP_MEMBER = object()

    @property
    def WORLD(self):  # noqa: N802 - torch's name
        return _state["default"]


group = GroupMember()


def _default():
    pg = _state["default"]
    if pg is None:
        raise ValueError(
            "Default process group has not been initialized, please make "
            "sure to call init_process_group.")
    return pg


def _resolve(g):
    return _default() if g is None else g


def is_initialized():
    """True once init_process_group has run (and no destroy since)."""
    return _state["default"] is not None


def _parse_backend(backend):
    """{device type: backend name} from None, "mpi" or
    "cpu:mpi,cuda:nccl"."""
    if backend is None:
        names = {}
        for dev, name in _DEFAULT_BACKENDS.items():
            if name in _backend.backends():
                try:
                    cls, _ = _backend.backend_class(name)
                except ImportError:
                    continue
                available = getattr(cls, "is_available", None)
                if available is None or available():
                    names[dev] = name
        if "cpu" not in names and "cuda" not in names:
            raise RuntimeError("no distributed backend is available: "
                               "install mpi4py and mpich (pip install "
                               "'.[distributed]' in pygpu's source tree, "
                               "or pip install 'pygpu[distributed]')")
        return names
    backend = str(backend).lower()
    if ":" in backend:
        names = {}
        for part in backend.split(","):
            dev, _, name = part.partition(":")
            _backend.backend_class(name.strip())
            names[dev.strip()] = name.strip()
        return names
    _, devices = _backend.backend_class(backend)
    return {dev: backend for dev in devices}


def _backend_string(names):
    uniq = set(names.values())
    if len(uniq) == 1:
        return uniq.pop()
    return ",".join(f"{d}:{n}" for d, n in names.items())


def init_process_group(backend=None, init_method=None, timeout=None,
                       world_size=-1, rank=-1, store=None, group_name="",
                       pg_options=None, device_id=None):
    """Joins this process to the default process group.

    backend: "mpi" (CPU tensors), another registered name, "cpu:mpi,..."
    or None (each device type's default that is available).
    Rendezvous: store (with rank and world_size), or init_method
    "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), "tcp://host:
    port" or "file:///path".  With neither, and no MASTER_ADDR in the
    environment, an MPI-only group takes the world that mpiexec started
    (one process when started without a launcher)."""
    del group_name, pg_options, device_id
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type "
                        f"datetime.timedelta, got {type(timeout).__name__}")
    with _lock:
        if _state["default"] is not None:
            raise ValueError("trying to initialize the default process "
                             "group twice!")
        names = _parse_backend(backend)
        classes = {n: _backend.backend_class(n)[0] for n in names.values()}
        prefix = f"init{next(_state['inits'])}"
        _preflight(classes, rank, world_size)  # before any waiting
        own_store = store is None
        if store is not None:
            if rank < 0 or world_size <= 0:
                raise ValueError("rank and world_size must be given with a "
                                 "store")
            if init_method is not None:
                raise ValueError("Cannot specify both init_method and "
                                 "store.")
        elif init_method is None and "MASTER_ADDR" not in os.environ and \
                set(names.values()) == {"mpi"}:
            rank, world_size = _mpi_world(rank, world_size)
        else:
            store, rank, world_size = rendezvous(init_method or "env://",
                                                 rank, world_size, timeout)
        try:
            pg = _form(names, classes, store, rank, world_size, timeout,
                       prefix)
        except BaseException:
            if own_store and store is not None:
                store.close()
            raise
        _state["default"] = pg
        _state["groups"] = []


def _preflight(classes, rank, world_size):
    if world_size < 0 and os.environ.get("WORLD_SIZE", "").isdigit():
        world_size = int(os.environ["WORLD_SIZE"])
    if world_size > 0:
        for cls in classes.values():
            if hasattr(cls, "preflight"):
                cls.preflight(rank, world_size)


def _form(names, classes, store, rank, world_size, timeout, prefix):
    """The checks every rank agrees on, then the backends."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for a world of "
                         f"{world_size}")
    for cls in classes.values():
        if hasattr(cls, "preflight"):
            cls.preflight(rank, world_size)
    if store is not None:
        check_world(store, rank, world_size, timeout.total_seconds(), prefix)
    backends, made = {}, {}
    for dev, name in names.items():
        if name not in made:
            sub = PrefixStore(f"{prefix}/{name}", store) \
                if store is not None else None
            made[name] = classes[name](sub, rank, world_size, timeout)
        backends[dev] = made[name]
    pg = ProcessGroup(backends, _backend_string(names), rank, world_size,
                      range(world_size), timeout, store)
    pg._prefix = prefix
    return pg


def _mpi_world(rank, world_size):
    """rank and world size from the environment, else from MPI."""
    if rank < 0 and "RANK" in os.environ:
        rank = int(os.environ["RANK"])
    if world_size < 0 and "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
    if rank >= 0 and world_size > 0:
        return rank, world_size
    from ._mpi import _mpi
    world = _mpi().COMM_WORLD
    return (world.rank if rank < 0 else rank,
            world.size if world_size < 0 else world_size)


def destroy_process_group(group=None):
    """Frees a group (None: the default group and every group made from
    it).  Collectives on it raise afterwards."""
    with _lock:
        if group is None or group is _state["default"]:
            pg = _state["default"]
            if pg is None:
                raise ValueError("Default process group has not been "
                                 "initialized, please make sure to call "
                                 "init_process_group.")
            for g in _state["groups"]:
                if g is not None:
                    _shutdown(g)
            _shutdown(pg)
            if pg._store is not None:
                pg._store.close()
            _state["default"] = None
            _state["groups"] = []
        elif group is not GroupMember.NON_GROUP_MEMBER:
            _shutdown(group)
            if group in _state["groups"]:
                _state["groups"].remove(group)


def _shutdown(pg):
    for b in set(pg._backends.values()):
        b.shutdown()
    pg._backends = {}


def get_rank(group=None):
    """This process's rank in group (-1 when not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).rank()


def get_world_size(group=None):
    """The number of processes in group (-1 when not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).size()


def get_backend(group=None):
    """The group's backend name ("mpi", or "cpu:mpi,cuda:nccl")."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return _resolve(group).name()


def get_process_group_ranks(group):
    """The global ranks of group's members."""
    return list(_resolve(group)._ranks)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None):
    """A group of some ranks of the default group; every rank of the
    default group calls it with the same ranks.  Returns the group on its
    members and GroupMember.NON_GROUP_MEMBER elsewhere."""
    del pg_options, use_local_synchronization, group_desc
    pg = _default()
    if backend is not None and str(backend).lower() != pg.name():
        raise ValueError(f"new_group: backend {backend!r} differs from the "
                         f"default group's {pg.name()!r}")
    ranks = list(range(pg.size())) if ranks is None else sorted(set(ranks))
    for r in ranks:
        if not 0 <= r < pg.size():
            raise ValueError(f"new_group: rank {r} is out of range for a "
                             f"world of {pg.size()}")
    if not ranks:
        raise ValueError("new_group: ranks is empty")
    timeout = pg._timeout if timeout is None else timeout
    index = len(_state["groups"])
    sub_store = (PrefixStore(f"{pg._prefix}/group{index}", pg._store)
                 if pg._store is not None else None)
    backends, made = {}, {}
    for dev, b in pg._backends.items():
        if id(b) not in made:
            made[id(b)] = b.new_group(ranks, sub_store, timeout)
        backends[dev] = made[id(b)]
    if pg.rank() not in ranks:
        _state["groups"].append(None)
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(backends, pg.name(), ranks.index(pg.rank()),
                     len(ranks), ranks, timeout, None)
    _state["groups"].append(g)
    return g


# ---------------------------------------------------------------- checks

def _tensor(t, name="tensor"):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter "
                        f"`{name}` of type torch.Tensor but got "
                        f"{type(t)} instead.")
    return t


def _op(op, t, what):
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"{what}: op must be a ReduceOp, got {op!r}")
    floating = t.dtype in (_C.float16, _C.bfloat16, _C.float32, _C.float64)
    if op == ReduceOp.AVG and not floating:
        raise RuntimeError(f"{what}: ReduceOp.AVG needs floating point "
                           f"tensors, got {t.dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise RuntimeError(f"{what}: {op.name} needs integer or bool "
                           f"tensors, got {t.dtype}")
    return op


def _same(a, b, what):
    if a.dtype != b.dtype:
        raise ValueError(f"{what}: tensors must have the same dtype, got "
                         f"{a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"{what}: tensors must be on the same device, got "
                         f"{a.device} and {b.device}")


def _not_member(g):
    return g is GroupMember.NON_GROUP_MEMBER


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------- collectives

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor <- op over every rank's tensor, in place on every rank."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _op(op, _tensor(tensor), "all_reduce")
    return _run(g._backend(tensor.device).all_reduce(tensor, op), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """tensor <- rank src's tensor on every rank."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _tensor(tensor)
    s = group_src if group_src is not None else g._group_rank(src, "src")
    return _run(g._backend(tensor.device).broadcast(tensor, s), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False,
           group_dst=None):
    """Rank dst's tensor <- op over every rank's tensor (the others'
    tensors are left unspecified, as torch)."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _op(op, _tensor(tensor), "reduce")
    d = group_dst if group_dst is not None else g._group_rank(dst, "dst")
    return _run(g._backend(tensor.device).reduce(tensor, d, op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] <- rank i's tensor, on every rank."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _tensor(tensor)
    if not isinstance(tensor_list, list):
        raise TypeError("Invalid function argument: tensor_list should be "
                        "a list")
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} "
                         f"tensors, expected the group size {g.size()}")
    for out in tensor_list:
        _same(_tensor(out, "tensor_list"), tensor, "all_gather")
        if tuple(out.shape) != tuple(tensor.shape):
            raise ValueError(f"all_gather: output shape {tuple(out.shape)} "
                             f"differs from the input's "
                             f"{tuple(tensor.shape)}")
    return _run(g._backend(tensor.device).all_gather(tensor_list, tensor),
                async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None,
                           async_op=False):
    """output_tensor <- every rank's input, concatenated in rank order
    (output holds world_size times the input's elements)."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _same(_tensor(output_tensor, "output_tensor"),
          _tensor(input_tensor, "input_tensor"), "all_gather_into_tensor")
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError(
            f"all_gather_into_tensor: output tensor size must be equal to "
            f"world_size times input tensor size ({g.size()} x "
            f"{input_tensor.numel()}), got {output_tensor.numel()}")
    return _run(g._backend(input_tensor.device).all_gather_into_tensor(
        output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,
                          async_op=False):
    """output <- rank r's slice of op over every rank's input (input holds
    world_size times the output's elements)."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _same(_tensor(output, "output"), _tensor(input, "input"),
          "reduce_scatter_tensor")
    _op(op, input, "reduce_scatter_tensor")
    if input.numel() != output.numel() * g.size():
        raise ValueError(
            f"reduce_scatter_tensor: input tensor size must be equal to "
            f"world_size times output tensor size ({g.size()} x "
            f"{output.numel()}), got {input.numel()}")
    return _run(g._backend(input.device).reduce_scatter_tensor(
        output, input, op), async_op)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Starts sending tensor to rank dst; returns a Work."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _tensor(tensor)
    d = group_dst if group_dst is not None else g._group_rank(dst, "dst")
    if d == g.rank():
        raise ValueError("Invalid destination rank: should not be the same "
                         "as the rank of the current process.")
    return g._backend(tensor.device).send(tensor, d, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Starts receiving into tensor from rank src (None: any rank);
    returns a Work."""
    if _not_member(group):
        return None
    g = _resolve(group)
    _tensor(tensor)
    s = group_src if group_src is not None else (
        None if src is None else g._group_rank(src, "src"))
    return g._backend(tensor.device).recv(tensor, s, tag)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends tensor to rank dst, waiting until it is sent."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into tensor from rank src (None: any); returns the sender's
    rank (-1 when not in the group)."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    g = _resolve(group)
    return g._ranks[w.source_rank()] if w.source_rank() is not None \
        else src


def barrier(group=None, async_op=False, device_ids=None):
    """Returns once every rank of group has called barrier."""
    del device_ids
    if _not_member(group):
        return None
    g = _resolve(group)
    b = g._backends.get("cpu") or next(iter(g._backends.values()))
    return _run(b.barrier(), async_op)
