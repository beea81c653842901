#!/usr/bin/env bash
# gpu_check.sh OUTDIR: the whole check on a machine with a GPU and no
# network, in one run.  Builds in place without build isolation or
# downloads, runs the smoke stage (scripts/gpu_smoke.py: one call of every
# op family on CUDA against the CPU, a line each, under a minute), the
# suite with --require-gpu (a skipped GPU test is a failure), the demo,
# the kernel and cuBLAS self-tests, the benchmarks (pygpu against
# torch/cupy/numpy where they import) and the compute tests under
# compute-sanitizer memcheck with the caching allocator off, and writes
# OUTDIR/gpu_check.json beside the full logs and benchmark JSON.
#
# Every step runs under `timeout`, and the whole run keeps within a budget
# (GPU_CHECK_BUDGET seconds, default 560: under a 10-minute limit per
# command), so a hang costs one step, not the run.  With pytest-xdist the
# suite is one pytest over GPU_CHECK_WORKERS processes (default 8; a
# worker that crashes is replaced, its test reported), GPU_CHECK_SUITE_TIMEOUT
# (default 400 s) in all; without it, one pytest per test file
# (GPU_CHECK_FILE_TIMEOUT, default 240 s); tests marked gpu_exclusive
# (they take all of the GPU's memory) run after the workers, alone.  The
# sanitizer pass runs one
# pytest per file (180 s each).  pytest's faulthandler dumps the stack of a
# test still running after GPU_CHECK_TEST_TIMEOUT (default 120 s) into the
# log.  Each step ends as ok, fail, timeout or skipped (no time left, or
# not wanted), and gpu_check.json, rewritten after every stage and on
# exit, says which.
#
# GPU_CHECK_SKIP lists stages to leave out ("build smoke tests selftests
# bench sanitizer fuzz runner").  All stages take about ten minutes, so
# run it twice: GPU_CHECK_SKIP="bench sanitizer fuzz runner", then
# GPU_CHECK_SKIP="smoke tests selftests" (the second build is quick when
# build/ is kept).  PYGPU_CUDA_ARCH (default here: 90, Hopper) picks
# targets.
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUTDIR}
mkdir -p "$OUT/logs" "$OUT/junit"
rm -f "$OUT"/junit/*.xml "$OUT/gpu_check.json"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
CUDA_ROOT=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
NVCC=${NVCC:-$CUDA_ROOT/bin/nvcc}
export PYGPU_CUDA_ARCH=${PYGPU_CUDA_ARCH:-90}
SKIP=" ${GPU_CHECK_SKIP:-} "
BUDGET=${GPU_CHECK_BUDGET:-560}
FILE_TIMEOUT=${GPU_CHECK_FILE_TIMEOUT:-240}
SUITE_TIMEOUT=${GPU_CHECK_SUITE_TIMEOUT:-400}
WORKERS=${GPU_CHECK_WORKERS:-8}
# A marker expression that narrows the suite, e.g. "cuda" for the CUDA
# tests alone.  Left empty, the CPU tests run too, over the host's own
# vector loops: on an AVX-512 host (gpu_check.json's cpu_capability) the
# AVX512 builds of the CPU loops run on real hardware, which CI only
# emulates (scripts/emulate_avx512).
MARK=${GPU_CHECK_MARK:-}
SAN_FILE_TIMEOUT=${GPU_CHECK_SANITIZER_FILE_TIMEOUT:-180}
TEST_TIMEOUT=${GPU_CHECK_TEST_TIMEOUT:-120}
START=$(date +%s)
TMP=$(mktemp -d)
STEPS=$OUT/steps.tsv # stage <TAB> step <TAB> status <TAB> seconds
: >"$STEPS"

# step STAGE NAME LIMIT LOG CMD...: run CMD under timeout (cut to the time
# left in the budget), output to LOG, and record ok/fail/timeout/skipped.
step() {
    local stage=$1 name=$2 limit=$3 log=$4 left t0 rc status
    shift 4
    left=$((BUDGET - ($(date +%s) - START) - 15))
    if [ "$left" -lt 5 ]; then
        echo "not run: the ${BUDGET} s budget is spent" >"$log"
        printf '%s\t%s\tskipped\t0\n' "$stage" "$name" >>"$STEPS"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    t0=$(date +%s)
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status=timeout
        echo "== timed out after ${limit} s ==" >>"$log"
    elif [ "$rc" -eq 0 ]; then
        status=ok
    else
        status=fail
    fi
    printf '%s\t%s\t%s\t%s\n' "$stage" "$name" "$status" \
        "$(($(date +%s) - t0))" >>"$STEPS"
}

wanted() { [[ "$SKIP" != *" $1 "* ]]; }

summary() {
    "$PY" - "$OUT" "$STEPS" "$START" <<'PYEOF' >"$OUT/summary.log" 2>&1
import datetime, glob, json, os, subprocess, sys, time
import xml.etree.ElementTree as ET
out, steps_path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except Exception:
        return ""


def last_line(name):
    try:
        with open(os.path.join(out, "logs", name)) as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1] if lines else ""
    except OSError:
        return ""


steps, stages = {}, {}
rank = {"ok": 0, "skipped": 1, "fail": 2, "timeout": 3}
with open(steps_path) as f:
    for line in f:
        stage, name, status, secs = line.rstrip("\n").split("\t")
        steps.setdefault(stage, {})[name] = status
        s = stages.setdefault(stage, {"status": "ok", "seconds": 0})
        s["seconds"] += int(secs)
        if rank[status] > rank[s["status"]]:
            s["status"] = status
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sorted(glob.glob(os.path.join(out, "junit", "*.xml"))):
    try:
        suite = ET.parse(path).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        total = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        counts["passed"] += total - failed - skipped
        counts["failed"] += failed
        counts["skipped"] += skipped
    except Exception as e:
        counts.setdefault("unreadable", []).append(
            f"{os.path.basename(path)}: {e}")
runtime = cpu_capability = ""
try:
    import pygpu
    cpu_capability = pygpu.backends.cpu.get_cpu_capability()
    v = pygpu._C._cuda_versions()["runtime"]
    runtime = f"{v // 1000}.{(v % 1000) // 10}"
except Exception:
    pass
cpu_flags = []
try:  # the vector extensions the CPU loops can use (AVX-512 included)
    with open("/proc/cpuinfo") as f:
        flags = next(ln for ln in f if ln.startswith("flags")).split()
    cpu_flags = sorted(x for x in flags if x.startswith(
        ("avx", "fma", "f16c", "amx")))
except Exception:
    pass
summary = {
    "commit": sh("git rev-parse HEAD"),
    "dirty": bool(sh("git status --porcelain --untracked-files=no")),
    "date": datetime.datetime.now(datetime.timezone.utc)
    .isoformat(timespec="seconds"),
    "seconds": int(time.time()) - start,
    "device": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
    "driver": sh("nvidia-smi --query-gpu=driver_version "
                 "--format=csv,noheader | head -1"),
    "cuda_runtime": runtime,
    "python": sys.version.split()[0],
    "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
    "cpu_capability": cpu_capability,
    "cpu_flags": cpu_flags,
    "ok": all(s["status"] in ("ok", "skipped") for s in stages.values()),
    "stages": stages,
    "timeouts": [f"{st}/{n}" for st, d in steps.items()
                 for n, v in d.items() if v == "timeout"],
    "failures": [f"{st}/{n}" for st, d in steps.items()
                 for n, v in d.items() if v == "fail"],
    "steps": steps,
    "tests": counts,
    "kernels_selftest": last_line("kernels_selftest.log"),
    "blas_selftest": last_line("blas_selftest.log"),
    "smoke": last_line("smoke.log"),
}
tmp = os.path.join(out, "gpu_check.json.tmp")
with open(tmp, "w") as f:
    json.dump(summary, f, indent=2)
os.replace(tmp, os.path.join(out, "gpu_check.json"))
print(json.dumps(summary, indent=2))
PYEOF
}

finish() {
    trap - EXIT INT TERM
    summary
    cat "$OUT/summary.log"
    rm -rf "$TMP"
    # 0 only when every step that ran passed.
    ! cut -f3 "$STEPS" | grep -qE '^(fail|timeout)$'
    exit $?
}
trap finish EXIT
trap 'exit 143' INT TERM

build() {
    echo "== pip install -e . (no isolation, no index) =="
    PYGPU_FORCE_CUDA=1 "$PY" -m pip install -v --no-build-isolation \
        --no-deps --no-index -e . 2>&1 | tail -n 40
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "== pip failed ($rc): setup.py build_ext --inplace =="
        PYGPU_FORCE_CUDA=1 "$PY" setup.py build_ext --inplace 2>&1 |
            tail -n 40
        rc=${PIPESTATUS[0]}
    fi
    return "$rc"
}

# The kernel self-test: every .cu compiled on its own, all cores at once,
# then linked.
kernels_build() {
    mkdir -p "$TMP/kobj" || return 1
    printf '%s\n' tests/native/kernels_selftest/*.cu csrc/kernels/*.cu |
        xargs -P "$(nproc)" -I{} sh -c \
            'o="$2/$(echo "$1" | tr / _).o"; echo "$1";
             "$0" -std=c++17 -O3 -DPYGPU_WITH_CUDA -I csrc -arch=native \
                 -c "$1" -o "$o"' "$NVCC" {} "$TMP/kobj" || return 1
    "$NVCC" -arch=native "$TMP"/kobj/*.o -o "$TMP/kselftest"
}

if wanted build; then
    export PY
    export -f build
    step build pip 420 "$OUT/logs/build.log" bash -c build
    summary
fi

# One call of every op family on CUDA against the CPU, a line each, in
# under a minute: what works, before the suite says it in detail.
if wanted smoke; then
    step smoke families 90 "$OUT/logs/smoke.log" \
        "$PY" scripts/gpu_smoke.py --json "$OUT/smoke.json"
    summary
fi

if wanted tests; then
    if "$PY" -c "import xdist" 2>/dev/null; then
        # Tests that take all of the GPU's memory run after, alone: beside
        # them, another worker's first launch of a kernel (its module is
        # loaded then) can fail for want of memory.
        step tests suite "$SUITE_TIMEOUT" "$OUT/logs/tests_suite.log" \
            "$PY" -m pytest -q -rfEs --require-gpu -p no:cacheprovider \
            -n "$WORKERS" -m "${MARK:+($MARK) and }not gpu_exclusive" \
            -o faulthandler_timeout="$TEST_TIMEOUT" \
            --junitxml="$OUT/junit/suite.xml" tests
        step tests exclusive "$FILE_TIMEOUT" "$OUT/logs/tests_exclusive.log" \
            "$PY" -m pytest -q -rfEs --require-gpu -p no:cacheprovider \
            -m "${MARK:+($MARK) and }gpu_exclusive" \
            -o faulthandler_timeout="$TEST_TIMEOUT" \
            --junitxml="$OUT/junit/exclusive.xml" tests
    else
        for f in tests/*/test_*.py; do
            name=$(basename "$f" .py)
            step tests "$name" "$FILE_TIMEOUT" "$OUT/logs/tests_$name.log" \
                "$PY" -m pytest -q -rs --require-gpu -p no:cacheprovider \
                -o faulthandler_timeout="$TEST_TIMEOUT" \
                --junitxml="$OUT/junit/$name.xml" "$f"
        done
    fi
    step tests demo 120 "$OUT/logs/demo.log" "$PY" -m pygpu
    summary
fi

# Python-free self-tests of the kernels and of the cuBLAS call sequences.
if wanted selftests; then
    export NVCC TMP
    export -f kernels_build
    step selftests kernels_build 300 "$OUT/logs/kernels_selftest_build.log" \
        bash -c kernels_build
    step selftests kernels 180 "$OUT/logs/kernels_selftest.log" \
        "$TMP/kselftest"
    step selftests blas_build 120 "$OUT/logs/blas_selftest_build.log" \
        gcc -std=c11 -O2 -I csrc -I "$CUDA_ROOT/include" \
        tests/native/blas_selftest/*.c csrc/cuda/cuda_blas_gemm.c \
        csrc/cuda/cuda_blas_lt.c csrc/cuda/cuda_blas_load.c \
        csrc/cuda/cuda_libfind.c -L "$CUDA_ROOT/lib64" \
        -Wl,-rpath,"$CUDA_ROOT/lib64" -lcublasLt -lcublas -lcudart -ldl \
        -o "$TMP/blasselftest"
    step selftests blas 180 "$OUT/logs/blas_selftest.log" \
        "$TMP/blasselftest"
    summary
fi

if wanted bench; then
    step bench ops 420 "$OUT/logs/bench_ops.log" \
        "$PY" benchmarks/bench_ops.py --json "$OUT/bench_ops.json"
    step bench allocator 120 "$OUT/logs/bench_allocator.log" \
        "$PY" benchmarks/bench_allocator.py --json "$OUT/bench_allocator.json"
    step bench transfer 300 "$OUT/logs/bench_transfer.log" \
        "$PY" benchmarks/bench_transfer.py --json "$OUT/bench_transfer.json"
    step bench graph 90 "$OUT/logs/bench_graph.log" \
        "$PY" benchmarks/bench_graph.py --json "$OUT/bench_graph.json"
    step bench lines 90 "$OUT/logs/bench_lines.log" \
        "$PY" benchmarks/bench_lines.py --json "$OUT/bench_lines.json"
    summary
fi

if wanted sanitizer; then
    SAN=$CUDA_ROOT/bin/compute-sanitizer
    [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
    if [ -z "$SAN" ]; then
        echo "compute-sanitizer not found: memcheck not run" \
            >"$OUT/logs/sanitizer.log"
        printf 'sanitizer\tcompute-sanitizer\tfail\t0\n' >>"$STEPS"
    else
        for f in tests/ops/test_elementwise.py tests/ops/test_matmul.py \
            tests/ops/test_reduce.py tests/tensor/test_views.py; do
            name=$(basename "$f" .py)
            step sanitizer "$name" "$SAN_FILE_TIMEOUT" \
                "$OUT/logs/sanitizer_$name.log" \
                env PYGPU_NO_CUDA_CACHING=1 "$SAN" --tool memcheck \
                --error-exitcode 99 --target-processes all \
                "$PY" -m pytest -q -x -k cuda -p no:cacheprovider \
                -o faulthandler_timeout="$TEST_TIMEOUT" "$f"
        done
    fi
fi

# The benchmark runner (every suite, GPU timings with events) into OUT.
if wanted runner; then
    step runner benchmarks 540 "$OUT/logs/bench_runner.log" \
        "$PY" -m benchmarks --quick --out "$OUT/bench_runner"
    summary
fi

# The differential fuzzer on the GPU (10^5 calls against NumPy).
if wanted fuzz; then
    step fuzz cuda 300 "$OUT/logs/fuzz_cuda.log" \
        "$PY" scripts/fuzz.py -n 100000 --device cuda
    # The reliability probes on CUDA tensors (training, mutated
    # checkpoints, fork during backward): crashes, hangs, leaks counted.
    step probe cuda 240 "$OUT/logs/probe_cuda.log" \
        "$PY" scripts/probe.py --device cuda --only train checkpoints fork \
        --json "$OUT/probe_cuda.json"
    summary
fi
# finish (the EXIT trap) writes the summary and sets the exit status.
