"""The contiguous float sum has two leaf loops (cpu/cpu_reduce.c), one of
narrow vectors and one for AVX2, picked at run time: the C check
tests/native/sum_leaves_check.c runs both on the same inputs and compares
their bits.  And, from Python, the sum's properties that do not depend
on the loop: NaN sums are positive NaN, any thread count gives the same
bits, and the pairwise tree keeps float32 sums accurate."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import pygpu

from conftest import ROOT
CHECK = os.path.join(ROOT, "tests", "native", "sum_leaves_check.c")


def test_narrow_and_wide_leaves_agree(tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the leaf check")
    exe = tmp_path / "sum_leaves_check"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    # the extension's own flags that change float code
    # cpu_reduce.c's other loops, which the check links but does not run,
    # and the capability the cloned loops pick
    others = [os.path.join(ROOT, "csrc", "cpu", f)
              for f in ("cpu_reduce_max.c", "cpu_prod.c", "cpu_isa.c",
                        "cpu_half.c")]
    subprocess.run([cc, "-std=c11", "-O3", "-fno-trapping-math",
                    "-fno-math-errno", "-I", os.path.join(ROOT, "csrc"),
                    CHECK, *others, "-o", str(exe), "-lm"], check=True,
                   env=env)
    out = subprocess.run([str(exe)], capture_output=True, text=True,
                         timeout=300, env=env)
    last = out.stdout.strip().splitlines()[-1]
    assert out.returncode == 0, out.stdout[-2000:]
    if last.startswith("skipped"):
        pytest.skip(last)
    passed, failed = (int(p.split()[0]) for p in last.split(","))
    assert failed == 0 and passed > 10000, last


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("n", [5, 512, 2000, 1 << 17])
def test_nan_sum_is_positive_nan(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(dtype)
    a[rng.integers(0, n, 3)] = -np.nan
    got = pygpu.tensor(a).sum().item()
    assert np.isnan(got) and not np.signbit(got)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 511, 512, 513, 1000,
                               (1 << 16) + 3, (1 << 18) + 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sum_same_bits_on_any_thread_count(n, dtype):
    a = np.random.default_rng(n).standard_normal(n).astype(dtype)
    t = pygpu.tensor(a)
    old = pygpu.get_num_threads()
    try:
        got = set()
        for threads in (1, 2, 3):
            pygpu.set_num_threads(threads)
            got.add(t.sum().numpy().tobytes())
    finally:
        pygpu.set_num_threads(old)
    assert len(got) == 1
    ref = a.astype(np.float64).sum()
    scale = max(np.abs(a.astype(np.float64)).sum(), 1.0)
    tol = 1e-3 if dtype == np.float16 else 1e-6
    assert abs(float(t.sum().item()) - ref) <= tol * scale


def test_float32_sum_stays_accurate():
    # a single float accumulator stops at 2^24 when adding ones
    ones = pygpu.ones(1 << 25)
    assert ones.sum().item() == float(1 << 25)
