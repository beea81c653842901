"""python -m pygpu: --help, the model check, --json, the exit code."""
import json
import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "pygpu", *args],
                          capture_output=True, text=True, timeout=120)


def test_help():
    r = run("--help")
    assert r.returncode == 0
    for word in ("--device", "--batch", "--json", "usage: python -m pygpu"):
        assert word in r.stdout


def test_cpu_run_writes_json(tmp_path):
    path = tmp_path / "out.json"
    r = run("--device", "cpu", "--batch", "5", "--json", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("OK")
    info = json.loads(path.read_text())
    assert info["ok"] is True and info["device"] == "cpu"
    assert info["shape"] == [5, 10] and info["max_rel_error"] < 1e-4
    assert info["matmul_tflops"] > 0
    assert info["build"].startswith(("CUDA", "CPU-only"))


def test_failure_exit_code():
    r = run("--device", "mps")
    assert r.returncode == 1 and "FAILED" in r.stdout
    assert run("--batch", "0").returncode == 2
