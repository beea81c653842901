"""Packaging: pygpu.version, the version's single source, and the message
when the extension is not built."""
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata

import pytest

import pygpu
import pygpu.version


def test_version_single_sourced():
    assert pygpu.__version__ == pygpu.version.__version__
    assert pygpu._C.__version__ == pygpu.version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", pygpu.__version__)
    try:
        installed = metadata.version("pygpu")
    except metadata.PackageNotFoundError:
        pytest.skip("pygpu is imported from a tree, not installed")
    assert installed == pygpu.__version__


def test_version_cuda_matches_flavour():
    if pygpu.backends.cuda.is_built():
        assert re.fullmatch(r"\d+\.\d+", pygpu.version.cuda)
        built = pygpu._C._cuda_versions()["built"]
        assert pygpu.version.cuda == f"{built // 1000}.{built % 1000 // 10}"
    else:
        assert pygpu.version.cuda is None


def test_unbuilt_extension_says_how_to_build(tmp_path):
    """A copy of the package without its .so, first on sys.path; -S keeps
    site-packages (and an editable install's import hook, which would find
    the real extension) out."""
    src = os.path.dirname(pygpu.__file__)
    shutil.copytree(src, tmp_path / "pygpu",
                    ignore=shutil.ignore_patterns("_C*", "__pycache__"))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "try:\n"
        "    import pygpu\n"
        "except ImportError as e:\n"
        "    assert e.__cause__ is not None, 'not chained'\n"
        "    assert e.name == 'pygpu._C', e.name\n"
        "    print(e)\n"
        "else:\n"
        "    sys.exit('imported ' + pygpu.__file__)\n"
    )
    r = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pygpu._C is not built" in r.stdout
    assert "python -m pip install -e ." in r.stdout
    assert "circular import" not in r.stdout
