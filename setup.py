"""Build pygpu._C: C sources always, CUDA sources when a toolkit is found.

Environment:
  CUDA_HOME / CUDA_PATH   where the CUDA toolkit is (else nvcc on PATH, else
                          /usr/local/cuda); whether a GPU is present never
                          matters.
  NCCL_HOME               where NCCL's include/nccl.h is, when not in the
                          toolkit nor in the building Python's nvidia-nccl-cu*
                          pip package (its library is loaded at run time).
  PYGPU_CUDA_DEPS=0       a CUDA build without the nvidia-cublas dependency
                          (cuBLAS is then found in the toolkit at run time).
  PYGPU_STRIP=0           keep the symbols of a regular install or wheel
                          (stripped otherwise; in-place, editable and
                          sanitized builds always keep them).
  PYGPU_NO_CUDA=1         build the CPU-only flavour even with a toolkit.
  PYGPU_FORCE_CUDA=1      fail the build when no toolkit is found.
  PYGPU_CUDA_ARCH         e.g. "80;90" or "90a": the SASS targets; PTX is
                          added for the highest one.  Default "80;90".
  PYGPU_BUILD_JOBS        how many compilers run at once (default: the
                          number of usable cores).
  PYGPU_SANITIZE=1        compile and link the C sources with AddressSanitizer
                          and UndefinedBehaviorSanitizer (-O1 -g), in a build
                          folder of its own (flavour "<flavour>-asan"), and
                          without Python's -fwrapv, so that a signed
                          overflow is reported; the interpreter then needs
                          libasan preloaded (scripts/sanitize.sh).

Each flavour (and Python) builds in its own folder, build/<flavour>-<platform>-
<python>/, kept between builds whatever temporary folder pip gives the build:
an object is compiled again only when its source or a csrc header it includes
(directly or through another) is newer, everything when the compile
commands change (flags.json), and the extension is linked again only when
an object is newer or the link command changed.  Whatever was reused,
the extension of the flavour asked for is copied to where setuptools wants it.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    from setuptools.errors import CompileError
except ImportError:  # setuptools < 59
    from distutils.errors import CompileError

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = "csrc"


def read_version():
    """pygpu/version.py's __version__, the one place the version is written."""
    with open(os.path.join(HERE, "pygpu", "version.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)



def _walk(top, suffixes):
    """Paths under csrc/top (relative to csrc) whose names end in suffixes,
    every layer folder included."""
    out = []
    for d, _, files in os.walk(os.path.join(HERE, CSRC, top)):
        rel = os.path.relpath(d, os.path.join(HERE, CSRC))
        out += [os.path.normpath(os.path.join(rel, f)) for f in files
                if f.endswith(suffixes)]
    return sorted(out)


# Every .c file of csrc/ and its layer folders is built, except that the
# CUDA glue (cuda_*.c) goes only into a CUDA build and its stand-in
# (cuda_none.c) only into a CPU-only one; likewise the NCCL layer
# (nccl_*.c, in a CUDA build whose toolkit has nccl.h) and its stand-in
# (nccl_none.c, everywhere else).
ALL_C = _walk("", ".c")
NO_CUDA_C = [f for f in ALL_C if os.path.basename(f) == "cuda_none.c"]
CUDA_C = [f for f in ALL_C if os.path.basename(f).startswith("cuda_")
          and f not in NO_CUDA_C]
NO_NCCL_C = [f for f in ALL_C if os.path.basename(f) == "nccl_none.c"]
NCCL_C = [f for f in ALL_C if os.path.basename(f).startswith("nccl_")
          and f not in NO_NCCL_C]
COMMON_C = [f for f in ALL_C if f not in CUDA_C + NO_CUDA_C + NCCL_C +
            NO_NCCL_C]


def _truthy(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def say(msg):
    """One line per build stage, on stderr (pip shows it with -v)."""
    print(f"pygpu: {msg}", file=sys.stderr, flush=True)


def find_cuda():
    """The CUDA toolkit's root (one with bin/nvcc and the runtime's
    header; an nvcc on PATH that is a wrapper script elsewhere does not
    count), or None."""
    nvcc = shutil.which("nvcc")
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             nvcc and os.path.dirname(os.path.dirname(os.path.realpath(nvcc))),
             "/usr/local/cuda"]
    for root in roots:
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")) and \
                os.path.exists(os.path.join(root, "include",
                                            "cuda_runtime_api.h")):
            return root
    return None


def nccl_wheel_roots():
    """nvidia/nccl of the building Python's nvidia-nccl-cu* pip packages
    (the folders of the nvidia namespace package, in import order), found
    without importing anything."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [os.path.join(d, "nccl") for d in spec.submodule_search_locations
            if os.path.isdir(os.path.join(d, "nccl"))]


def find_nccl(cuda_root):
    """The include dir of NCCL's header: NCCL_HOME's, else the CUDA
    toolkit's own, else the nvidia-nccl-cu* pip package's of the Python
    building pygpu; None when no nccl.h is found.  Only the header is
    needed to build: the library is loaded at run time."""
    roots = [os.environ.get("NCCL_HOME"), cuda_root, *nccl_wheel_roots()]
    for root in roots:
        if root and os.path.exists(os.path.join(root, "include", "nccl.h")):
            return os.path.join(root, "include")
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


def cublas_major(root):
    """The major version of the toolkit's cuBLAS (its cublas_api.h), or
    None when it cannot be read."""
    path = os.path.join(root, "include", "cublas_api.h")
    try:
        with open(path, encoding="utf-8") as f:
            return int(re.search(r"#define CUBLAS_VER_MAJOR (\d+)",
                                 f.read()).group(1))
    except (OSError, AttributeError):
        say(f"cannot read cuBLAS's version from {path}: the nvidia-cublas "
            f"dependency is left out")
        return None


def existing(names):
    return [os.path.join(CSRC, n) for n in names
            if os.path.exists(os.path.join(HERE, CSRC, n))]


def build_jobs():
    jobs = os.environ.get("PYGPU_BUILD_JOBS", "").strip()
    if jobs:
        return max(1, int(jobs))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


CUDA_ROOT = None if _truthy("PYGPU_NO_CUDA") else find_cuda()
if CUDA_ROOT is None and _truthy("PYGPU_FORCE_CUDA"):
    sys.exit("pygpu: PYGPU_FORCE_CUDA=1 but no CUDA toolkit was found "
             "(set CUDA_HOME, or put nvcc on PATH)")
if CUDA_ROOT is None:
    why = "PYGPU_NO_CUDA=1" if _truthy("PYGPU_NO_CUDA") else "no CUDA toolkit found"
    say(f"building the CPU-only flavour ({why})")
else:
    say(f"building with CUDA from {CUDA_ROOT}")

FLAVOUR = "cuda" if CUDA_ROOT else "cpu"
SANITIZE = _truthy("PYGPU_SANITIZE")
if SANITIZE:
    FLAVOUR += "-asan"
    say("with AddressSanitizer and UndefinedBehaviorSanitizer")
BUILD_DIR = os.path.join(
    HERE, "build",
    f"{FLAVOUR}-{sysconfig.get_platform()}-{sys.implementation.cache_tag}")
HEADERS = [os.path.join(CSRC, h) for h in _walk("", (".h", ".cuh"))]

# No one reads the floating-point exception flags or errno, so gcc may
# turn compares into selects and inline sqrt, and vectorize loops holding
# them (-fno-trapping-math, -fno-math-errno); results are unchanged.
CFLAGS = ["-std=c11", "-O3", "-Wall", "-Wno-unused-function",
          "-fno-strict-aliasing", "-fno-trapping-math", "-fno-math-errno"]
if SANITIZE:
    SANITIZERS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                  "-fno-sanitize-recover=undefined"]
    CFLAGS = [f for f in CFLAGS if f != "-O3"] + ["-O1", "-g", *SANITIZERS]
sources = existing(COMMON_C)
define_macros = [("PYGPU_VERSION", f'"{read_version()}"')]
# Headers are named from csrc: "core/pygpu.h", "kernels/kernels.h".
include_dirs = [CSRC, numpy.get_include()]
library_dirs, libraries, extra_link_args = [], [], []
if SANITIZE:
    extra_link_args += SANITIZERS
cu_sources = []
NVCC_CMD = []
CUBLAS_MAJOR = None
if CUDA_ROOT:
    lib = os.path.join(CUDA_ROOT, "lib64")
    if not os.path.isdir(lib):
        lib = os.path.join(CUDA_ROOT, "lib")
    CUBLAS_MAJOR = cublas_major(CUDA_ROOT)
    sources += existing(CUDA_C)
    cu_sources = [os.path.join(CSRC, f) for f in _walk("kernels", ".cu")]
    NVCC_CMD = [os.path.join(CUDA_ROOT, "bin", "nvcc"), "-std=c++17", "-O3",
                "-Xcompiler", "-fPIC", "-DPYGPU_WITH_CUDA=1", "-I", CSRC,
                *cuda_arch_flags()]
    define_macros.append(("PYGPU_WITH_CUDA", "1"))
    include_dirs.append(os.path.join(CUDA_ROOT, "include"))
    library_dirs.append(lib)
    # cudart statically (import needs no driver); cuBLAS, cuBLASLt and NCCL
    # are loaded at run time (csrc/cuda/cuda_libs.h says where from), so
    # the extension names no CUDA library and no path of this machine.
    libraries += ["cudart_static", "stdc++", "rt", "dl", "pthread"]
    nccl = find_nccl(CUDA_ROOT)
    if nccl:
        say(f"with NCCL's header from {nccl} (the library is loaded at "
            f"run time)")
        sources += existing(NCCL_C)
        include_dirs.append(nccl)
    else:
        say("without NCCL (no nccl.h in the CUDA toolkit or an "
            "nvidia-nccl-cu* pip package; set NCCL_HOME)")
        sources += existing(NO_NCCL_C)
        define_macros.append(
            ("PYGPU_NO_NCCL_MESSAGE",
             '"pygpu was built without NCCL (no nccl.h was found)"'))
else:
    sources += existing(NO_CUDA_C + NO_NCCL_C)
    libraries += ["pthread"]


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return -1.0


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class _IncludeGraph:
    """The csrc headers a source includes, directly or through another: a
    quoted include is looked up next to the including file, then from
    csrc/ (one found in neither is a system or toolkit header)."""

    def __init__(self):
        self._direct = {}

    def _includes(self, path):
        if path not in self._direct:
            try:
                with open(path, encoding="utf-8") as f:
                    names = _INCLUDE.findall(f.read())
            except OSError:
                names = []
            found = []
            for name in names:
                for base in (os.path.dirname(path), CSRC):
                    cand = os.path.normpath(os.path.join(base, name))
                    if os.path.isfile(cand):
                        found.append(cand)
                        break
            self._direct[path] = found
        return self._direct[path]

    def closure(self, src):
        seen, todo = set(), [src]
        while todo:
            for h in self._includes(todo.pop()):
                if h not in seen:
                    seen.add(h)
                    todo.append(h)
        return seen


def _venv_own_include(d):
    """Whether d is a virtual environment's own include folder, which
    setuptools adds to every build in it: empty unless a package put
    headers there, so that a second venv (or pip's build environment)
    does not make the objects look stale."""
    if sys.prefix == sys.base_prefix:
        return False
    own = os.path.join(sys.prefix, "include")
    if os.path.normpath(d) != os.path.normpath(own):
        return False
    for _, _, files in os.walk(own):
        if any(f.endswith(".h") for f in files):
            return False
    return True


class BuildExt(build_ext):
    """build_ext with a persistent per-flavour build folder, objects reused
    when up to date, and the C and CUDA sources compiled in parallel."""

    def build_extension(self, ext):
        # One line per compiled file (ours, below), not the compiler's
        # whole command; a failing command is shown with its error.
        def run(cmd, **kwargs):
            if subprocess.call([os.fspath(c) for c in cmd]) != 0:
                raise CompileError(
                    f"command failed: {' '.join(map(os.fspath, cmd))}")
        # spawn: setuptools < 75; call: later ones.
        self.compiler.spawn = self.compiler.call = run
        # An interpreter built with a shared libpython (pyenv's, say) adds
        # an rpath to its own lib folder to every link: an extension needs
        # none, and a wheel must not carry a path of this machine.
        self.compiler.linker_so = [
            f for f in self.compiler.linker_so
            if not f.startswith(("-Wl,-rpath", "-Wl,-R"))]
        if SANITIZE:
            # Python's own CFLAGS carry -fwrapv (signed overflow wraps), so
            # UndefinedBehaviorSanitizer would never see a signed overflow:
            # the sanitized objects are compiled without it.
            self.compiler.compiler_so = [
                f for f in self.compiler.compiler_so if f != "-fwrapv"]
        os.makedirs(BUILD_DIR, exist_ok=True)
        stamp_path = os.path.join(BUILD_DIR, "flags.json")
        linked = os.path.join(BUILD_DIR, os.path.basename(
            self.get_ext_filename(ext.name)))
        stamp = self._stamp(ext)
        try:
            with open(stamp_path, encoding="utf-8") as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
        same_flags = old.get("compile") == stamp["compile"]
        same_link = same_flags and old.get("link") == stamp["link"]
        if not same_link or self.force:
            # Nothing here may be trusted until a build with these flags
            # has gone through: take the stamp away first.
            if os.path.exists(stamp_path):
                os.remove(stamp_path)
        rebuild_all = not same_flags or self.force
        includes = _IncludeGraph()

        def stale(src, obj):
            t = _mtime(obj)
            return (rebuild_all or t < _mtime(src)
                    or any(t < _mtime(h) for h in includes.closure(src)))

        c_jobs = [(s, self.compiler.object_filenames([s], output_dir=BUILD_DIR)[0])
                  for s in sorted(ext.sources)]
        cu_jobs = [(s, os.path.join(BUILD_DIR, s + ".o")) for s in cu_sources]
        todo_c = [j for j in c_jobs if stale(*j)]
        todo_cu = [j for j in cu_jobs if stale(*j)]
        objects = [o for _, o in cu_jobs + c_jobs]
        t0 = time.perf_counter()
        if todo_c or todo_cu:
            jobs = min(build_jobs(), len(todo_c) + len(todo_cu))
            what = _count(len(todo_c), "C file")
            if cu_jobs:
                what += " and " + _count(len(todo_cu), "CUDA file")
            say(f"compiling {what} on {_count(jobs, 'core')} into "
                f"{os.path.relpath(BUILD_DIR, HERE)}"
                f"{'' if rebuild_all else ' (the rest are up to date)'}")
            self._compile_all(ext, todo_c, todo_cu, jobs)
        else:
            say(f"all {len(objects)} objects in "
                f"{os.path.relpath(BUILD_DIR, HERE)} are up to date")
        if (not same_link or rebuild_all
                or _mtime(linked) < max(_mtime(o) for o in objects)):
            say(f"linking {os.path.basename(linked)}")
            self.compiler.link_shared_object(
                objects, linked,
                libraries=self.get_libraries(ext),
                library_dirs=ext.library_dirs,
                runtime_library_dirs=ext.runtime_library_dirs,
                extra_postargs=ext.extra_link_args,
                export_symbols=self.get_export_symbols(ext),
                debug=self.debug,
                target_lang=self.compiler.detect_language(ext.sources))
        with open(stamp_path, "w", encoding="utf-8") as f:
            json.dump(stamp, f, indent=1)
        # A fresh copy (new mtime) so that setuptools' copy back into the
        # source tree of an editable install is never skipped as up to date.
        ext_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(ext_path) or ".", exist_ok=True)
        shutil.copy(linked, ext_path + ".tmp")
        if self._release():
            self._strip(ext_path + ".tmp")
        os.replace(ext_path + ".tmp", ext_path)
        say(f"{FLAVOUR} build of {ext.name} ready "
            f"({time.perf_counter() - t0:.1f} s)")

    def run(self):
        # setuptools builds an in-place extension with inplace turned off,
        # then copies it: remember what was asked.
        self._asked_inplace = bool(self.inplace)
        super().run()

    def _release(self):
        """A regular install or a wheel: neither in place nor editable
        (those keep their symbols for debuggers), nor sanitized."""
        return not (getattr(self, "_asked_inplace", self.inplace)
                    or getattr(self, "editable_mode", False)
                    or SANITIZE or os.environ.get("PYGPU_STRIP") == "0")

    @staticmethod
    def _strip(path):
        """Strip the copy that is installed (the build folder's keeps its
        symbols); a machine without strip installs it as it is."""
        strip = shutil.which("strip")
        if strip is None:
            say("no strip found: the extension keeps its symbols")
            return
        before = os.path.getsize(path)
        subprocess.check_call([strip, "--strip-unneeded", path])
        say(f"stripped {os.path.basename(path)[:-4]}: {before >> 20} MB -> "
            f"{os.path.getsize(path) >> 20} MB")

    def _stamp(self, ext):
        """Everything besides the sources that goes into the objects
        ("compile": a change compiles everything again) and into the link
        ("link": a change links again); the NumPy headers by version,
        since pip's build environment moves them to a new folder every
        time."""
        np_inc = numpy.get_include()
        return {
            "compile": {
                "flavour": FLAVOUR,
                "python": sysconfig.get_config_var("EXT_SUFFIX"),
                "numpy": numpy.__version__,
                "cc": list(self.compiler.compiler_so),
                "cflags": ext.extra_compile_args,
                "macros": [list(m) for m in ext.define_macros],
                "include_dirs": [
                    d for d in ext.include_dirs + self.include_dirs
                    if d != np_inc and not _venv_own_include(d)],
                "nvcc": NVCC_CMD,
            },
            "link": {
                "ld": list(self.compiler.linker_so),
                "sources": sorted(ext.sources) + cu_sources,
                "libraries": self.get_libraries(ext),
                "library_dirs": ext.library_dirs,
                "link_args": ext.extra_link_args,
            },
        }

    def _compile_all(self, ext, todo_c, todo_cu, jobs):
        done = [0]
        total = len(todo_c) + len(todo_cu)
        lock = threading.Lock()

        def report(src, t0):
            with lock:
                done[0] += 1
                say(f"[{done[0]}/{total}] {src} "
                    f"({time.perf_counter() - t0:.1f} s)")

        def cc(src, obj):
            t0 = time.perf_counter()
            self.compiler.compile(
                [src], output_dir=BUILD_DIR, macros=ext.define_macros,
                include_dirs=ext.include_dirs, debug=self.debug,
                extra_postargs=ext.extra_compile_args)
            report(src, t0)

        def nvcc(src, obj):
            t0 = time.perf_counter()
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            cmd = [*NVCC_CMD, "-c", src, "-o", obj]
            if subprocess.call(cmd) != 0:
                raise CompileError(f"nvcc failed on {src}: {' '.join(cmd)}")
            report(src, t0)

        for _, obj in todo_c + todo_cu:
            os.makedirs(os.path.dirname(obj), exist_ok=True)
        # The CUDA files first: they take longest.
        work = [(nvcc, j) for j in todo_cu] + [(cc, j) for j in todo_c]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(fn, *job) for fn, job in work]
            errors = []
            for fut in futures:
                try:
                    fut.result()
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
                    for f in futures:
                        f.cancel()
        if errors:
            raise errors[0]


ext = Extension(
    "pygpu._C",
    sources=sources,
    include_dirs=include_dirs,
    define_macros=define_macros,
    library_dirs=library_dirs,
    libraries=libraries,
    extra_compile_args=CFLAGS,
    extra_link_args=extra_link_args,
    depends=HEADERS,
)

# A CUDA build brings cuBLAS (cuBLAS and cuBLASLt, one pip package) as a
# dependency, the version of the toolkit it was built with, so that a
# wheel needs only a driver; PYGPU_CUDA_DEPS=0 leaves it out (the
# toolkit's, or CUDA_HOME's, is found at run time instead).  NCCL is
# optional: pip install nvidia-nccl-cu<major>.
install_requires = ["numpy>=1.26"]
if (CUDA_ROOT and CUBLAS_MAJOR is not None
        and os.environ.get("PYGPU_CUDA_DEPS", "1").strip() != "0"):
    install_requires.append(
        f"nvidia-cublas>={CUBLAS_MAJOR},<{CUBLAS_MAJOR + 1}")

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt},
      install_requires=install_requires)
