"""nn.Sequential.  Its forward runs a plan made once (and remade when its
children change): each Linear directly followed by a ReLU becomes one
fused linear_relu call; every other child's forward is called as is."""
from collections import OrderedDict

from .layers import Linear, ReLU
from .module import Module

__all__ = ["Sequential"]


def _step(m):
    """The callable a plan runs for a child: its bound forward when the
    child keeps Module's __call__ (one frame less), else the child."""
    return m.forward if type(m).__call__ is Module.__call__ else m


class Sequential(Module):
    """Sequential(*modules) or Sequential(OrderedDict): runs its children
    in order."""

    def __init__(self, *args):
        super().__init__()
        object.__setattr__(self, "_plan", None)
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _children_changed(self):
        object.__setattr__(self, "_plan", None)

    def _make_plan(self):
        mods = [m for m in self._modules.values() if m is not None]
        plan, i = [], 0
        while i < len(mods):
            m = mods[i]
            nxt = mods[i + 1] if i + 1 < len(mods) else None
            if (nxt is not None and type(m).forward is Linear.forward and
                    type(nxt).forward is ReLU.forward):
                plan.append(m._forward_relu)
                i += 2
            else:
                plan.append(_step(m))
                i += 1
        plan = tuple(plan)
        object.__setattr__(self, "_plan", plan)
        return plan

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_plan"] = None  # bound methods of these very children
        return state

    def forward(self, input):
        for step in self._plan or self._make_plan():
            input = step(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def _key(self, idx):
        keys = list(self._modules)
        n = len(keys)
        i = idx.__index__()
        if not -n <= i < n:
            raise IndexError(f"index {idx} is out of range")
        return keys[i % n]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else [self._key(idx)]):
            delattr(self, k)
        self._renumber(list(self._modules.values()))

    def _renumber(self, items):
        """Children named 0..n-1 (torch renumbers after a deletion)."""
        for k in list(self._modules):
            delattr(self, k)
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)
        return self
