"""The goals pygpu's figures are held to: the most its time per call may
be, as a fraction of torch's on the same device, row by row.

GOALS maps "suite/case" patterns (fnmatch, first match wins) to that
fraction; every row with a pygpu/torch ratio gets one.  Per-call
overhead (the latency suite's one-element calls and empty(1)) is held to
0.3x, the tutorial model's forward at batch 32 to 0.8x and its training
step at batch 32 to 0.5x, the ResNet block's convolution to 1.5x
(torch runs oneDNN there); every other row to 1.0x (at most torch's time).
The latency suite's 64x64 matmul is arithmetic more than call overhead
on a CPU, so it falls under the 1.0x rule.  A pattern that starts with a
device ("cuda:") holds that device's rows only, before the others: on a
GPU the convolutions are held to 2.0x cuDNN's time.  (The normalisation
layers' GPU goal is a bandwidth, 0.8 of a device copy: the layers suite
times a copy of the same bytes beside them.)
"""
import fnmatch

from .cpuload import LOADED_CORES

GOALS = {
    "cuda:layers/conv2d*": 2.0,
    "latency/relu 1 elem": 0.3,
    "latency/add 1 elem": 0.3,
    "latency/empty(1)": 0.3,
    "model/forward b=32": 0.8,
    "model/train step b=32": 0.5,
    # torch's CPU convolution is oneDNN's; its CUDA one cuDNN's
    "layers/conv2d resnet*": 1.5,
    "*": 1.0,
}


def goal_of(suite, case, device=None):
    """The goal of a row: the most pygpu's time may be over torch's."""
    key = f"{suite}/{case}"
    for pattern, goal in GOALS.items():
        where, sep, rest = pattern.partition(":")
        if sep and "/" not in where:
            if where == device and fnmatch.fnmatchcase(key, rest):
                return goal
        elif fnmatch.fnmatchcase(key, pattern):
            return goal
    return None


def time_ratio(r):
    """pygpu's time over the peer's, from a ratio record."""
    if r["meaning"] == "time":
        return r["ratio"]
    return 1.0 / r["ratio"] if r["ratio"] else float("inf")


def evaluate(ratios):
    """A record per pygpu/torch ratio: the row, its thread setting, the
    time ratio, its goal, whether it is met and by what factor it is
    missed (time ratio over goal: 1.25 means pygpu's time must fall by
    a fifth), with the other load recorded while it was measured."""
    out = []
    for r in ratios:
        if r.get("num") != "pygpu" or r.get("den") != "torch":
            continue
        goal = goal_of(r["suite"], r["case"], r.get("device"))
        if goal is None:
            continue
        t = time_ratio(r)
        out.append({"suite": r["suite"], "case": r["case"],
                    "threads": r.get("threads"), "time_ratio": t,
                    "goal": goal, "met": t <= goal, "miss": t / goal,
                    "load_cores": r.get("load_cores"),
                    "loaded": bool(r.get("loaded"))})
    return out


def _verdict(g):
    if g["met"]:
        text = "met"
    else:
        text = (f"**missed** by {g['miss']:.2f}x (time to cut "
                f"{(1 - 1 / g['miss']) * 100:.0f}%)")
    if g["loaded"]:
        text += f", LOADED {g['load_cores']:.2f} cores"
    return text


def markdown(goals, device=None):
    """The goals table: a line per row, a pair of columns (ratio, verdict)
    per thread setting, side by side."""
    if not goals:
        return []
    settings = list(dict.fromkeys(g["threads"] for g in goals))
    rows = {}
    for g in goals:
        rows.setdefault((g["suite"], g["case"]), {})[g["threads"]] = g
    met = sum(g["met"] for g in goals)
    loaded = sum(g["loaded"] for g in goals)
    lines = ["## Goals: pygpu's time over torch's", "",
             "Each row's pygpu/torch time ratio"
             + (f" on {device}" if device else "")
             + " against its goal (the most it may be; runner/goals.py); "
             "'missed by F' is ratio / goal. "
             f"{met} of {len(goals)} met."
             + (f" {loaded} measured under other load above "
                f"{LOADED_CORES} core (LOADED): rerun those on a quiet "
                "machine." if loaded else ""), ""]
    head = ["suite", "case", "goal"]
    for s in settings:
        label = f"threads {s}" if s else "ratio"
        head += [label, "verdict"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (suite, case), by in rows.items():
        cells = [suite, case, f"{next(iter(by.values()))['goal']:g}x"]
        for s in settings:
            g = by.get(s)
            cells += ([f"{g['time_ratio']:.3g}x", _verdict(g)] if g
                      else ["", ""])
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines
