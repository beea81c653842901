"""CUDA at its edges: the first kernel launch and the first matrix product
when the cache holds all device memory, a matrix product on a context a
fault has broken, fork safety when pinned memory is the first CUDA use,
the message without a driver, and indexing past 2**31 elements."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import _C

MiB, GiB = 1 << 20, 1 << 30
NO_DRIVER = ("Found no NVIDIA driver on your system. Please check that you "
             "have an NVIDIA GPU and installed a driver from "
             "http://www.nvidia.com/Download/index.aspx")


def run_fresh(code, timeout=300):
    """Run code in a new interpreter (so every kernel launch in it is the
    first of its process); returns its stdout, failing on a non-zero exit."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


# ------------------------------------------------------------ no driver
@pytest.mark.skipif(not pygpu.backends.cuda.is_built()
                    or pygpu.cuda.is_available(),
                    reason="needs a CUDA build on a machine without CUDA")
class TestBuiltWithoutDevice:
    def test_pin_memory_says_why(self):
        why = _C._cuda_unavailable_reason()
        with pytest.raises(RuntimeError) as e:
            pygpu.ones(3).pin_memory()
        assert str(e.value) == why
        if _C._cuda_versions()["driver"] == 0:
            assert why == NO_DRIVER

    def test_every_entry_says_the_same(self):
        why = _C._cuda_unavailable_reason()
        for call in (lambda: pygpu.ones(2).cuda(), _C._pinned_allocator,
                     lambda: _C._cuda_allocator(0),
                     lambda: pygpu.cuda.set_device(0)):
            with pytest.raises(RuntimeError) as e:
                call()
            assert str(e.value) == why


# ------------------------------------------------------------------ GPU
@pytest.mark.cuda
@pytest.mark.gpu_exclusive
class TestFirstUseWithFullCache:
    def test_first_kernels_and_products_after_oom(self):
        """The cache holds nearly all device memory; the first float64
        randn and the first matmul/linear then need memory outside it
        (kernel code, cuBLAS handles and workspace) and must get it by the
        cache being emptied and the call retried."""
        out = run_fresh("""
            import numpy as np
            import pygpu

            def fill_cache():
                # Hold all device memory, down to 2 MiB, then give it back
                # to the cache (which keeps it: no empty_cache).
                held = []
                for size in (1 << 30, 32 << 20, 1 << 20):
                    try:
                        while True:
                            held.append(pygpu.empty(size // 4, device="cuda"))
                    except pygpu.cuda.OutOfMemoryError:
                        pass
                assert held
                reserved = pygpu.cuda.memory_reserved()
                del held
                assert pygpu.cuda.memory_reserved() == reserved
                return reserved

            reserved = fill_cache()
            x = pygpu.randn(1000, dtype=pygpu.float64, device="cuda")
            v = x.cpu().numpy()
            assert np.isfinite(v).all() and 0.5 < v.std() < 1.5
            emptied = pygpu.cuda.memory_reserved() < reserved

            a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
            b = np.arange(8.0, dtype=np.float32).reshape(4, 2)
            ga = pygpu.tensor(a, device="cuda")
            gb = pygpu.tensor(b, device="cuda")
            fill_cache()
            assert np.array_equal((ga @ gb).cpu().numpy(), a @ b)

            w = pygpu.ones(5, 4, device="cuda")
            bias = pygpu.tensor(np.arange(5.0, dtype=np.float32),
                                device="cuda")
            fill_cache()
            y = pygpu.nn.functional.linear(ga, w, bias)
            assert np.array_equal(y.cpu().numpy(),
                                  a @ np.ones((4, 5), np.float32)
                                  + np.arange(5.0, dtype=np.float32))
            print("ok", emptied)
        """)
        assert out.split() == ["ok", "True"], out


@pytest.mark.cuda
def test_product_after_a_fault_reports_the_cuda_error():
    """A kernel fault breaks the context: every launch fails from then on,
    and cuBLAS says CUBLAS_STATUS_EXECUTION_FAILED.  That is neither an
    out-of-memory error nor a reason to empty the cache and retry: the
    product raises the CUDA error behind it, the one synchronize raised."""
    out = run_fresh("""
        import os
        import pygpu

        small = pygpu.zeros(4, device="cuda")
        n = 1 << 16

        class Overrun:
            # n x n floats over a 16-byte allocation: a product reading it
            # leaves the allocation by gigabytes and faults.
            __cuda_array_interface__ = {
                "version": 3, "shape": (n, n), "typestr": "<f4",
                "data": (small.data_ptr(), False), "strides": None,
                "stream": None}

        a = pygpu.as_tensor(Overrun())
        b = pygpu.ones(n, 1, device="cuda")
        out = pygpu.empty(n, 1, device="cuda")
        g = pygpu.ones(8, 8, device="cuda")
        g_out = pygpu.empty(8, 8, device="cuda")
        pygpu.matmul(g, g, out=g_out)  # cuBLAS set up before the fault
        spare = pygpu.empty(16 << 20, device="cuda")
        del spare  # a free block the cache keeps
        pygpu.cuda.synchronize()
        reserved = pygpu.cuda.memory_reserved()

        pygpu.matmul(a, b, out=out)
        try:
            pygpu.cuda.synchronize()
            print("no fault")
        except pygpu.CudaError as e:
            print("sync", e.name, e.code)
        try:
            pygpu.matmul(g, g, out=g_out)
            print("product ran")
        except pygpu.cuda.OutOfMemoryError as e:
            print("oom", e)
        except pygpu.CudaError as e:
            print("product", e.name, e.code, str(e).replace(" ", "_"))
        print("reserved", pygpu.cuda.memory_reserved() == reserved)
        os._exit(0)  # the context is broken: no teardown
    """)
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert "sync" in lines, out
    sync_name, sync_code = lines["sync"]
    assert sync_name.startswith("cudaError"), out
    assert "product" in lines, out  # neither ran nor out of memory
    name, code, message = lines["product"]
    assert name != "CUBLAS_STATUS_EXECUTION_FAILED", out
    if "EXECUTION_FAILED" in message:
        # cuBLAS's status, reported as the CUDA error behind it
        assert message.startswith("CUDA_error:"), out
    if name.startswith("cudaError"):
        assert (name, code) == (sync_name, sync_code), out
    assert lines["reserved"] == ["True"], out  # the cache was not emptied


@pytest.mark.cuda
def test_fork_after_pinned_memory_refuses_cuda():
    """Pinned memory is the process's first CUDA use: a forked child still
    gets torch's error instead of the parent's unusable driver state."""
    out = run_fresh("""
        import os
        import pygpu
        p = pygpu.ones(4).pin_memory()
        assert p.is_pinned()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            msgs = []
            for call in (lambda: pygpu.ones(2).pin_memory(),
                         lambda: pygpu.ones(2, device="cuda"),
                         lambda: p.cuda()):
                try:
                    call()
                    msgs.append("no error")
                except RuntimeError as e:
                    msgs.append(str(e).split(".")[0])
            os.write(w, "|".join(msgs).encode())
            os._exit(0)
        os.close(w)
        msg = os.read(r, 4096).decode()
        os.waitpid(pid, 0)
        print(msg)
        print((pygpu.ones(2, device="cuda") + 1).cpu().tolist())
    """)
    child, parent = out.strip().split("\n")
    assert child.split("|") == [
        "Cannot re-initialize CUDA in forked subprocess"] * 3, child
    assert parent == "[2.0, 2.0]"


@pytest.mark.cuda
def test_over_two_to_the_31_elements():
    """float16 add and float32 sum over 2**31 + 7 elements: an int32 index
    would wrap, so exact answers past 2**31 prove 64-bit indexing."""
    n = (1 << 31) + 7
    free, _ = pygpu.cuda.mem_get_info()
    allocated = pygpu.cuda.memory_allocated()
    if free < 20 * GiB:
        pytest.skip("needs 20 GiB of free device memory")
    # Host pattern i % 2048 (exact in float16, and so is i % 2048 + 1).
    h = np.empty(n, dtype=np.float16)
    base = np.arange(2048, dtype=np.float16)
    whole = n // 2048 * 2048
    h[:whole].reshape(-1, 2048)[:] = base
    h[whole:] = base[:n - whole]
    try:
        a = pygpu.from_numpy(h).cuda()
        b = pygpu.ones(n, dtype=pygpu.float16, device="cuda")
        c = (a + b).cpu().numpy()
        del a, b
        two31 = 1 << 31
        rng = np.random.default_rng(0)
        picks = np.concatenate([
            np.arange(0, 4096), np.arange(two31 - 4096, n),
            rng.integers(0, n, 100_000)])
        np.testing.assert_array_equal(c[picks], h[picks] + np.float16(1))
        del c
        # float32 sum: ones at known places far apart, zeros elsewhere, so
        # every partial sum is a small integer and the answer is exact.
        x = pygpu.zeros(n, dtype=pygpu.float32, device="cuda")
        x[0:1000] = 1.0
        x[two31 - 3:two31 + 3] = 2.0
        x[n - 1] = 5.0
        assert x.sum().item() == 1000 + 12 + 5
        assert x[n - 1].item() == 5.0 and x[two31].item() == 2.0
        del x
    finally:
        pygpu.cuda.empty_cache()
    assert pygpu.cuda.memory_allocated() == allocated
