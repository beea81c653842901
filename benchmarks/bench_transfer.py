"""Host <-> device copy benchmark: pageable and page-locked memory.

For each size (1 KiB .. 1 GiB) and direction (H2D, D2H), from pageable and
from pinned host memory, the median wall time of one copy including the
wait for it:

  pygpu  t.to("cuda" / "cpu", non_blocking=pinned), then the current
         stream synchronized (D2H with non_blocking lands in new pinned
         memory, as torch does)
  bare   cudaMemcpyAsync + cudaStreamSynchronize between preallocated
         buffers (pygpu._C._cuda_memcpy; CuPy's runtime call too when
         CuPy is importable)
  torch  the same .to() calls, when torch with CUDA is importable

Each path is validated before it is timed.  Needs a GPU: without one it
says so and exits with status 0.

    python benchmarks/bench_transfer.py [--json PATH] [--quick]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

try:
    import pygpu
except ImportError:  # run from a checkout that was built but not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    import pygpu
from pygpu import _C  # noqa: E402
from provenance import provenance  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZES = [KiB, 16 * KiB, 256 * KiB, 4 * MiB, 64 * MiB, GiB]
HOST = -1


def median_us(fn, sync, nbytes, quick):
    """Median wall time in microseconds of fn() followed by sync()."""
    reps = 5 if nbytes >= 256 * MiB else (20 if nbytes >= 4 * MiB else 200)
    if quick:
        reps = max(3, reps // 4)
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def host_tensor(nbytes, pinned):
    t = pygpu.from_numpy(np.arange(nbytes, dtype=np.uint8))
    return t.pin_memory() if pinned else t


def pygpu_paths(nbytes, pinned):
    """{direction: (fn, sync)} through pygpu's .to(), validated."""
    src = host_tensor(nbytes, pinned)
    dev = src.to("cuda")
    sync = cuda_sync
    assert np.array_equal(dev.cpu().numpy(), src.numpy())
    back = dev.to("cpu", non_blocking=pinned)
    sync()
    assert np.array_equal(back.numpy(), src.numpy())
    assert back.is_pinned() == pinned
    return {"H2D": (lambda: src.to("cuda", non_blocking=pinned), sync),
            "D2H": (lambda: dev.to("cpu", non_blocking=pinned), sync)}


def cuda_sync():
    pygpu.cuda.current_stream().synchronize()


def bare_paths(nbytes, pinned):
    """cudaMemcpyAsync + synchronize between preallocated buffers."""
    src = host_tensor(nbytes, pinned)
    dst = pygpu.empty(nbytes, dtype=pygpu.uint8, device="cuda")
    back = host_tensor(nbytes, pinned).zero_()
    _C._cuda_memcpy(dst.data_ptr(), 0, src.data_ptr(), HOST, nbytes, True)
    _C._cuda_memcpy(back.data_ptr(), HOST, dst.data_ptr(), 0, nbytes, True)
    assert np.array_equal(back.numpy(), src.numpy())
    keep = (src, dst, back)
    return {
        "H2D": (lambda: _C._cuda_memcpy(keep[1].data_ptr(), 0,
                                        keep[0].data_ptr(), HOST, nbytes,
                                        True), lambda: None),
        "D2H": (lambda: _C._cuda_memcpy(keep[2].data_ptr(), HOST,
                                        keep[1].data_ptr(), 0, nbytes,
                                        True), lambda: None)}


def cupy_paths(nbytes, pinned):
    import cupy
    rt = cupy.cuda.runtime
    src = host_tensor(nbytes, pinned)
    back = host_tensor(nbytes, pinned).zero_()
    dst = cupy.empty(nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream()

    def h2d():
        rt.memcpyAsync(dst.data.ptr, src.data_ptr(), nbytes,
                       rt.memcpyHostToDevice, stream.ptr)

    def d2h():
        rt.memcpyAsync(back.data_ptr(), dst.data.ptr, nbytes,
                       rt.memcpyDeviceToHost, stream.ptr)

    h2d()
    d2h()
    stream.synchronize()
    assert np.array_equal(back.numpy(), src.numpy())
    return {"H2D": (h2d, stream.synchronize),
            "D2H": (d2h, stream.synchronize)}


def torch_paths(nbytes, pinned):
    import torch
    src = torch.arange(nbytes, dtype=torch.uint8)
    if pinned:
        src = src.pin_memory()
    dev = src.to("cuda")
    sync = torch.cuda.synchronize
    assert torch.equal(dev.cpu(), src)
    return {"H2D": (lambda: src.to("cuda", non_blocking=pinned), sync),
            "D2H": (lambda: dev.to("cpu", non_blocking=pinned), sync)}


def contenders():
    out = {"pygpu": pygpu_paths, "bare": bare_paths}
    try:
        import cupy  # noqa: F401
        out["cupy"] = cupy_paths
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = torch_paths
    except ImportError:
        pass
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH", help="also write the results")
    p.add_argument("--quick", action="store_true",
                   help="fewer repetitions, sizes up to 64 MiB")
    args = p.parse_args(argv)
    if not pygpu.cuda.is_available():
        print("bench_transfer: no CUDA device here ("
              f"{_C._cuda_unavailable_reason()}); nothing to measure")
        return 0
    sizes = [s for s in SIZES if not args.quick or s <= 64 * MiB]
    names = list(contenders())
    results = {"meta": provenance(), "device": pygpu.cuda.get_device_name(0),
               "median_us": {}}
    print(f"copy + wait, median microseconds, on {results['device']}")
    head = "".join(f"{n:>11}" for n in names)
    print(f"{'dir':>4} {'host':>8} {'bytes':>11}{head}  pygpu/bare"
          + ("  pygpu/torch" if "torch" in names else "") + "  GB/s(pygpu)")
    for pinned in (False, True):
        kind = "pinned" if pinned else "pageable"
        for nbytes in sizes:
            paths = {n: f(nbytes, pinned) for n, f in contenders().items()}
            for direction in ("H2D", "D2H"):
                row = {n: median_us(*paths[n][direction], nbytes, args.quick)
                       for n in names}
                results["median_us"][f"{direction}/{kind}/{nbytes}"] = row
                cells = "".join(f"{row[n]:11.1f}" for n in names)
                ratio = f"{row['pygpu'] / row['bare']:11.2f}x"
                if "torch" in row:
                    ratio += f"{row['pygpu'] / row['torch']:12.2f}x"
                gbs = nbytes / (row["pygpu"] * 1e-6) / 1e9
                print(f"{direction:>4} {kind:>8} {nbytes:>11}{cells}"
                      f"{ratio}  {gbs:10.2f}")
            del paths
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
