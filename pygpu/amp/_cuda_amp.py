"""pygpu.cuda.amp: torch.cuda.amp's autocast(enabled=True, dtype=float16,
cache_enabled=True), deprecated in torch in favour of
pygpu.amp.autocast('cuda', ...) but still common."""
from .autocast_mode import _CudaAutocast as autocast
from .grad_scaler import _CudaGradScaler as GradScaler

__all__ = ["autocast", "GradScaler"]
