"""pygpu.version, as torch.version: the package version and the CUDA
toolkit the extension was built with.

``__version__`` here is the one place the version is written: the package
metadata and the extension's ``_C.__version__`` are read from it at build
time.
"""
from ._C import _cuda_versions

__version__ = "0.1.0"

# CUDART_VERSION of the toolkit the extension was compiled with (13000 for
# CUDA 13.0); 0 in a CPU-only build.
_built = _cuda_versions()["built"]
cuda = f"{_built // 1000}.{_built % 1000 // 10}" if _built else None
"""The CUDA toolkit version pygpu was built with ("13.0"), or None when it
was built without CUDA."""

del _built, _cuda_versions
