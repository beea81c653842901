#!/usr/bin/env bash
# gpu_check.sh OUTDIR: the whole check on a machine with a GPU and no
# network, in one run.  Builds in place without build isolation or
# downloads, runs the suite with --require-gpu (a skipped GPU test is a
# failure), the demo, the kernel and cuBLAS self-tests, the benchmarks
# (pygpu against torch/cupy/numpy where they import) and the compute tests
# under compute-sanitizer memcheck with the caching allocator off, and
# writes OUTDIR/gpu_check.json beside the full logs and benchmark JSON.
#
# GPU_CHECK_SKIP lists stages to leave out ("tests selftests bench
# sanitizer"); the build always runs and is quick when build/ is kept.  All
# stages take about ten minutes, so under a 10-minute limit per command run
# it twice: GPU_CHECK_SKIP="bench sanitizer", then GPU_CHECK_SKIP="tests
# selftests".  PYGPU_CUDA_ARCH (default here: 90, Hopper) picks targets.
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
CUDA_ROOT=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
NVCC=${NVCC:-$CUDA_ROOT/bin/nvcc}
export PYGPU_CUDA_ARCH=${PYGPU_CUDA_ARCH:-90}
SKIP=" ${GPU_CHECK_SKIP:-} "
TMP=$(mktemp -d)
declare -A took

stage() { # stage NAME: remember when it started; false if skipped
    STAGE=$1
    STAGE_T0=$(date +%s)
    [[ "$SKIP" != *" $1 "* ]]
}
done_stage() {
    took[$STAGE]=$(( $(date +%s) - STAGE_T0 ))
}

stage build
(
    echo "== pip install -e . (no isolation, no index) =="
    PYGPU_FORCE_CUDA=1 "$PY" -m pip install -v --no-build-isolation \
        --no-deps --no-index -e . 2>&1 | tail -n 40
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "== pip failed ($rc): setup.py build_ext --inplace =="
        PYGPU_FORCE_CUDA=1 "$PY" setup.py build_ext --inplace 2>&1 | tail -n 40
        rc=${PIPESTATUS[0]}
    fi
    exit "$rc"
) >"$OUT/build.log" 2>&1
build_rc=$?
done_stage

tests_rc=0
demo_rc=0
if stage tests; then
    "$PY" -m pytest -q -rs --require-gpu tests --junitxml="$OUT/junit.xml" \
        >"$OUT/tests.log" 2>&1
    tests_rc=$?
    "$PY" -m pygpu >"$OUT/demo.log" 2>&1
    demo_rc=$?
    done_stage
fi

# Python-free self-tests of the kernels and of the cuBLAS call sequences.
selftest_rc=0
if stage selftests; then
{
    $NVCC -std=c++17 -O3 -DPYGPU_WITH_CUDA -I csrc -arch=native \
        benchmarks/kernels_selftest/*.cu csrc/kernels/*.cu \
        -o "$TMP/kselftest" && "$TMP/kselftest"
} >"$OUT/kernels_selftest.log" 2>&1 || selftest_rc=1
{
    gcc -std=c11 -O2 -I csrc -I "$CUDA_ROOT/include" \
        benchmarks/blas_selftest/*.c -L "$CUDA_ROOT/lib64" \
        -Wl,-rpath,"$CUDA_ROOT/lib64" -lcublasLt -lcublas -lcudart \
        -o "$TMP/blasselftest" && "$TMP/blasselftest"
} >"$OUT/blas_selftest.log" 2>&1 || selftest_rc=1
done_stage
fi

bench_rc=0
if stage bench; then
    timeout 420 "$PY" benchmarks/bench_ops.py --json "$OUT/bench_ops.json" \
        >"$OUT/bench_ops.log" 2>&1 || bench_rc=1
    timeout 120 "$PY" benchmarks/bench_allocator.py \
        --json "$OUT/bench_allocator.json" >"$OUT/bench_allocator.log" 2>&1 \
        || bench_rc=1
    done_stage
fi

sanitizer_rc=0
if stage sanitizer; then
    SAN=$CUDA_ROOT/bin/compute-sanitizer
    [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
    if [ -z "$SAN" ]; then
        echo "compute-sanitizer not found: memcheck not run" \
            >"$OUT/sanitizer.log"
        sanitizer_rc=2
    else
        PYGPU_NO_CUDA_CACHING=1 timeout 420 "$SAN" --tool memcheck \
            --error-exitcode 99 --target-processes all \
            "$PY" -m pytest -q -x -k cuda tests/test_elementwise.py \
            tests/test_matmul.py tests/test_reduce.py tests/test_views.py \
            >"$OUT/sanitizer.log" 2>&1 || sanitizer_rc=1
    fi
    done_stage
fi
rm -rf "$TMP"

timings=""
for k in "${!took[@]}"; do timings+="$k=${took[$k]} "; done

"$PY" - "$OUT" "$build_rc" "$tests_rc" "$demo_rc" "$selftest_rc" \
    "$bench_rc" "$sanitizer_rc" "$timings" <<'PYEOF'
import datetime, json, os, subprocess, sys
import xml.etree.ElementTree as ET
out = sys.argv[1]
rcs = dict(zip(["build_rc", "tests_rc", "demo_rc", "selftest_rc",
                "bench_rc", "sanitizer_rc"], map(int, sys.argv[2:8])))
seconds = {k: int(v) for k, v in
           (kv.split("=") for kv in sys.argv[8].split())}


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except Exception:
        return ""


def last_line(name):
    try:
        with open(os.path.join(out, name)) as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1] if lines else ""
    except OSError:
        return ""


counts = {"passed": 0, "failed": 0, "skipped": 0}
try:
    suite = ET.parse(os.path.join(out, "junit.xml")).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total = int(suite.get("tests", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    counts = {"passed": total - failed - skipped, "failed": failed,
              "skipped": skipped}
except Exception as e:
    counts["error"] = f"no junit results: {e}"
runtime = ""
try:
    import pygpu
    v = pygpu._C._cuda_versions()["runtime"]
    runtime = f"{v // 1000}.{(v % 1000) // 10}"
except Exception:
    pass
summary = {
    "commit": sh("git rev-parse HEAD"),
    "dirty": bool(sh("git status --porcelain --untracked-files=no")),
    "date": datetime.datetime.now(datetime.timezone.utc)
    .isoformat(timespec="seconds"),
    "device": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
    "driver": sh("nvidia-smi --query-gpu=driver_version "
                 "--format=csv,noheader | head -1"),
    "cuda_runtime": runtime,
    "python": sys.version.split()[0],
    "tests": counts,
    "kernels_selftest": last_line("kernels_selftest.log"),
    "blas_selftest": last_line("blas_selftest.log"),
    "sanitizer": last_line("sanitizer.log"),
    "stage_seconds": seconds,
    **rcs,
}
with open(os.path.join(out, "gpu_check.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(json.dumps(summary, indent=2))
PYEOF
exit $(( build_rc || tests_rc || demo_rc || selftest_rc || bench_rc || sanitizer_rc ))
