"""GradScaler: loss scaling for mixed-precision training, torch's rules.

scale(loss) multiplies by the scale; step(optimizer) unscales the
gradients (once per step), skips the step when any is inf or NaN, else
steps; update() halves the scale after a skipped step and doubles it after
growth_interval steps in a row without one."""
import math
import warnings

from .._C import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler"]


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16,
                 growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self.device = device
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples of them) times the
        scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(
            id(optimizer), {"unscaled": False, "found_inf": False,
                            "stepped": False})

    @no_grad()
    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale, in place, and note
        whether any is inf or NaN."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this "
                               "optimizer since the last update().")
        if st["stepped"]:
            raise RuntimeError("unscale_() is being called after step().")
        inv = 1.0 / self._scale
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad.mul_(inv)
                if not math.isfinite(float(p.grad.sum().item())):
                    found = True
        st["unscaled"], st["found_inf"] = True, found

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless a gradient was inf or NaN; returns its
        result (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if st["stepped"]:
            raise RuntimeError("step() has already been called since the "
                               "last update().")
        if not st["unscaled"]:
            self.unscale_(optimizer)
        st["stepped"] = True
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after growth_interval clean
        ones (or set new_scale)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(
                new_scale, Tensor) else new_scale)
        else:
            found = any(s["found_inf"] for s in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly "
                               "because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class _CudaGradScaler(GradScaler):
    """pygpu.cuda.amp.GradScaler: GradScaler("cuda", ...), deprecated in
    torch (a FutureWarning) but still common."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cuda', args...)` "
                      "instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor,
                         growth_interval, enabled)
