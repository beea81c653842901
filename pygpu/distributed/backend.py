"""The backend interface: what a communication engine provides to
pygpu.distributed, and the registry of engines by name.

A backend is a class registered with ``register_backend(name, cls,
devices)``; ``devices`` are the tensor device types it serves ("cpu",
"cuda").  A process group holds one backend object per device type and
sends each call to the one serving the tensors' device.  The front end
(pygpu.distributed) has already checked the arguments (tensor types,
equal dtypes and devices, sizes, ranks in range) and translated global
ranks into ranks of the group, so a backend sees only its own group.

Class interface::

    class MyBackend(Backend):
        name = "mine"

        @classmethod
        def is_available(cls) -> bool   # its library can be loaded

        @classmethod
        def preflight(cls, rank, world_size)   # optional: raise before
            # the rendezvous when this process cannot join such a world

        def __init__(self, store, rank, world_size, timeout):
            # store: a Store (pygpu.distributed.store) private to this
            #   group (already prefixed), for exchanging addresses or
            #   unique ids; may be None when the engine needs none (a
            #   world started by one mpiexec).
            # rank, world_size: this process in the group.
            # timeout: a datetime.timedelta; every operation that cannot
            #   finish within it raises RuntimeError (see Work.wait).

        def new_group(self, ranks, store, timeout) -> "Backend | None"
            # Called on every rank of this group with the same sorted
            # list of group ranks; returns the backend of the subgroup on
            # its members (rank = index in ranks), None elsewhere.

        # The operations.  Each works in place on the given tensors
        # (all on the device the backend serves), starts the operation
        # and returns a Work; ranks are ranks of this group; op is a
        # ReduceOp.RedOpType.
        def all_reduce(self, tensor, op) -> Work
        def broadcast(self, tensor, src) -> Work
        def reduce(self, tensor, dst, op) -> Work      # result on dst
        def all_gather(self, output_list, tensor) -> Work
        def all_gather_into_tensor(self, output, input) -> Work
            # output: world_size * input.numel() elements, rank-major
        def reduce_scatter_tensor(self, output, input, op) -> Work
            # input: world_size * output.numel() elements, rank-major
        def send(self, tensor, dst, tag) -> Work
        def recv(self, tensor, src, tag) -> Work      # src None: any;
            # the Work's source_rank() then tells which rank sent it
        def barrier(self) -> Work
        def shutdown(self)                    # frees the engine's state

A backend may raise RuntimeError from any call, for instance when a
previous timeout left the group unusable.  float16/bfloat16 reductions,
ReduceOp.AVG (sum, then divide; refused for integer and bool tensors by
the front end) and non-contiguous tensors are the backend's to handle.
"""
import enum
import os
import time

__all__ = ["Backend", "Work", "ReduceOp", "register_backend", "backends",
           "backend_class"]


class ReduceOp:
    """torch's ReduceOp: ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR,
    BXOR (each a ReduceOp.RedOpType)."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


class Work:
    """A started operation.  wait() blocks until it is done (True), or
    raises RuntimeError once the timeout passes; is_completed() tells
    without blocking.  Subclasses implement _test() (True when done; it
    may raise) and _finish() (copies back from temporaries, divisions)."""

    def __init__(self, name, timeout_s):
        self.name = name
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self._done = False
        self._error = None
        self._source = None

    def _test(self):
        return True

    def _finish(self):
        pass

    def _poll(self):
        if self._done or self._error is not None:
            return
        try:
            if self._test():
                self._finish()
                self._done = True
        except Exception as err:  # noqa: BLE001 - kept for wait()
            self._error = err

    def is_completed(self):
        self._poll()
        return self._done or self._error is not None

    def is_success(self):
        self._poll()
        return self._done and self._error is None

    def exception(self):
        return self._error

    def source_rank(self):
        """For recv from any source: the rank that sent."""
        return self._source

    def _timed_out(self, limit):
        """Called once when wait() gives up; returns the error to raise."""
        return RuntimeError(
            f"{self.name} did not complete within the timeout of "
            f"{limit:g} s (a rank has exited, crashed or not reached the "
            f"same call)")

    def wait(self, timeout=None):
        limit = self.timeout_s if timeout is None else (
            timeout.total_seconds() if hasattr(timeout, "total_seconds")
            else float(timeout))
        deadline = self.started + limit if timeout is None else \
            time.monotonic() + limit
        # Engines such as MPI progress only while polled: poll hard at
        # first, yielding the CPU between polls, then (after 50 ms) sleep
        # between polls, up to 1 ms, so that a long wait costs little.
        busy_until = time.monotonic() + 0.05
        pause = 50e-6
        while True:
            self._poll()
            if self._error is not None:
                raise self._error
            if self._done:
                return True
            now = time.monotonic()
            if now >= deadline:
                self._error = self._timed_out(limit)
                raise self._error
            if now < busy_until:
                os.sched_yield()
            else:
                time.sleep(pause)
                pause = min(pause * 1.5, 1e-3)


class Backend:
    """Base class of the engines; see the module docstring."""

    name = "?"
    devices = ("cpu",)

    @classmethod
    def is_available(cls):
        return True

    @classmethod
    def preflight(cls, rank, world_size):
        pass

    def __init__(self, store, rank, world_size, timeout):
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout

    def new_group(self, ranks, store, timeout):
        raise NotImplementedError

    def all_reduce(self, tensor, op):
        raise NotImplementedError

    def broadcast(self, tensor, src):
        raise NotImplementedError

    def reduce(self, tensor, dst, op):
        raise NotImplementedError

    def all_gather(self, output_list, tensor):
        raise NotImplementedError

    def all_gather_into_tensor(self, output, input):
        raise NotImplementedError

    def reduce_scatter_tensor(self, output, input, op):
        raise NotImplementedError

    def send(self, tensor, dst, tag):
        raise NotImplementedError

    def recv(self, tensor, src, tag):
        raise NotImplementedError

    def barrier(self):
        raise NotImplementedError

    def shutdown(self):
        pass


# name -> (import path "module:Class" or a class, device types)
_REGISTRY = {}


def register_backend(name, cls, devices=("cpu",)):
    """Makes init_process_group(backend=name) use cls (a Backend subclass,
    or "module:Class" imported on first use) for tensors on devices."""
    _REGISTRY[name.lower()] = (cls, tuple(devices))


def backends():
    """The registered backend names."""
    return list(_REGISTRY)


def backend_class(name):
    """The class registered under name (imported now if given as a
    path), and its device types."""
    try:
        cls, devices = _REGISTRY[name.lower()]
    except KeyError:
        raise ValueError(
            f"Invalid backend: '{name}' (registered: "
            f"{', '.join(_REGISTRY)})") from None
    if isinstance(cls, str):
        import importlib
        module, _, attr = cls.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        _REGISTRY[name.lower()] = (cls, devices)
    return cls, devices


register_backend("mpi", "pygpu.distributed._mpi:MPIBackend", ("cpu",))
# torch's CPU backend is Gloo; here the same name runs on MPI, so that CPU
# code written for torch (init_process_group("gloo")) runs as written.
register_backend("gloo", "pygpu.distributed._mpi:MPIBackend", ("cpu",))
register_backend("nccl", "pygpu.distributed._nccl:NcclBackend", ("cuda",))
