"""Large CPU temporaries are reused, not faulted in again: after a warm-up,
repeated training steps of a convolution (columns of ~2.4 MB, their
gradient, the products) take almost no page faults (cpu/cpu_malloc.c).
Without the thresholds glibc gives the heap's top back after each step and
every step faults ~1200 pages in again."""
import os
import platform
import resource
import subprocess
import sys

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


# Where a fresh 2 MiB NumPy array lies after `import pygpu`: in the heap
# with pygpu's thresholds (glibc's first mmap threshold is 128 KiB, so
# without them such a block is mapped on its own).
_WHERE = """
import numpy as np
import pygpu
p = np.empty(1 << 18).ctypes.data
where = "mapped"
with open("/proc/self/maps") as f:
    for line in f:
        if line.rstrip().endswith("[heap]"):
            s, e = (int(v, 16) for v in line.split()[0].split("-"))
            if s <= p < e:
                where = "heap"
print(where)
"""


def _where(**env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                          "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", _WHERE], env={**clean, **env},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(not GLIBC or os.environ.get("PYGPU_SANITIZED"),
                    reason="glibc's malloc only")
def test_thresholds_set_at_import_unless_the_environment_sets_them():
    assert _where() == "heap"
    # a program's own settings win, whichever variable carries them
    assert _where(MALLOC_MMAP_THRESHOLD_="131072") == "mapped"
    assert _where(GLIBC_TUNABLES="glibc.malloc.perturb=0") == "mapped"
