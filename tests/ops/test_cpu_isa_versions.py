"""The AVX-512 and AVX2 versions of the CPU loops side by side, in one
process: where the CPU has AVX-512, or under scripts/emulate_avx512 (which
runs the AVX-512 functions in an emulator); skipped elsewhere.

Exact ops (IEEE arithmetic, comparisons, selections, conversions, integer
sums, max/argmax) must give the same bits in every version.  The others
must stay within their documented bound of a float64 reference in each
version, and give the same bits in the AVX2 and AVX-512 versions: both
fuse the same multiply-adds and sum in the same order (eight-float lanes
in both), so only the baseline may differ in its last bits
(docs/architecture.md, "CPU vectors")."""
import math

import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu import _C


def _has_avx512():
    before = _C._cpu_capability()
    got = _C._set_cpu_capability("avx512")
    _C._set_cpu_capability(before.lower())
    return got == "AVX512"


pytestmark = pytest.mark.skipif(
    not _has_avx512(), reason="needs AVX-512, or scripts/emulate_avx512")

VERSIONS = ("avx512", "avx2", "default")


def run(version, fn, *arrays):
    before = _C._cpu_capability()
    try:
        assert _C._set_cpu_capability(version) == version.upper()
        out = fn(*(pygpu.tensor(a) for a in arrays))
        if isinstance(out, tuple):
            return tuple(o.numpy() for o in out)
        return out.numpy()
    finally:
        _C._set_cpu_capability(before.lower())


def inputs(rng, n=4099, dtype=np.float32):
    x = (rng.standard_normal(n) * 4).astype(dtype)
    y = (rng.standard_normal(n) * 4).astype(dtype)
    x[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    return x, y


EXACT = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "sqrt": lambda a, b: pygpu.sqrt(a.abs()),
    "maximum": lambda a, b: pygpu.maximum(a, b),
    "relu": lambda a, b: F.relu(a),
    "clamp": lambda a, b: a.clamp(-1.0, 2.0),
    "where": lambda a, b: pygpu.where(a > b, a, b),
    "lt": lambda a, b: a < b,
    "to_half": lambda a, b: a.half(),
    "to_bfloat16": lambda a, b: a.to(pygpu.bfloat16).float(),
    "half_add": lambda a, b: (a.half() + b.half()).float(),
    "max_argmax": lambda a, b: a.reshape(1, -1)[:, 5:].max(1),
    "int_sum": lambda a, b: (a > 0).sum(),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_ops_give_the_same_bits_in_every_version(rng, name):
    x, y = inputs(rng)
    got = [run(v, EXACT[name], x, y) for v in VERSIONS]
    for other in got[1:]:
        if isinstance(other, tuple):
            for a, b in zip(got[0], other):
                _same_bits(a, b)
        else:
            _same_bits(got[0], other)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (pygpu op, float64 reference, bound in float32 ulps of the result
# or, for rows, relative error)
BOUNDED = {
    "exp": (pygpu.exp, np.exp, 2),
    "log": (pygpu.log, np.log, 2),
    "tanh": (pygpu.tanh, np.tanh, 2),
    "sigmoid": (pygpu.sigmoid, _sigmoid, 3),
    "silu": (F.silu, lambda a: a * _sigmoid(a), 3),
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_vector_math_within_its_bound_in_every_version(rng, name):
    fn, ref, ulps = BOUNDED[name]
    x = (rng.standard_normal(4099) * 6).astype(np.float32)
    if name == "log":
        x = np.abs(x) + np.float32(1e-3)
    want = ref(x.astype(np.float64))
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    got = {v: run(v, fn, x) for v in VERSIONS}
    for v in VERSIONS:
        err = np.abs(got[v].astype(np.float64) - want)
        assert (err <= ulps * spacing).all(), v
    _same_bits(got["avx512"], got["avx2"])


def _same_bits(a, b):
    np.testing.assert_array_equal(np.atleast_1d(a).view(np.uint8),
                                  np.atleast_1d(b).view(np.uint8))


ROWS = {
    "softmax": (lambda a: F.softmax(a, dim=1),
                lambda a: np.exp(a - a.max(1, keepdims=True))
                / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)),
    "log_softmax": (lambda a: F.log_softmax(a, dim=1),
                    lambda a: a - a.max(1, keepdims=True) - np.log(
                        np.exp(a - a.max(1, keepdims=True)).sum(
                            1, keepdims=True))),
    "sum": (lambda a: a.sum(1), lambda a: a.sum(1)),
    "layer_norm": (lambda a: F.layer_norm(a, (a.shape[1],)),
                   lambda a: (a - a.mean(1, keepdims=True))
                   / np.sqrt(a.var(1, keepdims=True) + 1e-5)),
    "gelu": (F.gelu, lambda a: a * 0.5 * (1 + np.vectorize(math.erf)(
        a / math.sqrt(2)))),
    "cross_entropy": (lambda a: F.cross_entropy(
        a, pygpu.tensor(np.arange(a.shape[0]) * 7 % a.shape[1]),
        reduction="none"),
        lambda a: (np.log(np.exp(a - a.max(1, keepdims=True)).sum(1))
                   + a.max(1) - a[np.arange(a.shape[0]),
                                  np.arange(a.shape[0]) * 7 % a.shape[1]])),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_rows_within_float32_accuracy_in_every_version(rng, name):
    fn, ref = ROWS[name]
    x = (rng.standard_normal((37, 1000)) * 3).astype(np.float32)
    want = ref(x.astype(np.float64))
    scale = np.abs(want).max()
    got = {v: run(v, fn, x) for v in VERSIONS}
    for v in VERSIONS:
        assert np.abs(got[v] - want).max() <= 1e-5 * scale, v
    _same_bits(got["avx512"], got["avx2"])


def test_half_loops_and_matmul_in_every_version(rng):
    x = rng.standard_normal(100003).astype(np.float16)
    a = rng.standard_normal((33, 70)).astype(np.float32)
    b = rng.standard_normal((70, 21)).astype(np.float32)
    sums, exps = {}, {}
    for v in VERSIONS:
        sums[v] = run(v, lambda t: t.sum(dtype=pygpu.float32), x)
        assert abs(sums[v] - x.astype(np.float64).sum()) <= 1e-5 * np.abs(
            x.astype(np.float64)).sum()
        exps[v] = run(v, lambda t: t.exp().float(), x)
        np.testing.assert_allclose(exps[v], np.exp(x.astype(np.float64)),
                                   rtol=1e-3)
        m = run(v, lambda p, q: p @ q, a, b)
        np.testing.assert_allclose(m, a.astype(np.float64) @ b,
                                   rtol=1e-4, atol=1e-4)
    _same_bits(sums["avx512"], sums["avx2"])
    _same_bits(exps["avx512"], exps["avx2"])
