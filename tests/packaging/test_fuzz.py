"""Bounded differential fuzzing against NumPy: random shapes (0-size, 0-d,
size-1 dims, up to 6 dims), dtypes and views (transposes, permutes, slices
with positive steps and offsets, expanded broadcasts) through the public
ops, each checked against NumPy in float64 (int64: exactly, wrapping); and
bad arguments, which must raise TypeError/ValueError/RuntimeError/IndexError
with a message, never SystemError.  Derandomized, no example database: the
same examples on every run.  scripts/fuzz.py runs the same generators for
as long as asked."""
import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, HealthCheck  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import fuzz  # noqa: E402  (scripts/fuzz.py: generators and checks)

import pygpu  # noqa: E402

SANITIZED = os.environ.get("PYGPU_SANITIZED") == "1"
FUZZ = settings(max_examples=60 if SANITIZED else 300, derandomize=True,
                database=None, deadline=None, print_blob=True,
                suppress_health_check=list(HealthCheck))


# Each family of scripts/fuzz.py: unary ops and view chains; binary ops
# with broadcasting, scalars and mixed dtypes; in-place ops; sum/mean/max
# over dims with keepdim; matmul of compatible shapes; reshape/view/flatten/
# squeeze/unsqueeze/transpose; indexing, read and write; bad arguments;
# and (scripts/fuzz_ops.py) comparisons and NaN/inf classification, unary
# and binary math, amax/argmax/prod/any/var/cumsum/softmax/norm, joining
# and splitting, index_select/gather/masks/where, casts and promotion
# across all eight dtypes; and (scripts/fuzz_checkpoint.py) random state
# dicts saved and loaded back, then damaged archives loaded.
@pytest.mark.parametrize("family", fuzz.FAMILIES)
@FUZZ
@given(seed=st.integers(0, 2**63 - 1))
def test_against_numpy(family, seed):
    fuzz.check_one(np.random.default_rng(seed), family)


def test_error_classification():
    """The checker itself: a SystemError, an exception without a message or
    of another class is a failure; the four classes with a message are not."""
    def raise_(e):
        def f():
            raise e
        return f
    for e in (SystemError("error return without exception set"),
              RuntimeError(""), KeyError("k"), AttributeError("a")):
        with pytest.raises(fuzz.Unclean):
            fuzz.expect_clean_error(raise_(e))
    for e in (TypeError("t"), ValueError("v"), RuntimeError("r"),
              IndexError("i")):
        fuzz.expect_clean_error(raise_(e))
    with pytest.raises(fuzz.Wrong):
        fuzz.compare(pygpu.tensor([1.0, 2.0]), np.array([1.0, 2.5]),
                     "float32", "plant")
