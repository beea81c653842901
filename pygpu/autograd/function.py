"""Custom autograd Functions: torch.autograd.Function's API and behaviour.

A subclass defines static ``forward`` and ``backward`` methods, either
``forward(ctx, *args, **kwargs)``, or ``forward(*args)`` with
``setup_context(ctx, inputs, output)``, and is called through
``apply(*args)``.  forward runs with grad mode off; then, when grad mode is
on and a tensor argument requires grad, the call is recorded as one Node
(named ``<ClassName>Backward``) whose rule calls ``backward`` with a
gradient for each output and maps what it returns back to the arguments
(csrc/autograd/autograd_function.c checks it as torch does).

ctx, an instance of the class's ``_backward_cls``, takes any attribute;
``save_for_backward`` keeps tensors (checked against their versions when
``saved_tensors`` reads them), ``mark_dirty`` names the inputs forward
wrote in place, ``mark_non_differentiable`` the outputs that get no
gradient, ``set_materialize_grads(False)`` lets backward receive None
(rather than zeros) for an output no gradient reached.
"""
import functools
import inspect
import weakref

from .. import _C
from .grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx", "BackwardCFunction",
           "once_differentiable"]


def _tensor_type():
    from .. import Tensor
    return Tensor


def _check_tensors(what, items):
    Tensor = _tensor_type()
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} can only accept variables, but argument "
                            f"{i} is of type {type(t).__name__}")
    return tuple(items)


class FunctionCtx:
    """The ctx of a custom Function's forward and backward."""

    materialize_grads = True
    needs_input_grad = ()
    to_save = None
    dirty_tensors = None
    non_differentiable = None
    _pygpu_node = None
    _pygpu_out_meta = ()

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward, as ``saved_tensors``; call
        it once, in forward or setup_context."""
        self.to_save = tensors

    def mark_dirty(self, *args):
        """The inputs forward modified in place (each must also be
        returned as an output)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Outputs that need no gradient: they do not require grad, and
        backward gets zeros (or None) for them."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """True (the default): an output that no gradient reached gets
        zeros in backward; False: None."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """The tensors of save_for_backward, as they were saved; torch's
        error when one was modified in place since, or when a backward
        pass has freed them."""
        ref = self._pygpu_node
        if ref is None:
            return tuple(self.to_save or ())
        node = ref()
        if node is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or "
                "directly access saved tensors after they have already been "
                "freed).")
        return _C._function_saved(node)


class BackwardCFunction(FunctionCtx):
    """The base of every Function's ctx class: its rule's Python side."""

    _forward_cls = None

    def _pygpu_backward(self, grads):
        """Called by the Node with a gradient (or None) for each output."""
        from .. import zeros
        if self.materialize_grads:
            grads = tuple(
                zeros(m[0], dtype=m[1], device=m[2])
                if g is None and m is not None else g
                for g, m in zip(grads, self._pygpu_out_meta))
        return self.apply(*grads)

    def apply(self, *args):
        """The class's backward (or vjp) over the output gradients."""
        cls = self._forward_cls
        backward_fn, vjp_fn = cls.backward, cls.vjp
        if backward_fn is not Function.backward and \
                vjp_fn is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a "
                               "custom Function is not allowed. You should "
                               "only implement one of them.")
        user_fn = vjp_fn if vjp_fn is not Function.vjp else backward_fn
        return user_fn(self, *args)


def _has_setup_context(cls):
    return getattr(cls.setup_context, "__func__", cls.setup_context) is not \
        _base_setup_context


def _bind(forward, args, kwargs):
    """args and kwargs as forward's positional arguments, defaults
    filled in (torch's bind_default_args)."""
    bound = inspect.signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


class FunctionMeta(type):
    """Gives each Function class its ctx class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """The base of custom autograd operations: subclass it with static
    ``forward`` and ``backward`` methods and call ``apply``."""

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is "
            "deprecated. Please use new-style autograd function with static "
            "forward method. (Example: https://pytorch.org/docs/stable/"
            "autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        """The computation (with grad mode off)."""
        raise NotImplementedError("You must implement the forward function "
                                  "for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """With a forward that takes no ctx: store what backward needs."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """A gradient for each input (None where it needs none) from the
        gradients of the outputs."""
        raise NotImplementedError("You must implement either the backward or "
                                  "vjp method for your custom "
                                  "autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD: not supported by pygpu."""
        raise NotImplementedError("You must implement the jvp function for "
                                  "custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward over args and record the call (see the module)."""
        Tensor = _tensor_type()
        setup = _has_setup_context(cls)
        if setup:
            args = _bind(cls.forward, args, kwargs)
            kwargs = {}
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            if setup:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        dirty = _check_tensors("mark_dirty", ctx.dirty_tensors or ())
        nondiff = _check_tensors("mark_non_differentiable",
                                 ctx.non_differentiable or ())
        saved = ctx.to_save
        # Released before anything can fail: they may hold outputs, which
        # would make a cycle through the Node.
        ctx.to_save = ctx.dirty_tensors = ctx.non_differentiable = None
        outputs, node = _C._function_record(
            ctx, cls.__name__ + "Backward", tuple(args), outputs, dirty,
            nondiff, None if saved is None else tuple(saved))
        if node is not None:
            ctx._pygpu_node = weakref.ref(node)
            ctx._pygpu_out_meta = tuple(
                (o.shape, o.dtype, o.device) if isinstance(o, Tensor)
                else None for o in outputs)
        return outputs if is_tuple else outputs[0]


_base_setup_context = Function.setup_context


class _DelayedError(Function):
    """Outputs whose backward raises: once_differentiable's guard."""

    @staticmethod
    def forward(ctx, *xs):
        return xs if len(xs) != 1 else xs[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that "
                           "was marked with @once_differentiable")


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs
    with grad mode off, and when grad mode is on and a gradient requires
    grad, the results carry a Node whose backward raises torch's error."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        Tensor = _tensor_type()
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            outputs = (outputs,)

        def fake_requires_grad(var):
            if var is not None:
                var = var.detach()
                var.requires_grad = True
            return var
        return _DelayedError.apply(*[fake_requires_grad(v) for v in outputs])
    return wrapper
