"""nn.Module: parameters, buffers and submodules registered by attribute
assignment, conversions in place, state_dict, torch's repr.

Registered parameters, buffers and submodules are kept in `_parameters`,
`_buffers` and `_modules` (torch's names) and mirrored in the instance
dict, so that `self.weight` in a forward is a plain attribute read.
Register and remove them through attributes or the register_* methods.
"""
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from .._C import Tensor, device as _device, dtype as _dtype
from .parameter import Parameter
from ..autograd._grads import zero_grads
from ..autograd.grad_mode import no_grad
from ..utils.hooks import RemovableHandle

__all__ = ["Module"]

# Bumped whenever a forward hook is added to any module: Sequential remakes
# its plan (which calls a hooked child's __call__, not its forward) when
# this changed since the plan was made.  (A removed hook needs nothing: the
# child's __call__ then finds no hook.)
_hook_epoch = [0]


def _has_hooks(m):
    """Whether module m has forward or forward pre-hooks."""
    return bool(m._forward_hooks or m._forward_pre_hooks)


def _add_hook(module, table, hook, prepend, extras):
    """hook into module's table (an ordered dict made on first use, as are
    the extra tables: with_kwargs, always_call), its RemovableHandle."""
    d = module.__dict__
    if table not in d:
        object.__setattr__(module, table, OrderedDict())
    for name, _ in extras:
        if name not in d:
            object.__setattr__(module, name, {})
    handle = RemovableHandle(d[table],
                             extra_dicts=[d[name] for name, _ in extras])
    d[table][handle.id] = hook
    for name, on in extras:
        if on:
            d[name][handle.id] = True
    if prepend:
        d[table].move_to_end(handle.id, last=False)
    _hook_epoch[0] += 1
    return handle


class _IncompatibleKeys(
        namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _check_name(kind, name, owner):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got "
                        f"{type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(owner, name) and not any(
            name in d for d in (owner._parameters, owner._buffers,
                                owner._modules)):
        raise KeyError(f"attribute '{name}' already exists")


def _expect(value, cls, kind, name, expected):
    """TypeError in torch's words unless value is None or a cls."""
    if value is not None and (cls is None or not isinstance(value, cls)):
        raise TypeError(f"cannot assign '{type(value).__name__}' as {kind} "
                        f"'{name}' ({expected} or None expected)")


def _parse_to(*args, **kwargs):
    """(device, dtype) from to()'s forms: device, dtype, (device, dtype),
    a tensor, and the device=/dtype=/non_blocking= keywords."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _dtype):
            dtype = a
        elif isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, bool):
            continue  # non_blocking given by position
        elif a is not None:
            device = a if isinstance(a, _device) else _device(a)
    if dtype is not None and not dtype.is_floating_point:
        raise TypeError("nn.Module.to only accepts floating point dtypes, "
                        f"but got desired dtype={dtype}")
    return device, dtype


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + ln for ln in lines[1:])


class Module:
    """Base class of layers and models, with torch's bookkeeping."""

    # Forward hooks: empty here, an instance's own tables from its first
    # register_forward_(pre_)hook on (so modules made or unpickled without
    # them work, and __call__ reads two empty dicts when there is none).
    _forward_pre_hooks = OrderedDict()
    _forward_pre_hooks_with_kwargs = {}
    _forward_hooks = OrderedDict()
    _forward_hooks_with_kwargs = {}
    _forward_hooks_always_called = {}

    def __init__(self):
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is '
                                  f'missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    # --------------------------------------------------------------- hooks

    def register_forward_pre_hook(self, hook, *, prepend=False,
                                  with_kwargs=False):
        """hook(module, args) -> None or new args (a non-tuple is made a
        1-tuple), run before forward; with_kwargs=True: hook(module, args,
        kwargs) -> None or (new_args, new_kwargs).  prepend=True runs it
        before the hooks already there.  Returns a RemovableHandle."""
        return _add_hook(self, "_forward_pre_hooks", hook, prepend,
                         [("_forward_pre_hooks_with_kwargs", with_kwargs)])

    def register_forward_hook(self, hook, *, prepend=False,
                              with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output, run after
        forward; with_kwargs=True: hook(module, args, kwargs, output).
        always_call=True runs it even when forward raised.  Returns a
        RemovableHandle."""
        return _add_hook(self, "_forward_hooks", hook, prepend,
                         [("_forward_hooks_with_kwargs", with_kwargs),
                          ("_forward_hooks_always_called", always_call)])

    def _call_with_hooks(self, args, kwargs):
        """__call__ with hooks, in torch's order and with its rules."""
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of "
                            f"(new_args, new_kwargs), but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        result, called = None, set()
        try:
            result = self.forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                called.add(hid)
                if hid in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
        except Exception:
            for hid, hook in list(self._forward_hooks.items()):
                if (hid not in self._forward_hooks_always_called or
                        hid in called):
                    continue
                try:
                    if hid in self._forward_hooks_with_kwargs:
                        res = hook(self, args, kwargs, result)
                    else:
                        res = hook(self, args, result)
                    if res is not None:
                        result = res
                except Exception as e:  # the first error is the one raised
                    warnings.warn("forward hook with ``always_call=True`` "
                                  "raised an exception that was silenced as "
                                  "another error was raised in forward: " +
                                  str(e))
            raise
        return result

    # -------------------------------------------------------- registration

    def _children_changed(self):
        """Called when a submodule is added, replaced or removed."""

    def _forget(self, name, keep=None):
        """Drop name from the tables other than keep (a replacement in
        the same table keeps its place, as in a dict)."""
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                d[table].pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)

    def __setattr__(self, name, value):
        d = self.__dict__
        params, modules = d.get("_parameters"), d.get("_modules")
        buffers = d.get("_buffers")
        if isinstance(value, (Parameter, Module)) and params is None:
            raise AttributeError("cannot assign parameters or modules before "
                                 "Module.__init__() call")
        if isinstance(value, Parameter):
            was_module = name in modules
            self._forget(name, "_parameters")
            params[name] = value
            if was_module:
                self._children_changed()
        elif params is not None and name in params:
            _expect(value, None, "parameter", name, "torch.nn.Parameter")
            params[name] = None
        elif isinstance(value, Module):
            self._forget(name, "_modules")
            modules[name] = value
            self._children_changed()
        elif modules is not None and name in modules:
            _expect(value, None, "child module", name, "torch.nn.Module")
            modules[name] = None
            self._children_changed()
        elif buffers is not None and name in buffers:
            _expect(value, Tensor, "buffer", name, "torch.Tensor")
            buffers[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        was_module = name in self.__dict__.get("_modules", ())
        self._forget(name)
        object.__delattr__(self, name)
        if was_module:
            self._children_changed()

    def _register(self, table, kind, name, value, cls, expected):
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before "
                                 f"Module.__init__() call")
        if value is not None and not isinstance(value, cls):
            raise TypeError(f"cannot assign '{type(value).__name__}' object "
                            f"to {kind} '{name}' ({expected} or None "
                            f"required)")
        _check_name(kind, name, self)
        self._forget(name, table)
        self.__dict__[table][name] = value
        object.__setattr__(self, name, value)

    def register_parameter(self, name, param):
        self._register("_parameters", "parameter", name, param, Parameter,
                       "torch.nn.Parameter")

    def register_buffer(self, name, tensor, persistent=True):
        self._register("_buffers", "buffer", name, tensor, Tensor,
                       "torch Tensor")
        if not persistent:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module "
                            f"subclass")
        self._register("_modules", "module", name, module, Module,
                       "torch.nn.Module")
        self._children_changed()

    register_module = add_module

    # ----------------------------------------------------------- iteration

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                sub = prefix + ("." if prefix else "") + name
                yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        mods = (self.named_modules(prefix=prefix,
                                   remove_duplicate=remove_duplicate)
                if recurse else [(prefix, self)])
        for mprefix, m in mods:
            for name, t in getattr(m, table).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --------------------------------------------------------- conversion

    def _apply(self, fn):
        """fn on every parameter (rebound in place: the Parameter objects
        stay the same) and buffer of this module and its submodules."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    new = fn(p)
                    if new is not p:
                        p.data = new
            for name, b in m._buffers.items():
                if b is not None:
                    new = fn(b)
                    m._buffers[name] = new
                    object.__setattr__(m, name, new)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor): in place,
        returns self; dtype changes floating point tensors only."""
        device, dtype = _parse_to(*args, **kwargs)

        def convert(t):
            dt = dtype if t.dtype.is_floating_point else None
            return t.to(device=device, dtype=dt)
        return self._apply(convert)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def _float_cast(self, dtype):
        return self._apply(
            lambda t: t.to(dtype=dtype) if t.dtype.is_floating_point else t)

    def half(self):
        from .. import float16
        return self._float_cast(float16)

    def float(self):
        from .. import float32
        return self._float_cast(float32)

    def double(self):
        from .. import float64
        return self._float_cast(float64)

    def apply(self, fn):
        """fn(module) on every submodule (children first), then self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients: to None (set_to_none=True, the
        default), else to zeros in place."""
        zero_grads(self.parameters(), set_to_none)

    # ---------------------------------------------------------- state dict

    def _local_state(self):
        state = {k: p for k, p in self._parameters.items() if p is not None}
        for k, b in self._buffers.items():
            if b is not None and k not in self._non_persistent_buffers_set:
                state[k] = b
        return state

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        if destination is None:
            destination = OrderedDict()
        for mprefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            dot = mprefix + "." if mprefix else ""
            for k, t in m._local_state().items():
                destination[dot + k] = t if keep_vars else t.detach()
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values in place (or assign them, assign=True); torch's
        errors and (missing_keys, unexpected_keys) result."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got "
                            f"{type(state_dict)}.")
        missing, errors, expected = [], [], set()
        for mprefix, m in self.named_modules():
            dot = mprefix + "." if mprefix else ""
            for k, t in m._local_state().items():
                key = dot + k
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                src = state_dict[key]
                if not isinstance(src, Tensor):
                    errors.append(f'While copying the parameter named "{key}"'
                                  f', expected torch.Tensor or Tensor-like '
                                  f'object from checkpoint but received '
                                  f'{type(src)}')
                elif src.shape != t.shape:
                    errors.append(f"size mismatch for {key}: copying a param "
                                  f"with shape {src.shape} from checkpoint, "
                                  f"the shape in current model is "
                                  f"{t.shape}.")
                elif not assign:
                    with no_grad():
                        t.copy_(src)
                elif isinstance(t, Parameter):
                    setattr(m, k, Parameter(src, t.requires_grad))
                else:
                    m._buffers[k] = src
                    object.__setattr__(m, k, src)
        unexpected = [k for k in state_dict if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for "
                               f"{type(self).__name__}:\n\t" +
                               "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # --------------------------------------------------------------- repr

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [f"({name}): {_addindent(repr(m), 2)}"
                    for name, m in self._modules.items()]
        body = ""
        if len(lines) == 1 and not children:
            body = lines[0]
        elif lines or children:
            body = "\n  " + "\n  ".join(lines + children) + "\n"
        return f"{type(self).__name__}({body})"
