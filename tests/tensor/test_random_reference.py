"""rand/randn on the CPU make the same numbers, bit for bit, as before
their loops were vectorized and threaded: digests saved from the earlier
build (tests/data/random_reference.json, by scripts/random_reference.py),
for every float dtype, lengths with partial Philox blocks and lengths the
CPU splits over threads, and successive draws.  The float32 / float16
randn digests changed once, with the move of float normals to pygpu's own
log / sincos (kernels/normal.h): the uniform digests and the float64 rows
are those of the earlier build."""
import json
import os
import sys

import pytest

import pygpu
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from random_reference import row  # noqa: E402

with open(os.path.join(ROOT, "tests", "data",
                       "random_reference.json")) as f:
    REFERENCE = json.load(f)


@pytest.mark.parametrize("threads", [1, 2])
def test_same_numbers_as_reference(threads):
    old = pygpu.get_num_threads()
    pygpu.set_num_threads(threads)
    try:
        for ref in REFERENCE:
            assert row(*ref[:3]) == ref, ref[:3]
    finally:
        pygpu.set_num_threads(old)
