"""pygpu.autograd: the grad-mode switches, with torch's names.

pygpu records no graph yet, so the switches change nothing that is
computed; the state they report is torch's: per thread, restored on exit.
"""
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled"]
