"""scripts/probe.py, the reliability probes, at a small scale: each probe
runs in a child of its own, and every cell of the table but the calls is 0
(a crash, a hang, a wrong result, an unclean error or a leak fails it)."""
import json
import os
import subprocess
import sys

from conftest import ROOT

PROBE = os.path.join(ROOT, "scripts", "probe.py")


def test_probes_find_nothing(tmp_path):
    out = tmp_path / "probe.json"
    r = subprocess.run([sys.executable, PROBE, "--scale", "0.02", "--json",
                        str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == {"fuzz", "train", "checkpoints", "fork"}
    for name, row in rows.items():
        assert row["calls"] > 0, name
        bad = {k: v for k, v in row.items()
               if k not in ("calls", "seconds") and v}
        assert not bad, (name, bad, r.stderr[-3000:])
