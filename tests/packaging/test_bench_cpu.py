"""python -m benchmarks on the CPU: the ops suite at tiny sizes, the load
recorded with each case, the wait for idle worker threads, two thread
settings in one run, and the goals table."""
import json
import subprocess
import sys
import threading
import time

import pytest

import pygpu

from conftest import import_from_root

import_from_root("benchmarks")
from benchmarks.runner import main, ops  # noqa: E402
from benchmarks.runner import core, cpuload, goals, threads  # noqa: E402

TINY = dict(ROWS=8, CLASSES=5, UNARY_N=64, HALF_SUM_N=256, HALF_ADD_N=64,
            ADD_SIZES=(16,), BF16_SUM_N=256)
CASES = {"softmax 8x5", "log_softmax 8x5", "cross_entropy 8x5",
         "sigmoid n=2^6", "exp n=2^6", "tanh n=2^6", "sum float16 n=2^8",
         "add float16 n=2^6", "add float32 n=2^4", "sum bfloat16 n=2^8"}
ARGS = ["--suite", "ops", "--reps", "2", "--quick", "--device", "cpu"]


@pytest.fixture(autouse=True)
def unpoisoned():
    """The runner times real work: no poisoned outputs."""
    pygpu._C._set_poison(False)


@pytest.fixture
def tiny_ops(monkeypatch):
    for name, value in TINY.items():
        monkeypatch.setattr(ops, name, value)


def _load(out):
    with open(out / "results.json") as f:
        return json.load(f)


def test_ops_suite_checks_times_and_records_load(tmp_path, tiny_ops):
    assert main(ARGS + ["--out", str(tmp_path)]) == 0
    data = _load(tmp_path)
    assert not data["refused"]
    rows = data["rows"]
    assert {r["case"] for r in rows} == CASES
    libs = {(r["case"], r["impl"]) for r in rows}
    for case in CASES - {"sum bfloat16 n=2^8"}:
        assert (case, "numpy") in libs and (case, "pygpu") in libs
    # NumPy has no bfloat16: pygpu (and torch) only
    assert ("sum bfloat16 n=2^8", "numpy") not in libs
    for r in rows:
        assert r["value"] > 0 and r["unit"] == "us"
        assert r["threads"] == "default"
        assert r["load_cores"] >= 0 and 0 <= r["load_fraction"] <= 1.0
        assert r["loaded"] == (r["load_cores"] > cpuload.LOADED_CORES)
        assert r["settle_ms"] >= 0
    if core.torch is not None:
        assert ("sum bfloat16 n=2^8", "torch") in libs
        assert {g["case"] for g in data["goals"]} == CASES
    md = (tmp_path / "results.md").read_text()
    assert "## ops" in md and "other load" in md
    assert "sum float16 n=2^8" in md


def test_ops_suite_refuses_a_wrong_sigmoid(tmp_path, tiny_ops,
                                           monkeypatch):
    monkeypatch.setattr(pygpu, "sigmoid", lambda x: pygpu.exp(x))
    assert main(ARGS + ["--out", str(tmp_path), "--pause", "0"]) == 1
    refused = {(r["case"], r["impl"]) for r in _load(tmp_path)["refused"]}
    assert refused == {("sigmoid n=2^6", "pygpu")}


def test_two_thread_settings_in_one_run(tmp_path, tiny_ops):
    before = pygpu.get_num_threads()
    assert main(ARGS + ["--out", str(tmp_path), "--threads", "1,default",
                        "--pause", "0"]) == 0
    assert pygpu.get_num_threads() == before  # restored
    data = _load(tmp_path)
    assert set(data["meta"]["threads"]) == {"1", "default"}
    assert data["meta"]["threads"]["1"]["pygpu"] == 1
    by = {}
    for r in data["rows"]:
        by.setdefault(r["threads"], set()).add((r["case"], r["impl"]))
    assert set(by) == {"1", "default"} and by["1"] == by["default"]
    assert {r["threads"] for r in data["ratios"]} == {"1", "default"}
    md = (tmp_path / "results.md").read_text()
    assert "| threads | case |" in md
    if core.torch is not None:
        assert "| threads 1 | verdict | threads default | verdict |" in md


def test_threads_and_pause_arguments(capsys):
    assert threads.parse("1, default,1") == ["1", "default"]
    for bad in ("0", "two", "1,,2"):
        with pytest.raises(Exception):
            threads.parse(bad)
    with pytest.raises(SystemExit):
        main(["--pause", "-1"])
    assert main(["--list"]) == 0
    assert "ops" in capsys.readouterr().out


def test_orders_rotate_and_reverse():
    orders = core._orders(["a", "b", "c"], 6)
    assert len({tuple(o) for o in orders}) == 6
    assert {o[0] for o in orders} == {"a", "b", "c"}


def test_load_meter_sees_another_process():
    if cpuload.machine_busy_s() is None:
        pytest.skip("no /proc/stat")
    meter = cpuload.LoadMeter().start()
    spin = subprocess.Popen([sys.executable, "-c",
                             "import time\nt = time.time()\n"
                             "while time.time() - t < 0.6: pass"])
    spin.wait(timeout=60)
    load = meter.stop()
    # the child kept a core busy for most of the window
    assert load["load_cores"] > 0.3 and load["loaded"]


def test_settle_waits_for_a_polling_thread():
    stop = time.perf_counter() + 0.15

    def poll():
        while time.perf_counter() < stop:
            pass
    t = threading.Thread(target=poll)
    t.start()
    waited, quiet = cpuload.settle()
    t.join()
    assert quiet and waited >= 0.1
    waited, quiet = cpuload.settle()
    assert quiet and waited < 0.5  # nothing left to wait for


def test_goals_table():
    assert goals.goal_of("model", "forward b=32") == 0.8
    assert goals.goal_of("model", "forward b=1024") == 1.0
    assert goals.goal_of("model", "train step b=32") == 0.5
    assert goals.goal_of("latency", "relu 1 elem") == 0.3
    assert goals.goal_of("ops", "softmax 2048x1000") == 1.0
    # device-specific goals hold that device's rows only
    assert goals.goal_of("layers", "conv2d resnet 3x3 forward") == 1.5
    assert goals.goal_of("layers", "conv2d resnet 3x3 forward",
                         "cpu") == 1.5
    assert goals.goal_of("layers", "conv2d resnet 3x3 forward",
                         "cuda") == 2.0
    assert goals.goal_of("layers", "conv2d lenet conv1 forward",
                         "cuda") == 2.0
    assert goals.goal_of("layers", "conv2d lenet conv1 forward",
                         "cpu") == 1.0
    ratios = [
        {"suite": "ops", "case": "exp n=2^20", "num": "pygpu",
         "den": "torch", "ratio": 1.5, "meaning": "time", "threads": "1",
         "load_cores": 0.02, "loaded": False},
        {"suite": "ops", "case": "exp n=2^20", "num": "pygpu",
         "den": "torch", "ratio": 0.9, "meaning": "time",
         "threads": "default", "load_cores": 0.5, "loaded": True},
        {"suite": "matmul", "case": "matmul float32 256", "num": "pygpu",
         "den": "torch", "ratio": 2.0, "meaning": "throughput",
         "threads": "1"},
        {"suite": "ops", "case": "exp n=2^20", "num": "pygpu",
         "den": "numpy", "ratio": 0.2, "meaning": "time", "threads": "1"},
    ]
    got = goals.evaluate(ratios)
    assert len(got) == 3  # numpy ratios carry no goal
    assert not got[0]["met"] and got[0]["miss"] == pytest.approx(1.5)
    assert got[1]["met"] and got[1]["loaded"]
    assert got[2]["time_ratio"] == pytest.approx(0.5) and got[2]["met"]
    md = "\n".join(goals.markdown(got, "cpu"))
    assert "2 of 3 met" in md
    assert "| ops | exp n=2^20 | 1x | 1.5x | **missed** by 1.50x " \
        "(time to cut 33%) | 0.9x | met, LOADED 0.50 cores |" in md
    assert "| matmul | matmul float32 256 | 1x | 0.5x | met |  |  |" in md


def test_isolate_runs_each_library_in_a_child(tmp_path):
    """--isolate: one child process per library and round; the parent
    merges their rows and recomputes the ratios from the medians."""
    assert main(["--suite", "latency", "--quick", "--device", "cpu",
                 "--reps", "1", "--isolate", "--out", str(tmp_path)]) == 0
    data = _load(tmp_path)
    assert data["meta"]["isolated"] and not data["refused"]
    rows = data["rows"]
    libs = {r["impl"] for r in rows}
    assert {"pygpu", "numpy"} <= libs
    for r in rows:
        assert r["value"] > 0 and len(r["rounds"]) == 1
        assert r["threads"] == "default" and "load_cores" in r
    mine = {r["case"]: r for r in rows if r["impl"] == "pygpu"}
    others = {r["case"]: r for r in rows if r["impl"] == "numpy"}
    assert set(mine) == {"relu 1 elem", "add 1 elem", "matmul 64x64",
                         "empty(1)"}
    for ratio in data["ratios"]:
        if ratio["den"] == "numpy":
            case = ratio["case"]
            assert ratio["ratio"] == pytest.approx(
                mine[case]["value"] / others[case]["value"])
    assert "process of its own" in (tmp_path / "results.md").read_text()


def test_isolate_child_arguments():
    from benchmarks.runner import isolate
    assert isolate.child_args(
        ["--quick", "--isolate", "--out", "D", "--threads=1,default",
         "--suite", "ops", "--reps", "5", "--save"]) == \
        ["--quick", "--suite", "ops"]
