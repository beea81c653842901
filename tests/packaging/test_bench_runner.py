"""python -m benchmarks, run in-process on one small suite with tiny sizes:
it writes results.json and results.md holding rows with ratios, and it
refuses (does not time) an implementation whose result is wrong."""
import json
import os
import sys

import pytest

import pygpu

from conftest import ROOT, import_from_root

import_from_root("benchmarks")
from benchmarks.runner import main  # noqa: E402

ARGS = ["--suite", "bandwidth", "--sizes", "1024,2^12", "--reps", "3",
        "--quick", "--device", "cpu"]


@pytest.fixture(autouse=True)
def unpoisoned():
    """The runner times real work: no poisoned outputs."""
    pygpu._C._set_poison(False)


def _load(out):
    with open(out / "results.json") as f:
        return json.load(f)


def test_runner_writes_rows_and_ratios(tmp_path, capsys):
    assert main(ARGS + ["--out", str(tmp_path)]) == 0
    data = _load(tmp_path)
    meta = data["meta"]
    assert meta["device_type"] == "cpu" and meta["versions"]["numpy"]
    assert "commit" in meta and meta["cpu_count"] >= 1
    rows = data["rows"]
    cases = {r["case"] for r in rows}
    assert cases == {"relu n=2^10", "add n=2^10", "relu n=2^12",
                     "add n=2^12"}
    for r in rows:
        assert r["value"] > 0 and r["unit"] == "GB/s"
        assert r["device"] == "cpu" and r["dtype"] == "float32"
        assert r["size"] in (1024, 4096) and r["fraction_of_copy"] > 0
    mine = [r for r in rows if r["impl"] == "pygpu"]
    assert len(mine) == 4 and all("numpy" in r["ratios"] for r in mine)
    assert {(r["case"], r["den"]) for r in data["ratios"]} >= {
        (c, "numpy") for c in cases}
    assert not data["refused"]
    md = (tmp_path / "results.md").read_text()
    assert "## bandwidth" in md and "relu n=2^12" in md
    assert "numpy" in capsys.readouterr().err  # progress, one line a case


def test_runner_refuses_a_wrong_result(tmp_path, monkeypatch):
    monkeypatch.setattr(pygpu, "relu", lambda x: x + 1)
    assert main(ARGS + ["--out", str(tmp_path)]) == 1
    data = _load(tmp_path)
    refused = {(r["case"], r["impl"], r["kind"]) for r in data["refused"]}
    assert refused == {("relu n=2^10", "pygpu", "wrong result"),
                       ("relu n=2^12", "pygpu", "wrong result")}
    timed = {(r["case"], r["impl"]) for r in data["rows"]}
    assert ("relu n=2^10", "pygpu") not in timed
    assert ("relu n=2^10", "numpy") in timed  # the others still ran
    assert ("add n=2^10", "pygpu") in timed
    assert "wrong result, not timed" in \
        (tmp_path / "results.md").read_text()


def test_list_and_bad_sizes(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ("latency", "matmul", "bandwidth", "linear", "model",
                 "transfer", "allocator"):
        assert name in out
    with pytest.raises(SystemExit):
        main(["--sizes", "ten"])


def test_bench_alone_quick(tmp_path):
    """benchmarks/bench_alone.py times each library in a child process of
    its own and writes rows with ratios."""
    import subprocess
    out = tmp_path / "alone.json"
    r = subprocess.run([sys.executable,
                        os.path.join(ROOT, "benchmarks", "bench_alone.py"),
                        "--quick", "--rounds", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["meta"]["rounds"] == 1 and "pygpu" in data["meta"]["libraries"]
    times = [row for row in data["rows"] if row["impl"] == "pygpu"]
    assert len(times) == 10 and all(row["value"] > 0 for row in times)
    ratios = [row for row in data["rows"] if row["impl"] == "ratio"]
    assert ratios and all(row["value"] > 0 for row in ratios)
