"""Every Python code block of the README runs as pasted, each in a fresh
interpreter started outside the tree (on a machine without a GPU its CUDA
lines are the guarded ones)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as _f:
    BLOCKS = re.findall(r"^```python\n(.*?)^```", _f.read(), re.M | re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block_runs(i, tmp_path):
    r = subprocess.run([sys.executable, "-c", BLOCKS[i]], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, BLOCKS[i] + "\n" + r.stderr[-3000:]
