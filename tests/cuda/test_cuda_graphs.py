"""CUDA graphs: pygpu.cuda.CUDAGraph, graph(), graph_pool_handle(),
is_current_stream_capturing(), make_graphed_callables().

Without a GPU the API is there, checks its arguments and refuses with
torch's words (test_graph_pools.py tests the allocator's private pools over
host memory); the rest needs a GPU (the `cuda` marker): replays against
NumPy float64 with fresh inputs, the private pool's rules, memory figures,
what cannot be captured (raised during the capture, which is discarded,
and the stream still usable) and the tutorial's model graphed.
"""
import functools
import gc
import inspect
import subprocess
import sys
import threading
import warnings
import weakref

import numpy as np
import pytest

import pygpu
from pygpu import _C, cuda, nn
from pygpu.cuda import graphs

from conftest import RTOL, rel_err

BUILT = _C._cuda_is_built()
API = ("CUDAGraph", "graph", "graph_pool_handle",
       "is_current_stream_capturing", "make_graphed_callables")
CAPTURING = "operation not permitted when stream is capturing"


def no_gpu_message():
    return _C._cuda_unavailable_reason()


# ------------------------------------------------------------- no GPU
def test_the_graph_api_is_there():
    for name in API:
        assert hasattr(cuda, name) and name in cuda.__all__
    params = inspect.signature(cuda.CUDAGraph.capture_begin).parameters
    assert list(params) == ["self", "pool", "capture_error_mode"]
    assert params["capture_error_mode"].default == "global"
    for method in ("capture_begin", "capture_end", "replay", "reset",
                   "pool"):
        assert callable(getattr(cuda.CUDAGraph, method))
    params = inspect.signature(cuda.graph).parameters
    assert list(params) == ["cuda_graph", "pool", "stream",
                            "capture_error_mode"]
    params = inspect.signature(cuda.make_graphed_callables).parameters
    assert list(params)[:2] == ["callables", "sample_args"]


@pytest.mark.skipif(cuda.is_available(), reason="checks refusals")
def test_refusals_without_a_gpu():
    msg = no_gpu_message()
    for call in (cuda.CUDAGraph, cuda.graph_pool_handle,
                 cuda.is_current_stream_capturing,
                 lambda: cuda.make_graphed_callables(
                     lambda x: x, (pygpu.ones(3),))):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == msg


@pytest.mark.skipif(BUILT, reason="the CPU-only flavour's refusals")
def test_cpu_only_flavour_refuses_the_graph_functions():
    for name in ("_cuda_graph_new", "_cuda_graph_pool_handle",
                 "_cuda_graph_capture_begin", "_cuda_graph_capture_end",
                 "_cuda_graph_replay", "_cuda_graph_reset",
                 "_cuda_is_current_stream_capturing"):
        with pytest.raises(RuntimeError,
                           match="pygpu was built without CUDA support"):
            getattr(_C, name)()


@pytest.mark.skipif(not BUILT or cuda.is_available(),
                    reason="the CUDA build's argument checks")
def test_c_functions_check_their_arguments_first():
    with pytest.raises(TypeError, match="exactly 1 arguments"):
        _C._cuda_graph_capture_end()
    with pytest.raises(TypeError, match="exactly 3 arguments"):
        _C._cuda_graph_capture_begin(None)
    with pytest.raises(RuntimeError):  # then the missing driver
        _C._cuda_graph_new()
    with pytest.raises(RuntimeError):
        _C._cuda_is_current_stream_capturing(0)


def test_pool_tokens_are_checked():
    assert graphs._pool_id(None) == 0
    assert graphs._pool_id((0, 5)) == 5 and graphs._pool_id((7, 0)) == 7
    for bad in ((0, 0), (1, 2), (-1, 0)):
        with pytest.raises(ValueError, match="graph_pool_handle"):
            graphs._pool_id(bad)
    for bad in (5, (1,), (1.0, 0), (True, 0), [0, 1]):
        with pytest.raises(TypeError, match="graph_pool_handle"):
            graphs._pool_id(bad)


def test_make_graphed_callables_checks_need_no_gpu():
    x = pygpu.ones(2, 3)
    with pytest.raises(TypeError, match="only Tensors"):
        cuda.make_graphed_callables(lambda a: a, (3.0,))
    with pytest.raises(NotImplementedError, match="requires grad"):
        cuda.make_graphed_callables(lambda a: a,
                                    (pygpu.ones(2, requires_grad=True),))
    with pytest.raises(ValueError, match="one tuple of tensors per"):
        cuda.make_graphed_callables((lambda a: a, lambda a: a), ((x,),))
    with pytest.raises(TypeError, match="expected callables"):
        cuda.make_graphed_callables(5, (x,))
    with pytest.raises(TypeError, match="expects a pygpu.cuda.CUDAGraph"):
        cuda.graph("not a graph")


# --------------------------------------------------------------- helpers
def tutorial_mlp():
    """PyTorch quickstart's model, on cuda."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10)).to("cuda")


def mlp_reference(model, x):
    """The model's forward in NumPy float64."""
    h = np.asarray(x, dtype=np.float64).reshape(x.shape[0], -1)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    for i, lin in enumerate(linears):
        w = lin.weight.detach().cpu().numpy().astype(np.float64)
        b = lin.bias.detach().cpu().numpy().astype(np.float64)
        h = h @ w.T + b
        if i < len(linears) - 1:
            h = np.maximum(h, 0.0)
    return h


def to_cuda(a):
    return pygpu.tensor(np.ascontiguousarray(a), device="cuda")


@pytest.fixture(autouse=True)
def end_captures_left_open(monkeypatch):
    """A test that fails inside a capture leaves it open, and a global
    capture left open makes every later allocation of the process fail:
    each graph a test began a capture on is reset after it.  The graphs
    are held weakly: a graph that dies ends its capture itself, and a test
    checks that it does."""
    begun = []
    begin = cuda.CUDAGraph.capture_begin

    @functools.wraps(begin)
    def capture_begin(self, *args, **kwargs):
        begun.append(weakref.ref(self))
        return begin(self, *args, **kwargs)
    monkeypatch.setattr(cuda.CUDAGraph, "capture_begin", capture_begin)
    yield
    for ref in begun:
        g = ref()
        try:
            if g is not None:
                g.reset()
        except RuntimeError:
            pass


def warm_up(fn, *args, iters=3):
    """Run fn on a side stream first (kernels loaded, cuBLAS handles
    made), as torch's documentation asks before a capture."""
    s = cuda.Stream()
    with cuda.stream(s):
        for _ in range(iters):
            fn(*args)
    cuda.synchronize()


def allocator():
    return _C._cuda_allocator(cuda.current_device())


def pool_segments(pool_id):
    return [s for s in allocator().segments() if s["pool"] == pool_id]


# -------------------------------------------------------- capture, replay
@pytest.mark.cuda
def test_mlp_graph_replays_fresh_inputs(rng):
    model = tutorial_mlp()
    static_x = to_cuda(rng.standard_normal((32, 784)).astype(np.float32))
    with pygpu.no_grad():
        warm_up(model, static_x)
        g = cuda.CUDAGraph()
        with cuda.graph(g):
            static_y = model(static_x)
    for _ in range(3):
        x = rng.standard_normal((32, 784)).astype(np.float32)
        static_x.copy_(pygpu.tensor(x))
        g.replay()
        got = static_y.cpu().numpy()
        assert rel_err(got, mlp_reference(model, x)) <= RTOL["float32"]


@pytest.mark.cuda
def test_replay_follows_changes_of_the_static_inputs(rng):
    a = to_cuda(rng.standard_normal((5, 7)).astype(np.float32))
    b = to_cuda(rng.standard_normal((7, 3)).astype(np.float32))
    one = to_cuda(np.float32([2.5]))
    empty = pygpu.empty(0, 4, device="cuda")

    def step(a, b, one, empty):
        # a non-contiguous operand, a 1-element and a 0-element tensor
        return (a.t().t() @ b) * one + 1.0, (empty * 2.0).sum(0), a.T * 3

    warm_up(step, a, b, one, empty)
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y, s, t = step(a, b, one, empty)
    for _ in range(3):
        an = rng.standard_normal((5, 7)).astype(np.float32)
        bn = rng.standard_normal((7, 3)).astype(np.float32)
        on = rng.standard_normal(1).astype(np.float32)
        a.copy_(pygpu.tensor(an))
        b.copy_(pygpu.tensor(bn))
        one.copy_(pygpu.tensor(on))
        g.replay()
        ref = (an.astype(np.float64) @ bn) * np.float64(on[0]) + 1.0
        assert rel_err(y.cpu().numpy(), ref) <= RTOL["float32"]
        assert s.cpu().numpy().tolist() == [0.0] * 4
        assert rel_err(t.cpu().numpy(), an.T.astype(np.float64) * 3) <= \
            RTOL["float32"]


@pytest.mark.cuda
def test_replay_on_the_default_and_other_streams(rng):
    x = to_cuda(rng.standard_normal(1000).astype(np.float32))
    warm_up(lambda v: v * 2.0 - 1.0, x)
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 2.0 - 1.0
    for s in (cuda.default_stream(), cuda.Stream(), cuda.Stream()):
        xn = rng.standard_normal(1000).astype(np.float32)
        x.copy_(pygpu.tensor(xn))
        s.wait_stream(cuda.current_stream())  # x is written there
        with cuda.stream(s):
            g.replay()
        s.synchronize()
        assert rel_err(y.cpu().numpy(), xn.astype(np.float64) * 2 - 1) <= \
            RTOL["float32"]


@pytest.mark.cuda
def test_products_in_replays_and_eager_products_share_the_workspace(rng):
    a = to_cuda(rng.standard_normal((256, 256)).astype(np.float32))
    b = to_cuda(rng.standard_normal((256, 256)).astype(np.float32))
    warm_up(lambda u, v: u @ v, a, b)
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = a @ b
    ref = a.cpu().numpy().astype(np.float64) @ b.cpu().numpy()
    other = cuda.Stream()
    eager = []
    for _ in range(20):  # interleaved on two streams
        g.replay()
        with cuda.stream(other):
            eager.append(b @ a)
    cuda.synchronize()
    assert rel_err(y.cpu().numpy(), ref) <= RTOL["float32"]
    ref_ba = b.cpu().numpy().astype(np.float64) @ a.cpu().numpy()
    for e in eager:
        assert rel_err(e.cpu().numpy(), ref_ba) <= RTOL["float32"]


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_capture_error_modes(rng, mode):
    x = to_cuda(rng.standard_normal(64).astype(np.float32))
    warm_up(lambda v: v.relu(), x)
    g = cuda.CUDAGraph()
    with cuda.graph(g, capture_error_mode=mode):
        y = x.relu() + 0.5
    xn = rng.standard_normal(64).astype(np.float32)
    x.copy_(pygpu.tensor(xn))
    g.replay()
    assert rel_err(y.cpu().numpy(),
                   np.maximum(xn.astype(np.float64), 0) + 0.5) <= \
        RTOL["float32"]


@pytest.mark.cuda
def test_capture_state_errors_in_torch_words():
    x = pygpu.ones(4, device="cuda")
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="without a preceding successful"):
        g.replay()
    with pytest.raises(RuntimeError, match="without a preceding successful"):
        g.pool()
    with pytest.raises(RuntimeError, match="without a capture_begin"):
        g.capture_end()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        g.capture_begin(capture_error_mode="strict")
    # The legacy default stream cannot capture.
    with cuda.stream(cuda.default_stream()):
        with pytest.raises(RuntimeError,
                           match="must be captured on a non-default stream"):
            g.capture_begin()
    assert not cuda.is_current_stream_capturing()
    with cuda.graph(g):
        y = x + 1
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        with cuda.graph(g):
            pass
    g.replay()
    assert y.cpu().numpy().tolist() == [2.0] * 4
    g.reset()  # then it captures again
    with cuda.graph(g):
        y = x * 5
    g.replay()
    assert y.cpu().numpy().tolist() == [5.0] * 4


@pytest.mark.cuda
def test_capture_must_end_on_its_stream():
    s, other = cuda.Stream(), cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        g.capture_begin()
        y = pygpu.ones(3, device="cuda") * 2
    with cuda.stream(other):
        with pytest.raises(RuntimeError, match="same stream it began on"):
            g.capture_end()
    with cuda.stream(s):
        g.capture_end()
        g.replay()
    s.synchronize()
    assert y.cpu().numpy().tolist() == [2.0] * 3


@pytest.mark.cuda
def test_is_current_stream_capturing():
    assert cuda.is_current_stream_capturing() is False
    seen = {}
    g = cuda.CUDAGraph()
    x = pygpu.ones(8, device="cuda")
    with cuda.graph(g):
        seen["inside"] = cuda.is_current_stream_capturing()
        with cuda.stream(cuda.default_stream()):
            seen["default stream"] = cuda.is_current_stream_capturing()
        y = x + 1
    assert seen == {"inside": True, "default stream": False}
    assert cuda.is_current_stream_capturing() is False
    del y


@pytest.mark.cuda
def test_an_empty_capture_warns_as_torch():
    g = cuda.CUDAGraph()
    with pytest.warns(UserWarning, match="The CUDA Graph is empty"):
        with cuda.graph(g):
            pass
    g.replay()  # replaying nothing is fine


@pytest.mark.cuda
def test_reset_or_death_during_capture_ends_it():
    s = cuda.Stream()
    with cuda.stream(s):
        g = cuda.CUDAGraph()
        g.capture_begin()
        y = pygpu.ones(3, device="cuda") + 1
        assert cuda.is_current_stream_capturing()
        g.reset()
        assert not cuda.is_current_stream_capturing()
        g.capture_begin()
        ref = weakref.ref(g)
        del g
        gc.collect()
        # first whether the graph died at all, then whether its death ended
        # the capture: two different failures
        assert ref() is None, \
            [type(r).__name__ for r in gc.get_referrers(ref())]
        assert not cuda.is_current_stream_capturing()
        z = pygpu.ones(3, device="cuda") * 3  # the stream runs work again
    s.synchronize()
    assert z.cpu().numpy().tolist() == [3.0] * 3
    del y


# ----------------------------------------------------------- the memory
@pytest.mark.cuda
def test_graph_memory_stays_reserved_for_the_graph(rng):
    x = to_cuda(rng.standard_normal((128, 256)).astype(np.float32))
    warm_up(lambda v: v * 3.0, x)
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        y = x * 3.0
    pool = g.pool()
    assert pool[1] == 0 and pool[0] > 0  # the graph's own pool
    segs = pool_segments(pool[0])
    assert len(segs) == 1 and segs[0]["allocated"] >= y.numel() * 4
    y_ptr = y.data_ptr()
    del y
    segs = pool_segments(pool[0])
    assert segs[0]["allocated"] == 0
    # The block is free, but the graph still writes it at every replay:
    # an ordinary allocation must not get it.
    z = pygpu.full((128, 256), 7.0, device="cuda")
    assert z.data_ptr() != y_ptr
    g.replay()
    cuda.synchronize()
    assert np.all(z.cpu().numpy() == 7.0)
    cuda.empty_cache()
    # The graph holds its pool: nothing of it given back.
    assert pool_segments(pool[0]) == segs
    assert cuda.memory_reserved() >= segs[0]["size"]
    g.reset()
    cuda.empty_cache()
    assert pool_segments(pool[0]) == []
    del z


@pytest.mark.cuda
def test_graphs_share_a_pool(rng):
    x = to_cuda(rng.standard_normal(4096).astype(np.float32))
    warm_up(lambda v: v + 1.0, x)
    handle = cuda.graph_pool_handle()
    assert handle[0] == 0 and handle[1] > 0
    g1, g2, g3 = cuda.CUDAGraph(), cuda.CUDAGraph(), cuda.CUDAGraph()
    with cuda.graph(g1, pool=handle):
        y1 = x + 1.0
    with cuda.graph(g2, pool=g1.pool()):
        y2 = y1 * 2.0
    with cuda.graph(g3):
        y3 = x - 1.0
    assert g1.pool() == g2.pool() == handle
    assert g3.pool() != handle
    segs = pool_segments(handle[1])
    assert segs and sum(s["allocated"] for s in segs) >= 2 * 4096 * 4
    xn = rng.standard_normal(4096).astype(np.float32)
    x.copy_(pygpu.tensor(xn))
    g1.replay()
    g2.replay()
    g3.replay()
    assert rel_err(y2.cpu().numpy(), (xn.astype(np.float64) + 1) * 2) <= \
        RTOL["float32"]
    assert rel_err(y3.cpu().numpy(), xn.astype(np.float64) - 1) <= \
        RTOL["float32"]
    del y1, y2
    g1.reset()
    cuda.empty_cache()
    assert pool_segments(handle[1])  # g2 still holds the pool
    g2.reset()
    cuda.empty_cache()
    assert pool_segments(handle[1]) == []
    del y3


@pytest.mark.cuda
def test_memory_figures_stay_true_through_a_capture(rng):
    x = to_cuda(rng.standard_normal(1 << 16).astype(np.float32))
    warm_up(lambda v: v * 2.0, x)
    gc.collect()
    cuda.empty_cache()
    before = cuda.memory_allocated()
    g = cuda.CUDAGraph()
    figures = {}
    with cuda.graph(g):
        y = x * 2.0
        tmp = y + 1.0
        figures["inside"] = cuda.memory_allocated()
        del tmp
        figures["freed inside"] = cuda.memory_allocated()
    assert figures["inside"] == before + 2 * (1 << 18)
    assert figures["freed inside"] == before + (1 << 18)
    assert cuda.memory_allocated() == before + (1 << 18)
    stats = cuda.memory_stats()
    segs = allocator().segments()
    assert sum(s["size"] for s in segs) == stats["reserved_bytes.all.current"]
    assert sum(s["allocated"] for s in segs) == \
        stats["allocated_bytes.all.current"]
    del y
    assert cuda.memory_allocated() == before
    g.reset()


# ------------------------------------------- what cannot be captured
def _forbidden_calls():
    """name: fn(y, idx), y and idx CUDA tensors, y made in the capture."""
    return {
        "item": lambda y, idx: y.sum().item(),
        "cpu": lambda y, idx: y.cpu(),
        "tolist": lambda y, idx: y.tolist(),
        "to_host": lambda y, idx: y.to("cpu"),
        "from_host": lambda y, idx: y + pygpu.tensor([1.0], device="cuda"),
        "copy_from_host": lambda y, idx: y.copy_(pygpu.ones(4)),
        "pin_memory": lambda y, idx: pygpu.ones(2).pin_memory(),
        "synchronize": lambda y, idx: cuda.synchronize(),
        "stream_synchronize":
            lambda y, idx: cuda.current_stream().synchronize(),
        "event_synchronize":
            lambda y, idx: cuda.current_stream().record_event().synchronize(),
        "random": lambda y, idx: pygpu.randn(3, device="cuda"),
        "index_select": lambda y, idx: y.index_select(0, idx),
        "tensor_index": lambda y, idx: y[idx],
    }


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(_forbidden_calls()))
def test_forbidden_calls_raise_and_the_capture_is_discarded(name):
    forbidden = _forbidden_calls()[name]
    x = pygpu.ones(4, device="cuda")
    idx = pygpu.tensor([0, 1], device="cuda")
    warm_up(lambda v: ((v * 2).index_select(0, idx), (v * 2)[idx]), x)
    g = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=CAPTURING):
        with cuda.graph(g):
            y = x * 2
            forbidden(y, idx)
    assert not cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="without a preceding successful"):
        g.replay()
    # The stream and the device work as before, and capture again.
    s = cuda.graph._side_streams[cuda.current_device()]
    with cuda.stream(s):
        z = x * 3
    s.synchronize()
    assert z.cpu().numpy().tolist() == [3.0] * 4
    with cuda.graph(g):
        y = x * 4
    g.replay()
    assert y.cpu().numpy().tolist() == [4.0] * 4


@pytest.mark.cuda
def test_capture_end_raises_after_a_refusal():
    x = pygpu.ones(4, device="cuda")
    warm_up(lambda v: v * 2, x)
    s = cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        g.capture_begin()
        y = x * 2
        with pytest.raises(RuntimeError, match=CAPTURING):
            y.cpu()
        with pytest.raises(RuntimeError,
                           match="invalidated and is discarded: a copy"):
            g.capture_end()
        assert not cuda.is_current_stream_capturing()
        g.reset()
        g.capture_begin()
        y = x * 2
        g.capture_end()
        g.replay()
    s.synchronize()
    assert y.cpu().numpy().tolist() == [2.0] * 4


@pytest.mark.cuda
@pytest.mark.parametrize("mode,refused", [("global", True),
                                          ("thread_local", False)])
def test_waits_in_another_thread_follow_the_capture_mode(mode, refused):
    x = pygpu.ones(4, device="cuda")
    warm_up(lambda v: v * 2, x)
    other = pygpu.ones(4, device="cuda")
    result = {}

    def elsewhere():
        try:
            result["value"] = other.cpu().numpy().tolist()
        except RuntimeError as e:
            result["error"] = str(e)

    def capture():
        with cuda.graph(g, capture_error_mode=mode):
            y = x * 2
            t = threading.Thread(target=elsewhere)
            t.start()
            t.join()
        return y

    g = cuda.CUDAGraph()
    if refused:
        with pytest.raises(RuntimeError, match="invalidated and is discarded"):
            capture()
        assert CAPTURING in result["error"]
        with pytest.raises(RuntimeError, match="without a preceding"):
            g.replay()
    else:
        y = capture()
        assert result["value"] == [1.0] * 4
        g.replay()
        assert y.cpu().numpy().tolist() == [2.0] * 4


@pytest.mark.cuda
def test_creating_cublas_handles_during_capture_is_refused():
    # A fresh process: no product has run there yet.
    code = r"""
import numpy as np
import pygpu
from pygpu import cuda
a = pygpu.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
b = pygpu.tensor(np.ones((4, 2), dtype=np.float32), device="cuda")
(a * 2).sum()
cuda.synchronize()
g = cuda.CUDAGraph()
try:
    with cuda.graph(g):
        y = a @ b
except RuntimeError as e:
    assert "operation not permitted when stream is capturing" in str(e), e
    assert "cuBLAS handles and workspace" in str(e), e
else:
    raise SystemExit("the capture was not refused")
assert not cuda.is_current_stream_capturing()
ref = np.arange(12, dtype=np.float64).reshape(3, 4) @ np.ones((4, 2))
assert np.array_equal((a @ b).cpu().numpy(), ref)  # eager works
with cuda.graph(g):  # and, handles made, so does a capture
    y = a @ b
a.copy_(pygpu.tensor(np.full((3, 4), 2, dtype=np.float32)))
g.replay()
assert np.array_equal(y.cpu().numpy(), np.full((3, 2), 8.0))
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --------------------------------------------------- graphed callables
@pytest.mark.cuda
def test_make_graphed_callables_on_the_tutorial_mlp(rng):
    model = tutorial_mlp()
    x = to_cuda(rng.standard_normal((32, 784)).astype(np.float32))
    graphed = cuda.make_graphed_callables(model, (x,))
    assert graphed is model
    outs = []
    for _ in range(3):
        xn = rng.standard_normal((32, 784)).astype(np.float32)
        y = model(to_cuda(xn))
        assert not y.requires_grad  # forward only
        assert rel_err(y.cpu().numpy(), mlp_reference(model, xn)) <= \
            RTOL["float32"]
        outs.append(y)
    assert outs[0] is outs[1]  # the graph's static output, reused
    # In the other training state the module runs its own forward.
    model.eval()
    xn = rng.standard_normal((32, 784)).astype(np.float32)
    y = model(to_cuda(xn))
    assert y is not outs[0]
    assert rel_err(y.detach().cpu().numpy(), mlp_reference(model, xn)) <= \
        RTOL["float32"]
    model.train()
    with pytest.raises(RuntimeError, match="captured with shape"):
        model(to_cuda(np.zeros((16, 784), dtype=np.float32)))
    with pytest.raises(NotImplementedError, match="requires grad"):
        model(pygpu.ones(32, 784, device="cuda", requires_grad=True))


@pytest.mark.cuda
def test_make_graphed_callables_on_functions(rng):
    def f(a, b):
        return (a @ b).relu(), [a.sum(0), 3]

    def h(c):
        return c * c

    a = to_cuda(rng.standard_normal((6, 5)).astype(np.float32))
    b = to_cuda(rng.standard_normal((5, 4)).astype(np.float32))
    c = to_cuda(rng.standard_normal(9).astype(np.float32))
    gf, gh = cuda.make_graphed_callables((f, h), ((a, b), (c,)))
    for _ in range(2):
        an = rng.standard_normal((6, 5)).astype(np.float32)
        bn = rng.standard_normal((5, 4)).astype(np.float32)
        cn = rng.standard_normal(9).astype(np.float32)
        (r, (s, three)) = gf(to_cuda(an), to_cuda(bn))
        assert three == 3
        ref = np.maximum(an.astype(np.float64) @ bn, 0)
        assert rel_err(r.cpu().numpy(), ref) <= RTOL["float32"]
        assert rel_err(s.cpu().numpy(), an.astype(np.float64).sum(0)) <= \
            RTOL["float32"]
        assert rel_err(gh(to_cuda(cn)).cpu().numpy(),
                       cn.astype(np.float64) ** 2) <= RTOL["float32"]
    # The static inputs themselves need no copy.
    assert gh(c) is gh(c)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        gf(a)


@pytest.mark.cuda
def test_graphed_callable_memory_comes_from_one_pool(rng):
    x = to_cuda(rng.standard_normal(512).astype(np.float32))
    g1 = cuda.make_graphed_callables(lambda v: v + 1.0, (x,))
    pool = g1.graph.pool()
    assert pool[0] == 0  # make_graphed_callables' own graph_pool_handle
    assert pool_segments(pool[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no empty-graph warning
        g2 = cuda.make_graphed_callables(lambda v: v * 2.0, (x,), pool=pool)
    assert g2.graph.pool() == pool
