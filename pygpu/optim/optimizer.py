"""Optimizer: parameter groups, zero_grad and state dicts, as torch's."""
import warnings
from copy import deepcopy

from .._C import Tensor
from ..autograd._grads import zero_grads
from ..autograd.grad_mode import enable_grad

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: holds param_groups (dicts with "params" and the
    hyper-parameters) and per-parameter state."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should "
                            "be an iterable of Tensors or dicts, but got "
                            + type(params).__name__)
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        """Adds a group (a dict with "params"); its missing
        hyper-parameters take the optimizer's defaults. A parameter listed
        twice in the group is warned about, one already in another group
        refused, as in torch."""
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in "
                            "ordered collections, but the ordering of "
                            "tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but "
                                "one of the params is " + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        mine = {id(p) for p in params}
        if len(mine) != len(params):
            warnings.warn("optimizer contains a parameter group with "
                          "duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/"
                          "40967 for more information", stacklevel=3)
        if any(id(p) in mine for g in self.param_groups for p in g["params"]):
            raise ValueError("some parameters appear in more than one "
                             "parameter group")
        group = dict(group, params=params)
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    @staticmethod
    def _closure_loss(closure):
        """The loss closure() gives (grad mode on inside a step), or
        None."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def zero_grad(self, set_to_none=True):
        zero_grads((p for g in self.param_groups for p in g["params"]),
                   set_to_none)

    def state_dict(self):
        """{"state": {index: state}, "param_groups": [...]} with parameters
        numbered in group order, as torch's."""
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: {k: (v.clone() if isinstance(v, Tensor)
                                    else v) for k, v in s.items()}
                 for p, s in ((p, self.state[p]) for g in self.param_groups
                              for p in g["params"] if p in self.state)}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of "
                             "parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter "
                                 "group that doesn't match the size of "
                                 "optimizer's group")
        self.state = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                if i in state_dict["state"]:
                    self.state[p] = {
                        k: _cast_state(p, v, k)
                        for k, v in state_dict["state"][i].items()}
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _cast_state(p, value, key):
    """A loaded state value made to fit parameter p, as torch's
    load_state_dict does: tensors move to p's device and, when p is
    floating point, take p's dtype (all but the step count); containers
    are walked; anything else is copied."""
    if isinstance(value, Tensor):
        if key != "step" and p.dtype.is_floating_point:
            return value.to(device=p.device, dtype=p.dtype)
        return value.to(p.device)
    if isinstance(value, dict):
        return {k: _cast_state(p, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(p, v, key) for v in value)
    return deepcopy(value)
