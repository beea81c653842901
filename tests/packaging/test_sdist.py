"""The source distribution holds every file the build reads and what the
test suite needs besides the package (MANIFEST.in): an sdist without the
CUDA sources would install "successfully" and then fail to import."""
import os
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT

pytest.importorskip("build")


def _tracked(*tops):
    out = []
    for top in tops:
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for f in files:
                if not f.endswith((".o", ".so", ".pyc")):
                    out.append(os.path.relpath(os.path.join(d, f), ROOT))
    return out


def test_sdist_holds_the_sources_and_the_tests(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation",
         "--skip-dependency-check", "--outdir", str(tmp_path), ROOT],
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (sdist,) = tmp_path.glob("pygpu-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    want = ["setup.py", "pyproject.toml", "MANIFEST.in", "LICENSE",
            "README.md"] + _tracked("csrc", "pygpu", "tests", "scripts")
    missing = sorted(w for w in want if w not in names)
    assert not missing, missing[:20]
    assert any(n.endswith(".cu") for n in names)
    assert not any(n.endswith((".o", ".so")) for n in names)
