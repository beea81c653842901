"""The runner's machinery: which libraries take part on the device, how a
case is checked against NumPy and timed, and the rows it leaves.

A case is a dict {impl name: Impl}.  Bench.case() first runs each impl
once and compares its result with NumPy's (an impl whose result differs is
refused: recorded, not timed), then times the rest in interleaved rounds:
on the CPU with compare_cpu (perf_counter around batches of calls, each
library alone: before its turn the runner waits until the idle worker
threads of the library before it sleep, see cpuload.py), on a GPU with
CUDA events around batches of calls (pygpu.cuda.Event when pygpu has it,
else another library's events on the same legacy default stream, else
synchronize + perf_counter).  Figures are medians over the rounds;
ratios pygpu/peer come from the same rounds.  Each row also records the
machine's other load while the case was timed (cpuload.LoadMeter).
"""
import itertools
import math
import statistics
import sys
import time

import numpy as np

import pygpu
from bench_ops import compare

from .cpuload import LoadMeter, settle

try:
    import torch
except ImportError:  # optional peer
    torch = None
try:
    import cupy
except ImportError:  # optional peer
    cupy = None


class WrongResult(Exception):
    """An implementation's result differs from NumPy's."""


class Impl:
    """One implementation of a case.  fn: zero-argument callable doing the
    work (and returning its result); result: what to check instead of
    fn's return value (for in-place work); lib: the library that runs it
    (picks the synchronize and the timer); reference: the yardstick of the
    case (a copy, say), left out of the ratios; ref: this impl's own NumPy
    reference (exact), when it differs from the case's; work: this impl's
    amount of work (bytes, flops), when it differs from the case's."""

    def __init__(self, fn, lib="pygpu", result=None, reference=False,
                 ref=None, work=None):
        self.work = work
        self.fn = fn
        self.lib = lib
        self.result = result
        self.reference = reference
        self.ref = ref


def to_numpy(x):
    """A library's array or tensor (or a Python number) as a NumPy array."""
    if isinstance(x, np.ndarray):
        return x
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy.asnumpy(x)
    if hasattr(x, "numpy"):
        if hasattr(x, "detach"):
            x = x.detach()
        if "bfloat16" in str(getattr(x, "dtype", "")):
            x = x.float()  # NumPy has no bfloat16; float32 holds it exactly
        return x.cpu().numpy()
    return np.asarray(x)


def verify(got, ref, rtol):
    """Raise WrongResult unless got matches the NumPy reference: the same
    shape, NaN in the same places, and max|got - ref| <= rtol * max|ref|.
    ref may also be a callable that checks got (a NumPy array) itself."""
    got = to_numpy(got)
    if callable(ref):
        ref(got)
        return
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        raise WrongResult(f"shape {tuple(got.shape)}, NumPy's "
                          f"{tuple(ref.shape)}")
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(r)):
        raise WrongResult("NaN where NumPy has none (or the reverse)")
    ok = ~np.isnan(r)
    if not ok.any():
        return
    scale = max(float(np.max(np.abs(r[ok]))), 1e-30)
    err = float(np.max(np.abs(g[ok] - r[ok]))) / scale
    if not err <= rtol:
        raise WrongResult(f"max relative error {err:.2e} > {rtol:.0e}")


# ------------------------------------------------------------ timers
class _Events:
    """torch-style events (pygpu.cuda.Event, torch.cuda.Event) or cupy's:
    a pair recorded around a batch, elapsed seconds between them."""

    def __init__(self, name, make, elapsed_ms):
        self.name = name
        self._make = make
        self._elapsed_ms = elapsed_ms

    def time(self, fn, inner):
        start, end = self._make(), self._make()
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return self._elapsed_ms(start, end) / 1e3


def _torch_style(name, event_cls):
    return _Events(name, lambda: event_cls(enable_timing=True),
                   lambda s, e: s.elapsed_time(e))


def _cupy_events():
    return _Events("cupy.cuda.Event", cupy.cuda.Event,
                   cupy.cuda.get_elapsed_time)


class _SyncClock:
    """synchronize + perf_counter around a batch."""

    def __init__(self, sync):
        self.name = "synchronize+perf_counter"
        self._sync = sync

    def time(self, fn, inner):
        self._sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        self._sync()
        return time.perf_counter() - t0


def _torch_cuda():
    return torch is not None and torch.cuda.is_available()


def _cupy_cuda():
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # cupy present, but no usable driver or device
        return False


def gpu_libraries():
    """{lib: (synchronize, timer)} for each library that sees the GPU.
    pygpu's work runs on the legacy default stream, as torch's and cupy's
    do by default, so their events time it correctly when pygpu has none
    of its own."""
    libs = {}
    torch_ok, cupy_ok = _torch_cuda(), _cupy_cuda()
    if torch_ok:
        libs["torch"] = (torch.cuda.synchronize,
                         _torch_style("torch.cuda.Event", torch.cuda.Event))
    if cupy_ok:
        libs["cupy"] = (cupy.cuda.runtime.deviceSynchronize, _cupy_events())
    if hasattr(pygpu.cuda, "Event"):
        timer = _torch_style("pygpu.cuda.Event", pygpu.cuda.Event)
    elif torch_ok:
        timer = libs["torch"][1]
    elif cupy_ok:
        timer = libs["cupy"][1]
    else:
        timer = _SyncClock(pygpu.cuda.synchronize)
    libs["pygpu"] = (pygpu.cuda.synchronize, timer)
    return libs


def compare_gpu(impls, inner, reps):
    """Median seconds per call of each {name: (fn, timer)}, batches of
    `inner` calls timed by each library's timer, in interleaved rounds
    that rotate the order (as bench_ops.compare does)."""
    for fn, timer in impls.values():
        timer.time(fn, inner)  # warm-up
    times = {name: [] for name in impls}
    names = list(impls)
    for rep in range(reps):
        k = rep % len(names)
        for name in names[k:] + names[:k]:
            fn, timer = impls[name]
            times[name].append(timer.time(fn, inner) / inner)
    return {name: statistics.median(v) for name, v in times.items()}


def _orders(names, rounds):
    """An order of names for each round: rotations, then the same
    reversed, so that each name comes first, last and after each other
    name in turn."""
    n = len(names)
    out = []
    for r in range(rounds):
        k = (r // 2) % n
        order = names[k:] + names[:k]
        out.append(order[::-1] if r % 2 else order)
    return out


def compare_cpu(impls, inner, reps, rounds, pause="auto", warm=None):
    """Median seconds per call of each {name: (fn, lib)} on the CPU, and
    the seconds waited for idle threads (a list).

    The libraries take turns over `rounds` rounds, each round in another
    order (_orders); a turn times ceil(reps / rounds) batches of `inner`
    calls back to back.  Before the turn of a library other than the one
    that ran last, the runner waits for the idle worker threads of the
    last one to sleep (pause "auto": cpuload.settle; a number: that many
    seconds), then makes warm[name] untimed calls (default one; they wake
    the library's own threads, and bring back the caches and the clock
    the core lost while it slept), so that each library is timed as it
    runs alone."""
    per_turn = max(1, math.ceil(reps / rounds))
    warm = warm or {}
    times = {name: [] for name in impls}
    waits = []
    last = None
    for order in _orders(list(impls), rounds):
        for name in order:
            fn, lib = impls[name]
            if lib != last:
                if pause == "auto":
                    waits.append(settle()[0])
                elif pause:
                    time.sleep(pause)
                    waits.append(pause)
                for _ in range(warm.get(name, 1)):
                    fn()
            last = lib
            for _ in range(per_turn):
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                times[name].append((time.perf_counter() - t0) / inner)
    return {name: statistics.median(v) for name, v in times.items()}, waits


# ------------------------------------------------------------ the bench
QUICK = {"target_s": 0.002, "reps": 12, "min_reps": 6, "rounds": 3,
         "budget_s": 1.5}
FULL = {"target_s": 0.02, "reps": 30, "min_reps": 10, "rounds": 5,
        "budget_s": 10.0}
RING_MAX = 1024  # input copies at most in a ring (tiny inputs)
WARM_S = 0.002  # CPU: untimed calls before a library's turn, in seconds


def _value(seconds, work):
    """A figure from seconds per call: (value, unit)."""
    if work is None:
        return seconds * 1e6, "us"
    amount, unit = work
    scale = {"TFLOP/s": 1e12, "GB/s": 1e9, "ns": None}[unit]
    if scale is None:
        return seconds * 1e9, unit
    return amount / seconds / scale, unit


class Bench:
    """Runs cases on one device and collects what they measure."""

    def __init__(self, device, quick=False, sizes=None, reps=None,
                 log=None, pause="auto"):
        self.device = device
        self.quick = quick
        self.settings = dict(QUICK if quick else FULL)
        if reps:
            self.settings.update(reps=reps, min_reps=min(reps, 3),
                                 rounds=min(reps, self.settings["rounds"]))
        self.settings["pause"] = pause
        # a library whose implementations alone are timed (--only, in a
        # child of --isolate; the cases' yardsticks are kept), else None
        self.only = None
        # the thread setting the rows are measured under ("1",
        # "default", ...), None when the run has a single one
        self.threads = None
        self._sizes = sizes
        self.log = log
        self.rows, self.ratios, self.skipped, self.refused = [], [], [], []
        self.t0 = time.perf_counter()
        self.suite = None
        self.peers = self._peers()
        self.libs = gpu_libraries() if device == "cuda" else {}
        self.ring_bytes = None
        if device == "cuda":
            l2 = pygpu.cuda.get_device_properties().__dict__.get(
                "L2_cache_size") or 64 << 20
            self.l2_bytes = l2
            self.ring_bytes = 2 * l2 + (4 << 20)

    def _peers(self):
        """The peer libraries that can run work on this device."""
        if self.device == "cpu":
            return ["numpy"] + (["torch"] if torch is not None else [])
        return [lib for lib, ok in (("torch", _torch_cuda()),
                                    ("cupy", _cupy_cuda())) if ok]

    def timers(self):
        """{lib: timer name} of this run."""
        if self.device == "cpu":
            return {lib: "perf_counter" for lib in ["pygpu"] + self.peers}
        return {lib: t.name for lib, (_, t) in self.libs.items()}

    def sizes(self, default):
        """The size list of a suite: --sizes when given, else default."""
        return list(self._sizes) if self._sizes else list(default)

    def ring(self, make, nbytes):
        """A zero-argument callable cycling through copies of one input
        (make() builds one), enough of them to total more than twice the
        GPU's L2 cache, so that timed calls read from memory, not L2.  On
        the CPU: one copy."""
        count = 1
        if self.device == "cuda":
            count = max(1, min(RING_MAX,
                               math.ceil(self.ring_bytes / max(nbytes, 1))))
        items = [make() for _ in range(count)]
        return itertools.cycle(items).__next__

    # -------------------------------------------------------- records
    def say(self, text):
        print(f"[{time.perf_counter() - self.t0:7.1f}s] {text}",
              file=self.log or sys.stderr, flush=True)

    def skip(self, case, reason, impl=None):
        self.skipped.append({"suite": self.suite, "case": case,
                             "impl": impl, "reason": reason})
        who = f" ({impl})" if impl else ""
        self.say(f"{self.suite:9s} {case}{who}: skipped, {reason}")

    def measures_by_other_means(self):
        """Whether this run takes figures measured outside case() (in a
        child of --isolate, pygpu's child alone does)."""
        return self.only in (None, "pygpu")

    def record_value(self, case, impl, value, unit, size=None, dtype=None,
                     note=None, load=None):
        """A figure measured by other means (no peers, no ratios); load:
        what a LoadMeter recorded while it was measured."""
        row = {"suite": self.suite, "case": case, "impl": impl,
               "lib": impl, "device": self.device, "dtype": dtype,
               "size": size, "value": value, "unit": unit,
               "higher_is_better": False, "reference": False,
               "threads": self.threads, **(load or {})}
        if note:
            row["note"] = note
        self.rows.append(row)
        self.say(f"{self.suite:9s} {case}: {impl} {value:.4g} {unit}")

    def _refuse(self, case, impl, kind, message):
        self.refused.append({"suite": self.suite, "case": case,
                             "impl": impl, "kind": kind,
                             "message": message})
        self.say(f"{self.suite:9s} {case} ({impl}): {kind}, not timed: "
                 f"{message}")

    def _check(self, case, impls, ref, rtol, check_rows):
        """The impls whose result matches NumPy's; the others refused."""
        good = {}
        for name, impl in impls.items():
            if self.only and impl.lib != self.only and not impl.reference:
                continue
            try:
                out = impl.fn()
                if impl.result is not None:
                    out = impl.result()
                own = impl.ref is not None
                expect = impl.ref if own else ref
                if expect is not None:
                    if check_rows is not None:
                        out = out[:check_rows]
                    verify(out, expect, 0 if own else rtol)
            except WrongResult as e:
                self._refuse(case, name, "wrong result", str(e))
                continue
            except Exception as e:  # noqa: BLE001 - recorded, run goes on
                self._refuse(case, name, "error",
                             f"{type(e).__name__}: {e}")
                continue
            good[name] = impl
        return good

    def _time(self, impls, host):
        """Seconds per call of each impl, batches sized so that one takes
        about target_s and the case about budget_s at most."""
        s = self.settings
        gpu = self.device == "cuda"

        def sync(lib):
            return self.libs[lib][0] if gpu and lib in self.libs else None

        est = {}
        for name, impl in impls.items():
            fn, sy = impl.fn, sync(impl.lib)
            n, dt = 1, 0.0
            while True:
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                if sy:
                    sy()
                dt = time.perf_counter() - t0
                if dt >= 1e-3 or n >= 1 << 16:
                    break
                n *= 4
            est[name] = dt / n
        slowest = max(est.values())
        inner = int(max(1, min(100000, round(s["target_s"] / slowest))))
        per_round = inner * sum(est.values())
        reps = int(min(s["reps"], max(s["min_reps"],
                                      s["budget_s"] // max(per_round, 1e-9))))
        if gpu and not host:
            us = compare_gpu({n: (i.fn, self.libs[i.lib][1])
                              for n, i in impls.items()}, inner, reps)
            return us, inner, reps, None
        if gpu:
            # host time of batches, each ending in one synchronize
            us = compare({n: (i.fn, sync(i.lib)) for n, i in impls.items()},
                         inner, reps)
            return {n: v / 1e6 for n, v in us.items()}, inner, reps, None
        # after a wait, WARM_S of untimed calls before a library's turn
        warm = {n: int(min(inner, max(1, math.ceil(WARM_S / est[n]))))
                for n in impls}
        secs, waits = compare_cpu({n: (i.fn, i.lib)
                                   for n, i in impls.items()}, inner, reps,
                                  s["rounds"], s["pause"], warm)
        return secs, inner, reps, waits

    def case(self, case, impls, ref=None, rtol=0.0, work=None, size=None,
             dtype=None, host=False, check_rows=None, note=None):
        """Check then time one case; record a row per impl and the ratios
        of pygpu to every other impl but the reference.

        work: (amount, unit) turns seconds per call into a throughput
        ("TFLOP/s" with flops, "GB/s" with bytes) or ("ns" with None);
        without it the figure is microseconds per call.  host: time host
        time per call (synchronize at the end of each batch) rather than
        with CUDA events.  check_rows: compare only result[:check_rows]
        (ref then holds those rows)."""
        impls = self._check(case, impls, ref, rtol, check_rows)
        if not impls:
            return
        meter = LoadMeter().start()
        secs, inner, reps, waits = self._time(impls, host)
        load = meter.stop()
        if waits:
            load["settle_ms"] = round(statistics.median(waits) * 1e3, 1)
        higher = work is not None and work[1] != "ns"
        values = {}
        ref_name = next((n for n, i in impls.items() if i.reference), None)
        for name, impl in impls.items():
            value, unit = _value(secs[name], work if impl.work is None
                                 else (impl.work, work[1]))
            values[name] = value
            row = {"suite": self.suite, "case": case, "impl": name,
                   "lib": impl.lib, "device": self.device, "dtype": dtype,
                   "size": size, "value": value, "unit": unit,
                   "higher_is_better": higher,
                   "us_per_call": secs[name] * 1e6, "inner": inner,
                   "reps": reps, "reference": impl.reference,
                   "threads": self.threads, **load}
            if note:
                row["note"] = note
            self.rows.append(row)
        if ref_name is not None:
            for row in self.rows[-len(impls):]:
                row["fraction_of_" + ref_name] = \
                    row["value"] / values[ref_name]
        self._ratios(case, impls, values, size, dtype, higher, load)
        self._progress(case, values, unit, load)

    def _ratios(self, case, impls, values, size, dtype, higher, load):
        if "pygpu" not in values:
            return
        mine = {}
        for name, impl in impls.items():
            if name == "pygpu" or impl.reference or not values[name]:
                continue
            r = values["pygpu"] / values[name]
            mine[name] = r
            self.ratios.append({
                "suite": self.suite, "case": case, "size": size,
                "dtype": dtype, "device": self.device, "num": "pygpu",
                "den": name, "ratio": r,
                "meaning": "throughput" if higher else "time",
                "threads": self.threads,
                **{k: load[k] for k in ("load_cores", "loaded")
                   if k in load}})
        for row in self.rows[-len(impls):]:
            if row["impl"] == "pygpu":
                row["ratios"] = mine

    def _progress(self, case, values, unit, load):
        cells = ", ".join(f"{n} {v:.4g}" for n, v in values.items())
        ratios = ", ".join(
            f"/{r['den']} {r['ratio']:.3g}" for r in self.ratios
            if r["suite"] == self.suite and r["case"] == case
            and r.get("threads") == self.threads)
        where = f" [threads {self.threads}]" if self.threads else ""
        busy = ""
        if load.get("loaded"):
            busy = (f" (LOADED: other processes {load['load_cores']:.2f} "
                    "cores)")
        self.say(f"{self.suite:9s} {case}{where}: {cells} {unit}"
                 + (f"; pygpu{ratios.replace(', /', ', pygpu/')}"
                    if ratios else "") + busy)
