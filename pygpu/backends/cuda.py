"""pygpu.backends.cuda: is_built() and matmul.allow_tf32."""
from .. import _C


def is_built():
    """True when pygpu was compiled with CUDA support."""
    return _C._cuda_is_built()


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
