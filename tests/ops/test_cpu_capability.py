"""The CPU loops' vector version: picked at import from the CPU, lowered
by PYGPU_CPU_CAPABILITY, reported by pygpu.backends.cpu as torch's is."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from conftest import ROOT

ORDER = ["DEFAULT", "AVX2", "AVX512"]


def capability(value):
    env = dict(os.environ)
    env.pop("PYGPU_CPU_CAPABILITY", None)
    if value is not None:
        env["PYGPU_CPU_CAPABILITY"] = value
    return subprocess.run(
        [sys.executable, "-c", "import pygpu; "
         "print(pygpu.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True, env=env, timeout=120)


def test_reports_one_of_torchs_names():
    assert pygpu.backends.cpu.get_cpu_capability() in ORDER


def test_the_variable_lowers_and_never_raises_it():
    best = capability(None)
    assert best.returncode == 0, best.stderr
    best = best.stdout.split()[-1]
    for value in ("default", "avx2", "avx512"):
        got = capability(value)
        assert got.returncode == 0, got.stderr
        got = got.stdout.split()[-1]
        want = min(ORDER.index(value.upper()), ORDER.index(best))
        assert got == ORDER[want], (value, got, best)


def test_an_unknown_value_is_a_clear_import_error():
    got = capability("sse9")
    assert got.returncode != 0
    assert ("PYGPU_CPU_CAPABILITY must be default, avx2 or avx512, not "
            "'sse9'") in got.stderr


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "log"])
def test_every_version_is_within_the_bound(op):
    """The version picked here and the baseline agree to within the ops'
    documented accuracy (a fused multiply-add may move the last bit)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(4099) * 6).astype(np.float32)
    if op == "log":
        x = np.abs(x) + np.float32(1e-3)
    env = dict(os.environ, PYGPU_CPU_CAPABILITY="default")
    code = ("import sys, numpy as np, pygpu; "
            "x = np.frombuffer(sys.stdin.buffer.read(), np.float32); "
            f"sys.stdout.buffer.write(pygpu.{op}(pygpu.tensor(x)).numpy()"
            ".tobytes())")
    base = subprocess.run([sys.executable, "-c", code], input=x.tobytes(),
                          capture_output=True, env=env,
                          timeout=120)
    assert base.returncode == 0, base.stderr.decode()
    base = np.frombuffer(base.stdout, np.float32)
    here = getattr(pygpu, op)(pygpu.tensor(x)).numpy()
    ref = getattr(np, op)(x.astype(np.float64)) if op != "sigmoid" else \
        1 / (1 + np.exp(-x.astype(np.float64)))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    for got in (base, here):
        assert (np.abs(got - ref) <= 3 * ulp).all()


def test_switching_in_process_is_clamped_to_the_cpu():
    """_C._set_cpu_capability (for tests) never goes past what import
    found the CPU has, and refuses other names."""
    from pygpu import _C
    before = pygpu.backends.cpu.get_cpu_capability()
    best = capability(None).stdout.split()[-1]
    try:
        assert _C._set_cpu_capability("default") == "DEFAULT"
        assert pygpu.backends.cpu.get_cpu_capability() == "DEFAULT"
        got = _C._set_cpu_capability("avx512")
        assert ORDER.index(got) <= max(ORDER.index(best),
                                       ORDER.index(before))
        for bad in ("sse9", 2, None):
            with pytest.raises(ValueError, match="default, avx2 or avx512"):
                _C._set_cpu_capability(bad)
    finally:
        _C._set_cpu_capability(before.lower())
    assert pygpu.backends.cpu.get_cpu_capability() == before
