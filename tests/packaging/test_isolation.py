"""The suite runs against an installed pygpu: after a regular install the
source tree holds no extension, and neither the tests nor the processes
they spawn may import that unbuilt tree instead of the installed package."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pygpu
from conftest import ROOT


CHILD_TEST = textwrap.dedent('''
    import multiprocessing
    import os
    import subprocess
    import sys

    import pygpu

    SITE = os.environ["SITE"]


    def where(_):
        import pygpu
        return pygpu.__file__


    def test_this_process_imports_the_install():
        assert pygpu.__file__.startswith(SITE), pygpu.__file__


    def test_a_child_imports_the_install():
        out = subprocess.run([sys.executable, "-c",
                              "import pygpu; print(pygpu.__file__)"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().startswith(SITE), out.stdout


    def test_a_spawned_worker_imports_the_install():
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            assert pool.map(where, [0])[0].startswith(SITE)
''')


def test_an_unbuilt_tree_does_not_shadow_the_install(tmp_path):
    """A copy of the tree without the extension (as after `pip install .`)
    and the package, extension included, in a site folder: `python -m
    pytest` run at the tree's root, as the README says, imports the
    installed package in the test process, in `python -c` children and in
    spawned workers."""
    site, tree = tmp_path / "site", tmp_path / "tree"
    pkg = os.path.dirname(os.path.abspath(pygpu.__file__))
    shutil.copytree(pkg, site / "pygpu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(pkg, tree / "pygpu",
                    ignore=shutil.ignore_patterns("__pycache__", "_C.*.so",
                                                  "_C.*.pyd"))
    assert not glob.glob(str(tree / "pygpu" / "_C.*.so"))
    (tree / "tests" / "packaging").mkdir(parents=True)
    (tree / "scripts").mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "conftest.py"), tree / "tests")
    shutil.copy(os.path.join(ROOT, "scripts", "fuzz_sizes.py"),
                tree / "scripts")
    (tree / "tests" / "packaging" / "test_child.py").write_text(CHILD_TEST)
    env = dict(os.environ, SITE=str(site), PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "tests"], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 passed" in out.stdout, out.stdout[-2000:]
