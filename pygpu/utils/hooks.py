"""torch.utils.hooks' RemovableHandle: what Module.register_forward_hook
and register_forward_pre_hook return.  (Tensor hooks return the C
RemovableHandle of csrc/autograd/autograd_hooks.c, which behaves alike.)"""
import itertools

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A registered hook: remove() takes it out of the dict it was added
    to (and of extra_dicts, which record its options); a second remove()
    does nothing.  Also a context manager that removes it on exit."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dicts=()):
        self.hooks_dict = hooks_dict
        self.extra_dicts = tuple(extra_dicts)
        self.id = next(RemovableHandle._ids)

    def remove(self):
        for d in (self.hooks_dict,) + self.extra_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()

    def __repr__(self):
        return f"<RemovableHandle id={self.id}>"
