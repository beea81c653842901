"""The CPU's own float32 exp, log and tanh (kernels/rules.h: branch-free
so that the loops vectorize, also in the x86-64-v3 clones) against
float64 NumPy: within 2 ulp over a dense sweep of the floats, and the C
library's values at the edges."""
import numpy as np
import pytest

import pygpu


def ulps(got, x, fn):
    ref = fn(x.astype(np.float64))
    ok = np.isfinite(ref) & (np.abs(ref) <= np.finfo(np.float32).max)
    ref, got = ref[ok], got[ok].astype(np.float64)
    tiny = np.finfo(np.float32).smallest_subnormal
    ulp = np.maximum(np.spacing(np.abs(ref).astype(np.float32)), tiny)
    return np.abs(got - ref) / ulp


def sweep(lo, hi, n=1 << 20):
    """n floats spread over the bit patterns of [lo, hi] (same sign)."""
    a, b = np.float32(lo).view(np.int32), np.float32(hi).view(np.int32)
    bits = np.linspace(min(a, b), max(a, b), n).astype(np.int32)
    return bits.view(np.float32)


CASES = {
    "exp": (np.exp, [(-104.0, -1e-30), (1e-30, 88.72)]),
    "log": (np.log, [(1e-45, 3.4e38)]),
    "tanh": (np.tanh, [(-20.0, -1e-38), (1e-38, 20.0)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_within_two_ulp(name):
    fn, ranges = CASES[name]
    for lo, hi in ranges:
        x = sweep(lo, hi)
        got = getattr(pygpu, name)(pygpu.tensor(x)).numpy()
        err = ulps(got, x, fn)
        assert err.max() <= 2.0, (name, lo, hi, err.max(),
                                  x[np.argmax(err)])


@pytest.mark.parametrize("name", sorted(CASES))
def test_edges_as_the_c_library(name):
    fn = CASES[name][0]
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45,
                  -1e-45, 3.4e38, -3.4e38, 88.72, 88.73, -87.33, -104.0,
                  0.625, -0.625], dtype=np.float32)
    got = getattr(pygpu, name)(pygpu.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        want = fn(x.astype(np.float64)).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    close = np.isclose(got, want, rtol=3e-7, atol=0)
    assert (same | close).all(), (x, got, want)
    # signs of zero kept where the function keeps them
    if name == "tanh":
        assert np.signbit(got[1]) and not np.signbit(got[0])


def test_vector_and_scalar_tails_agree():
    """Lengths around the vector widths give each element the same value
    whatever its place (vector body or scalar tail)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(67) * 4).astype(np.float32)
    for name in ("exp", "log", "tanh", "sigmoid"):
        v = np.abs(x) if name == "log" else x
        whole = getattr(pygpu, name)(pygpu.tensor(v)).numpy()
        for n in (1, 3, 7, 8, 9, 15, 16, 17, 33):
            part = getattr(pygpu, name)(pygpu.tensor(v[:n])).numpy()
            assert part.tobytes() == whole[:n].tobytes(), (name, n)
