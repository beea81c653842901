"""Loss functions with torch's names, reductions and checks: their
functional forms (re-exported by nn.functional) and modules.  They are
compositions of recorded ops, so autograd differentiates them."""
import warnings

from .._C import Tensor
from .module import Module

__all__ = ["mse_loss", "l1_loss", "MSELoss", "L1Loss"]


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check(name, input, target):
    for arg, x in (("input", input), ("target", target)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not "
                            f"{type(x).__name__}")
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is "
                      f"different to the input size ({input.shape}). This "
                      f"will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same "
                      f"size.", stacklevel=3)


def mse_loss(input, target, reduction="mean"):
    """(input - target)^2, reduced (mean, sum or none)."""
    _check("mse_loss", input, target)
    d = input - target
    return _reduce(d * d, reduction)


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced (mean, sum or none)."""
    _check("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction)


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def extra_repr(self):
        return "" if self.reduction == "mean" else \
            f"reduction={self.reduction}"


class MSELoss(_Loss):
    """The mean (or sum) squared error between input and target."""

    def forward(self, input, target):
        return mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """The mean (or sum) absolute error between input and target."""

    def forward(self, input, target):
        return l1_loss(input, target, self.reduction)
