"""nn.parallel.DataParallel: torch's single-process data parallelism.

With no usable GPU, or one, the wrapped module runs directly (after the
inputs move to device_ids[0], with one GPU), as in torch.  With several,
each forward replicates the module onto the devices, scatters the inputs
along `dim`, runs the replicas one after the other (their CUDA work is
asynchronous, so the devices still overlap) and gathers the outputs on
`output_device`.  scatter, gather and replicate take any devices, so their
logic is tested on the CPU; the several-GPU path has not run on hardware.
"""
import copy
from itertools import chain

from ... import _C, cuda
from ...autograd.grad_mode import is_grad_enabled
from ..module import Module
from ..parameter import Parameter

__all__ = ["DataParallel"]


def _as_device(d):
    """An int is cuda:N (-1: the CPU, as torch's output_device allows)."""
    if isinstance(d, int) and not isinstance(d, bool):
        return _C.device("cpu") if d < 0 else _C.device("cuda", d)
    return d if isinstance(d, _C.device) else _C.device(d)


def _chunks(t, n, dim):
    """t split along dim into at most n pieces of ceil(size / n), as
    torch's chunk."""
    dim = dim % t.ndim
    size = t.shape[dim]
    step = max(-(-size // n), 1)
    head = (slice(None),) * dim
    return [t[head + (slice(a, min(a + step, size)),)]
            for a in range(0, size, step)] or [t]


def scatter(obj, devices, dim=0):
    """obj split for each device: tensors in chunks along dim, moved;
    tuples, lists and dicts element by element; other objects repeated.
    Returns one entry per device that received a chunk."""
    devices = [_as_device(d) for d in devices]
    if isinstance(obj, _C.Tensor):
        chunks = _chunks(obj, len(devices), dim)
        return [c.to(d) for c, d in zip(chunks, devices)]
    if isinstance(obj, tuple) and obj:
        return [tuple(x) for x in zip(*(scatter(o, devices, dim)
                                        for o in obj))]
    if isinstance(obj, list) and obj:
        return [list(x) for x in zip(*(scatter(o, devices, dim)
                                       for o in obj))]
    if isinstance(obj, dict) and obj:
        parts = zip(*(scatter(v, devices, dim) for v in obj.values()))
        return [type(obj)(zip(obj.keys(), p)) for p in parts]
    return [obj for _ in devices]


def scatter_kwargs(inputs, kwargs, devices, dim=0):
    inputs = scatter(inputs, devices, dim) if inputs else []
    kwargs = scatter(kwargs, devices, dim) if kwargs else []
    n = max(len(inputs), len(kwargs))
    inputs += [()] * (n - len(inputs))
    kwargs += [{}] * (n - len(kwargs))
    return tuple(inputs), tuple(kwargs)


def gather(outputs, target_device, dim=0):
    """The replicas' outputs joined along dim on target_device."""
    target = _as_device(target_device)
    first = outputs[0]
    if isinstance(first, _C.Tensor):
        return _C.cat([o.to(target) for o in outputs], dim)
    if isinstance(first, (tuple, list)):
        return type(first)(gather(list(x), target, dim)
                           for x in zip(*outputs))
    if isinstance(first, dict):
        return type(first)((k, gather([o[k] for o in outputs], target, dim))
                           for k in first)
    return outputs


def replicate(module, devices):
    """A copy of module on each device (parameters stay Parameters)."""
    replicas = []
    for d in devices:
        d = _as_device(d)
        memo = {id(p): Parameter(p.to(d), p.requires_grad)
                for p in module.parameters()}
        memo.update((id(b), b.to(d)) for b in module.buffers())
        replicas.append(copy.deepcopy(module, memo))
    return replicas


def parallel_apply(replicas, inputs, kwargs):
    return [m(*i, **k) for m, i, k in zip(replicas, inputs, kwargs)]


class DataParallel(Module):
    """DataParallel(module, device_ids=None, output_device=None, dim=0)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids = []
            self.output_device = None
            self.src_device_obj = None
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [_as_device(d).index for d in device_ids]
        if output_device is None:
            output_device = self.device_ids[0]
        self.output_device = _as_device(output_device)
        self.src_device_obj = _C.device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        src = self.src_device_obj
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != src:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device "
                    f"{src} (device_ids[0]) but found one of them on "
                    f"device: {t.device}")
        inputs, kwargs = scatter_kwargs(inputs, kwargs, self.device_ids,
                                        self.dim)
        if not inputs:
            inputs, kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **kwargs[0])
        if is_grad_enabled() and any(p.requires_grad
                                     for p in self.module.parameters()):
            raise RuntimeError(
                "nn.DataParallel over several devices records no gradients "
                "for the module's parameters yet: run it under "
                "pygpu.no_grad(), or on one device")
        replicas = replicate(self.module, self.device_ids[:len(inputs)])
        outputs = parallel_apply(replicas, inputs, kwargs)
        return gather(outputs, self.output_device, self.dim)
