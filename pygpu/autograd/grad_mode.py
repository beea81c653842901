"""Grad mode and inference mode: per-thread flags, context managers and
decorators as torch's.

A new thread starts with grad mode on and inference mode off.  Each context
manager saves the thread's flags on entry and puts them back on exit, also
when the block raises, so nesting restores the outer state.  As decorators
they wrap a function (or a generator function: the mode holds while its
body runs, not between its yields) in a fresh context per call.
"""
import functools
import inspect

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled"]

# The flags live in C (per thread), where every op reads them.
is_grad_enabled = _C._is_grad_enabled
is_inference_mode_enabled = _C._is_inference_mode_enabled
_set_grad = _C._set_grad_enabled


def _state():
    return is_grad_enabled(), is_inference_mode_enabled()


def _restore(state):
    _C._set_grad_enabled(state[0])
    _C._set_inference_mode(state[1])


class _ModeContext:
    """Saves the thread's flags on entry, restores them on exit; a
    decorator that runs each call in a clone of itself."""

    def __enter__(self):
        self.__dict__.setdefault("_saved", []).append(_state())
        self._apply()
        return None

    def __exit__(self, exc_type, exc, tb):
        _restore(self._saved.pop())
        return False

    def _apply(self):
        raise NotImplementedError

    def clone(self):
        """A new context manager of the same kind and mode."""
        return type(self)()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def run(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return run

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    value = next(gen)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            value = gen.throw(exc)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value
        return run


class _BareDecoratorContext(_ModeContext):
    """Also a decorator without parentheses: @no_grad as @no_grad()."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_BareDecoratorContext):
    """Turns grad mode off in this thread inside the block or the decorated
    function: ops record no graph there."""

    def _apply(self):
        _set_grad(False)


class enable_grad(_BareDecoratorContext):
    """Turns grad mode on in this thread inside the block or the decorated
    function, also inside no_grad."""

    def _apply(self):
        _set_grad(True)


class set_grad_enabled(_ModeContext):
    """set_grad_enabled(mode): sets grad mode at once, as a function; as a
    context manager or decorator, the previous mode comes back on exit."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = mode
        _set_grad(mode)

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        _set_grad(self.prev)
        return False

    def __call__(self, func):
        _set_grad(self.prev)  # decorating does not change the mode
        return super().__call__(func)

    def clone(self):
        """A new set_grad_enabled of the same mode (it sets it at once)."""
        return type(self)(self.mode)


class inference_mode(_ModeContext):
    """inference_mode(mode=True): inference mode on (and grad mode off) in
    this thread inside the block or the decorated function; mode=False
    turns inference mode off and grad mode on, as torch's does.  Also a
    decorator without parentheses."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode

    def _apply(self):
        _restore((not self.mode, self.mode))

    def clone(self):
        """A new inference_mode of the same mode."""
        return type(self)(self.mode)
