"""A pytest plugin that runs pygpu's AVX-512 loops on a CPU without
AVX-512: `python -m pytest -p pytest_avx512 ...` with this folder on
sys.path (run.sh does it).

At configure it builds trap.c, starts the emulator (emulator.py), and
makes pygpu use its AVX-512 loops (raising the CPU's best capability,
which the loops' dispatch reads, to AVX512).  Each AVX-512 function then
runs in the emulator and the rest natively.  The run is one-threaded in
pygpu's pool (a test that asks for more threads is skipped: the pool's
threads have no signal stack for the emulator); Python threads get one as
they start.  The run fails if nothing ran in the emulator."""
import ctypes
import faulthandler
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
STACK_BYTES = 16 << 20
_state = {}


def build(name, outdir):
    """Compiles HERE/name.c into a shared library in outdir."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    out = os.path.join(outdir, name + ".so")
    subprocess.run(cc.split()[:1] + ["-O2", "-shared", "-fPIC", "-o", out,
                                     os.path.join(HERE, name + ".c")],
                   check=True)
    return out


def import_bochscpu(outdir):
    # The wheel links two C23 names of glibc 2.38; older glibc gets them
    # from compat.c, loaded globally first.
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "__isoc23_strtoull"):
        ctypes.CDLL(build("compat", outdir), mode=ctypes.RTLD_GLOBAL)
    import bochscpu  # noqa: F401


def symbols(path):
    """(name, value, size, kind) of each defined symbol of a shared
    object (static functions of different files may share a name)."""
    out = subprocess.run(["nm", "-S", "--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    return [(p[3], int(p[0], 16), int(p[1], 16), p[2])
            for p in (line.split() for line in out.splitlines())
            if len(p) == 4]


def load_base(path):
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if (len(fields) >= 6 and fields[2] == "00000000"
                    and os.path.realpath(fields[5]) == real):
                return int(fields[0].split("-")[0], 16)
    raise LookupError(f"{path} is not mapped")


def avx512_ranges(table, base):
    """The address ranges of the loops' AVX-512 clones (cpu/simd.h names
    them NAME_v4; gcc may add .constprop.N and the like)."""
    ranges = []
    for name, value, size, kind in table:
        stem = name.split(".")[0]
        if kind in "tT" and stem.endswith("_v4") and size:
            ranges.append((base + value, base + value + size))
    return ranges


def one_thread(n):
    """pygpu.set_num_threads in the emulated run: more than one thread
    skips the test; anything else goes through (errors included)."""
    if isinstance(n, int) and not isinstance(n, bool) and n > 1:
        pytest.skip("the AVX-512 emulation runs pygpu's pool with one "
                    "thread")
    return _state["set_num_threads"](n)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    import pygpu
    from pygpu import _C
    _state["status"] = 0
    if _C._set_cpu_capability("avx512") == "AVX512":
        _state["native"] = True     # this CPU runs them: nothing to emulate
        return
    outdir = tempfile.mkdtemp(prefix="pygpu-avx512-")
    import_bochscpu(outdir)
    sys.path.insert(0, HERE)
    import emulator
    table = symbols(_C.__file__)
    base = load_base(_C.__file__)
    ranges = avx512_ranges(table, base)
    if not ranges:
        raise pytest.UsageError("pygpu's extension has no AVX-512 clones "
                                "(built without them?)")
    pygpu.set_num_threads(1)
    _state["set_num_threads"] = pygpu.set_num_threads
    pygpu.set_num_threads = one_thread
    faulthandler.disable()          # its SIGILL handler would come first
    emu = emulator.Emulator(ranges)
    lib = emulator.install(emu, build("trap", outdir))
    _state["emulator"] = emu

    start = threading.Thread._bootstrap_inner

    def with_stack(self):
        lib.trap_thread_init(STACK_BYTES)
        return start(self)
    threading.Thread._bootstrap_inner = with_stack

    best = base + next(value for name, value, _, _ in table
                       if name == "pygpu_cpu_isa_best")
    ctypes.c_int.from_address(best).value = 2
    got = _C._set_cpu_capability("avx512")
    if got != "AVX512":
        raise pytest.UsageError(f"pygpu runs {got}, not AVX512")


def pytest_report_header(config):
    if _state.get("native"):
        return "AVX-512: this CPU has it; pygpu runs its AVX512 loops natively"
    return ("AVX-512 emulated: pygpu runs its AVX512 loops in BochsCPU "
            "(one pool thread)")


def pytest_sessionfinish(session, exitstatus):
    if _state.get("native"):
        return
    emu = _state.get("emulator")
    entries = emu.entries if emu else 0
    sys.stderr.write(f"\nAVX-512 emulation: {entries} calls emulated\n")
    if entries == 0 and exitstatus == 0:
        sys.stderr.write("nothing ran in the emulator: a failure\n")
        session.exitstatus = 1
    _state["status"] = int(session.exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if _state.get("native") or "emulator" not in _state:
        return
    # The emulator's teardown at interpreter exit is not safe (the
    # bindings' objects outlive its CPU), so the process ends here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_state.get("status", 1))
