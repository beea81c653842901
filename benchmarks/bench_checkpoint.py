"""Saving and loading a state dict of 16 float32 tensors (1 GiB in all;
--quick: 128 MiB) with pygpu.save / pygpu.load, against `cp` of the same
file and torch.save / torch.load (when torch imports), on the CPU.

Before timing, the file pygpu writes is loaded back (by pygpu and, when
present, by torch) and checked against the NumPy arrays it was made from.
Each round times, in turn (the contenders' order reversed every other
round): cp of the checkpoint to a new file, pygpu.save, torch.save, both
again without CRC-32s (set_crc32_options(False)), each to a file removed
first, then reading the checkpoint torch wrote: `cat` to /dev/null (the
reader's floor), pygpu.load,
torch.load(weights_only=True), and both with mmap=True (the time to map;
then the tensors are summed to touch every page, timed apart).  The files
go to /dev/shm when it has room (else --dir or a temporary folder) and are
never synced, so these are memory and kernel copy speeds, the same for
every contender.  Figures are medians over the rounds, in GB/s of
checkpoint bytes; ratios are pygpu's throughput over cp's (saves and
loads), cat's (loads) and torch's.  The anonymous memory a load adds
(RssAnon) is reported too: a copying load adds the whole checkpoint,
a mapped one should add nothing.

  python benchmarks/bench_checkpoint.py [--quick] [--rounds N]
      [--mib-per-tensor M] [--dir DIR] [--json PATH]
"""
import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np

import pygpu

try:
    import torch
except ImportError:  # pragma: no cover - optional peer
    torch = None

N_TENSORS = 16


def rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def make_arrays(mib):
    rng = np.random.default_rng(0)
    n = mib * (1 << 20) // 4
    return {f"layer{i}.weight": rng.standard_normal(n, dtype=np.float32)
            for i in range(N_TENSORS)}


def validate(arrays, path):
    back = pygpu.load(path)
    for k, a in arrays.items():
        if not np.array_equal(back[k].numpy(), a):
            raise SystemExit(f"pygpu.load: {k} differs from NumPy")
    if torch is not None:
        tb = torch.load(path, weights_only=True)
        for k, a in arrays.items():
            if not np.array_equal(tb[k].numpy(), a):
                raise SystemExit(f"torch.load of pygpu's file: {k} differs")


def timed(fn):
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def default_dir(nbytes):
    """/dev/shm when it has room for the four files: a memory file system,
    so that the disk's write-back (which throttles any writer once enough
    of its pages are dirty) does not decide the figures."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize > 5 * nbytes else None


def measure(mib=64, rounds=5, where=None, say=print):
    """{case: {impl: median seconds}} and {"rss": {impl: bytes}}, with
    nbytes, for the state dict of N_TENSORS tensors of mib MiB."""
    arrays = make_arrays(mib)
    nbytes = sum(a.nbytes for a in arrays.values())
    sd_p = {k: pygpu.from_numpy(a) for k, a in arrays.items()}
    sd_t = {k: torch.from_numpy(a) for k, a in arrays.items()} \
        if torch is not None else None
    where = where or default_dir(nbytes)
    say(f"files in {where or tempfile.gettempdir()}")
    tmp = tempfile.mkdtemp(prefix="ckpt_bench_", dir=where)
    try:
        p_file = os.path.join(tmp, "pygpu.pt")
        t_file = os.path.join(tmp, "torch.pt")
        out = os.path.join(tmp, "out.pt")
        pygpu.save(sd_p, p_file)
        validate(arrays, p_file)
        src = t_file if torch is not None else p_file
        if torch is not None:
            torch.save(sd_t, t_file)
            back = pygpu.load(t_file)
            for k, a in arrays.items():
                if not np.array_equal(back[k].numpy(), a):
                    raise SystemExit(f"pygpu.load of torch's file: {k}")
            del back
        times = {"save": {}, "save, no crc32": {}, "load": {},
                 "mmap load": {}, "mmap load + touch": {}}
        rss = {}

        def note(case, impl, s):
            times[case].setdefault(impl, []).append(s)

        def writer(fn):
            if os.path.exists(out):
                os.remove(out)
            return timed(fn)[0]

        def without_crc(lib):
            def save(sd):
                lib.serialization.set_crc32_options(False)
                try:
                    lib.save(sd, out)
                finally:
                    lib.serialization.set_crc32_options(True)
            return save

        saves = [("save", "cp", lambda: subprocess.run(
            ["cp", src, out], check=True)),
            ("save", "pygpu", lambda: pygpu.save(sd_p, out)),
            ("save, no crc32", "pygpu", lambda: without_crc(pygpu)(sd_p))]
        if torch is not None:
            saves += [("save", "torch", lambda: torch.save(sd_t, out)),
                      ("save, no crc32", "torch",
                       lambda: without_crc(torch)(sd_t))]
        loaders = [("pygpu", lambda m: pygpu.load(src, mmap=m))]
        if torch is not None:
            loaders.append(("torch", lambda m: torch.load(
                src, weights_only=True, mmap=m)))
        for r in range(rounds):
            # the contenders' order reversed every other round, so that
            # none always runs right after the same other
            step = -1 if r % 2 else 1
            for case, impl, fn in saves[::step]:
                note(case, impl, writer(fn))
            note("load", "cat", timed(lambda: subprocess.run(
                f"cat {src} > /dev/null", shell=True, check=True))[0])
            for impl, fn in loaders[::step]:
                before = rss_anon()
                s, sd = timed(lambda: fn(False))
                note("load", impl, s)
                rss[f"{impl} load"] = rss_anon() - before
                del sd
                gc.collect()
                before = rss_anon()
                s, sd = timed(lambda: fn(True))
                note("mmap load", impl, s)
                s2, total = timed(lambda: sum(float(v.sum())
                                              for v in sd.values()))
                note("mmap load + touch", impl, s + s2)
                rss[f"{impl} mmap load"] = rss_anon() - before
                del sd
                gc.collect()
            say(f"round {r + 1}/{rounds} done")
        med = {c: {i: statistics.median(v) for i, v in d.items()}
               for c, d in times.items()}
        return med, rss, nbytes
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(med, rss, nbytes, say=print):
    """Prints the figures; returns them as rows.  pygpu's are also given
    as ratios of throughput: to cp's (a save and a load both move the
    checkpoint's bytes once between memory and the page cache, as cp
    does), to cat's for loads (reading alone) and to torch's."""
    rows = []
    gb = nbytes / 1e9
    cp = med["save"].get("cp")
    for case, d in med.items():
        for impl, s in d.items():
            row = {"case": case, "impl": impl, "seconds": s,
                   "GB/s": gb / s}
            line = f"{case:18s} {impl:6s} {s * 1e3:8.1f} ms " \
                f"{gb / s:7.2f} GB/s"
            if impl == "pygpu":
                if cp and not case.startswith("mmap"):
                    row["vs cp"] = cp / s
                    line += f"  x{cp / s:.2f} of cp"
                if "cat" in d:
                    row["vs cat"] = d["cat"] / s
                    line += f"  x{d['cat'] / s:.2f} of cat"
                if "torch" in d:
                    row["vs torch"] = d["torch"] / s
                    line += f"  x{d['torch'] / s:.2f} of torch"
            rows.append(row)
            say(line)
    for k, v in rss.items():
        say(f"RssAnon added by {k}: {v / 2**20:.0f} MiB "
            f"({v / nbytes * 100:.0f}% of the checkpoint)")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="16 x 8 MiB and 3 rounds")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--mib-per-tensor", type=int)
    ap.add_argument("--dir", help="where the files go (default: /dev/shm "
                    "when it has room, else a temporary folder)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    mib = args.mib_per_tensor or (8 if args.quick else 64)
    rounds = args.rounds or (3 if args.quick else 5)
    print(f"pygpu {pygpu.__version__}, numpy {np.__version__}, torch "
          f"{getattr(torch, '__version__', 'absent')}; {N_TENSORS} x {mib} "
          f"MiB float32, {rounds} rounds")
    med, rss, nbytes = measure(mib, rounds, args.dir)
    rows = report(med, rss, nbytes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bytes": nbytes, "rows": rows, "rss": rss}, f,
                      indent=1)


if __name__ == "__main__":
    main()
