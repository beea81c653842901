"""pygpu.cuda and pygpu.backends: answers with and without a GPU."""
import pytest

import pygpu
from pygpu import cuda

from conftest import HAS_CUDA


def test_is_available_is_bool():
    assert isinstance(cuda.is_available(), bool)
    assert cuda.device_count() >= (1 if cuda.is_available() else 0)
    assert isinstance(pygpu.backends.cuda.is_built(), bool)
    assert pygpu.backends.mps.is_available() is False


@pytest.mark.skipif(HAS_CUDA, reason="checks the behaviour without a GPU")
class TestWithoutGPU:
    def test_counts(self):
        assert cuda.is_available() is False
        assert cuda.device_count() == 0

    @pytest.mark.parametrize("call", [
        lambda: cuda.current_device(), lambda: cuda.set_device(0),
        lambda: cuda.get_device_name(), lambda: cuda.get_device_capability(),
        lambda: cuda.get_device_properties(0), lambda: cuda.synchronize(),
        lambda: cuda.mem_get_info(),
    ])
    def test_queries_raise(self, call):
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value)  # says why

    def test_tensors_refuse_cuda(self):
        t = pygpu.ones(3)
        for make in (lambda: t.cuda(), lambda: t.to("cuda"),
                     lambda: pygpu.zeros(2, device="cuda"),
                     lambda: pygpu.tensor([1.0], device="cuda:0"),
                     lambda: pygpu.rand(3, device="cuda")):
            with pytest.raises(RuntimeError) as e:
                make()
            msg = str(e.value)
            assert ("without CUDA" in msg or "driver" in msg
                    or "No CUDA GPUs" in msg), msg

    def test_memory_figures_are_zero(self):
        assert cuda.memory_allocated() == 0
        assert cuda.memory_reserved() == 0
        assert cuda.max_memory_allocated() == 0
        cuda.empty_cache()  # does nothing, does not raise


def test_cpu_only_build_message():
    if pygpu.backends.cuda.is_built():
        pytest.skip("this build has CUDA")
    with pytest.raises(RuntimeError, match="pygpu was built without CUDA"):
        pygpu.ones(2).cuda()


def test_tf32_switches():
    flags = pygpu.backends.cuda.matmul
    assert flags.allow_tf32 is False
    try:
        flags.allow_tf32 = True
        assert pygpu.get_float32_matmul_precision() == "high"
        pygpu.set_float32_matmul_precision("highest")
        assert flags.allow_tf32 is False
        pygpu.set_float32_matmul_precision("medium")
        assert flags.allow_tf32 is True
    finally:
        pygpu.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError):
        pygpu.set_float32_matmul_precision("fast")


@pytest.mark.cuda
class TestWithGPU:
    def test_properties(self):
        p = cuda.get_device_properties(0)
        assert p.total_memory > 2**30 and p.multi_processor_count > 0
        assert cuda.get_device_capability(0) == (p.major, p.minor)
        assert isinstance(cuda.get_device_name(), str)
        free, total = cuda.mem_get_info()
        assert 0 < free <= total == p.total_memory

    def test_set_and_current(self):
        cuda.set_device(0)
        assert cuda.current_device() == 0
        cuda.set_device("cuda:0")
        cuda.set_device(pygpu.device("cuda", 0))
        cuda.synchronize()
        cuda.synchronize(0)

    def test_forked_child_refuses_cuda(self):
        """A child forked after CUDA was initialised gets torch's error
        instead of the parent's unusable device state."""
        import os
        pygpu.ones(2, device="cuda").cpu()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report through the pipe, never return
            code = b"no error"
            try:
                pygpu.ones(2, device="cuda")
            except RuntimeError as e:
                code = str(e).encode()[:200]
            except BaseException:
                code = b"other exception"
            os.write(w, code)
            os._exit(0)
        os.close(w)
        msg = os.read(r, 256).decode()
        os.close(r)
        os.waitpid(pid, 0)
        assert msg.startswith("Cannot re-initialize CUDA in forked subprocess")
        assert (pygpu.ones(2, device="cuda") + 1).cpu().tolist() == [2.0, 2.0]

    def test_ops_leave_current_device(self):
        """Like torch's device guard: work on cuda:1 leaves cuda:0 current."""
        if cuda.device_count() < 2:
            pytest.skip("needs two GPUs")
        cuda.set_device(0)
        x = pygpu.ones(8, device="cuda:1")
        y = (x + 1) @ pygpu.ones(8, device="cuda:1")
        assert y.item() == 16.0 and x.sum().item() == 8.0
        pygpu.randn(4, device="cuda:1")
        cuda.synchronize(1)
        cuda.mem_get_info(1)
        assert cuda.current_device() == 0
        assert pygpu.empty(1, device="cuda").device.index == 0

    def test_invalid_ordinal(self):
        n = cuda.device_count()
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            pygpu.zeros(2, device=f"cuda:{n}")
        with pytest.raises(RuntimeError):
            cuda.set_device(n)
        with pytest.raises(RuntimeError):
            cuda.get_device_properties(n + 5)


def test_cuda_error_carries_code_and_name():
    assert issubclass(pygpu.CudaError, RuntimeError)
    e = pygpu.CudaError("message")
    assert e.code is None and e.name is None  # set when a status failed
