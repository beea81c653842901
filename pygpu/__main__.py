"""python -m pygpu: the environment, then the tutorial's model on the best
device checked against NumPy float64, and a matmul throughput figure.
Exits 0 when every check passes, 1 otherwise."""
import argparse
import json
import platform
import sys
import time

import numpy as np

import pygpu
from pygpu import cuda, nn


def _gib(n):
    return f"{n / 2**30:.2f} GiB"


def _ver(v):
    return f"{v // 1000}.{(v % 1000) // 10}" if v else "none"


def environment(info):
    versions = pygpu._C._cuda_versions()
    print(f"pygpu {pygpu.__version__} (Python {platform.python_version()}, "
          f"NumPy {np.__version__})")
    version = getattr(pygpu, "version", None)
    built = getattr(version, "cuda", None) or (
        _ver(versions["built"]) if pygpu.backends.cuda.is_built() else None)
    info["build"] = f"CUDA {built}" if built else "CPU-only"
    if built:
        print(f"build: CUDA {built} (runtime {_ver(versions['runtime'])}, "
              f"driver {_ver(versions['driver'])})")
    else:
        print("build: CPU-only")
    if built:
        libs = pygpu.backends.cuda.libraries()
        info["cublas"] = libs["cublas"]
        print(f"cuBLAS: {libs['cublas'] or 'none (' + libs['error'] + ')'}")
    info["gpus"] = []
    if not cuda.is_available():
        print(f"GPUs: none ({pygpu._C._cuda_unavailable_reason()})")
        return
    for i in range(cuda.device_count()):
        p = cuda.get_device_properties(i)
        free, total = cuda.mem_get_info(i)
        info["gpus"].append(p.name)
        print(f"GPU {i}: {p.name}, compute capability {p.major}.{p.minor}, "
              f"{p.multi_processor_count} SMs, {_gib(total)} total, "
              f"{_gib(free)} free")


def nccl_line(info):
    """The NCCL version, or why it cannot be used."""
    from pygpu.distributed import _nccl
    version = _nccl.nccl_version()
    if version is None:
        info["nccl"] = None
        print(f"NCCL: none ({_nccl.nccl_unavailable_reason()})")
    else:
        info["nccl"] = ".".join(map(str, version))
        print(f"NCCL: {info['nccl']}")


def _sync(device):
    if device.type == "cuda":
        cuda.synchronize(device)


def model_check(device, batch, info):
    """The tutorial's model against a NumPy float64 forward."""
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    x = pygpu.randn(batch, 784, device=device)
    with pygpu.no_grad():
        y = model(x)
    _sync(device)
    w = [p.detach().cpu().numpy().astype(np.float64)
         for p in model.parameters()]
    h = np.maximum(x.cpu().numpy().astype(np.float64) @ w[0].T + w[1], 0)
    ref = h @ w[2].T + w[3]
    err = float(np.abs(y.cpu().numpy() - ref).max() / np.abs(ref).max())
    print(f"\n{model}")
    print(f"model(x) on {y.device}: x {tuple(x.shape)} -> {tuple(y.shape)}, "
          f"max relative error vs NumPy float64: {err:.2e}")
    info.update(shape=list(y.shape), output_device=str(y.device),
                max_rel_error=err)
    return err < 1e-4 and tuple(y.shape) == (batch, 10)


def matmul_tflops(device, info):
    """Throughput of n x n float32 products, timed as torch tutorials do:
    synchronize, a loop of products, synchronize."""
    n, reps = (4096, 20) if device.type == "cuda" else (512, 10)
    a = pygpu.randn(n, n, device=device)
    b = pygpu.randn(n, n, device=device)
    a @ b
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    dt = (time.perf_counter() - t0) / reps
    tflops = 2 * n ** 3 / dt / 1e12
    print(f"matmul {n}x{n} float32: {dt * 1e3:.3f} ms, {tflops:.3f} TFLOPS")
    info.update(matmul_n=n, matmul_ms=dt * 1e3, matmul_tflops=tflops)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m pygpu",
        description="Report pygpu's build and devices, run the tutorial's "
                    "model (Linear 784-256, ReLU, Linear 256-10) on the best "
                    "device against NumPy float64, and time a matmul. "
                    "Exits 0 when the checks pass.")
    p.add_argument("--device", default=None,
                   help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--batch", type=int, default=32,
                   help="batch size of the model check (default 32)")
    p.add_argument("--json", metavar="PATH",
                   help="also write the results as JSON to PATH")
    args = p.parse_args(argv)
    if args.batch < 1:
        p.error("--batch must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    info = {"pygpu": pygpu.__version__}
    environment(info)
    nccl_line(info)
    try:
        device = pygpu.device(args.device or
                              ("cuda" if cuda.is_available() else "cpu"))
        if device.type == "cuda" and not cuda.is_available():
            raise RuntimeError("CUDA is not available")
        info["device"] = str(device)
        ok = model_check(device, args.batch, info)
        matmul_tflops(device, info)
        if device.type == "cuda":
            info["memory_allocated"] = cuda.memory_allocated(device)
            info["memory_reserved"] = cuda.memory_reserved(device)
            print(f"memory allocated: {info['memory_allocated']} bytes, "
                  f"reserved: {info['memory_reserved']} bytes")
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}")
        info["error"] = str(e)
        ok = False
    info["ok"] = ok
    print("OK" if ok else "FAILED")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(info, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
