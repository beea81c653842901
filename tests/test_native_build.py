"""The cuBLAS self-test (tests/native/blas_selftest) needs a GPU to run;
without one it is still compiled here, against the toolkit's headers when
they are present, with the extension's Python-free call sequences
(csrc/cuda/cuda_blas_gemm.c, cuda_blas_lt.c) that it runs as they are.  scripts/gpu_check.sh builds and runs it, and the kernel
self-test, on a GPU machine."""
import glob
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cuda_include():
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                 "/usr/local/cuda"):
        if base and os.path.exists(os.path.join(base, "include",
                                                "cublasLt.h")):
            return os.path.join(base, "include")
    return None


def test_blas_selftest_compiles():
    cc = shutil.which("cc") or shutil.which("gcc")
    inc = cuda_include()
    if cc is None or inc is None:
        pytest.skip("no C compiler or no CUDA toolkit headers")
    sources = sorted(glob.glob(os.path.join(ROOT, "tests", "native",
                                            "blas_selftest", "*.c")))
    assert sources
    # The extension's own call sequences, which the self-test runs as-is.
    sources += [os.path.join(ROOT, "csrc", "cuda", f)
                for f in ("cuda_blas_gemm.c", "cuda_blas_lt.c")]
    r = subprocess.run([cc, "-std=c11", "-fsyntax-only", "-Wall", "-I",
                        os.path.join(ROOT, "csrc"), "-I", inc, *sources],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
