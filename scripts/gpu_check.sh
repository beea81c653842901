#!/usr/bin/env bash
# gpu_check.sh OUTDIR: the whole check on a machine with a GPU and no
# network.  Builds in place without build isolation or downloads, runs the
# suite with --require-gpu (a skipped GPU test is a failure), the demo, the
# kernel and cuBLAS self-tests and the benchmarks, and writes
# OUTDIR/gpu_check.json beside the full logs.
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUTDIR}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

{
    echo "== build =="
    PYGPU_FORCE_CUDA=1 "$PY" -m pip install -v --no-build-isolation \
        --no-deps --no-index -e . 2>&1 | tail -n 30
} >"$OUT/build.log" 2>&1
build_rc=${PIPESTATUS[0]}

"$PY" -m pytest -q -rs --require-gpu tests --junitxml="$OUT/junit.xml" \
    >"$OUT/tests.log" 2>&1
tests_rc=$?
"$PY" -m pygpu >"$OUT/demo.log" 2>&1
demo_rc=$?

# Python-free self-tests of the kernels and of the cuBLAS call sequences.
NVCC=${NVCC:-nvcc}
selftest_rc=0
{
    $NVCC -std=c++17 -O3 -DPYGPU_WITH_CUDA -I csrc -arch=native \
        benchmarks/kernels_selftest.cu csrc/kernels/*.cu -o /tmp/pygpu_kselftest \
        && /tmp/pygpu_kselftest
} >"$OUT/kernels_selftest.log" 2>&1 || selftest_rc=1
{
    gcc -std=c11 -O2 -I csrc -I /usr/local/cuda/include benchmarks/blas_selftest.c \
        -L /usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -o /tmp/pygpu_blasselftest \
        && /tmp/pygpu_blasselftest
} >"$OUT/blas_selftest.log" 2>&1 || selftest_rc=1

"$PY" - "$OUT" "$build_rc" "$tests_rc" "$demo_rc" "$selftest_rc" <<'PYEOF'
import datetime, json, os, re, subprocess, sys
import xml.etree.ElementTree as ET
out, build_rc, tests_rc, demo_rc, selftest_rc = sys.argv[1], *map(int, sys.argv[2:])

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except Exception:
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
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "device": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
    "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
    "cuda_runtime": runtime,
    "python": sys.version.split()[0],
    "tests": counts,
    "build_rc": build_rc, "tests_rc": tests_rc, "demo_rc": demo_rc,
    "selftest_rc": selftest_rc,
}
with open(os.path.join(out, "gpu_check.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(json.dumps(summary, indent=2))
PYEOF
exit $(( build_rc || tests_rc || demo_rc || selftest_rc ))
