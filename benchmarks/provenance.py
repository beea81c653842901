"""Where a benchmark figure came from: commit, date, machine and load.

Both benchmark scripts put this dict under "meta" in their JSON, so that a
file in benchmarks/results/ says what produced it.
"""
import datetime
import os
import platform
import subprocess


def _commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "describe", "--always",
                              "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def provenance():
    """A JSON-ready dict describing this run's code and machine."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.timezone.utc)
        .isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg": list(load) if load else None,
    }
