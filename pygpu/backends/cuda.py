"""pygpu.backends.cuda: is_built(), libraries() and matmul.allow_tf32."""
from .. import _C


def is_built():
    """True when pygpu was compiled with CUDA support."""
    return _C._cuda_is_built()


def libraries():
    """Where the CUDA libraries pygpu loads at run time come from:
    ``{"cublas": path, "cublasLt": path, "error": None}``, or the paths
    None and ``"error"`` saying what was tried and how to install them.
    Loads cuBLAS if it is not loaded yet; needs no GPU.  They are looked
    for in pip's ``nvidia`` packages next to pygpu, then by the system's
    loader (``LD_LIBRARY_PATH``, ``ldconfig``), then under ``CUDA_HOME``,
    ``CUDA_PATH`` and ``/usr/local/cuda``.  (pygpu's own; torch links
    them instead.)"""
    return _C._cuda_libraries()


class _MatmulFlags:
    """torch.backends.cuda.matmul: allow_tf32 switches float32 products to
    TF32 tensor cores (False by default, as in torch since 1.12)."""

    @property
    def allow_tf32(self):
        return _C._get_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._set_allow_tf32(bool(value))


matmul = _MatmulFlags()
