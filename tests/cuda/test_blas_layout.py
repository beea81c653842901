"""The row-major -> cuBLAS column-major mapping (csrc/cuda/blas_layout.h) is
plain C: check it on the CPU by emulating cuBLAS's GEMM with loops
(tests/native/blas_layout_check.c), so the mapping is tested without a GPU."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
CHECK = os.path.join(ROOT, "tests", "native", "blas_layout_check.c")


def test_layout_mapping(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the layout check")
    exe = tmp_path / "layout_check"
    # Neither program is Python: keep scripts/sanitize.sh's preloaded
    # sanitizer runtimes out of them.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([cc, "-std=c99", "-O1", "-I", os.path.join(ROOT, "csrc"),
                    CHECK,
                    "-o", str(exe)], check=True, env=env)
    out = subprocess.run([str(exe)], capture_output=True, text=True,
                         timeout=300, env=env)
    last = out.stdout.strip().splitlines()[-1]
    assert out.returncode == 0, out.stdout[-2000:]
    passed, failed = (int(p.split()[0]) for p in last.split(","))
    assert failed == 0 and passed > 1000, last
