#!/usr/bin/env python3
"""Digests of CPU rand/randn outputs over a fixed set of seeds, dtypes and
lengths.  Run once with a build whose numbers are the reference to write
tests/data/random_reference.json; tests/tensor/test_random_reference.py checks
that later builds make the same numbers.

The float32 / float16 randn digests were regenerated once, when float
normals moved from the C library's logf / sincosf to pygpu's own
branch-free functions (csrc/kernels/normal.h, the same bits on every host
and on CUDA); every rand digest and every float64 row stayed as it was.

  python scripts/random_reference.py OUT.json
"""
import hashlib
import json
import sys

import pygpu

CASES = [(seed, dt, n)
         for seed in (0, 1234, 2**40 + 7)
         for dt in ("float32", "float64", "float16")
         for n in (1, 2, 3, 4, 5, 7, 8, 1000, 1027, 70001, 300003)]


def digest(t):
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()[:32]


def row(seed, dt, n):
    """[seed, dtype, n, rand, randn, randn again (the state advanced)]."""
    pygpu.manual_seed(seed)
    dtype = getattr(pygpu, dt)
    return [seed, dt, n] + [digest(fn(n, dtype=dtype))
                            for fn in (pygpu.rand, pygpu.randn, pygpu.randn)]


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        json.dump([row(*c) for c in CASES], f, indent=0)
