"""The include graph of csrc/ follows its layers (scripts/check_layers.py):
no include cycle, no include of a layer above; and the check itself
catches both."""
import os
import subprocess
import sys

from conftest import ROOT
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args],
                          capture_output=True, text=True, timeout=60)


def test_csrc_follows_its_layers():
    r = run()
    assert r.returncode == 0, r.stdout
    assert "0 cycles, 0 includes against the layers" in r.stdout


def test_check_catches_upward_includes_and_cycles(tmp_path):
    files = {
        "core/a.h": '#include "ops/b.h"\n',       # up
        "ops/b.h": '#include "core/c.h"\n',
        "core/c.h": '#include "core/d.h"\n',
        "core/d.h": '#include "c.h"\n',           # cycle c -> d -> c
        "cpu/e.c": '#include "cuda/f.h"\n',       # sideways
        "cuda/f.h": "",
        "loose.c": '#include <stdio.h>\n',        # outside the layers
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    r = run("--csrc", str(tmp_path))
    assert r.returncode == 1
    assert "core/a.h includes ops/b.h" in r.stdout
    assert "cpu/e.c includes cuda/f.h" in r.stdout
    assert "include cycle: core/c.h -> core/d.h -> core/c.h" in r.stdout
    assert "loose.c: not in a layer folder" in r.stdout
