"""Where pygpu finds cuBLAS at run time (no GPU needed): pip's NVIDIA
packages next to pygpu first, then the system's loader, then CUDA_HOME; no
CUDA library named by the extension itself, no path of the build machine
in it; and without cuBLAS, pygpu still imports and works on the CPU."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import pygpu

CUDA_BUILD = pygpu.backends.cuda.is_built()
needs_cuda_build = pytest.mark.skipif(not CUDA_BUILD,
                                      reason="a CPU-only build")
EXT = pygpu._C.__file__


def run_py(code, env=None, prefix=()):
    return subprocess.run([*prefix, sys.executable, "-c",
                           textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120,
                          env=env)


def test_cpu_only_build_says_so():
    libs = pygpu.backends.cuda.libraries()
    assert set(libs) == {"cublas", "cublasLt", "error"}
    if CUDA_BUILD:
        assert (libs["error"] is None) == (libs["cublas"] is not None)
    else:
        assert libs == {"cublas": None, "cublasLt": None,
                        "error": "pygpu was built without CUDA"}


def readelf_dynamic():
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    out = subprocess.run([readelf, "-d", EXT], capture_output=True,
                         text=True, check=True).stdout
    return out


def test_extension_names_no_cuda_library_and_no_rpath():
    out = readelf_dynamic()
    needed = [line.split("[")[1].rstrip("]") for line in out.splitlines()
              if "(NEEDED)" in line]
    assert needed, out
    for lib in needed:
        assert not lib.startswith(("libcublas", "libcudart", "libnccl")), lib
    assert "RPATH" not in out and "RUNPATH" not in out, out


@needs_cuda_build
def test_found_on_this_machine_or_says_how_to_install():
    libs = pygpu.backends.cuda.libraries()
    if libs["error"] is not None:
        assert "libcublas" in libs["error"]
        assert 'pip install "nvidia-cublas>=' in libs["error"]
        return
    for key in ("cublas", "cublasLt"):
        assert os.path.isfile(libs[key]), libs
    assert os.path.basename(libs["cublasLt"]).startswith("libcublasLt.so.")
    # cuBLAS comes from cuBLASLt's folder, so the two match.
    assert (os.path.dirname(os.path.realpath(libs["cublas"])) ==
            os.path.dirname(os.path.realpath(libs["cublasLt"])))


@needs_cuda_build
def test_pip_packages_next_to_pygpu_come_first(tmp_path):
    """A copy of the package in a fake site-packages beside an
    nvidia/cu<major>/lib holding (links to) this machine's cuBLAS: those
    are loaded, ahead of the system's."""
    libs = pygpu.backends.cuda.libraries()
    if libs["error"] is not None:
        pytest.skip("no cuBLAS on this machine: " + libs["error"])
    major = os.path.basename(libs["cublasLt"]).split(".so.")[1].split(".")[0]
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(pygpu.__file__), site / "pygpu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    lib = site / "nvidia" / f"cu{major}" / "lib"
    lib.mkdir(parents=True)
    for key in ("cublas", "cublasLt"):
        real = os.path.realpath(libs[key])
        os.symlink(real, lib / os.path.basename(libs[key]))
    env = dict(os.environ, PYTHONPATH=str(site))
    r = run_py("""
        import pygpu
        assert pygpu.__file__.startswith(%r), pygpu.__file__
        libs = pygpu.backends.cuda.libraries()
        print(libs["cublasLt"]); print(libs["cublas"])
        """ % str(site), env=env)
    assert r.returncode == 0, r.stderr
    lt, blas = r.stdout.split()
    assert lt == str(lib / os.path.basename(libs["cublasLt"]))
    assert blas == str(lib / os.path.basename(libs["cublas"]))


def toolkit_dirs():
    """The folders this machine's cuBLAS comes from (to hide)."""
    libs = pygpu.backends.cuda.libraries()
    if libs["error"] is not None:
        pytest.skip("no cuBLAS on this machine: " + libs["error"])
    return sorted({os.path.dirname(os.path.realpath(libs[k]))
                   for k in ("cublas", "cublasLt")})


@needs_cuda_build
def test_without_cuda_libraries_pygpu_still_imports(tmp_path):
    """In a mount namespace where an empty folder hides this machine's
    cuBLAS: import works, CPU tensors work, CUDA is unavailable and
    libraries() names the missing library and how to install it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare")
    empty = tmp_path / "empty"
    empty.mkdir()
    mounts = " && ".join(f"mount --bind {empty} {d}" for d in toolkit_dirs())
    probe = subprocess.run([unshare, "-m", "--propagation", "private", "sh",
                            "-c", mounts], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here: " + probe.stderr)
    code = textwrap.dedent("""
        import pygpu
        libs = pygpu.backends.cuda.libraries()
        assert libs["cublas"] is None and libs["cublasLt"] is None, libs
        print(libs["error"])
        assert not pygpu.cuda.is_available()
        x = pygpu.arange(6.0).reshape(2, 3)
        assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]]
        """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")}
    r = subprocess.run([unshare, "-m", "--propagation", "private", "sh",
                        "-c", f'{mounts} && exec "$0" -c "$1"',
                        sys.executable, code],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    why = r.stdout.strip()
    assert why.startswith("libcublasLt.so.") and "could not be loaded" in why
    assert 'pip install "nvidia-cublas>=' in why
    assert "CUDA_HOME" in why
