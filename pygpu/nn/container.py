"""The containers: Sequential, ModuleList, ModuleDict, ParameterList,
ParameterDict, with torch's names, keys and reprs.

Sequential's forward runs a plan made once (and remade when its children
change or a forward hook is added to any module): each Linear
directly followed by a ReLU becomes one fused linear_relu call; every
other child's forward is called as is (its __call__ when it has hooks)."""
from collections import OrderedDict
from collections.abc import Mapping
from itertools import chain

from .._C import Tensor
from .layers import Linear, ReLU
from .module import Module, _hook_epoch, _has_hooks
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _step(m):
    """The callable a plan runs for a child: its bound forward when the
    child keeps Module's __call__ and has no hooks (one frame less), else
    the child."""
    if type(m).__call__ is Module.__call__ and not _has_hooks(m):
        return m.forward
    return m


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
        object.__setattr__(self, "_plan_epoch", _hook_epoch[0])
        mods = [m for m in self._modules.values() if m is not None]
        plan, i = [], 0
        while i < len(mods):
            m = mods[i]
            nxt = mods[i + 1] if i + 1 < len(mods) else None
            if (nxt is not None and type(m).forward is Linear.forward and
                    type(nxt).forward is ReLU.forward and
                    not _has_hooks(m) and not _has_hooks(nxt)):
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
        plan = self._plan
        if plan is None or self._plan_epoch != _hook_epoch[0]:
            plan = self._make_plan()
        for step in plan:
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


def _abs_index(idx, n):
    """idx (an int-like, possibly negative) as a position in 0..n-1, or
    IndexError in torch's words."""
    i = idx.__index__()
    if not -n <= i < n:
        raise IndexError(f"index {idx} is out of range")
    return i % n if n else i


def _addindent(s, n):
    lines = s.split("\n")
    return lines[0] + "".join("\n" + " " * n + ln for ln in lines[1:])


def _pairs(kind, items):
    """(key, value) pairs of an update() argument that is not a mapping,
    with torch's errors."""
    for j, p in enumerate(items):
        if not hasattr(p, "__iter__"):
            raise TypeError(f"{kind} update sequence element #{j} should be "
                            f"Iterable; is{type(p).__name__}")
        p = list(p)
        if len(p) != 2:
            raise ValueError(f"{kind} update sequence element #{j} has length "
                             f"{len(p)}; 2 is required")
        yield p[0], p[1]


class ModuleList(Module):
    """ModuleList(modules=None): a list of modules, registered as children
    "0", "1", ... (so parameters(), state_dict() and to() see them).  It
    has no forward: index it or iterate over it."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            doomed = [str(k) for k in range(len(self))[idx]]
        else:
            doomed = [str(_abs_index(idx, len(self)))]
        keep = [m for k, m in self._modules.items() if k not in doomed]
        self._renumber(keep)

    def _renumber(self, items):
        """Children named 0..n-1 again, as torch keeps them."""
        for k in list(self._modules):
            delattr(self, k)
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, m in enumerate(chain(self, other)):
            combined.add_module(str(i), m)
        return combined

    def insert(self, index, module):
        """Insert module before position index (as list.insert)."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key=-1):
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        if not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an "
                            "iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        """torch's: runs of equal children shown once, "(0-2): 3 x ..."."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return type(self).__name__ + "()"
        runs = []  # [first, last, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for first, last, r in runs:
            head = (f"({first})" if first == last else
                    f"({first}-{last}): {last - first + 1} x")
            sep = ": " if first == last else " "
            lines.append(_addindent(head + sep + r, 2))
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """ModuleDict(modules=None): an ordered dict of modules, registered as
    children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        if key not in self._modules:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        for k in list(self._modules):
            delattr(self, k)

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """From a mapping (its order kept) or an iterable of (key, module)
        pairs; existing keys are replaced."""
        if not hasattr(modules, "__iter__"):
            raise TypeError("ModuleDict.update should be called with an "
                            "iterable of key/value pairs, but got " +
                            type(modules).__name__)
        pairs = (modules.items() if isinstance(modules, (Mapping, ModuleDict))
                 else _pairs("ModuleDict", modules))
        for k, m in pairs:
            self[k] = m


def _param_line(key, p):
    """One line of ParameterList's and ParameterDict's repr, torch's."""
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        where = f" ({p.device})" if p.device.type == "cuda" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return (f"  ({key}): {kind} containing: [{p.dtype} of size "
                f"{size}{where}]")
    return f"  ({key}): Object of type: {type(p).__name__}"


def _set_entry(owner, name, value):
    """owner.name = value, a tensor wrapped into a Parameter first (as
    torch's parameter containers do) and registered."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        value = Parameter(value)
    if isinstance(value, Parameter):
        owner.register_parameter(name, value)
    else:
        setattr(owner, name, value)


class ParameterList(Module):
    """ParameterList(values=None): a list of parameters, registered as
    "0", "1", ...; tensors are wrapped into Parameters, other objects kept
    as they are."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx, param):
        _set_entry(self, str(_abs_index(idx, len(self))), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if not hasattr(values, "__iter__") or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an "
                            "iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(i, p) for i, p in enumerate(self))


class ParameterDict(Module):
    """ParameterDict(parameters=None): an ordered dict of parameters under
    string keys; tensors are wrapped into Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key(key):
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as "
                            f"a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on "
                            f"github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        if self._key(key) not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        _set_entry(self, self._key(key), value)
        self._keys[key] = None

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """From an OrderedDict or ParameterDict (in its order), another
        mapping (in sorted key order, as torch) or (key, value) pairs."""
        if not hasattr(parameters, "__iter__"):
            raise TypeError("ParametersDict.update should be called with an "
                            "iterable of key/value pairs, but got " +
                            type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = _pairs("ParameterDict", parameters)
        for k, v in pairs:
            self[k] = v

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in self.items())
