"""Loss functions with torch's names, reductions and checks: their
functional forms (re-exported by nn.functional) and modules.  Most are
compositions of recorded ops, so autograd differentiates them;
cross-entropy over class indices is one op of its own (_C._cross_entropy:
log-softmax and the pick fused, forward and backward)."""
import warnings

from .._C import Tensor, _cross_entropy, bool as bool_, log_softmax, where
from .module import Module

__all__ = ["mse_loss", "l1_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy_with_logits", "MSELoss", "L1Loss",
           "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss"]


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _tensors(name, **args):
    for arg, x in args.items():
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not "
                            f"{type(x).__name__}")


def _check(name, input, target):
    _tensors(name, input=input, target=target)
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


def _check_weight(fname, input, weight, prefix=""):
    """torch's refusal of a class weight that is not one value per class
    (classes in dim 1, or dim 0 of a 1-d input); prefix starts the message
    as torch's does for some ops."""
    if weight is None:
        return
    _tensors(fname, weight=weight)
    n = input.shape[1 if input.ndim > 1 else 0] if input.ndim else 1
    if weight.ndim != 1 or weight.shape[0] != n:
        raise RuntimeError(
            f"{prefix}weight tensor should be defined either for all {n} "
            f"classes or no classes but got weight tensor of shape: "
            f"[{', '.join(str(s) for s in weight.shape)}]")


def _picked(logp, target, weight, ignore_index):
    """(-logp[..., target] * w[target], w[target]) per sample, where w is
    the class weight (1 without one) and 0 for ignored samples: a gather
    on the input's device, so nothing as large as the input is built."""
    if target.dtype.is_floating_point or target.dtype == bool_:
        raise RuntimeError("expected scalar type Long but found " +
                           str(target.dtype).split(".")[-1])
    ncls = logp.shape[-1]
    keep = target != ignore_index
    if ((target < 0) | (target >= ncls)).logical_and(keep).any().item():
        t = target[keep]
        bad = t[(t < 0) | (t >= ncls)][0].item()
        raise IndexError(f"Target {bad} is out of bounds.")
    idx = where(keep, target, 0).long()
    picked = logp.gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    w = keep.to(logp.dtype)
    if weight is not None:
        w = w * weight.to(logp.dtype).index_select(0, idx.reshape(-1)) \
            .reshape(idx.shape)
    return -picked * w, w


def _classes_last(input):
    """(N, C, d1, ...) as (N, d1, ..., C) so that classes are the last
    dim."""
    if input.ndim <= 2:
        return input
    return input.permute(0, *range(2, input.ndim), 1)


def nll_loss(input, target, weight=None, ignore_index=-100,
             reduction="mean"):
    """-input[i, target[i]] * weight[target[i]], reduced; input holds
    log-probabilities with classes in dim 1."""
    _tensors("nll_loss", input=input, target=target)
    _check_weight("nll_loss", input, weight)
    loss, w = _picked(_classes_last(input), target, weight, ignore_index)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def cross_entropy(input, target, weight=None, ignore_index=-100,
                  reduction="mean", label_smoothing=0.0):
    """nll_loss(log_softmax(input, 1), target) for class indices, as one
    fused op (forward and backward); for class probabilities (a float
    target of input's shape), -sum(weight * target * log_softmax(input));
    label_smoothing mixes the target with the uniform distribution, as
    torch's."""
    _tensors("cross_entropy", input=input, target=target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("label_smoothing must be between 0.0 and 1.0. Got: "
                         f"{label_smoothing}")
    if not target.dtype.is_floating_point:  # class indices
        return _cross_entropy(input, target, weight, ignore_index, reduction,
                              label_smoothing)
    _check_weight("cross_entropy", input, weight, "cross_entropy: ")
    logp = _classes_last(log_softmax(input, 1 if input.ndim > 1 else 0))
    w = 1.0 if weight is None else weight.to(input.dtype)
    p = _classes_last(target)
    if label_smoothing:
        p = p * (1 - label_smoothing) + label_smoothing / logp.shape[-1]
    return _reduce(-(logp * p * w).sum(-1), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None,
                                     reduction="mean", pos_weight=None):
    """-(pos_weight * y * log sigmoid(x) + (1 - y) * log sigmoid(-x)),
    computed stably as (1 - y) x + l (log(1 + e^-|x|) + relu(-x)) with
    l = 1 + (pos_weight - 1) y."""
    _tensors("binary_cross_entropy_with_logits", input=input,
             target=target)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as "
                         f"input size ({input.shape})")
    soft = (-input.abs()).exp().log1p() + (-input).relu()
    if pos_weight is None:
        loss = input - input * target + soft
    else:
        lw = (pos_weight - 1) * target + 1
        loss = input - input * target + lw * soft
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


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


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices, from log-probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return nll_loss(input, target, self.weight, self.ignore_index,
                        self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy between logits and class indices or probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, self.ignore_index,
                             self.reduction, self.label_smoothing)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (sigmoid folded in, stable)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight)
