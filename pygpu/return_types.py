"""The named pairs that sort, topk, kthvalue, median and mode return, as
torch.return_types: tuples whose fields are ``values`` and ``indices``."""
from typing import NamedTuple

from ._C import Tensor

__all__ = ["sort", "topk", "kthvalue", "median", "mode"]


class sort(NamedTuple):
    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    values: Tensor
    indices: Tensor


class kthvalue(NamedTuple):
    values: Tensor
    indices: Tensor


class median(NamedTuple):
    values: Tensor
    indices: Tensor


class mode(NamedTuple):
    values: Tensor
    indices: Tensor
