"""python -m pygpu: the environment, then a short demo on the best device."""
import platform
import sys
import time

import numpy as np

import pygpu
from pygpu import cuda


def _gib(n):
    return f"{n / 2**30:.2f} GiB"


def environment():
    versions = pygpu._C._cuda_versions()

    def ver(v):
        return f"{v // 1000}.{(v % 1000) // 10}" if v else "none"

    print(f"pygpu {pygpu.__version__} (Python {platform.python_version()}, "
          f"NumPy {np.__version__})")
    if not pygpu.backends.cuda.is_built():
        print("CUDA: not built (CPU-only build)")
    else:
        print(f"CUDA: built against {ver(versions['built'])}, "
              f"runtime {ver(versions['runtime'])}, "
              f"driver {ver(versions['driver'])}")
    if not cuda.is_available():
        why = pygpu._C._cuda_unavailable_reason()
        print(f"GPUs: none ({why})")
        return
    for i in range(cuda.device_count()):
        p = cuda.get_device_properties(i)
        free, total = cuda.mem_get_info(i)
        print(f"GPU {i}: {p.name}, compute capability {p.major}.{p.minor}, "
              f"{p.multi_processor_count} SMs, {_gib(total)} total, "
              f"{_gib(free)} free")


def demo():
    device = pygpu.device("cuda" if cuda.is_available() else "cpu")
    print(f"\ndemo on {device}")
    pygpu.manual_seed(0)
    a = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((512, 128)).astype(np.float32)
    x = pygpu.tensor(a).to(device)
    w = pygpu.from_numpy(b).to(device)
    t0 = time.perf_counter()
    y = pygpu.relu(x @ w)
    if device.type == "cuda":
        cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    back = y.cpu().numpy()
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    err = np.abs(back - ref).max() / max(np.abs(ref).max(), 1e-30)
    print(f"relu(x @ w) with x {tuple(x.shape)}, w {tuple(w.shape)} "
          f"-> {tuple(y.shape)} in {ms:.2f} ms; max relative error vs "
          f"NumPy float64: {err:.2e}")
    z = pygpu.randn(2, 3, device=device)
    print("round trip:", pygpu.tensor([[0.1, -1.2]], device=device))
    print("randn(2, 3):", z)
    if device.type == "cuda":
        print(f"memory allocated: {cuda.memory_allocated()} bytes, "
              f"reserved: {cuda.memory_reserved()} bytes")
    ok = err < 1e-4
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


def main():
    environment()
    return demo()


if __name__ == "__main__":
    sys.exit(main())
