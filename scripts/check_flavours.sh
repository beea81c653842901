#!/usr/bin/env bash
# Switching flavours in one tree installs the flavour asked for, never the
# one a previous build left behind: regular installs CUDA -> CPU-only ->
# CUDA, then editable installs CPU-only -> CUDA -> CPU-only.  Each step
# checks, from outside the tree, pygpu.version.cuda, is_built() and where
# pygpu was imported from.
#
# Needs a CUDA toolkit (no GPU) and the Python environment to install into
# (active venv); leaves pygpu installed editable, CPU-only.  Builds of both
# flavours already in build/ are reused: after the first two steps, a step
# that compiles anything fails the check.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=$(pwd -P)

NVCC=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
CUDA_RELEASE=$("$NVCC" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')

check() {  # check cuda|cpu regular|editable
    (cd / && python - "$1" "$2" "$TREE" "$CUDA_RELEASE" <<'EOF'
import os, sys
flavour, kind, tree, release = sys.argv[1:]
import pygpu, pygpu.version
where = os.path.dirname(os.path.realpath(pygpu.__file__))
in_tree = where == os.path.join(tree, "pygpu")
print(f"  {kind} {flavour}: version.cuda={pygpu.version.cuda!r}, "
      f"is_built()={pygpu.backends.cuda.is_built()}, from {where}")
want_cuda = release if flavour == "cuda" else None
assert pygpu.version.cuda == want_cuda, (pygpu.version.cuda, want_cuda)
assert pygpu.backends.cuda.is_built() == (flavour == "cuda")
assert in_tree == (kind == "editable"), where
EOF
    )
}

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

install() {  # install cuda|cpu regular|editable [reuse]
    local editable=()
    [ "$2" = editable ] && editable=(-e)
    if [ "$1" = cuda ]; then
        PYGPU_FORCE_CUDA=1 python -m pip install -v --no-deps "${editable[@]}" . > "$LOG" 2>&1 ||
            { tail -40 "$LOG"; exit 1; }
    else
        PYGPU_NO_CUDA=1 python -m pip install -v --no-deps "${editable[@]}" . > "$LOG" 2>&1 ||
            { tail -40 "$LOG"; exit 1; }
    fi
    if [ "${3:-}" = reuse ] && ! grep -q 'objects in .* are up to date' "$LOG"; then
        echo "  $2 $1: compiled again although nothing changed:"
        grep '^pygpu: ' "$LOG" | head -5
        exit 1
    fi
    check "$1" "$2"
}

echo "flavour switches (CUDA toolkit $CUDA_RELEASE):"
# After the first two, every step reuses every object of its flavour
# (regular after editable and back included).
install cuda regular
install cpu regular
for step in "cuda regular" "cpu editable" "cuda editable" "cpu editable"; do
    # shellcheck disable=SC2086
    install $step reuse
done
echo "flavour switches: OK"
