"""CUDA graphs with torch's names and behaviour.

A CUDAGraph records the work queued on the current stream between
capture_begin() and capture_end() (or inside ``with pygpu.cuda.graph(g):``)
and runs all of it again with one launch per replay().  The memory the
captured work allocates comes from the graph's private pool: its addresses
are baked into the graph, so a block freed after the capture stays
reserved for the pool (no other allocation gets it) until every graph
sharing the pool is reset.  Replays read and write the same tensors each
time: change the inputs in place (``static_x.copy_(x)``) and read the
outputs that the capture returned.

What cannot be captured raises during the capture, before anything is
queued, and invalidates it (capture_end() then raises too, and the graph
context discards it): anything that waits for the GPU from the host
(``.item()``, ``.cpu()``, ``.tolist()``, copies between host and GPU,
``synchronize()``), random numbers, index checks that read back
(``gather``, ``index_select``, ...), and the first matrix product on a
device (it creates cuBLAS's handles and workspace): run the work once
before capturing, as make_graphed_callables does.
"""
import gc

from .. import _C

__all__ = ["CUDAGraph", "graph", "graph_pool_handle",
           "is_current_stream_capturing", "make_graphed_callables"]

_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


def is_current_stream_capturing():
    """True when the current stream of the current device is capturing a
    CUDA graph, False otherwise."""
    return _C._cuda_is_current_stream_capturing(_C._cuda_current_device())


def graph_pool_handle():
    """An opaque token for a new memory pool that several graphs may share
    (pass it as ``pool=`` to capture_begin or graph)."""
    return (0, _C._cuda_graph_pool_handle())


def _pool_id(pool):
    """The allocator's id of a pool token (0: None, a new pool)."""
    if pool is None:
        return 0
    if (not isinstance(pool, tuple) or len(pool) != 2 or
            not all(isinstance(x, int) and not isinstance(x, bool)
                    for x in pool)):
        raise TypeError("pool must be a token from graph_pool_handle() or "
                        f"another graph's pool(), got {pool!r}")
    first, second = pool
    if first < 0 or second < 0 or (first == 0) == (second == 0):
        raise ValueError("pool must be a token from graph_pool_handle() or "
                         f"another graph's pool(), got {pool!r}")
    return first or second


class CUDAGraph:
    """Wrapper around a CUDA graph (capture, replay, reset)."""

    def __init__(self):
        self._graph = _C._cuda_graph_new()
        self._pool = None
        self._captured = False

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Begin capturing the CUDA work queued on the current stream (which
        must not be the default stream).

        pool: a token from graph_pool_handle() or another graph's pool():
        share that graph's memory pool.  capture_error_mode: "global"
        (default), "thread_local" or "relaxed", the cudaStreamCaptureMode:
        which calls, from which threads, would break the capture.
        """
        mode = _MODES.get(capture_error_mode) \
            if isinstance(capture_error_mode, str) else None
        if mode is None:
            raise RuntimeError(
                "Unknown capture error mode. Expected `global`, "
                f"`thread_local`, or `relaxed`, got {capture_error_mode}")
        pool_id = _C._cuda_graph_capture_begin(self._graph, _pool_id(pool),
                                               mode)
        self._pool = pool if pool is not None else (pool_id, 0)
        self._captured = False

    def capture_end(self):
        """End the capture on the current stream (the one it began on) and
        instantiate the graph; replay() may be called after."""
        _C._cuda_graph_capture_end(self._graph)
        self._captured = True

    def replay(self):
        """Replay the CUDA work captured by this graph, on the current
        stream."""
        _C._cuda_graph_replay(self._graph)

    def reset(self):
        """Delete the graph held by this instance and let go of its memory
        pool (its blocks go back to the device at the next empty_cache once
        no graph shares the pool).  The instance can capture again."""
        _C._cuda_graph_reset(self._graph)
        self._pool = None
        self._captured = False

    def pool(self):
        """An opaque token for this graph's memory pool, to pass to another
        capture that should share it."""
        if not self._captured:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding "
                               "successful capture.")
        return self._pool

    def __repr__(self):
        state = "captured" if self._captured else "empty"
        return f"<pygpu.cuda.CUDAGraph {state}>"


class graph:
    """Context manager that captures the CUDA work of its block into a
    CUDAGraph, on `stream` (default: a side stream of its own).

    On entry it synchronizes the device, collects garbage and empties the
    cache, as torch's does, then makes the capture stream current and
    begins the capture; on exit it ends it.  When the block raises, the
    capture is discarded (the graph is reset) and the exception goes on.
    """

    _side_streams = {}  # a capture stream per device, made on first use

    def __init__(self, cuda_graph, pool=None, stream=None,
                 capture_error_mode="global"):
        from .streams import Stream, StreamContext
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError("graph() expects a pygpu.cuda.CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        if stream is None:
            device = _C._cuda_current_device()
            stream = graph._side_streams.get(device)
            if stream is None:
                stream = graph._side_streams[device] = Stream(device)
        self.cuda_graph = cuda_graph
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self.stream_ctx = StreamContext(stream)

    def __enter__(self):
        from . import empty_cache, synchronize
        synchronize()
        gc.collect()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(
                *self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph.reset()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        return False


# ------------------------------------------------------ graphed callables
def _flatten(obj, leaves):
    """Append obj's tensors to leaves; returns a spec to rebuild obj."""
    from .. import Tensor
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return None
    if isinstance(obj, (tuple, list)):
        return (type(obj), [_flatten(x, leaves) for x in obj])
    return ("const", obj)


def _unflatten(spec, leaves, pos):
    if spec is None:
        pos[0] += 1
        return leaves[pos[0] - 1]
    kind, items = spec
    if kind == "const":
        return items
    return kind(_unflatten(s, leaves, pos) for s in items)


def _check_args(args, where):
    from .. import Tensor
    for i, a in enumerate(args):
        if not isinstance(a, Tensor):
            raise TypeError(f"{where}: argument {i} is a "
                            f"{type(a).__name__}; only Tensors are "
                            "supported")
        if a.requires_grad:
            raise NotImplementedError(
                f"{where}: argument {i} requires grad; pygpu graphs "
                "forward passes only (torch would also graph the backward "
                "pass). Pass tensors that do not require grad.")


class _GraphedCallable:
    """Copies its arguments into the static inputs the graph reads, replays
    the graph and returns the static outputs (overwritten by the next
    call)."""

    def __init__(self, cuda_graph, static_inputs, static_outputs, spec):
        self.graph = cuda_graph
        self.static_inputs = static_inputs
        self.static_outputs = static_outputs
        self._spec = spec

    def __call__(self, *args):
        ins = self.static_inputs
        if len(args) != len(ins):
            raise TypeError(f"the graphed callable takes {len(ins)} "
                            f"arguments ({len(args)} given)")
        for i, (static, a) in enumerate(zip(ins, args)):
            if a is static:
                continue
            _check_args((a,), "graphed callable")
            if a.shape != static.shape or a.dtype != static.dtype:
                raise RuntimeError(
                    f"graphed callable: argument {i} has shape "
                    f"{list(a.shape)} and dtype {a.dtype}, but the graph was "
                    f"captured with shape {list(static.shape)} and dtype "
                    f"{static.dtype}")
            if a.data_ptr() != static.data_ptr():
                static.copy_(a)
        self.graph.replay()
        return _unflatten(self._spec, self.static_outputs, [0])


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graphed versions of callables (functions or nn.Modules): each runs
    its forward pass as one CUDA graph replay.

    callables: a callable, or a tuple of them; sample_args: a tuple of CUDA
    tensors (a tuple of such tuples for a tuple of callables), which become
    the graphs' static inputs.  Each callable runs num_warmup_iters times
    on a side stream, then is captured (all in one memory pool).  A
    function comes back as a callable; a Module comes back itself, with a
    forward that replays the graph while the module's training state is
    the one it was captured in (else its own forward).

    Forward passes only: they are captured without recording gradients,
    the outputs do not require grad, and sample args that require grad
    raise NotImplementedError.  allow_unused_input is accepted for torch's
    signature (it concerns the backward pass).
    """
    from .. import Tensor, no_grad
    from ..nn import Module
    from . import synchronize
    from .streams import Stream, stream

    del allow_unused_input
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables = (callables,)
        sample_args = (sample_args,)
    if not isinstance(sample_args, tuple) or \
            len(sample_args) != len(callables):
        raise ValueError("make_graphed_callables: sample_args must hold one "
                         "tuple of tensors per callable")
    sample_args = tuple((a,) if isinstance(a, Tensor) else a
                        for a in sample_args)
    for c, args in zip(callables, sample_args):
        if not callable(c):
            raise TypeError("make_graphed_callables: expected callables or "
                            f"Modules, got {type(c).__name__}")
        if not isinstance(args, tuple):
            raise TypeError("make_graphed_callables: sample_args must be a "
                            "tuple of tensors per callable, got "
                            f"{type(args).__name__}")
        _check_args(args, "make_graphed_callables")
    _C._cuda_current_device()  # without CUDA: why not, in torch's words
    for args in sample_args:
        for i, a in enumerate(args):
            if a.device.type != "cuda":
                raise RuntimeError(
                    f"make_graphed_callables: sample argument {i} is on "
                    f"{a.device}; graphs capture CUDA work only")
    if not isinstance(num_warmup_iters, int) or num_warmup_iters < 0:
        raise ValueError("num_warmup_iters must be a non-negative int")

    synchronize()
    mempool = graph_pool_handle() if pool is None else pool
    with no_grad():
        with stream(Stream()):
            for c, args in zip(callables, sample_args):
                for _ in range(num_warmup_iters):
                    c(*args)
        synchronize()
        results = []
        for c, args in zip(callables, sample_args):
            g = CUDAGraph()
            with graph(g, pool=mempool):
                out = c(*args)
            leaves = []
            spec = _flatten(out, leaves)
            del out
            results.append(_GraphedCallable(g, args, leaves, spec))

    ret = []
    for c, graphed in zip(callables, results):
        if isinstance(c, Module):
            ret.append(_graph_module(c, graphed))
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)


def _graph_module(module, graphed):
    """The module, its forward replaced by one that replays the graph while
    its training state is the captured one."""
    captured_training = module.training
    original = module.forward

    def forward(*args):
        if module.training == captured_training:
            return graphed(*args)
        return original(*args)

    forward.graphed = graphed  # the graph and its static tensors
    object.__setattr__(module, "forward", forward)
    return module
