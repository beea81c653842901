"""nn.parallel.DistributedDataParallel on 2 processes (through the
launcher, under a hard timeout): gradients equal to single-process
training on the whole batch, no_sync, buffers, unused parameters; and the
digits example trained with --ddp."""
import json
import os
import re
import sys

import pytest

from conftest import ROOT
from test_distributed import HAS_MPI, launch, worker

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "dist_workers"))
from ddp import CHECKS  # noqa: E402

import pygpu  # noqa: E402
from pygpu import nn  # noqa: E402

needs_mpi = pytest.mark.skipif(
    not HAS_MPI, reason="mpi4py and an mpiexec are not installed "
                        "(pip install '.[distributed]')")


def test_names():
    assert nn.parallel.DistributedDataParallel.__name__ == \
        "DistributedDataParallel"
    with pytest.raises(ValueError, match="not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))


@pytest.fixture(scope="module")
def ddp_results(tmp_path_factory):
    if not HAS_MPI:
        pytest.skip("mpi4py and an mpiexec are not installed")
    out = tmp_path_factory.mktemp("ddp")
    r = launch(2, worker("ddp.py"), env={"DIST_OUT": str(out)})
    results = {}
    for rank in range(2):
        f = out / f"rank{rank}.json"
        if f.exists():
            results[rank] = json.loads(f.read_text())["results"]
    return r, results


@needs_mpi
@pytest.mark.parametrize("check", CHECKS)
def test_ddp(ddp_results, check):
    r, results = ddp_results
    assert len(results) == 2, (r.returncode, r.stderr[-4000:])
    bad = {k: v[check] for k, v in results.items() if v[check] != "ok"}
    assert not bad, "\n".join(f"rank {k}: {v}" for k, v in bad.items())


@needs_mpi
def test_digits_example_with_ddp():
    pytest.importorskip("sklearn", reason="scikit-learn provides the data")
    r = launch(2, os.path.join(ROOT, "examples", "train_digits.py"),
               "--ddp", "--epochs", "8", "--plot", "")
    assert r.returncode == 0, r.stderr[-3000:]
    m = re.search(r"test accuracy ([0-9.]+) after 8 epochs .* 2 processes",
                  r.stdout)
    assert m, r.stdout[-2000:]
    assert float(m.group(1)) >= 0.95
    assert pygpu.distributed.is_initialized() is False


@needs_mpi
def test_torch_tutorial_example_runs_as_written():
    """PyTorch's basic DDP example with `import pygpu as torch` ("gloo",
    which runs on MPI, on the CPU): every rank steps and ends with the
    same parameters (the script asserts it)."""
    r = launch(2, os.path.join(ROOT, "examples", "ddp_toy.py"))
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in range(2):
        assert f"Start running basic DDP example on rank {rank}." in r.stdout
        assert re.search(rf"rank {rank}: loss [0-9.]+", r.stdout), r.stdout


def test_gloo_names_the_cpu_backend():
    from pygpu.distributed import backend
    assert backend.backend_class("gloo") == backend.backend_class("mpi")
