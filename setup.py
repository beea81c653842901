"""Build pygpu._C: C sources always, CUDA sources when a toolkit is found.

Environment:
  CUDA_HOME / CUDA_PATH   where the CUDA toolkit is (else nvcc on PATH, else
                          /usr/local/cuda); whether a GPU is present never
                          matters.
  PYGPU_NO_CUDA=1         build the CPU-only flavour even with a toolkit.
  PYGPU_FORCE_CUDA=1      fail the build when no toolkit is found.
  PYGPU_CUDA_ARCH         e.g. "80;90" or "90a": the SASS targets; PTX is
                          added for the highest one.  Default "80;90".
"""
import os
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = "csrc"

# Every csrc/*.c is built, except that the CUDA runtime glue (cuda_*.c)
# goes only into a CUDA build and its stand-in (cuda_none.c) only into a
# CPU-only one.
ALL_C = sorted(f for f in os.listdir(os.path.join(HERE, CSRC)) if f.endswith(".c"))
NO_CUDA_C = ["cuda_none.c"]
CUDA_C = [f for f in ALL_C if f.startswith("cuda_") and f not in NO_CUDA_C]
COMMON_C = [f for f in ALL_C if f not in CUDA_C and f not in NO_CUDA_C]


def _truthy(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def find_cuda():
    """The CUDA toolkit's root, or None."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")):
            return root
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda"
    return None


def cuda_arch_flags():
    archs = os.environ.get("PYGPU_CUDA_ARCH", "80;90")
    archs = [a.strip() for a in archs.replace(",", ";").split(";") if a.strip()]
    flags = []
    for a in archs:
        flags += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    top = max(archs, key=lambda a: int("".join(c for c in a if c.isdigit())))
    flags += ["-gencode", f"arch=compute_{top},code=compute_{top}"]
    return flags


def existing(names):
    return [os.path.join(CSRC, n) for n in names
            if os.path.exists(os.path.join(HERE, CSRC, n))]


CUDA_ROOT = None if _truthy("PYGPU_NO_CUDA") else find_cuda()
if CUDA_ROOT is None and _truthy("PYGPU_FORCE_CUDA"):
    sys.exit("pygpu: PYGPU_FORCE_CUDA=1 but no CUDA toolkit was found "
             "(set CUDA_HOME, or put nvcc on PATH)")
if CUDA_ROOT is None:
    why = "PYGPU_NO_CUDA=1" if _truthy("PYGPU_NO_CUDA") else "no CUDA toolkit found"
    print(f"pygpu: building the CPU-only flavour ({why})", file=sys.stderr)
else:
    print(f"pygpu: building with CUDA from {CUDA_ROOT}", file=sys.stderr)

CFLAGS = ["-std=c11", "-O3", "-Wall", "-Wno-unused-function",
          "-fno-strict-aliasing"]
sources = existing(COMMON_C)
define_macros = []
include_dirs = [CSRC, numpy.get_include()]
library_dirs, libraries, extra_link_args = [], [], []
cu_sources = []
if CUDA_ROOT:
    lib = os.path.join(CUDA_ROOT, "lib64")
    if not os.path.isdir(lib):
        lib = os.path.join(CUDA_ROOT, "lib")
    sources += existing(CUDA_C)
    cu_sources = sorted(os.path.join(CSRC, "kernels", f)
                        for f in os.listdir(os.path.join(HERE, CSRC, "kernels"))
                        if f.endswith(".cu"))
    define_macros.append(("PYGPU_WITH_CUDA", "1"))
    include_dirs.append(os.path.join(CUDA_ROOT, "include"))
    library_dirs.append(lib)
    # cudart statically (import needs no driver); cuBLAS shared, found
    # through an rpath to the toolkit.
    libraries += ["cublasLt", "cublas", "cudart_static", "stdc++", "rt", "dl",
                  "pthread"]
    extra_link_args += [f"-Wl,-rpath,{lib}"]
else:
    sources += existing(NO_CUDA_C)
    libraries += ["pthread"]


class BuildExt(build_ext):
    """build_ext that sends .cu sources to nvcc and links their objects."""

    def build_extension(self, ext):
        if cu_sources:
            nvcc = os.path.join(CUDA_ROOT, "bin", "nvcc")
            objdir = os.path.join(self.build_temp, "cu")
            os.makedirs(objdir, exist_ok=True)
            objects = []
            for src in cu_sources:
                obj = os.path.join(objdir, os.path.basename(src) + ".o")
                deps = [src] + [os.path.join(CSRC, "kernels", h)
                                for h in os.listdir(os.path.join(CSRC, "kernels"))
                                if h.endswith((".h", ".cuh"))]
                if self.force or not os.path.exists(obj) or any(
                        os.path.getmtime(d) > os.path.getmtime(obj) for d in deps):
                    cmd = [nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC",
                           "-DPYGPU_WITH_CUDA=1", "-I", CSRC,
                           *cuda_arch_flags(), "-c", src, "-o", obj]
                    print(" ".join(cmd))
                    subprocess.check_call(cmd)
                objects.append(obj)
            ext.extra_objects = objects
        super().build_extension(ext)


ext = Extension(
    "pygpu._C",
    sources=sources,
    include_dirs=include_dirs,
    define_macros=define_macros,
    library_dirs=library_dirs,
    libraries=libraries,
    extra_compile_args=CFLAGS,
    extra_link_args=extra_link_args,
    depends=[os.path.join(CSRC, h) for h in os.listdir(os.path.join(HERE, CSRC))
             if h.endswith(".h")],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
