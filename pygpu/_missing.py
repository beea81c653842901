"""Missing names say so.  A torch name that pygpu does not have raises

    AttributeError: pygpu does not implement torch.<name> yet; see
    docs/api_coverage.md ...

on pygpu, pygpu.nn, pygpu.nn.functional (their module __getattr__, which
Python calls only for names the module lacks) and pygpu.Tensor.  Any other
missing name gets Python's usual error.  torch's names are in
_torch_names.py (scripts/gen_torch_names.py writes it).

pygpu.Tensor is a C type whose attribute lookup stays CPython's generic
one (a custom lookup would take the interpreter's fast paths off every
attribute read and method call of every tensor).  Instead, when pygpu is
imported, each torch.Tensor name that the type lacks at that moment
becomes a small non-data descriptor on it whose reading raises the error;
dir() of a tensor leaves them out.  What pygpu implements is read from the
live modules and type, so names added later never take these paths."""
import inspect

from ._torch_names import NAMES

COVERAGE = "docs/api_coverage.md"

__all__ = ["message", "module_getattr", "install_tensor_names",
           "is_missing"]


def message(namespace, name):
    """The message for torch's `namespace`.`name`, or None when that is
    not one of torch's public names."""
    if not isinstance(name, str) or name not in NAMES.get(namespace, ()):
        return None
    return (f"pygpu does not implement {namespace}.{name} yet; see "
            f"{COVERAGE} in pygpu's source tree for what it implements")


def module_getattr(module_name, namespace):
    """A module __getattr__ for module_name, which mirrors torch's
    namespace."""
    def __getattr__(name):
        msg = message(namespace, name)
        if msg is None:
            msg = f"module {module_name!r} has no attribute {name!r}"
        raise AttributeError(msg, name=name)
    return __getattr__


class _Missing:
    """A torch.Tensor attribute pygpu lacks: reading it, from a tensor or
    the type, raises AttributeError saying so.  No __set__, so a tensor's
    own attribute of that name (its __dict__) still wins."""

    __slots__ = ("name", "msg")

    def __init__(self, name):
        self.name = name
        self.msg = message("torch.Tensor", name)

    def __get__(self, obj, objtype=None):
        raise AttributeError(self.msg, name=self.name)


def is_missing(cls, name):
    """Whether name on cls is one of the descriptors above (that is: not
    implemented)."""
    return isinstance(inspect.getattr_static(cls, name, None), _Missing)


def _tensor_dir(self):
    return sorted(n for n in object.__dir__(self)
                  if not is_missing(type(self), n))


def install_tensor_names(tensor_type):
    """Give tensor_type a _Missing for each torch.Tensor name it lacks now,
    and a __dir__ that leaves them out."""
    for name in NAMES["torch.Tensor"]:
        try:
            inspect.getattr_static(tensor_type, name)
        except AttributeError:
            setattr(tensor_type, name, _Missing(name))
    if "__dir__" not in tensor_type.__dict__:
        tensor_type.__dir__ = _tensor_dir
