"""The native programs of tests/native stay buildable without a GPU.

The kernel self-test (tests/native/kernels_selftest, CUDA C++) and the
cuBLAS self-test (tests/native/blas_selftest, C, with the extension's
Python-free call sequences csrc/cuda/cuda_blas_gemm.c and cuda_blas_lt.c
that it runs as they are) need a GPU to run; scripts/gpu_check.sh builds
and runs them there.  Here each is compiled with the flags of that script,
so that a change of a launcher or of a call sequence that the self-tests
do not follow fails at once rather than on the GPU machine:

- every .cu file of the kernel self-test through nvcc's front end and
  device compiler to PTX (``--ptx``), one nvcc per file, in parallel: the
  full C++ checking of host and device code, without the host compiler
  and ptxas, which cost three times as much and find nothing more in these
  files (the kernels themselves are compiled by the extension's build);
- the cuBLAS self-test compiled and linked against the toolkit's cuBLAS
  and runtime, exactly as the script builds it (nothing is run).

Both need a CUDA toolkit and are left out of a CPU-only build's test run
(its CUDA build already ran them on the same sources).  The host-side
slack of the kernel self-test's gelu checks (gelu_slack.h) is checked by
running tests/native/gelu_slack_check.c."""
import glob
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from pygpu import _C

from conftest import ROOT
NATIVE = os.path.join(ROOT, "tests", "native")
CUDA_BUILD = _C._cuda_is_built()


def cuda_root():
    """The toolkit the build would use: CUDA_HOME / CUDA_PATH, nvcc on
    PATH, /usr/local/cuda (as setup.py finds it); None without one."""
    nvcc = shutil.which("nvcc")
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             nvcc and os.path.dirname(os.path.dirname(os.path.realpath(nvcc))),
             "/usr/local/cuda"]
    for root in roots:
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")) and \
                os.path.exists(os.path.join(root, "include", "cublasLt.h")):
            return root
    return None


def c_compiler():
    return shutil.which("gcc") or shutil.which("cc")


def native_env():
    # Neither program is Python: keep scripts/sanitize.sh's preloaded
    # sanitizer runtimes out of the compilers.
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


needs_toolkit = pytest.mark.skipif(
    not CUDA_BUILD or cuda_root() is None,
    reason="needs a CUDA build and its toolkit (the CPU-only flavour's run "
           "leaves the native CUDA programs to the CUDA build's)")


@needs_toolkit
def test_kernel_selftest_compiles(tmp_path):
    nvcc = os.path.join(cuda_root(), "bin", "nvcc")
    sources = sorted(glob.glob(os.path.join(NATIVE, "kernels_selftest",
                                            "*.cu")))
    assert len(sources) >= 10

    def compile_one(src):
        out = tmp_path / (os.path.basename(src) + ".ptx")
        # scripts/gpu_check.sh's flags, -arch=native as the Hopper target.
        r = subprocess.run([nvcc, "-std=c++17", "-O3", "-DPYGPU_WITH_CUDA",
                            "-I", os.path.join(ROOT, "csrc"), "--ptx",
                            "-arch=compute_90", src, "-o", str(out)],
                           capture_output=True, text=True, timeout=300,
                           env=native_env())
        return src, r

    jobs = max(1, len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(compile_one, sources))
    failures = [f"{os.path.relpath(src, ROOT)}:\n{r.stderr[-2000:]}"
                for src, r in results if r.returncode != 0]
    assert not failures, "\n".join(failures)


@needs_toolkit
def test_blas_selftest_builds(tmp_path):
    cc = c_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    root = cuda_root()
    lib = os.path.join(root, "lib64")
    if not os.path.isdir(lib):
        lib = os.path.join(root, "lib")
    sources = sorted(glob.glob(os.path.join(NATIVE, "blas_selftest", "*.c")))
    assert sources
    # The extension's own call sequences, which the self-test runs as-is.
    sources += [os.path.join(ROOT, "csrc", "cuda", f)
                for f in ("cuda_blas_gemm.c", "cuda_blas_lt.c",
                          "cuda_blas_load.c", "cuda_libfind.c")]
    exe = tmp_path / "blas_selftest"
    r = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-I",
                        os.path.join(ROOT, "csrc"), "-I",
                        os.path.join(root, "include"), *sources, "-L", lib,
                        f"-Wl,-rpath,{lib}", "-lcublasLt", "-lcublas",
                        "-lcudart", "-ldl", "-o", str(exe)],
                       capture_output=True, text=True, timeout=300,
                       env=native_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert exe.exists()


def test_kernel_selftest_gelu_slack(tmp_path):
    cc = c_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "gelu_slack_check"
    subprocess.run([cc, "-std=c99", "-O1", "-I", os.path.join(ROOT, "csrc"),
                    "-I", NATIVE, os.path.join(NATIVE, "gelu_slack_check.c"),
                    "-o", str(exe), "-lm"], check=True, env=native_env(),
                   timeout=120)
    out = subprocess.run([str(exe)], capture_output=True, text=True,
                         timeout=300, env=native_env())
    assert out.returncode == 0, out.stdout[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last == "16 passed, 0 failed", out.stdout[-3000:]


def test_fastdiv_matches_division(tmp_path):
    """kernels/fastdiv.h (the GPU index loops' division by multiply and
    shift) against C's / and % on the host."""
    cc = c_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "fastdiv_check"
    subprocess.run([cc, "-std=c99", "-O1", "-Wall", "-I",
                    os.path.join(ROOT, "csrc"),
                    os.path.join(NATIVE, "fastdiv_check.c"), "-o", str(exe)],
                   check=True, env=native_env(), timeout=120)
    out = subprocess.run([str(exe)], capture_output=True, text=True,
                         timeout=300, env=native_env())
    assert out.returncode == 0, out.stdout[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.endswith(" passed, 0 failed"), out.stdout[-3000:]
    assert int(last.split()[0]) > 10**6
