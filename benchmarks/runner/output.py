"""What a run leaves: results.json (provenance, every figure and ratio),
results.md (a table per suite) and, when matplotlib imports, PNG plots."""
import json
import os
import re
import subprocess
import sys

import numpy as np

from provenance import provenance

from . import goals as goals_
from .cpuload import LOADED_CORES


# environment variables that set the libraries' thread pools
THREAD_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS",
              "MKL_NUM_THREADS", "PYGPU_NUM_THREADS")


def _version(name):
    mod = sys.modules.get(name)
    return getattr(mod, "__version__", None) if mod else None


def device_name(device):
    import pygpu
    if device == "cuda":
        return pygpu.cuda.get_device_name()
    return "cpu: " + str(provenance()["cpu"])


def device_kind(device):
    """'cpu', or the GPU's name as a folder name ('nvidia-h100-80gb-hbm3')."""
    if device != "cuda":
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", device_name(device).lower()).strip("-")


def _driver():
    """The CUDA driver: the version the runtime reports, and the release
    from nvidia-smi when it runs."""
    from pygpu import _C
    v = _C._cuda_versions()
    out = {"cuda_driver_api": v.get("driver") or None,
           "cuda_runtime": v.get("runtime") or None,
           "cuda_built": v.get("built") or None, "release": None}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
        out["release"] = smi.stdout.strip().splitlines()[0] or None
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return out


def meta(bench, suites, wall, argv):
    import pygpu
    m = provenance()
    m.update({
        "device": device_name(bench.device),
        "device_type": bench.device,
        "device_kind": device_kind(bench.device),
        "driver": _driver() if bench.device == "cuda" else None,
        "versions": {"python": m["python"], "numpy": np.__version__,
                     "pygpu": pygpu.__version__,
                     "pygpu_cuda": pygpu.version.cuda,
                     "torch": _version("torch"), "cupy": _version("cupy")},
        "threads": getattr(bench, "thread_settings", None) or {
            "default": {"pygpu": pygpu.get_num_threads(),
                        "torch": sys.modules["torch"].get_num_threads()
                        if "torch" in sys.modules else None}},
        "env": {k: os.environ[k] for k in THREAD_ENV if k in os.environ},
        "peers": bench.peers,
        "timers": bench.timers(),
        "l2_bytes": getattr(bench, "l2_bytes", None),
        "ring_bytes": bench.ring_bytes,
        "quick": bench.quick,
        "isolated": bool(getattr(bench, "isolated", False)),
        "settings": bench.settings,
        "suites": suites,
        "argv": list(sys.argv[1:] if argv is None else argv),
        "wall_s": round(wall, 1),
    })
    return m


def write_json(out, bench, meta_, docs):
    """Write results.json (replaced whole); its path and the data."""
    os.makedirs(out, exist_ok=True)
    data = {"meta": meta_, "suites": docs, "rows": bench.rows,
            "ratios": bench.ratios, "skipped": bench.skipped,
            "refused": bench.refused,
            "goals": goals_.evaluate(bench.ratios),
            "loaded_cases": sorted({(r["suite"], r["case"],
                                     r.get("threads") or "")
                                    for r in bench.rows if r.get("loaded")})}
    path = os.path.join(out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    return path, data


def write(out, bench, meta_, docs):
    """Write results.json, results.md and the plots; the file names."""
    path, data = write_json(out, bench, meta_, docs)
    return [path] + _render(out, data)


def render(out):
    """Rewrite results.md and the plots of DIR from its results.json."""
    with open(os.path.join(out, "results.json")) as f:
        data = json.load(f)
    for path in _render(out, data):
        print("wrote", path)


def _render(out, data):
    path = os.path.join(out, "results.md")
    with open(path, "w") as f:
        f.write(markdown(data))
    return [path] + plots(out, data)


# ------------------------------------------------------------ markdown
def _threads(t):
    """meta's threads: {setting: {library: n}} (or, from older runs,
    {library: n})."""
    if t and all(isinstance(v, dict) for v in t.values()):
        return "; ".join(f"{label}: " + ", ".join(
            f"{k} {n}" for k, n in v.items() if n) for label, v in t.items())
    return ", ".join(f"{k} {n}" for k, n in (t or {}).items() if n)


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def markdown(data):
    m = data["meta"]
    v = m["versions"]
    lines = [f"# Benchmarks: {m['device']}", "",
             f"- date {m['date']}, commit {m['commit']}, "
             f"`python -m benchmarks {' '.join(m['argv'])}`, "
             f"{m['wall_s']} s",
             f"- CPU {m['cpu']}, {m['cpu_count']} cores, load average "
             f"{m['loadavg'] and ', '.join(f'{x:.2f}' for x in m['loadavg'])}",
             "- " + ", ".join(f"{k} {v[k]}" for k in v if v[k]),
             "- threads: " + _threads(m["threads"])
             + "".join(f", {k}={x}" for k, x in m.get("env", {}).items()),
             "- timers: " + ", ".join(f"{k}: {t}"
                                      for k, t in m["timers"].items())]
    if m.get("driver"):
        d = m["driver"]
        lines.append(f"- driver {d['release']} (CUDA driver API "
                     f"{d['cuda_driver_api']}, runtime {d['cuda_runtime']})")
    if m.get("ring_bytes"):
        lines.append(f"- GPU inputs rotate through "
                     f"{m['ring_bytes'] / 2**20:.0f} MiB per library "
                     f"(L2 {m['l2_bytes'] / 2**20:.0f} MiB)")
    if m.get("isolated"):
        lines.append(f"- each library in a process of its own (--isolate),"
                     f" {m['settings']['rounds']} rounds; a figure is the "
                     "median of the rounds'")
    elif m.get("settings", {}).get("pause") is not None and \
            m["device_type"] == "cpu":
        p = m["settings"]["pause"]
        lines.append("- each library timed alone: before its turn, "
                     + ("a wait until this process's idle worker threads "
                        "sleep (no CPU used over 20 ms)" if p == "auto"
                        else f"a pause of {p} s"))
    loaded = data.get("loaded_cases") or []
    lines += ["", "Figures are medians of interleaved rounds; a ratio is "
              "pygpu's figure over the peer's, from the same rounds "
              "(time: below 1 is pygpu faster; throughput: above 1 is "
              "pygpu faster).  'other load' is the machine's busy CPU "
              "time outside this process while the case was timed, in "
              f"cores; above {LOADED_CORES} it is marked LOADED.", ""]
    if loaded:
        lines += [f"**{len(loaded)} case(s) measured under other load "
                  f"above {LOADED_CORES} core** (marked LOADED below): "
                  "their figures may be low.", ""]
    lines += goals_.markdown(goals_.evaluate(data["ratios"]),
                             m.get("device"))
    multi = len({r.get("threads") for r in data["rows"]}) > 1
    for suite, doc in data["suites"].items():
        lines += [f"## {suite}", "", doc, ""]
        rows = [r for r in data["rows"] if r["suite"] == suite]
        if rows:
            frac = sorted({k for r in rows for k in r
                           if k.startswith("fraction_of_")})
            head = (["threads"] if multi else []) + \
                ["case", "impl", "figure", "unit", "us/call",
                 "pygpu/peer", "other load"] + \
                [k.replace("_", " ") for k in frac]
            lines += ["| " + " | ".join(head) + " |",
                      "|" + "---|" * len(head)]
            for r in rows:
                ratios = ", ".join(f"{p} {x:.3g}" for p, x in
                                   (r.get("ratios") or {}).items())
                load = _fmt(r.get("load_cores"))
                if r.get("loaded"):
                    load = f"**{load} LOADED**"
                cells = ([r.get("threads") or ""] if multi else []) + \
                    [r["case"], r["impl"], _fmt(r["value"]), r["unit"],
                     _fmt(r.get("us_per_call")), ratios, load] + \
                    [_fmt(r.get(k)) for k in frac]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        for s in data["skipped"]:
            if s["suite"] == suite:
                who = f" ({s['impl']})" if s["impl"] else ""
                where = f" [threads {s.get('threads')}]" if multi else ""
                lines.append(f"- skipped: {s['case']}{who}{where}: "
                             f"{s['reason']}")
        for s in data["refused"]:
            if s["suite"] == suite:
                where = f" [threads {s.get('threads')}]" if multi else ""
                lines.append(f"- **{s['kind']}, not timed**: {s['case']} "
                             f"({s['impl']}){where}: {s['message']}")
        if lines[-1] != "":
            lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------ plots
def plots(out, data):
    """PNG plots of the suites that have rows; [] without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed: no plots (pip install '
              '".[bench]")', file=sys.stderr)
        return []
    rows = data["rows"]
    dev = data["meta"]["device"]
    made = []
    multi = len({r.get("threads") for r in rows}) > 1

    def who(r):
        """An impl's label, with the thread setting when there are two."""
        return f"{r['impl']} [{r.get('threads')}]" if multi else r["impl"]

    def lines(suite, key, ylabel, fname, title, xlabel, logy=False):
        sel = [r for r in rows if r["suite"] == suite and
               isinstance(r["size"], int) and key(r) is not None]
        if not sel:
            return
        series = {}
        for r in sel:
            label, y = key(r)
            if multi:
                label += f" [{r.get('threads')}]"
            series.setdefault(label, []).append((r["size"], y))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=label)
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}\n{dev}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out, fname)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)

    lines("matmul", lambda r: (f"{r['impl']} {r['dtype']}", r["value"]),
          "TFLOP/s", "matmul.png", "matmul n x n x n", "n")
    lines("bandwidth",
          lambda r: None if r["reference"] else
          (f"{r['impl']} {r['case'].split()[0]}", r["fraction_of_copy"]),
          "fraction of copy bandwidth", "bandwidth.png",
          "relu and add: bandwidth / same-run copy", "elements (float32)")
    lines("transfer", lambda r: (f"{r['impl']} {r['case'].rsplit(' ', 2)[0]}",
                                 r["value"]),
          "GB/s", "transfer.png", "host <-> device transfers", "bytes")
    lat = [r for r in rows if r["suite"] == "latency"]
    if lat:
        cases = list(dict.fromkeys(r["case"] for r in lat))
        impls = list(dict.fromkeys(who(r) for r in lat))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        width = 0.8 / len(impls)
        for k, impl in enumerate(impls):
            vals = {r["case"]: r["value"] for r in lat if who(r) == impl}
            xs = [i + k * width for i, c in enumerate(cases) if c in vals]
            ax.bar(xs, [vals[c] for c in cases if c in vals], width,
                   label=impl)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
        ax.set_xticklabels(cases, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("host us per call")
        ax.set_title(f"per-call latency\n{dev}", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out, "latency.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)
    return made
