"""nn.parallel.DistributedDataParallel: torch's data parallelism across
processes, on pygpu.distributed.

At construction the parameters and buffers are broadcast from rank 0 and
the parameters that require grad are laid out in buckets of about
bucket_cap_mb, in reverse order of module.parameters() (the order in
which backward usually produces their gradients), one dtype and device
per bucket.  Each parameter gets a post-accumulate-grad hook: when its
.grad is final for this backward, the hook copies it, divided by the
world size, into its bucket's flat buffer; when every parameter of a
bucket is in, the bucket's all_reduce (SUM) starts asynchronously, in
bucket order on every rank.  The hook that starts the last bucket waits
for all of them and writes the averaged gradients back into each .grad.

find_unused_parameters=True walks the autograd graph of forward's output
to find the parameters it does not reach; they count as ready (their
contribution is zero) so that the buckets still complete.
"""
import contextlib

from ... import _C
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ..module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024


def _to_device(obj, device):
    """obj with every tensor in it (through tuples, lists and dicts) moved
    to device (an index means a CUDA device, as in device_ids)."""
    if isinstance(obj, _C.Tensor):
        return obj.to(f"cuda:{device}" if isinstance(device, int)
                      else device)
    if isinstance(obj, tuple):
        return tuple(_to_device(o, device) for o in obj)
    if isinstance(obj, list):
        return [_to_device(o, device) for o in obj]
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


class _Bucket:
    def __init__(self, params, dtype, device):
        self.params = params
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.flat = _C.zeros(n, dtype=dtype, device=device)
        self.pending = len(params)
        self.work = None

    def reset(self):
        self.pending = len(self.params)
        self.work = None


def _dist():
    from ... import distributed
    return distributed


class DistributedDataParallel(Module):
    """DistributedDataParallel(module, device_ids=None, output_device=None,
    dim=0, broadcast_buffers=True, init_sync=True, process_group=None,
    bucket_cap_mb=None, find_unused_parameters=False, ...)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False,
                 static_graph=False, **kwargs):
        super().__init__()
        dist = _dist()
        if process_group is None:
            process_group = dist.group.WORLD
            if process_group is None:
                raise ValueError(
                    "Default process group has not been initialized, "
                    "please make sure to call init_process_group.")
        if not hasattr(_C.Tensor, "register_post_accumulate_grad_hook"):
            raise RuntimeError("DistributedDataParallel needs "
                               "Tensor.register_post_accumulate_grad_hook")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None
                                     else bucket_cap_mb) * _MB)
        self._world = dist.get_world_size(process_group)
        params, seen = [], set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module "
                "doesn't have any parameter that requires a gradient.")
        self._params = params
        if init_sync:
            self._broadcast(list(module.parameters()) +
                            list(module.buffers()))
        self._buckets = self._make_buckets(params)
        self._where = {}  # id(param) -> (bucket index, slot)
        for bi, b in enumerate(self._buckets):
            for slot, p in enumerate(b.params):
                self._where[id(p)] = (bi, slot)
        self._next = 0          # the next bucket to launch
        self._started = False   # a backward has begun reducing
        self._unused = set()
        self._handles = [p.register_post_accumulate_grad_hook(self._hook)
                         for p in params]

    # ------------------------------------------------------------ setup

    def _broadcast(self, tensors):
        dist = _dist()
        with no_grad():
            works = [dist.broadcast(t, src=dist.get_process_group_ranks(
                self.process_group)[0], group=self.process_group,
                async_op=True) for t in tensors]
            for w in works:
                w.wait()

    def _make_buckets(self, params):
        buckets, current, size, key = [], [], 0, None
        for p in reversed(params):
            k = (p.dtype, str(p.device))
            nbytes = p.numel() * p.element_size()
            if current and (k != key or size + nbytes > self.bucket_bytes_cap):
                buckets.append(_Bucket(current, key[0], current[0].device))
                current, size = [], 0
            current.append(p)
            size += nbytes
            key = k
        if current:
            buckets.append(_Bucket(current, key[0], current[0].device))
        return buckets

    # ------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        if self._started:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration "
                "before starting a new one. This error indicates that your "
                "module has parameters that were not used in producing "
                "loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`.")
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        if self.device_ids and len(self.device_ids) == 1:
            # As torch: the inputs go to the module's device first.
            inputs, kwargs = _to_device((inputs, kwargs), self.device_ids[0])
        out = self.module(*inputs, **kwargs)
        self._unused = set()
        if self.find_unused_parameters and self.require_backward_grad_sync \
                and is_grad_enabled():
            used = _reachable_leaves(out)
            self._unused = {id(p) for p in self._params
                            if id(p) not in used}
            for p in self._params:
                if id(p) in self._unused:
                    self._ready(p, None)
        return out

    # ------------------------------------------------------------ backward

    def _hook(self, param):
        if not self.require_backward_grad_sync:
            return
        if id(param) in self._unused:
            return  # already counted in (a leaf reached another way)
        self._ready(param, param.grad)

    def _ready(self, param, grad):
        bi, slot = self._where[id(param)]
        b = self._buckets[bi]
        self._started = True
        off = b.offsets[slot]
        with no_grad():
            view = b.flat[off:off + param.numel()]
            if grad is None:
                view.zero_() if hasattr(view, "zero_") else view.mul_(0)
            else:
                view.copy_(grad.reshape(-1))
                view.div_(self._world)
        b.pending -= 1
        for w in (x.work for x in self._buckets if x.work is not None):
            w.is_completed()  # lets MPI progress the earlier buckets
        dist = _dist()
        while self._next < len(self._buckets) and \
                self._buckets[self._next].pending == 0:
            nb = self._buckets[self._next]
            nb.work = dist.all_reduce(nb.flat, group=self.process_group,
                                      async_op=True)
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _finish(self):
        with no_grad():
            for b in self._buckets:
                b.work.wait()
            for b in self._buckets:
                for p, off in zip(b.params, b.offsets):
                    avg = b.flat[off:off + p.numel()].reshape(p.shape)
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                b.reset()
        self._next = 0
        self._started = False
        self._unused = set()

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally, without
        communication; the first backward after it averages them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _reachable_leaves(out):
    """ids of the leaf tensors that the graph of out's tensors reaches."""
    stack, seen, leaves = [], {}, set()

    def add_outputs(o):
        if isinstance(o, _C.Tensor):
            if o.grad_fn is not None:
                stack.append(o.grad_fn)
            elif o.requires_grad:
                leaves.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                add_outputs(x)
        elif isinstance(o, dict):
            for x in o.values():
                add_outputs(x)
    add_outputs(out)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn  # kept alive, so ids stay unique
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for nxt, _ in getattr(fn, "next_functions", ()) or ():
            if nxt is not None:
                stack.append(nxt)
    return leaves
