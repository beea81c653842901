"""pygpu.cuda streams and events, and copies on them.  Without a GPU the
argument checks and the refusals (torch's no-GPU message, or "built
without CUDA") run; the rest needs a GPU (the `cuda` marker)."""
import threading

import numpy as np
import pytest

import pygpu
from pygpu import cuda

BUILT = pygpu._C._cuda_is_built()


def no_gpu_message():
    return pygpu._C._cuda_unavailable_reason()


# ------------------------------------------------------------- no GPU
@pytest.mark.skipif(pygpu.cuda.is_available(), reason="checks refusals")
def test_refusals_without_a_gpu():
    msg = no_gpu_message()
    for call in (cuda.Stream, cuda.current_stream, cuda.default_stream,
                 lambda: cuda.ExternalStream(0),
                 lambda: cuda.Event().record(),
                 lambda: cuda.Event(interprocess=True).ipc_handle(),
                 lambda: cuda.Event.from_ipc_handle(0, bytes(64)),
                 lambda: cuda.stream(cuda.Stream())):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == msg
    with pytest.raises(RuntimeError):
        pygpu.ones(3).to("cuda", non_blocking=True)


@pytest.mark.skipif(BUILT, reason="the CPU-only flavour's refusals")
def test_cpu_only_flavour_refuses_every_stream_function():
    for name in ("_cuda_stream_new", "_cuda_current_stream",
                 "_cuda_set_stream", "_cuda_event_new", "_cuda_memcpy",
                 "_cuda_stream_priority_range", "_cuda_event_ipc_handle",
                 "_cuda_event_from_ipc_handle"):
        with pytest.raises(RuntimeError,
                           match="pygpu was built without CUDA support"):
            getattr(pygpu._C, name)(0, 0)


@pytest.mark.skipif(not BUILT or pygpu.cuda.is_available(),
                    reason="the CUDA build's argument checks")
def test_c_functions_check_their_arguments_first():
    with pytest.raises(TypeError, match="exactly 2 arguments"):
        pygpu._C._cuda_stream_new(0)
    with pytest.raises(TypeError, match="exactly 3 arguments"):
        pygpu._C._cuda_event_record(0, 0)
    with pytest.raises(RuntimeError):  # then the missing driver
        pygpu._C._cuda_stream_new(0, 0)


def test_argument_checks_need_no_gpu():
    with pytest.raises(TypeError, match="priority"):
        cuda.Stream(priority="high")
    with pytest.raises(TypeError, match="priority"):
        cuda.Stream(priority=1.5)
    with pytest.raises(TypeError, match="stream_ptr"):
        cuda.ExternalStream("0x10")
    with pytest.raises(TypeError, match="Stream"):
        cuda.set_stream(5)
    with pytest.raises(TypeError, match="Stream"):
        cuda.stream("s")
    cuda.set_stream(None)  # nothing
    with cuda.stream(None) as s:  # nothing
        assert s is None
    # as torch: CUDA refuses it when the event is made (a CUDA test)
    cuda.Event(enable_timing=True, interprocess=True)


def test_from_ipc_handle_checks_its_arguments_without_a_gpu():
    with pytest.raises(RuntimeError, match="cudaIpcEventHandle_t expects "
                       "byte-like object of size 64, but got 3"):
        cuda.Event.from_ipc_handle(0, b"abc")
    with pytest.raises(RuntimeError, match="of size 64, but got 65"):
        cuda.Event.from_ipc_handle("cuda", bytearray(65))
    with pytest.raises(RuntimeError, match="Event can only be created on "
                       "CUDA devices, but got device type cpu"):
        cuda.Event.from_ipc_handle("cpu", bytes(64))
    with pytest.raises(RuntimeError, match="device type cpu"):
        cuda.Event.from_ipc_handle(pygpu.device("cpu"), bytes(64))
    with pytest.raises(TypeError, match="ipc_handle"):
        cuda.Event.from_ipc_handle(0, 64)
    with pytest.raises(TypeError, match="ipc_handle"):
        cuda.Event.from_ipc_handle(0, None)


def test_event_before_record_needs_no_gpu():
    e = cuda.Event()
    assert e.query() is True
    e.synchronize()
    assert e.cuda_event == 0
    assert "uninitialized" in repr(e)
    t0, t1 = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="Both events must be recorded "
                       "before calculating elapsed time."):
        t0.elapsed_time(t1)
    with pytest.raises(RuntimeError, match="Both events must be created "
                       "with argument 'enable_timing=True'."):
        e.elapsed_time(t1)
    with pytest.raises(TypeError):
        t0.elapsed_time(1.0)
    with pytest.raises(TypeError):
        e.record("stream")
    with pytest.raises(TypeError):
        e.wait(3)


def test_non_blocking_on_the_cpu_is_a_plain_to():
    t = pygpu.arange(4.0)
    assert t.to("cpu", non_blocking=True) is t
    d = t.to(pygpu.float32, non_blocking=True)
    np.testing.assert_array_equal(d.numpy(), np.arange(4.0))


# -------------------------------------------------------------- GPU
@pytest.mark.cuda
def test_stream_basics():
    s = cuda.Stream()
    assert s.cuda_stream != 0 and s.device == pygpu.device("cuda", 0)
    assert s == cuda.Stream._wrap(s.device_index, s.cuda_stream)
    assert hash(s) == hash(cuda.Stream._wrap(s.device_index, s.cuda_stream))
    assert s != cuda.default_stream()
    assert cuda.default_stream().cuda_stream == 0
    assert cuda.current_stream() == cuda.default_stream()
    least, greatest = pygpu._C._cuda_stream_priority_range()
    assert cuda.Stream(priority=-1).priority == greatest
    assert s.priority == least
    s.synchronize()
    assert s.query() is True
    assert "cuda_stream=0x" in repr(s)
    e = cuda.ExternalStream(s.cuda_stream)
    assert e == s


@pytest.mark.cuda
def test_stream_context_and_thread_locality():
    s = cuda.Stream()
    seen = []
    with cuda.stream(s) as entered:
        assert entered is s and cuda.current_stream() == s
        th = threading.Thread(
            target=lambda: seen.append(cuda.current_stream()))
        th.start()
        th.join()
        x = pygpu.arange(1 << 20, dtype=pygpu.float32, device="cuda") * 2
    assert seen == [cuda.default_stream()]
    assert cuda.current_stream() == cuda.default_stream()
    s.synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(),
                                  np.arange(1 << 20, dtype=np.float32) * 2)
    cuda.set_stream(s)
    try:
        assert cuda.current_stream() == s
        y = x + 1  # runs on s; the copy below is ordered on s too
        np.testing.assert_array_equal(y.cpu().numpy(),
                                      x.cpu().numpy() + 1)
    finally:
        cuda.set_stream(cuda.default_stream())


@pytest.mark.cuda
def test_events_and_waits():
    s1, s2 = cuda.Stream(), cuda.Stream()
    start = cuda.Event(enable_timing=True)
    end = cuda.Event(enable_timing=True)
    with cuda.stream(s1):
        start.record()
        a = pygpu.ones(1 << 22, device="cuda")
        for _ in range(10):
            a = a * 1.0001
        end.record()
    s2.wait_stream(s1)
    with cuda.stream(s2):
        b = a + 1
    s2.synchronize()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    expect = np.float32(1.0)
    for _ in range(10):
        expect = np.float32(expect * np.float32(1.0001))
    np.testing.assert_allclose(b.cpu().numpy()[:4], expect + 1, rtol=1e-6)
    ev = s1.record_event()
    s2.wait_event(ev)
    ev.wait()
    blocking = cuda.Event(blocking=True)
    blocking.record(s1)
    blocking.synchronize()


@pytest.mark.cuda
def test_non_blocking_copies():
    host = pygpu.arange(1 << 20, dtype=pygpu.float32).pin_memory()
    d = host.to("cuda", non_blocking=True)
    back = d.to("cpu", non_blocking=True)
    assert back.is_pinned()
    cuda.current_stream().synchronize()
    np.testing.assert_array_equal(back.numpy(),
                                  np.arange(1 << 20, dtype=np.float32))
    pageable = pygpu.arange(1000.0)
    d2 = pageable.cuda(non_blocking=True)  # pageable: synchronous, correct
    np.testing.assert_array_equal(d2.cpu().numpy(), np.arange(1000.0))
    s = cuda.Stream()
    with cuda.stream(s):
        d3 = host.to("cuda", non_blocking=True)
        r = d3.to("cpu", non_blocking=True)
    s.synchronize()
    np.testing.assert_array_equal(r.numpy(), host.numpy())


@pytest.mark.cuda
def test_dlpack_stream_handshake_with_pygpu_streams():
    s = cuda.Stream()
    consumer = cuda.Stream()
    with cuda.stream(s):
        x = pygpu.ones(1 << 20, device="cuda") * 3
        # The producer's current stream is s: the consumer waits on it.
        cap = x.__dlpack__(stream=consumer.cuda_stream)
    with cuda.stream(consumer):
        y = pygpu.from_dlpack(cap) + 1
    consumer.synchronize()
    assert float(y[0].item()) == 4.0
    cai = x.__cuda_array_interface__
    assert cai["stream"] == 1  # made on s, read here on the default stream
    with cuda.stream(s):
        assert x.__cuda_array_interface__["stream"] == s.cuda_stream


# ------------------------------------------------------- record_stream
def test_record_stream_argument_checks():
    with pytest.raises(RuntimeError, match="expected a CUDA tensor"):
        pygpu.ones(3).record_stream(None)


@pytest.mark.cuda
def test_record_stream_holds_the_block_back():
    s = cuda.Stream()
    n = 1 << 22
    x = pygpu.ones(n, device="cuda")
    ptr = x.data_ptr()
    with pytest.raises(TypeError, match="Stream"):
        x.record_stream(5)
    s.wait_stream(cuda.current_stream())  # x is written on the default
    with cuda.stream(s):
        y = x
        for _ in range(50):  # keep s busy reading x
            y = y * 1.0
    x.record_stream(s)
    x.record_stream(cuda.default_stream())  # its own stream: nothing
    before = pygpu.cuda.memory_allocated()
    busy = not s.query()
    del x
    if busy:
        # freed, but held back until s is done: still allocated
        assert pygpu.cuda.memory_allocated() == before
        z = pygpu.empty(n, device="cuda")
        if not s.query():
            assert z.data_ptr() != ptr
        del z
    s.synchronize()
    pygpu.cuda.empty_cache()  # gives back what waited for s
    assert pygpu.cuda.memory_allocated() < before
    np.testing.assert_array_equal(y[:4].cpu().numpy(), np.ones(4))


# ------------------------------------------------ interprocess events
def _ipc_child(device, handle, queue):
    """In a spawned process: open the parent's event and wait for it."""
    from pygpu import cuda as child_cuda
    event = child_cuda.Event.from_ipc_handle(device, handle)
    event.synchronize()
    queue.put(event.query())


@pytest.mark.cuda
def test_interprocess_event_waited_on_in_a_child_process():
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    event = cuda.Event(interprocess=True)
    handle = event.ipc_handle()  # made on the current device
    assert isinstance(handle, bytes) and len(handle) == 64
    assert event.cuda_event != 0 and event.query()
    assert event.ipc_handle() == handle
    s = cuda.Stream()
    with cuda.stream(s):
        a = pygpu.ones(2048, 2048, device="cuda")
        for _ in range(20):
            a = a @ a * (1.0 / 2048)
        event.record()
    queue = ctx.Queue()
    child = ctx.Process(target=_ipc_child, args=(0, handle, queue))
    child.start()
    try:
        assert queue.get(timeout=120) is True
    finally:
        child.join(120)
    assert child.exitcode == 0
    s.synchronize()
    np.testing.assert_allclose(a[0, :4].cpu().numpy(), np.ones(4),
                               rtol=1e-5)


@pytest.mark.cuda
def test_interprocess_event_errors():
    timed = cuda.Event(enable_timing=True, interprocess=True)
    with pytest.raises(RuntimeError, match="invalid argument"):
        timed.record()  # CUDA refuses the flags, as in torch
    plain = cuda.Event()
    plain.record()
    with pytest.raises(RuntimeError, match="CUDA error"):
        plain.ipc_handle()  # not an interprocess event


# ------------------------------------- pinned memory of queued copies
def _keep_busy(stream):
    """Queue about a second of matmuls on `stream`; returns the result."""
    with cuda.stream(stream):
        a = pygpu.ones(4096, 4096, device="cuda")
        for _ in range(100):
            a = a @ a * (1.0 / 4096)
    return a


def _pinned_allocated():
    return pygpu._C._pinned_allocator().stats()[
        "allocated_bytes.all.current"]


@pytest.mark.cuda
def test_pinned_source_dying_early_is_not_reused_during_its_copy():
    n = 1 << 22
    s = cuda.Stream()
    pygpu.cuda.empty_cache()
    base = _pinned_allocated()
    busy = _keep_busy(s)
    with cuda.stream(s):
        # the pinned temporary dies as soon as the copy is queued
        y = pygpu.full((n,), 1.0).pin_memory().to("cuda", non_blocking=True)
        held = not s.query()
        if held:
            assert _pinned_allocated() >= base + 4 * n
        # fresh pinned memory of other data: not the block being read
        z = pygpu.full((n,), 2.0).pin_memory()
    s.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), np.ones(n, np.float32))
    np.testing.assert_array_equal(z.numpy(), np.full(n, 2.0, np.float32))
    del z
    pygpu.cuda.empty_cache()  # waits, gives the deferred block back
    assert _pinned_allocated() == base
    assert busy.shape == (4096, 4096)


@pytest.mark.cuda
def test_pinned_destination_dying_early_is_held_until_synchronize():
    n = 1 << 22
    s = cuda.Stream()
    x = pygpu.ones(n, device="cuda")
    pygpu.cuda.empty_cache()
    base = _pinned_allocated()
    _keep_busy(s)
    with cuda.stream(s):
        x.to("cpu", non_blocking=True)  # dropped at once
    if not s.query():
        assert _pinned_allocated() >= base + 4 * n  # deferred
    s.synchronize()
    pygpu.full((8,), 3.0).pin_memory()  # any pinned allocation reclaims
    assert _pinned_allocated() == base


@pytest.mark.cuda
def test_pinned_buffer_copied_on_many_streams():
    host = pygpu.arange(1 << 16, dtype=pygpu.float32).pin_memory()
    streams = [cuda.Stream() for _ in range(12)]
    outs = []
    for s in streams:  # more streams than a block records: the rest wait
        with cuda.stream(s):
            outs.append(host.to("cuda", non_blocking=True))
    host.to("cuda", non_blocking=True)  # the legacy default stream too
    pygpu.cuda.synchronize()
    for o in outs:
        np.testing.assert_array_equal(o.cpu().numpy(), host.numpy())
    del host
    pygpu.cuda.empty_cache()
