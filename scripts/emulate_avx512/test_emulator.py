"""The emulator on its own: small AVX-512 functions (selftest.c) called
through the SIGILL trap, in a child process, against NumPy.  run.sh runs
this before the pygpu tests it emulates."""
import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytest_avx512 import build  # noqa: E402

CHILD = r'''
import ctypes, sys, threading
import numpy as np
sys.path.insert(0, HERE)
import pytest_avx512 as plugin
outdir = OUTDIR
plugin.import_bochscpu(outdir)
import emulator
lib = ctypes.CDLL(LIB)
table = plugin.symbols(LIB)
emu = emulator.Emulator(plugin.avx512_ranges(table, plugin.load_base(LIB)))
trap = emulator.install(emu, plugin.build("trap", outdir))
f32p = ctypes.POINTER(ctypes.c_float)
lib.axpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                     ctypes.c_float]
lib.lanes.restype = ctypes.c_float
lib.lanes.argtypes = [ctypes.c_void_p]
lib.copy_scale.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
rng = np.random.default_rng(0)

for n in (0, 1, 15, 16, 17, 1000):
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n + 1, np.nan, np.float32)
    lib.axpy(y.ctypes.data, x.ctypes.data, n, 2.5)
    want = (2.5 * x.astype(np.float64) + 1).astype(np.float32)
    assert np.abs(y[:n] - want).max(initial=0) <= 1e-6 * (1 + np.abs(want)).max(initial=0), n
    assert np.isnan(y[n]), "wrote past the end"

p = rng.standard_normal(8).astype(np.float32)
got = lib.lanes(p.ctypes.data)
assert abs(got - (p.astype(np.float64).sum() + p[0])) < 1e-5, got

x = rng.standard_normal(100).astype(np.float32)
y = np.zeros(100, np.float32)
lib.copy_scale(y.ctypes.data, x.ctypes.data, 100)
assert (y[:96] == 3 * x[:96]).all() and (y[96:] == x[96:]).all()

# A buffer in a GiB the emulator has not mapped yet: the guest's page
# fault maps it and the faulting instruction runs again.
mm = ctypes.CDLL(None).mmap
mm.restype = ctypes.c_void_p
mm.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
               ctypes.c_int, ctypes.c_long]
for where in (0x200000000000, 0x300000040000):
    addr = mm(where, 1 << 16, 3, 0x22 | 0x100000, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value) or addr != where:
        continue
    x = rng.standard_normal(1000).astype(np.float32)
    lib.axpy(addr, x.ctypes.data, 1000, -1.5)
    y = np.ctypeslib.as_array(ctypes.cast(addr, f32p), (1000,))
    want = (-1.5 * x.astype(np.float64) + 1).astype(np.float32)
    assert np.abs(y - want).max() <= 1e-5, where

# From another thread, with its own signal stack.
out = []
def body():
    trap.trap_thread_init(16 << 20)
    out.append(lib.lanes(p.ctypes.data))
t = threading.Thread(target=body)
t.start(); t.join()
assert out and abs(out[0] - got) == 0
print("emulated", emu.entries, flush=True)
import os
os._exit(0)
'''


def test_small_avx512_functions_through_the_trap(tmp_path):
    if importlib.util.find_spec("bochscpu") is None:
        pytest.skip("bochscpu-python is not installed (run.sh installs it)")
    lib = build("selftest", str(tmp_path))
    code = (CHILD.replace("HERE", repr(HERE)).replace("OUTDIR", repr(
        str(tmp_path))).replace("LIB", repr(lib)))
    got = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    # axpy six times, lanes, copy_scale, up to two far buffers, the thread
    assert int(got.stdout.split()[-1]) >= 9, got.stdout
