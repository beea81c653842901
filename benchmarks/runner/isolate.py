"""--isolate (CPU): each library in a process of its own.

The parent times nothing.  For each thread setting and each of R rounds
(3 with --quick, else 5) it runs `python -m benchmarks` once per library,
the libraries taking turns in another order each round (core._orders),
the child keeping that library's implementations (and the cases'
yardsticks, such as the bandwidth suite's copy) with --only.  Figures
measured by other means (the allocator's core pair, the data loader's
epochs) come from pygpu's child.  A row's figure is the median of its
rounds' (each a median of the child's batches); the ratios pygpu/peer
are recomputed from those medians, and a row is flagged LOADED when any
of its rounds was.

In one process (the default) every case's implementations share one set
of inputs and one result check, and take turns batch by batch, so that
drifts of the machine hit all alike; here they take turns process by
process, each round minutes apart, but no library's threads can be near
another's.  On a quiet machine the two modes should agree; where they
do not, the in-process wait between libraries is not enough.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from .core import _orders

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# options of the parent that the children do not take as they are
_DROP = {"--isolate": 0, "--out": 1, "--save": 0, "--threads": 1,
         "--reps": 1}


def child_args(argv):
    """The parent's arguments, less those the children get their own of."""
    out, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in _DROP:
            skip = _DROP[name] if "=" not in arg else 0
            continue
        out.append(arg)
    return out


_CHILD = ("import runpy, sys; sys.path.append({root!r}); "
          "runpy.run_module('benchmarks', run_name='__main__')")


def _child_env():
    """This process's environment, with the source tree on PYTHONPATH
    when the pygpu imported here is the tree's in-place build."""
    import pygpu
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
    if here == ROOT:
        env["PYTHONPATH"] = os.pathsep.join(
            [ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_children(bench, argv, settings, libs, say):
    """Runs the children; [(thread setting, child's results.json data)]."""
    s = bench.settings
    rounds = s["rounds"]
    reps = max(3, math.ceil(s["reps"] / rounds))
    base = child_args(argv)
    tmp = tempfile.mkdtemp(prefix="pygpu-bench-isolate-")
    got = []
    for label in settings:
        for r, order in enumerate(_orders(list(libs), rounds)):
            for lib in order:
                out = os.path.join(tmp, f"{label}-{r}-{lib}")
                # the benchmarks package from this tree (last on the path),
                # the pygpu this process imports (an installed one is not
                # shadowed by an unbuilt tree: the child starts in tmp)
                cmd = [sys.executable, "-c", _CHILD.format(root=ROOT),
                       *base, "--only", lib, "--threads", label, "--reps",
                       str(reps), "--out", out]
                say(f"threads {label}, round {r + 1}/{rounds}: {lib} alone")
                p = subprocess.run(cmd, cwd=tmp, capture_output=True,
                                   text=True, env=_child_env())
                path = os.path.join(out, "results.json")
                if p.returncode not in (0, 1) or not os.path.exists(path):
                    raise RuntimeError(
                        f"the {lib} child failed (exit {p.returncode}):\n"
                        + p.stderr[-2000:])
                with open(path) as f:
                    got.append((label, json.load(f)))
    return got


def _median_row(rs):
    row = dict(rs[0])
    row.pop("ratios", None)
    row["value"] = statistics.median(r["value"] for r in rs)
    row["rounds"] = [r["value"] for r in rs]
    for key in [k for k in row if k == "us_per_call"
                or k.startswith("fraction_of_")]:
        row[key] = statistics.median(r[key] for r in rs if key in r)
    loads = [r for r in rs if "load_cores" in r]
    if loads:
        row["load_cores"] = max(r["load_cores"] for r in loads)
        row["load_fraction"] = max(r["load_fraction"] for r in loads)
        row["loaded"] = any(r["loaded"] for r in loads)
    return row


def merge(bench, results):
    """The children's rows, ratios, skips and refusals as one run's, into
    bench."""
    by_row, by_case, seen = {}, {}, set()
    for label, data in results:
        for r in data["rows"]:
            r["threads"] = label
            by_row.setdefault((label, r["suite"], r["case"], r["impl"]),
                              []).append(r)
        for rec, out in ((data["skipped"], bench.skipped),
                         (data["refused"], bench.refused)):
            for s in rec:
                s["threads"] = label
                key = json.dumps(s, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    out.append(s)
        # ratios of figures measured by other means (pygpu's child)
        for r in data["ratios"]:
            if r["suite"] not in {x["suite"] for x in data["rows"]
                                  if "us_per_call" in x}:
                r["threads"] = label
                bench.ratios.append(r)
    for key, rs in by_row.items():
        row = _median_row(rs)
        bench.rows.append(row)
        if "us_per_call" in row:
            by_case.setdefault(key[:3], []).append(row)
    for (label, suite, case), rows in by_case.items():
        mine = next((r for r in rows if r["impl"] == "pygpu"), None)
        if mine is None:
            continue
        mine["ratios"] = {}
        for r in rows:
            if r is mine or r["reference"] or not r["value"]:
                continue
            ratio = mine["value"] / r["value"]
            mine["ratios"][r["impl"]] = ratio
            load = [x for x in (mine, r) if "load_cores" in x]
            bench.ratios.append({
                "suite": suite, "case": case, "size": mine["size"],
                "dtype": mine["dtype"], "device": mine["device"],
                "num": "pygpu", "den": r["impl"], "ratio": ratio,
                "meaning": "throughput" if mine["higher_is_better"]
                else "time", "threads": label,
                **({"load_cores": max(x["load_cores"] for x in load),
                    "loaded": any(x["loaded"] for x in load)}
                   if load else {})})
    for label, data in results:
        bench.thread_settings.setdefault(
            label, data["meta"]["threads"].get(label))
