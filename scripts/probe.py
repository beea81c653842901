#!/usr/bin/env python3
"""Reliability probes, each in a child process of its own so that a crash
or a hang is counted rather than ending the run, and a table of what they
found: calls, crashes, hangs, wrong results, unclean errors, leaks.

  fuzz         scripts/fuzz.py's differential families (bad input and the
               int64/size-list corners included) against NumPy
  train        training steps of a small MLP (Linear-ReLU-Linear, Adam,
               cross_entropy): the loss must fall and neither the process's
               resident memory nor pygpu's allocator may keep growing
  checkpoints  a saved model and optimizer state mutated (bytes flipped,
               cut short, spliced) and loaded: each load gives the saved
               values back or raises pickle.UnpicklingError (a subclass
               included) with a message; nothing else
  fork         fork() while another thread is inside backward(): the child
               runs a backward of its own and exits; a child that does not
               finish in time is a hang

    python scripts/probe.py [--scale S] [--device cpu|cuda] [--json FILE]

--scale multiplies every probe's count (1 is about a minute on two cores).
Exits non-zero if any cell but "calls" is not 0.
"""
import argparse
import io
import json
import os
import pickle
import re
import resource
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("calls", "crashes", "hangs", "wrong", "unclean", "leaks")


def rss_mib():
    """The process's resident memory now (not the peak), in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


# ----------------------------------------------------------- the probes
# Each runs in a child (`probe.py --child NAME N DEVICE`) and prints one
# JSON line of counts; the parent adds crashes and hangs.

def probe_fuzz(n, device):
    out = subprocess.run([sys.executable, os.path.join(HERE, "fuzz.py"),
                          "-n", str(n), "--device", device, "--show", "3"],
                         capture_output=True, text=True)
    sys.stderr.write(out.stdout[-4000:] + out.stderr[-2000:])
    m = re.search(r"fuzz: (\d+) calls .*?: 0 crashes, (\d+) wrong results, "
                  r"(\d+) unclean errors, (\d+) harness errors", out.stdout)
    if out.returncode < 0 or m is None:
        return {"calls": n, "crashes": 1}
    calls, wrong, unclean, other = map(int, m.groups())
    return {"calls": calls, "wrong": wrong, "unclean": unclean + other}


def _mlp(torch, device):
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(),
                          nn.Linear(64, 4)).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


def probe_train(n, device):
    import numpy as np
    import pygpu as torch
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 32)).astype(np.float32)
    y = (x[:, :4].argmax(1)).astype(np.int64)  # learnable labels
    x, y = torch.tensor(x, device=device), torch.tensor(y, device=device)
    model, opt = _mlp(torch, device)
    wrong, first, samples = 0, None, []
    for step in range(n):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % max(1, n // 20) == 0 or step == n - 1:
            value = loss.item()
            wrong += not np.isfinite(value)
            first = value if first is None else first
            samples.append((rss_mib(), torch.cuda.memory_allocated()
                            if device == "cuda" else 0))
    wrong += not loss.item() < 0.5 * first
    # After the first tenth (caches filled), memory stays flat: RSS within
    # 8 MiB (not under the sanitizers, whose quarantine holds freed memory),
    # the allocator's bytes in use exactly.
    settled = samples[len(samples) // 10:]
    grew = settled[-1][0] - settled[0][0] > 8 and \
        os.environ.get("PYGPU_SANITIZED") != "1"
    leaks = int(grew or settled[-1][1] != settled[0][1])
    return {"calls": n, "wrong": wrong, "leaks": leaks}


def _mutations(data, rng):
    """One mutated copy of data: a few bytes flipped, a cut, or a splice."""
    b = bytearray(data)
    kind = rng.integers(3)
    if kind == 0:
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(len(b)))] ^= 1 << int(rng.integers(8))
    elif kind == 1:
        del b[int(rng.integers(len(b))):]
    else:
        at = int(rng.integers(len(b)))
        b[at:at] = bytes(int(v) for v in
                         rng.integers(0, 256, int(rng.integers(1, 9))))
    return bytes(b)


def probe_checkpoints(n, device):
    import numpy as np
    import pygpu as torch
    model, opt = _mlp(torch, device)
    x = torch.randn(8, 32, device=device)
    model(x).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    data = buf.getvalue()
    rng = np.random.default_rng(1)
    counts = {"calls": 0, "wrong": 0, "unclean": 0}
    for _ in range(n):
        counts["calls"] += 1
        try:
            obj = torch.load(io.BytesIO(_mutations(data, rng)),
                             map_location=device)
        except pickle.UnpicklingError as e:
            counts["unclean"] += not str(e)
            continue
        except Exception as e:  # noqa: BLE001 - any other class is unclean
            counts["unclean"] += 1
            if counts["unclean"] <= 3:
                sys.stderr.write(f"unclean: {type(e).__name__}: {e}\n")
            continue
        # A mutation that still loads (a flipped bit in a value, say) must
        # give a state of the saved structure whose tensors are readable.
        try:
            model.load_state_dict(obj["model"])
            for t in obj["model"].values():
                t.cpu().numpy()
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, (RuntimeError, KeyError, TypeError,
                                  ValueError)) or not str(e):
                counts["unclean"] += 1
    return counts


FORK_CHILD_TIMEOUT = 10


def probe_fork(n, device):
    import pygpu as torch
    counts = {"calls": 0, "hangs": 0, "wrong": 0}
    w = torch.randn(64, 64, device=device, requires_grad=True)
    stop = threading.Event()

    def backward_forever():
        while not stop.is_set():
            (w @ w).relu().sum().backward()

    worker = threading.Thread(target=backward_forever, daemon=True)
    worker.start()
    try:
        for _ in range(n):
            time.sleep(0.002)
            counts["calls"] += 1
            pid = os.fork()
            if pid == 0:  # the child: a backward of its own, on the CPU
                code = 1
                try:
                    v = torch.ones(3, requires_grad=True)
                    (v * 2).sum().backward()
                    code = 0 if v.grad.tolist() == [2.0, 2.0, 2.0] else 2
                finally:
                    os._exit(code)
            deadline = time.monotonic() + FORK_CHILD_TIMEOUT
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    counts["wrong"] += os.waitstatus_to_exitcode(status) != 0
                    break
                if time.monotonic() > deadline:
                    counts["hangs"] += 1
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.005)
    finally:
        stop.set()
        worker.join()
    return counts


PROBES = {"fuzz": (probe_fuzz, 20_000, 1800),
          "train": (probe_train, 2_000, 1800),
          "checkpoints": (probe_checkpoints, 2_000, 1800),
          "fork": (probe_fork, 100, 1800)}


def run_child(name, n, device):
    """One probe in a child; crashes and hangs are counted here."""
    fn, _, limit = PROBES[name]
    row = dict.fromkeys(COLUMNS, 0)
    try:
        out = subprocess.run([sys.executable, __file__, "--child", name,
                              str(n), device], capture_output=True,
                             text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        row.update(calls=n, hangs=1)
        return row, "timed out"
    sys.stderr.write(out.stderr[-3000:])
    last = out.stdout.strip().splitlines()[-1:] or [""]
    if out.returncode != 0 or not last[0].startswith("{"):
        row.update(calls=n, crashes=1)
        return row, f"exit {out.returncode}"
    row.update(json.loads(last[0]))
    return row, ""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--only", nargs="*", choices=list(PROBES))
    p.add_argument("--json", help="write the table here as JSON")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        name, n, device = args.child
        print(json.dumps(PROBES[name][0](int(n), device)))
        return 0
    rows, bad = {}, 0
    print("| probe | seconds | " + " | ".join(COLUMNS) + " |")
    print("|---|---:|" + "---:|" * len(COLUMNS))
    for name in args.only or PROBES:
        n = max(1, int(PROBES[name][1] * args.scale))
        t0 = time.perf_counter()
        row, why = run_child(name, n, args.device)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows[name] = row
        bad += sum(row[c] for c in COLUMNS[1:])
        print(f"| {name} | {row['seconds']:.0f} | " +
              " | ".join(str(row[c]) for c in COLUMNS) + " |" +
              (f" ({why})" if why else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
