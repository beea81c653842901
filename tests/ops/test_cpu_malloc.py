"""Large CPU temporaries are reused, not faulted in again: after a warm-up,
repeated training steps of a convolution (columns of ~2.4 MB, their
gradient, the products) take almost no page faults (cpu/cpu_malloc.c).
Without the thresholds glibc gives the heap's top back after each step and
every step faults ~1200 pages in again."""
import os
import platform
import resource

import pytest

import pygpu
from pygpu.nn import functional as F

GLIBC = platform.libc_ver()[0] == "glibc"
OWN = any(v in os.environ for v in ("MALLOC_MMAP_THRESHOLD_",
                                    "MALLOC_TRIM_THRESHOLD_",
                                    "GLIBC_TUNABLES"))


@pytest.mark.skipif(not GLIBC or OWN or os.environ.get("PYGPU_SANITIZED"),
                    reason="glibc's malloc with pygpu's thresholds only")
def test_training_steps_do_not_fault_pages_in_again():
    x = pygpu.randn(64, 6, 12, 12).requires_grad_(True)
    w = pygpu.randn(16, 6, 5, 5).requires_grad_(True)
    b = pygpu.randn(16).requires_grad_(True)
    g = pygpu.randn(64, 16, 8, 8)

    def step():
        x.grad = w.grad = b.grad = None
        F.conv2d(x, w, b).backward(g)

    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 20 * 100, faults
