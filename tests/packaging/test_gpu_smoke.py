"""scripts/gpu_smoke.py, the first stage of the GPU check, runs here on the
CPU against itself, so that it keeps up with the API between GPU runs; on
a GPU it runs for real."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
SMOKE = os.path.join(ROOT, "scripts", "gpu_smoke.py")


def run_smoke(device, tmp_path):
    out = tmp_path / "smoke.json"
    r = subprocess.run([sys.executable, SMOKE, "--device", device, "--json",
                        str(out)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    return r, json.loads(out.read_text()) if out.exists() else None


def test_smoke_runs_on_the_cpu(tmp_path):
    r, res = run_smoke("cpu", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert res["device"] == "cpu"
    fams = res["families"]
    assert {"creation", "matmul", "autograd", "optimizer"} <= set(fams)
    assert all(f["status"] == "ok" for f in fams.values()), fams
    assert r.stdout.strip().splitlines()[-1].startswith(
        f"smoke: {len(fams)}/{len(fams)} families ok on cpu, 0 failed")


@pytest.mark.cuda
def test_smoke_on_cuda(tmp_path):
    r, res = run_smoke("cuda", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
