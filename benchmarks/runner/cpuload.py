"""The CPU around a timing: the load of other processes, and the wait for
this process's own idle worker threads to go to sleep.

Every library here keeps worker threads that poll for work for a while
after a call (OpenBLAS's behind NumPy for about 0.1 s, torch's OpenMP
threads, pygpu's pool for 10 ms).  While they poll they hold cores, so a
library timed right after another one runs short of cores.  settle()
waits until this process has used (almost) no CPU time over a window,
that is until every such thread sleeps.  LoadMeter measures, around a
case, how busy the machine's CPUs were with work not of this process
(other processes, and time taken by the hypervisor), from /proc/stat and
this process's CPU time.
"""
import os
import time

# A case whose other load exceeds this many cores (on average over its
# timing) is flagged: its figures may be low.
LOADED_CORES = 0.1
# settle(): a window of QUIET_WINDOW_S in which this process used less
# than QUIET_FRACTION of one core means its worker threads sleep.
QUIET_WINDOW_S = 0.02
QUIET_FRACTION = 0.05
SETTLE_MAX_S = 2.0

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_s():
    """Seconds of CPU time the whole machine has spent busy since boot
    (all CPUs: user, nice, system, irq, softirq and steal), from
    /proc/stat; None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    v = [int(x) for x in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK


def cpu_count():
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class LoadMeter:
    """Measures the other load of the machine between start() and stop():
    the machine's busy CPU time less this process's own, per second of
    wall time (in cores: 1.0 is one core kept busy throughout)."""

    def __init__(self):
        self.cores = os.cpu_count() or 1
        self._start = None

    def start(self):
        self._start = (time.perf_counter(), time.process_time(),
                       machine_busy_s())
        return self

    def stop(self):
        """{"load_cores", "load_fraction", "loaded", "load_window_s"}:
        other processes' busy cores on average, that over the machine's
        CPUs, whether it exceeds LOADED_CORES, and the seconds measured
        over (a few ticks of /proc/stat's 10 ms make it imprecise below
        about a second); {} where /proc/stat cannot be read."""
        wall0, own0, busy0 = self._start
        wall = time.perf_counter() - wall0
        own = time.process_time() - own0
        busy1 = machine_busy_s()
        if busy0 is None or busy1 is None or wall <= 0:
            return {}
        # /proc/stat counts in clock ticks (10 ms): over a short window
        # the difference may stray past the bounds by a tick or two
        other = min(self.cores, max(0.0, (busy1 - busy0) - own) / wall)
        return {"load_cores": round(other, 3),
                "load_fraction": round(other / self.cores, 4),
                "loaded": other > LOADED_CORES,
                "load_window_s": round(wall, 3)}


def settle(minimum=0.0, window=QUIET_WINDOW_S, quiet=QUIET_FRACTION,
           limit=SETTLE_MAX_S):
    """Sleep at least `minimum` seconds, then until this process used
    less than `quiet` of one core over a `window` (its idle worker
    threads have stopped polling), at most `limit` seconds in all.
    Returns (seconds waited, whether it went quiet)."""
    t0 = time.perf_counter()
    if minimum > 0:
        time.sleep(minimum)
    while True:
        c0, w0 = time.process_time(), time.perf_counter()
        time.sleep(window)
        used = time.process_time() - c0
        if used < quiet * (time.perf_counter() - w0):
            return time.perf_counter() - t0, True
        if time.perf_counter() - t0 >= limit:
            return time.perf_counter() - t0, False
