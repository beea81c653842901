#!/usr/bin/env bash
# The test suite under AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer: a CPU-only build with PYGPU_SANITIZE=1 (its own
# build folder, build/cpu-asan-*), installed editable into the active
# environment for the run; on exit, whatever way it ends, the flavour that was
# installed before (CUDA or CPU-only, editable) is installed again, reusing its
# build folder, so later steps see the tree as they left it.
#
# The interpreter is not instrumented, so libasan (and libubsan) are
# preloaded, and PYTHONMALLOC=malloc routes Python's own allocations through
# ASan too, so that overruns of objects the extension allocates are caught.
# Any report fails the run: ASan aborts on the first error, UBSan halts on
# the first error (-fno-sanitize-recover), and LSan's leak report at exit
# makes the exit status non-zero.  ASan's and LSan's reports go to files,
# printed at the end (pytest's capture would swallow a report written by a
# dying process); UBSan's runtime, loaded beside ASan's, ignores its
# log_path and writes to stderr, so pytest captures only at the Python
# level (--capture=sys) and a C-level report reaches the terminal.  The
# build leaves out Python's -fwrapv (setup.py), so that UBSan sees signed
# overflow.
#
# Usage: scripts/sanitize.sh [pytest arguments]   (given: those tests, with
# leak checks; default: the two passes below: the suite but the packaging
# checks, then the leak and fuzz tests with leak checks).  PYGPU_TEST_WORKERS=N (N > 1)
# spreads each pass over N pytest-xdist processes, each sanitized alike.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=$(pwd -P)

T0=$(date +%s)
WORKERS=()
if [ "${PYGPU_TEST_WORKERS:-1}" -gt 1 ]; then
    WORKERS=(-n "$PYGPU_TEST_WORKERS")
fi
LOGS=$(mktemp -d)
SUPP=$(mktemp)
# What to reinstall afterwards: the flavour installed now (1: CUDA, 0:
# CPU-only), the default one if pygpu is installed but does not import (a
# sanitized build left by an interrupted run), nothing if it is not installed.
was_cuda=$(cd / && python -c "import pygpu; print(int(pygpu.backends.cuda.is_built()))" 2>/dev/null ||
           { python -m pip show -q pygpu > /dev/null 2>&1 && echo default; } || echo none)

restore() {
    local rc=$?
    echo "== sanitizers: reinstalling the previous build =="
    case "$was_cuda" in
        1) PYGPU_FORCE_CUDA=1 python -m pip install -q --no-deps -e "$TREE" ;;
        0) PYGPU_NO_CUDA=1 python -m pip install -q --no-deps -e "$TREE" ;;
        default) python -m pip install -q --no-deps -e "$TREE" ;;
        *) echo "(pygpu was not installed before)" ;;
    esac
    rm -rf "$LOGS" "$SUPP"
    exit "$rc"
}
trap restore EXIT

echo "== sanitizers: ASan + LSan + UBSan, CPU-only build =="
PYGPU_SANITIZE=1 PYGPU_NO_CUDA=1 python -m pip install -q --no-deps -e .

ASAN_LIB=$(gcc -print-file-name=libasan.so)
UBSAN_LIB=$(gcc -print-file-name=libubsan.so)
for lib in "$ASAN_LIB" "$UBSAN_LIB"; do
    [ -e "$lib" ] || { echo "sanitize: $lib not found (gcc's sanitizer runtimes)"; exit 1; }
done

# LeakSanitizer's suppressions: lsan.supp, and under CPython 3.13 and later
# lsan_py313.supp too (the interpreter's immortal interned strings).
cp "$TREE/scripts/lsan.supp" "$SUPP"
if python -c "import sys; sys.exit(sys.version_info < (3, 13))"; then
    cat "$TREE/scripts/lsan_py313.supp" >> "$SUPP"
fi

# Two passes.  1: the suite under ASan and UBSan (but the packaging checks
# and the files of pass 2).  2: LeakSanitizer over the leak and fuzz
# tests, which cycle every op family and error path.  Both unwind stacks
# the fast way (frame pointers, which libpython may lack): pass 2 gave no
# report with it under CPython 3.13 and NumPy 2.5, as with the slow, exact
# unwinder, in a fifth of the time.  A suppression that stops matching
# shows as a report naming interpreter or NumPy frames only: run the
# files of pass 2 with PYGPU_LSAN_SLOW_UNWIND=1 to unwind the slow way.
sanitized() {  # sanitized LEAKS ASAN_EXTRA pytest-args...
    local leaks=$1 extra=$2
    shift 2
    env LD_PRELOAD="$ASAN_LIB $UBSAN_LIB" \
        PYTHONMALLOC=malloc \
        PYGPU_SANITIZED=1 \
        ASAN_OPTIONS="detect_leaks=$leaks:$extra:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1:strict_init_order=1:log_path=$LOGS/asan" \
        LSAN_OPTIONS="suppressions=$SUPP:print_suppressions=0" \
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan" \
        python -m pytest -q -p no:cacheprovider --capture=sys \
        ${WORKERS[@]+"${WORKERS[@]}"} "$@"
}
LSAN_UNWIND=fast_unwind_on_malloc=1:malloc_context_size=16
if [ "${PYGPU_LSAN_SLOW_UNWIND:-0}" = 1 ]; then
    LSAN_UNWIND=fast_unwind_on_malloc=0:malloc_context_size=16
fi
status=0
if [ $# -gt 0 ]; then
    sanitized 1 "$LSAN_UNWIND" "$@" || status=$?
else
    # The first pass leaves out what the second runs (the leak and fuzz
    # files, ASan and UBSan included there) and the packaging checks of
    # the source tree, its scripts and builds (stage 1 of CI runs them),
    # all but the reliability probes.
    echo "-- ASan + UBSan: the suite but the packaging checks --"
    dirs=()
    for d in tests/*/; do
        [ "$d" = tests/packaging/ ] || dirs+=("$d")
    done
    sanitized 0 fast_unwind_on_malloc=1 "${dirs[@]}" \
        tests/packaging/test_probe.py \
        --ignore=tests/ops/test_leaks.py || status=$?
    echo "-- LSan (+ ASan, UBSan): leak and fuzz tests --"
    sanitized 1 "$LSAN_UNWIND" \
        tests/ops/test_leaks.py tests/packaging/test_fuzz.py || status=$?
fi

# A test that asks for more memory than there is expects the MemoryError it
# gets; ASan (allocator_may_return_null=1) still logs a warning for each.
# Logs holding nothing else are not reports.
for log in "$LOGS"/*; do
    [ -e "$log" ] || continue
    if ! grep -qv -e '^==[0-9]*==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]* bytes$' -e '^$' "$log"; then
        echo "sanitize: $(grep -c . "$log") refused huge allocation(s) in $(basename "$log") (expected)"
        rm -f "$log"
    fi
done
if compgen -G "$LOGS/*" > /dev/null; then
    echo "== sanitizer reports =="
    cat "$LOGS"/*
    [ "$status" != 0 ] || status=1
fi
echo "== sanitizers: exit $status, $(( $(date +%s) - T0 )) s =="
exit "$status"
