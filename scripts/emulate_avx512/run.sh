#!/usr/bin/env bash
# Runs pygpu's CPU tests with the AVX-512 versions of its vector loops, on
# a CPU without AVX-512: each AVX-512 function runs in an emulated CPU
# (BochsCPU, from the bochscpu-python wheel), the rest natively
# (pytest_avx512.py, emulator.py, trap.c).  pygpu must be built in place or
# installed editable (the emulator reads the extension's symbol table).
#
#   bash scripts/emulate_avx512/run.sh              # the vector-loop tests
#   bash scripts/emulate_avx512/run.sh -x           # the same, with options
#   bash scripts/emulate_avx512/run.sh tests/nn     # other tests
#
# One process (about two minutes for the default files on the 2-core CI
# machine).
set -euo pipefail
cd "$(dirname "$0")/../.."
python -m pip install -q "bochscpu-python==0.4.0"
# The emulator on its own first: small AVX-512 functions through the trap.
python -m pytest -q -p no:cacheprovider scripts/emulate_avx512/test_emulator.py
if [ $# -eq 0 ] || [[ $1 == -* ]]; then
    # The files whose ops have AVX-512 clones: vector math, conversions,
    # the half loops, the softmax family, sums and max, elementwise, strided
    # copies, the norm, pooling and convolution layers, the optimizers'
    # fused steps, and the versions compared side by side.
    set -- tests/ops/test_cpu_isa_versions.py \
        tests/ops/test_cpu_vector_math.py tests/ops/test_cpu_capability.py \
        tests/ops/test_half_loops.py tests/ops/test_softmax.py \
        tests/ops/test_softmax_lines.py tests/ops/test_sum_leaves.py \
        tests/ops/test_reduce.py tests/ops/test_unary_ops.py \
        tests/ops/test_elementwise.py tests/ops/test_dtype_ops.py \
        tests/ops/test_reduce_mixed.py tests/ops/test_stats.py \
        tests/ops/test_strided_copy.py tests/nn/test_normalization.py \
        tests/nn/test_losses.py tests/nn/test_pooling.py \
        tests/nn/test_conv.py tests/optim/test_optim.py \
        -k "not cuda" "$@"
fi
PYTHONPATH="scripts/emulate_avx512${PYTHONPATH:+:$PYTHONPATH}" \
    python -m pytest -q -p pytest_avx512 "$@"
