"""Thread settings of a run: --threads 1,default measures every suite
once with one thread per library and once with each library's own
default, in one process.

pygpu and torch change their thread counts at run time
(set_num_threads); NumPy's BLAS does through threadpoolctl when it is
installed (without it NumPy keeps the thread count it loaded with, which
`python -m benchmarks --threads N` with a single N sets from the
environment before NumPy loads).
"""
import argparse
import contextlib

import pygpu

from .core import torch

try:
    import threadpoolctl
except ImportError:  # optional: NumPy's BLAS keeps its thread count
    threadpoolctl = None


def parse(text):
    """'1,default' -> ['1', 'default']; 'N' -> ['N']."""
    out = []
    for v in text.split(","):
        v = v.strip().lower()
        if v != "default" and not (v.isdigit() and int(v) >= 1):
            raise argparse.ArgumentTypeError(
                f"--threads wants a comma-separated list of thread counts "
                f"and 'default', not {text!r}")
        if v not in out:
            out.append(v)
    return out


def blas_threads():
    """NumPy's BLAS thread count, None where threadpoolctl is absent."""
    if threadpoolctl is None:
        return None
    import numpy  # noqa: F401 - the BLAS threadpoolctl looks for
    pools = [p for p in threadpoolctl.threadpool_info()
             if p.get("user_api") == "blas"]
    return pools[0]["num_threads"] if pools else None


def current():
    """{library: threads} now."""
    return {"pygpu": pygpu.get_num_threads(),
            "torch": torch.get_num_threads() if torch is not None else None,
            "numpy_blas": blas_threads()}


@contextlib.contextmanager
def setting(label):
    """pygpu, torch and NumPy's BLAS on `label` threads ("default": as
    they are) for the with block; yields {library: threads}."""
    if label == "default":
        yield current()
        return
    n = int(label)
    saved = pygpu.get_num_threads(), torch and torch.get_num_threads()
    limits = None
    try:
        pygpu.set_num_threads(n)
        if torch is not None:
            torch.set_num_threads(n)
        if threadpoolctl is not None:
            limits = threadpoolctl.threadpool_limits(limits=n,
                                                     user_api="blas")
        yield current()
    finally:
        if limits is not None:
            limits.restore_original_limits()
        pygpu.set_num_threads(saved[0])
        if torch is not None:
            torch.set_num_threads(saved[1])
