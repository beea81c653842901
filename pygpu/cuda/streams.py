"""CUDA streams and events with torch's names and behaviour.

A Stream is a (device, cudaStream_t) pair.  Streams come from a pool per
device (created on first use and never destroyed, as torch's), so a stream
left current never dangles; the legacy default stream has handle 0.  The
current stream is per thread and per device, and every kernel, copy and
cuBLAS call of pygpu on that device runs on it.  Events are created at
their first record(), on the recording stream's device.
"""
from .. import _C

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "stream",
           "current_stream", "default_stream", "set_stream"]

_TIMING, _BLOCKING, _INTERPROCESS = 1, 2, 4
_IPC_HANDLE_SIZE = 64  # sizeof(cudaIpcEventHandle_t)


def _index(device):
    return _C._cuda_device_index(device)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class Stream:
    """A CUDA stream of `device` (None: the current device) from its pool.

    priority: 0 (default) or negative for a high-priority stream.
    """

    def __new__(cls, device=None, priority=0):
        if not _is_int(priority):
            raise TypeError("priority must be an int, got "
                            f"{type(priority).__name__}")
        index = _index(device)
        return cls._wrap(index, _C._cuda_stream_new(index, priority))

    @classmethod
    def _wrap(cls, index, handle):
        self = object.__new__(cls)
        self._device = index
        self._handle = handle
        return self

    @property
    def device(self):
        from .. import device
        return device("cuda", self._device)

    @property
    def device_index(self):
        return self._device

    @property
    def cuda_stream(self):
        """The cudaStream_t as an int (0: the legacy default stream)."""
        return self._handle

    @property
    def priority(self):
        return _C._cuda_stream_priority(self._device, self._handle)

    def query(self):
        """True when all work queued on this stream is done."""
        return _C._cuda_stream_query(self._device, self._handle)

    def synchronize(self):
        """Wait for the work queued on this stream."""
        _C._cuda_stream_synchronize(self._device, self._handle)

    def wait_event(self, event):
        """Make later work on this stream wait for `event`."""
        if not isinstance(event, Event):
            raise TypeError("wait_event() expects an Event, got "
                            f"{type(event).__name__}")
        event.wait(self)

    def wait_stream(self, stream):
        """Make later work on this stream wait for the work queued on
        `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError("wait_stream() expects a Stream, got "
                            f"{type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record `event` (a new Event if None) on this stream; returns it."""
        if event is None:
            event = Event()
        elif not isinstance(event, Event):
            raise TypeError("record_event() expects an Event or None, got "
                            f"{type(event).__name__}")
        event.record(self)
        return event

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return (self._device, self._handle) == (other._device, other._handle)

    def __hash__(self):
        return hash((self._handle, self._device))

    def __repr__(self):
        return (f"<pygpu.cuda.Stream device=cuda:{self._device} "
                f"cuda_stream={self._handle:#x}>")


class ExternalStream(Stream):
    """A stream made elsewhere (a cudaStream_t given as an int), used as
    it is; its owner must keep it alive while pygpu uses it."""

    def __new__(cls, stream_ptr, device=None):
        if not _is_int(stream_ptr) or stream_ptr < 0:
            raise TypeError("stream_ptr must be a non-negative int")
        return cls._wrap(_index(device), stream_ptr)


def current_stream(device=None):
    """The calling thread's current stream on `device`."""
    index = _index(device)
    return Stream._wrap(index, _C._cuda_current_stream(index))


def default_stream(device=None):
    """The legacy default stream of `device` (cuda_stream == 0)."""
    return Stream._wrap(_index(device), 0)


def set_stream(stream):
    """Make `stream` current on its device for this thread, and its device
    current (as torch).  None does nothing."""
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"expected a Stream, got {type(stream).__name__}")
    _C._cuda_set_device(stream._device)
    _C._cuda_set_stream(stream._device, stream._handle)


class StreamContext:
    """Context manager: `stream` (and its device) current inside, what was
    current before restored on exit.  None does nothing."""

    def __init__(self, stream):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"expected a Stream or None, got "
                            f"{type(stream).__name__}")
        self.stream = stream
        self._saved = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        device = _C._cuda_current_device()
        self._saved = (device, _C._cuda_current_stream(device),
                       _C._cuda_current_stream(s._device))
        set_stream(s)
        return s

    def __exit__(self, *exc):
        if self._saved is None:
            return
        device, prev_here, prev_there = self._saved
        self._saved = None
        _C._cuda_set_stream(self.stream._device, prev_there)
        _C._cuda_set_stream(device, prev_here)
        _C._cuda_set_device(device)


def stream(stream):
    """`with pygpu.cuda.stream(s):` runs the block's work on `s`."""
    return StreamContext(stream)


class Event:
    """A CUDA event (created at its first record, on that stream's device).

    enable_timing: for elapsed_time(); blocking: synchronize() sleeps
    instead of spinning; interprocess: shareable between processes through
    ipc_handle() and from_ipc_handle() (CUDA refuses to create an event
    both interprocess and timing: "invalid argument", as in torch).
    """

    def __init__(self, enable_timing=False, blocking=False,
                 interprocess=False):
        self._flags = ((_TIMING if enable_timing else 0) |
                       (_BLOCKING if blocking else 0) |
                       (_INTERPROCESS if interprocess else 0))
        self._device = None
        self._handle = None

    @property
    def cuda_event(self):
        """The cudaEvent_t as an int (0 before the first record)."""
        return self._handle or 0

    def record(self, stream=None):
        """Record on `stream` (None: the current stream)."""
        if stream is None:
            stream = current_stream()
        elif not isinstance(stream, Stream):
            raise TypeError("record() expects a Stream or None, got "
                            f"{type(stream).__name__}")
        if self._handle is None:
            self._handle = _C._cuda_event_new(stream._device, self._flags)
            self._device = stream._device
        elif self._device != stream._device:
            raise RuntimeError(
                f"Event device cuda:{self._device} does not match "
                f"recording stream's device cuda:{stream._device}.")
        _C._cuda_event_record(self._device, self._handle, stream._handle)

    def wait(self, stream=None):
        """Make later work on `stream` (None: the current one) wait for
        this event; nothing if it was never recorded."""
        if stream is None:
            stream = current_stream()
        elif not isinstance(stream, Stream):
            raise TypeError("wait() expects a Stream or None, got "
                            f"{type(stream).__name__}")
        if self._handle is not None:
            _C._cuda_stream_wait_event(stream._device, stream._handle,
                                       self._handle)

    def query(self):
        """True when the work recorded before this event is done (True if
        it was never recorded)."""
        if self._handle is None:
            return True
        return _C._cuda_event_query(self._device, self._handle)

    def synchronize(self):
        """Wait for the work recorded before this event."""
        if self._handle is not None:
            _C._cuda_event_synchronize(self._device, self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to `end_event` (both recorded, both
        with enable_timing=True)."""
        if not isinstance(end_event, Event):
            raise TypeError("elapsed_time() expects an Event, got "
                            f"{type(end_event).__name__}")
        if not (self._flags & end_event._flags & _TIMING):
            raise RuntimeError("Both events must be created with argument "
                               "'enable_timing=True'.")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before "
                               "calculating elapsed time.")
        return _C._cuda_event_elapsed_time(self._device, self._handle,
                                           end_event._handle)

    def ipc_handle(self):
        """The IPC handle (bytes) of this interprocess event, for
        from_ipc_handle() in another process; an event not recorded yet is
        created on the current device."""
        if self._handle is None:
            index = _index(None)
            self._handle = _C._cuda_event_new(index, self._flags)
            self._device = index
        return _C._cuda_event_ipc_handle(self._device, self._handle)

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """The event another process shared through ipc_handle(), opened on
        `device` (an int, a string or a pygpu.device of type cuda)."""
        if isinstance(handle, str):
            handle = handle.encode()
        elif isinstance(handle, (bytearray, memoryview)):
            handle = bytes(handle)
        elif not isinstance(handle, bytes):
            raise TypeError("from_ipc_handle(): argument 'ipc_handle' must "
                            f"be bytes, not {type(handle).__name__}")
        if len(handle) != _IPC_HANDLE_SIZE:
            raise RuntimeError(
                "cudaIpcEventHandle_t expects byte-like object of size "
                f"{_IPC_HANDLE_SIZE}, but got {len(handle)}")
        if not _is_int(device):
            from .. import device as _device
            kind = _device(device).type
            if kind != "cuda":
                raise RuntimeError("Event can only be created on CUDA "
                                   f"devices, but got device type {kind}")
        index = _index(device)
        self = object.__new__(cls)
        self._flags = _INTERPROCESS
        self._device = index
        self._handle = _C._cuda_event_from_ipc_handle(index, handle)
        return self

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None and _C is not None:
            try:
                _C._cuda_event_destroy(self._device, handle)
            except RuntimeError:
                pass

    def __repr__(self):
        if self._handle is None:
            return "<pygpu.cuda.Event uninitialized>"
        return f"<pygpu.cuda.Event {self._handle:#x}>"
