"""The MPI backend: CPU tensors through mpi4py (imported here, on the
first process group that uses MPI, never by `import pygpu`).

The world's communicator:
  (a) every rank started by one `mpiexec -n N` (COMM_WORLD has N ranks):
      COMM_WORLD, reordered by RANK;
  (b) each rank started under its own `mpiexec -n 1` (what
      pygpu.distributed.run does): rank 0 opens an MPI port and publishes
      its name in the store; the group accepts one connection at a time
      and merges it in, until world_size processes are in; then the
      communicator is reordered by RANK;
  (c) a process started without any MPI launcher (an MPI singleton) can
      form a world of one only: MPICH's singletons cannot connect to each
      other, so world_size > 1 is refused with how to launch instead.

Every operation is a nonblocking MPI call, polled by Work.wait() until
the group's timeout: a rank that died or never arrived makes the others
raise RuntimeError rather than hang.  The abandoned request leaves the
communicator in an unknown state, so the group refuses every later
operation.

Tensors are passed by address (zero copy) when contiguous; otherwise
through a contiguous temporary copied back.  float16 and bfloat16 are
reduced through float32 temporaries.  AVG is SUM then a division.
"""
import os

from .. import _C
from .backend import Backend, ReduceOp, Work

__all__ = ["MPIBackend"]

_MPI = None


def _mpi():
    global _MPI
    if _MPI is None:
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def _launched_by_mpiexec():
    """True in a process started by an MPI process manager (hydra sets
    PMI_*; PMIx-based launchers PMIX_*)."""
    return any(k in os.environ for k in
               ("PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK"))


def _typed(dtype):
    """The MPI datatype for reductions on dtype, or None (float16,
    bfloat16: reduced as float32)."""
    MPI = _mpi()
    return {
        _C.float32: MPI.FLOAT, _C.float64: MPI.DOUBLE,
        _C.int32: MPI.INT32_T, _C.int64: MPI.INT64_T,
        _C.uint8: MPI.UINT8_T, _C.bool: MPI.UINT8_T,
    }.get(dtype)


def _mpi_op(op, dtype):
    MPI = _mpi()
    R = ReduceOp.RedOpType
    if dtype == _C.bool:  # as torch: sum is "or", product is "and"
        op = {R.SUM: R.MAX, R.PRODUCT: R.MIN}.get(op, op)
    return {R.SUM: MPI.SUM, R.AVG: MPI.SUM, R.PRODUCT: MPI.PROD,
            R.MIN: MPI.MIN, R.MAX: MPI.MAX, R.BAND: MPI.BAND,
            R.BOR: MPI.BOR, R.BXOR: MPI.BXOR}[op]


def _nbytes(t):
    return t.numel() * t.element_size()


def _buffer(t):
    """t's memory as a writable buffer, by address (t contiguous)."""
    n = _nbytes(t)
    if n == 0:
        return bytearray(0)
    return _mpi().buffer.fromaddress(t.data_ptr(), n)


def _raw(t):
    """A message of t's bytes."""
    return [_buffer(t), _nbytes(t), _mpi().BYTE]


class _Staged:
    """A tensor as MPI sees it: the tensor itself when contiguous (and of
    a reducible dtype, for reductions), else a contiguous temporary that
    finish() copies back."""

    def __init__(self, t, reduce=False, copy_in=True):
        self.t = t
        work = t
        if reduce and _typed(t.dtype) is None:
            work = t.float() if copy_in else _C.empty(t.shape,
                                                      dtype=_C.float32)
        elif not t.is_contiguous():
            work = t.contiguous() if copy_in else _C.empty(t.shape,
                                                           dtype=t.dtype)
        self.work = work
        self.dtype = work.dtype

    def typed(self):
        return [_buffer(self.work), self.work.numel(), _typed(self.dtype)]

    def raw(self):
        return _raw(self.work)

    def finish(self, divide=None):
        if divide is not None:
            self.work.div_(divide)
        if self.work is not self.t:
            self.t.copy_(self.work)


class MPIWork(Work):
    """Requests polled with MPI_Test; after the requests complete, the
    staged tensors are copied back."""

    def __init__(self, backend, name, requests, after=None, keep=()):
        super().__init__(name, backend.timeout_s)
        self.backend = backend
        self.requests = requests
        self.after = after
        self.keep = keep  # the tensors MPI reads or writes, alive till done
        self.status = None

    def _test(self):
        MPI = _mpi()
        try:
            if len(self.requests) == 1:
                self.status = MPI.Status()
                done = self.requests[0].Test(self.status)
            else:
                done = MPI.Request.Testall(self.requests)
        except MPI.Exception as err:
            self.backend.broken = (
                f"{self.name} failed in MPI ({err.Get_error_string()})")
            raise RuntimeError(
                f"{self.name} failed: {err.Get_error_string()} (a rank may "
                f"have exited); this process group is unusable now: "
                f"destroy it and create a new one, or exit") from None
        if done and self.status is not None:
            self._source = self.status.Get_source()
        return done

    def _finish(self):
        if self.after is not None:
            self.after()
        self.keep = ()

    def _timed_out(self, limit):
        self.backend.broken = (f"{self.name} timed out after {limit:g} s")
        return RuntimeError(
            f"{self.name} did not complete within the timeout of {limit:g} "
            f"s: a rank has exited, crashed, or not reached the same call "
            f"(this process group is unusable now: destroy it and create a "
            f"new one, or exit)")


class _AnySourceWork(MPIWork):
    """A receive from any rank, as probes of each rank in turn: MPICH
    fails to match MPI_ANY_SOURCE receives against messages that arrived
    first from processes connected by MPI_Comm_connect/accept."""

    def __init__(self, backend, staged, tag):
        super().__init__(backend, "recv", [], staged.finish, (staged,))
        self.staged = staged
        self.tag = tag

    def _test(self):
        comm = self.backend.comm
        for src in range(comm.size):
            if src != comm.rank and comm.Iprobe(source=src, tag=self.tag):
                comm.Recv(self.staged.raw(), source=src, tag=self.tag)
                self._source = src
                return True
        return False


class MPIBackend(Backend):
    """See the module docstring."""

    name = "mpi"
    devices = ("cpu",)

    @classmethod
    def is_available(cls):
        import importlib.util
        return importlib.util.find_spec("mpi4py") is not None

    @classmethod
    def preflight(cls, rank, world_size):
        """Refuses, before any rendezvous, a world of several processes
        that this process cannot join: started without a launcher."""
        if world_size <= 1 or _launched_by_mpiexec():
            return
        raise RuntimeError(
            f"the MPI backend cannot form a world of {world_size} "
            f"processes from processes started without an MPI "
            f"launcher (MPI singletons cannot connect to each other): "
            f"start them with `python -m pygpu.distributed.run "
            f"--nproc_per_node {world_size} script.py` (or pygpu-run), "
            f"which puts each under its own mpiexec, or all at once "
            f"with `mpiexec -n {world_size} python script.py`")

    def __init__(self, store, rank, world_size, timeout, comm=None):
        super().__init__(store, rank, world_size, timeout)
        self.timeout_s = timeout.total_seconds()
        self.broken = None
        self.comm = comm if comm is not None else \
            self._world(store, rank, world_size)

    # ------------------------------------------------------ the world

    def _world(self, store, rank, world_size):
        MPI = _mpi()
        world = MPI.COMM_WORLD
        if world.size == world_size:
            if store is None and rank != world.rank:
                raise RuntimeError(
                    f"RANK is {rank} but mpiexec started this process as "
                    f"rank {world.rank}")
            return world.Split(0, rank)
        if world.size > 1:
            raise RuntimeError(
                f"init_process_group: world_size is {world_size} but "
                f"mpiexec started {world.size} processes in this world")
        if world_size == 1:
            return MPI.COMM_SELF.Dup()
        self.preflight(rank, world_size)
        if store is None:
            raise RuntimeError(
                "the MPI backend needs a store (init_method or store) to "
                "connect processes that were started by separate mpiexec "
                "commands")
        return self._connect(store, rank, world_size)

    def _connect(self, store, rank, world_size):
        """Builds the world by MPI_Comm_accept/connect on rank 0's port."""
        MPI = _mpi()
        info = MPI.INFO_NULL
        port = None
        try:
            if rank == 0:
                port = MPI.Open_port()
                store.set("mpi_port", port)
                comm = MPI.COMM_SELF.Dup()
            else:
                # One connection at a time, in rank order: MPICH's accept
                # is not safe against several connects arriving at once.
                name = store.get("mpi_port").decode()
                store.wait([f"mpi_joined/{rank - 1}"])
                inter = MPI.COMM_SELF.Connect(name, info)
                comm = inter.Merge(high=True)
                inter.Free()
            store.set(f"mpi_joined/{rank}", "1")
            while comm.size < world_size:
                inter = comm.Accept(port, info, root=0)
                merged = inter.Merge(high=False)
                inter.Free()
                comm.Free()
                comm = merged
        except MPI.Exception as err:
            raise RuntimeError(
                f"init_process_group: connecting the MPI processes failed: "
                f"{err.Get_error_string()}") from None
        if port is not None:
            MPI.Close_port(port)
        ordered = comm.Split(0, rank)
        comm.Free()
        return ordered

    def new_group(self, ranks, store, timeout):
        self._check()
        # Every rank of this group enters new_group (torch's rule).  A
        # barrier polled under the timeout first, because the creation
        # itself cannot be interrupted: with all ranks known to be here,
        # the members' MPI_Comm_create_group completes.
        self._work("new_group", [self.comm.Ibarrier()]).wait()
        group = self.comm.Get_group()
        sub = group.Incl(list(ranks)) if self.rank in ranks else None
        group.Free()
        if sub is None:
            return None
        try:
            comm = self.comm.Create_group(sub, tag=12345)
        finally:
            sub.Free()
        return MPIBackend(None, comm.rank, comm.size, timeout, comm=comm)

    def shutdown(self):
        MPI = _mpi()
        if self.comm is not None and self.comm != MPI.COMM_WORLD:
            try:
                if self.broken is None:
                    self.comm.Free()
            except MPI.Exception:
                pass
        self.comm = None

    # ------------------------------------------------------ operations

    def _check(self, *tensors):
        if self.comm is None:
            raise RuntimeError("the process group has been destroyed")
        if self.broken is not None:
            raise RuntimeError(
                f"this process group is unusable since {self.broken}: "
                f"destroy it and create a new one, or exit")
        for t in tensors:
            if t.device.type != "cpu":
                raise RuntimeError(
                    f"the MPI backend handles CPU tensors only (this MPI "
                    f"is not CUDA-aware) but got a tensor on "
                    f"{t.device}: use the nccl backend for CUDA tensors, "
                    f"or move the tensor to the CPU")

    def _work(self, name, requests, after=None, keep=()):
        return MPIWork(self, name, requests, after, keep)

    def all_reduce(self, tensor, op):
        self._check(tensor)
        s = _Staged(tensor, reduce=True)
        req = self.comm.Iallreduce(_mpi().IN_PLACE, s.typed(),
                                   _mpi_op(op, tensor.dtype))
        div = self.world_size if op == ReduceOp.AVG else None
        return self._work("all_reduce", [req], lambda: s.finish(div),
                          keep=(s,))

    def broadcast(self, tensor, src):
        self._check(tensor)
        s = _Staged(tensor, copy_in=self.rank == src)
        req = self.comm.Ibcast(s.raw(), root=src)
        return self._work("broadcast", [req], s.finish, keep=(s,))

    def reduce(self, tensor, dst, op):
        self._check(tensor)
        MPI = _mpi()
        s = _Staged(tensor, reduce=True)
        mop = _mpi_op(op, tensor.dtype)
        if self.rank == dst:
            req = self.comm.Ireduce(MPI.IN_PLACE, s.typed(), mop, root=dst)
            div = self.world_size if op == ReduceOp.AVG else None
            return self._work("reduce", [req], lambda: s.finish(div),
                              keep=(s,))
        req = self.comm.Ireduce(s.typed(), None, mop, root=dst)
        return self._work("reduce", [req], keep=(s,))

    def all_gather(self, output_list, tensor):
        self._check(tensor, *output_list)
        s = _Staged(tensor)
        whole = _C.empty((self.world_size,) + tuple(tensor.shape),
                         dtype=tensor.dtype)

        def after():
            for i, out in enumerate(output_list):
                out.copy_(whole[i])
        # the receive count is per rank
        req = self.comm.Iallgather(
            s.raw(), [_buffer(whole), _nbytes(tensor), _mpi().BYTE])
        return self._work("all_gather", [req], after, keep=(s, whole))

    def all_gather_into_tensor(self, output, input):
        self._check(output, input)
        s = _Staged(input)
        o = _Staged(output, copy_in=False)
        req = self.comm.Iallgather(
            s.raw(), [_buffer(o.work), _nbytes(input), _mpi().BYTE])
        return self._work("all_gather_into_tensor", [req], o.finish,
                          keep=(s, o))

    def reduce_scatter_tensor(self, output, input, op):
        self._check(output, input)
        s = _Staged(input, reduce=True)
        o = _Staged(output, reduce=True, copy_in=False)
        # the send count is per block, as the receive count
        req = self.comm.Ireduce_scatter_block(
            [_buffer(s.work), output.numel(), _typed(s.dtype)], o.typed(),
            _mpi_op(op, input.dtype))
        div = self.world_size if op == ReduceOp.AVG else None
        return self._work("reduce_scatter_tensor", [req],
                          lambda: o.finish(div), keep=(s, o))

    def send(self, tensor, dst, tag):
        self._check(tensor)
        s = _Staged(tensor)
        req = self.comm.Isend(s.raw(), dest=dst, tag=tag)
        return self._work("send", [req], keep=(s,))

    def recv(self, tensor, src, tag):
        self._check(tensor)
        s = _Staged(tensor, copy_in=False)
        if src is None:
            return _AnySourceWork(self, s, tag)
        req = self.comm.Irecv(s.raw(), source=src, tag=tag)
        return self._work("recv", [req], s.finish, keep=(s,))

    def barrier(self):
        self._check()
        return self._work("barrier", [self.comm.Ibarrier()])
