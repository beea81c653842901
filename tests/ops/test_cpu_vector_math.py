"""The CPU's own float32 exp, log and tanh (kernels/rules.h: branch-free
so that the loops vectorize, also in the x86-64-v3 clones) against
float64 NumPy: within 2 ulp over a dense sweep of the floats, and the C
library's values at the edges.  sigmoid and silu (kernels/cpu_math.h: one
exp of -|x|, one division) within 2.5 and 3.5 ulp, subnormal results
included, and the exp of x <= 0 that they and the softmax family use,
checked directly by a C program over every 97th float in both the
baseline and the fused (x86-64-v3) builds."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import pygpu

from conftest import ROOT


def ulps(got, x, fn):
    ref = fn(x.astype(np.float64))
    ok = np.isfinite(ref) & (np.abs(ref) <= np.finfo(np.float32).max)
    ref, got = ref[ok], got[ok].astype(np.float64)
    tiny = np.finfo(np.float32).smallest_subnormal
    # the ulp of ref's binade (a float32 rounded up to the next power of
    # two would take the larger one)
    binade = np.exp2(np.floor(np.log2(np.maximum(np.abs(ref), tiny))))
    ulp = np.maximum(binade * 2.0 ** -23, tiny)
    return np.abs(got - ref) / ulp


def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def np_silu(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return x / (1 + np.exp(-x))


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


# sigmoid's and silu's stated bounds; the ranges reach the subnormal
# results (x down to -104 for sigmoid, -110 for silu) and past them.
ACTIVATIONS = {
    "sigmoid": (np_sigmoid, 2.5, [(-120.0, -1e-38), (1e-38, 20.0),
                                  (-1e-45, -1e-30), (1e-45, 1e-30)]),
    "silu": (np_silu, 3.5, [(-120.0, -1e-38), (1e-38, 3e38),
                            (-1e-45, -1e-30), (1e-45, 1e-30)]),
}


def activation(name, t):
    if name == "silu":
        return pygpu.nn.functional.silu(t)
    return t.sigmoid()


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_within_its_bound(name):
    fn, bound, ranges = ACTIVATIONS[name]
    for lo, hi in ranges:
        x = sweep(lo, hi)
        got = activation(name, pygpu.tensor(x)).numpy()
        err = ulps(got, x, fn)
        assert err.max() <= bound, (name, lo, hi, err.max(),
                                    x[np.argmax(err)])
    # results below 2^-126 are not flushed to 0
    tiny = activation(name, pygpu.tensor(np.float32([-90.0, -100.0])))
    assert (tiny.numpy() != 0).all()


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_edges(name):
    fn = ACTIVATIONS[name][0]
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45,
                  3.4e38, -3.4e38, 88.8, -88.8, 104.0, -104.0, -200.0,
                  17.0, -17.0], dtype=np.float32)
    got = activation(name, pygpu.tensor(x)).numpy()
    want = fn(x.astype(np.float64)).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    close = np.isclose(got, want, rtol=4e-7, atol=0)
    assert (same | close).all(), (x, got, want)
    if name == "sigmoid":
        assert got[:4].tolist() == [0.5, 0.5, 1.0, 0.0]
    else:
        assert got[2] == np.inf and np.isnan(got[3])  # -inf * 0, as torch
        assert np.signbit(got[1]) and not np.signbit(got[0])


def test_exp_neg_sigmoid_silu_in_c():
    """tests/native/exp_neg_check.c: the exp of x <= 0 (softmax's), sigmoid
    and silu over every 97th float bit pattern and the edges, against
    double, in the baseline build and the x86-64-v3 one."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the check")
    exe = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                       f"exp_neg_check_{os.getpid()}")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        subprocess.run([cc, "-std=c11", "-O3", "-fno-trapping-math",
                        "-fno-math-errno", "-I", os.path.join(ROOT, "csrc"),
                        os.path.join(ROOT, "tests", "native",
                                     "exp_neg_check.c"),
                        "-o", exe, "-lm"], check=True, env=env)
        out = subprocess.run([exe, "97"], capture_output=True, text=True,
                             timeout=300, env=env)
    finally:
        if os.path.exists(exe):
            os.remove(exe)
    assert out.returncode == 0, out.stdout[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    passed, failed = (int(p.split()[0]) for p in last.split(","))
    assert failed == 0 and passed > 10 ** 7, out.stdout[-2000:]


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
