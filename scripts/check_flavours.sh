#!/usr/bin/env bash
# Switching flavours in one tree installs the flavour asked for, never the
# one a previous build left behind: regular installs CUDA -> CPU-only ->
# CUDA, then editable installs CPU-only -> CUDA -> CPU-only.  Each step
# checks, from outside the tree, pygpu.version.cuda, is_built() and where
# pygpu was imported from.
#
# Needs a CUDA toolkit (no GPU) and the Python environment to install into
# (active venv); leaves pygpu installed editable, CPU-only.  Builds of both
# flavours already in build/ are reused, so after the first two steps each
# one takes only pip's own time.
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

install() {  # install cuda|cpu regular|editable
    local editable=()
    [ "$2" = editable ] && editable=(-e)
    if [ "$1" = cuda ]; then
        PYGPU_FORCE_CUDA=1 python -m pip install -q --no-deps "${editable[@]}" .
    else
        PYGPU_NO_CUDA=1 python -m pip install -q --no-deps "${editable[@]}" .
    fi
    check "$1" "$2"
}

echo "flavour switches (CUDA toolkit $CUDA_RELEASE):"
for step in "cuda regular" "cpu regular" "cuda regular" \
            "cpu editable" "cuda editable" "cpu editable"; do
    # shellcheck disable=SC2086
    install $step
done
echo "flavour switches: OK"
