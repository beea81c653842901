"""Random sampling with torch's names: randint, randperm, multinomial,
bernoulli, normal, poisson, the in-place Tensor draws (uniform_, normal_,
random_, exponential_, bernoulli_) and the generators' state functions.

Every draw takes its numbers from a Philox stream, the device's default
one or a ``Generator``'s, through ``_C._sample`` (the kernels of
csrc/kernels/sample.h: the same numbers on the CPU and on CUDA for the same
seed), ``rand`` / ``randn``, or ``_C._randperm`` / ``_C._multinomial``
(drawn on the host from the target device's stream, then copied there).
"""
import math

import numpy as np

from . import _C
from ._C import Generator, Tensor
from ._type_info import promote_types

_UNIFORM, _NORMAL, _EXPONENTIAL, _INTEGER, _POISSON, _BERNOULLI = range(6)

# torch's C++ names of the dtypes, for its messages.
_CPP_NAME = {_C.float32: "float", _C.float64: "double",
             _C.float16: "c10::Half", _C.bfloat16: "c10::BFloat16",
             _C.int64: "long", _C.int32: "int", _C.uint8: "unsigned char",
             _C.bool: "bool"}
_SCALAR_NAME = {_C.float32: "Float", _C.float64: "Double",
                _C.float16: "Half", _C.bfloat16: "BFloat16",
                _C.int64: "Long", _C.int32: "Int", _C.uint8: "Byte",
                _C.bool: "Bool"}
# Integers every value of which the dtype holds exactly: [lo, hi].
_HOLDS = {_C.float32: (-(1 << 24), 1 << 24),
          _C.float64: (-(1 << 53), 1 << 53),
          _C.float16: (-(1 << 11), 1 << 11),
          _C.bfloat16: (-(1 << 8), 1 << 8),
          _C.int64: (-(1 << 63), (1 << 63) - 1),
          _C.int32: (-(1 << 31), (1 << 31) - 1),
          _C.uint8: (0, 255), _C.bool: (0, 1)}


def _device(device):
    """device=, else this thread's default device (set_default_device,
    ``with pygpu.device(...)``)."""
    if device is not None:
        return _C.device(device)
    d = _C._get_default_device()
    return _C.device("cpu") if d is None else d


def _size(fname, size):
    if isinstance(size, int) or not isinstance(size, (tuple, list, _C.Size)):
        raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, "
                        f"but found element of type {type(size).__name__}")
    return tuple(size)


def _is_float(dtype):
    return dtype in (_C.float32, _C.float64, _C.float16, _C.bfloat16)


def _integers(fname, shape, low, high, dtype, device, generator):
    """int64 in [low, high) of shape on device, then dtype."""
    lo, hi = _HOLDS[dtype]
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', "
                           f"but got from={low} >= to={high}")
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_CPP_NAME[dtype]}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_CPP_NAME[dtype]}")
    out = _C.empty(shape, dtype=_C.int64, device=device)
    _C._sample(out, _INTEGER, low, (high - low) % (1 << 64), generator, None)
    return out if dtype == _C.int64 else out.to(dtype)


def _with_grad(t, requires_grad):
    return t.requires_grad_(True) if requires_grad else t


def randint(*args, size=None, low=None, high=None, generator=None,
            dtype=None, device=None, requires_grad=False, pin_memory=False):
    """randint(low=0, high, size, *, generator=None, dtype=int64,
    device=None, requires_grad=False): integers uniform in [low, high)."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
    if high is None:
        if not args:
            raise TypeError("randint() missing required argument 'high'")
        high = args.pop()
    if low is None:
        low = args.pop() if args else 0
    if args:
        raise TypeError("randint() takes at most 3 positional arguments")
    shape = _size("randint", size)
    dtype = _C.int64 if dtype is None else dtype
    t = _integers("randint", shape, _int_arg("randint", "low", low),
                  _int_arg("randint", "high", high), dtype, _device(device),
                  generator)
    if pin_memory:
        t = t.pin_memory()
    return _with_grad(t, requires_grad)


def _int_arg(fname, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise TypeError(f"{fname}(): argument '{name}' must be int, not "
                        f"{type(v).__name__}")
    return int(v)


def randint_like(input, *args, low=None, high=None, dtype=None, device=None,
                 requires_grad=False, generator=None):
    """randint_like(input, low=0, high, *, dtype=None, device=None,
    requires_grad=False): randint of input's shape (dtype, device)."""
    if not isinstance(input, Tensor):
        raise TypeError("randint_like(): argument 'input' must be Tensor, "
                        f"not {type(input).__name__}")
    args = list(args)
    if high is None:
        if not args:
            raise TypeError("randint_like() missing required argument "
                            "'high'")
        high = args.pop()
    if low is None:
        low = args.pop() if args else 0
    if args:
        raise TypeError("randint_like() takes at most 3 positional "
                        "arguments")
    dtype = input.dtype if dtype is None else dtype
    dev = input.device if device is None else _C.device(device)
    t = _integers("randint_like", tuple(input.shape),
                  _int_arg("randint_like", "low", low),
                  _int_arg("randint_like", "high", high), dtype, dev,
                  generator)
    return _with_grad(t, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None,
             requires_grad=False, pin_memory=False):
    """randperm(n, *, generator=None, dtype=int64, device=None): a random
    permutation of 0 .. n-1."""
    n = _int_arg("randperm", "n", n)
    dtype = _C.int64 if dtype is None else dtype
    dev = _device(device)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    if n > 0 and n - 1 > _HOLDS[dtype][1]:
        raise RuntimeError(f"n is too large for result tensor type: "
                           f"'{_SCALAR_NAME[dtype]}'")
    t = _C._randperm(n, dev, generator)
    if dtype != _C.int64 or dev.type != "cpu":
        t = t.to(dev, dtype)
    if pin_memory:
        t = t.pin_memory()
    return _with_grad(t, requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """multinomial(input, num_samples, replacement=False, *,
    generator=None): category indices drawn from the rows of input (1-D or
    2-D, non-negative weights)."""
    if not isinstance(input, Tensor):
        raise TypeError("multinomial(): argument 'input' must be Tensor, "
                        f"not {type(input).__name__}")
    num_samples = _int_arg("multinomial", "num_samples", num_samples)
    if not 1 <= input.dim() <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not _is_float(input.dtype):
        raise RuntimeError("multinomial only supports floating-point dtypes "
                           f"for input, got: {_SCALAR_NAME[input.dtype]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    k = input.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) "
                           "samples without replacement")
    if k > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    p = input.detach().to("cpu", _C.float64).contiguous().reshape(-1, k)
    a = p.numpy()
    if not replacement or num_samples == 1:
        if not (np.isfinite(a).all() and (a >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, "
                               "`nan` or element < 0")
    else:
        if (a < 0).any():
            raise RuntimeError("invalid multinomial distribution "
                               "(encountering probability entry < 0)")
        if not np.isfinite(a).all():
            raise RuntimeError("invalid multinomial distribution "
                               "(encountering probability entry = infinity "
                               "or NaN)")
    if a.size and (a.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of "
                           "probabilities <= 0)")
    r = _C._multinomial(p, num_samples, replacement, input.device,
                        generator)
    if input.dim() == 1:
        r = r.reshape(num_samples)
    if input.device.type != "cpu":
        r = r.to(input.device)
    return r


def _check_p(fname, p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"{fname} expects p to be in [0, 1], but got "
                           f"p={_num(p)}")


def _check_p_tensor(p):
    bad = (p < 0) | (p > 1) | (p != p)
    if bool(bad.any()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but "
                           "got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement "
                           "request to PyTorch.)")


def _num(x):
    """A number as torch's C++ prints it (1, 0.5, 1e-06)."""
    return f"{x:g}"


def bernoulli(input, p=None, *, generator=None, out=None):
    """bernoulli(input, *, generator=None): 1 with probability input[i],
    else 0 (input's dtype); bernoulli(input, p): with probability p."""
    if not isinstance(input, Tensor):
        raise TypeError("bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if p is None:
        if not _is_float(input.dtype):
            raise RuntimeError(f'"bernoulli_tensor_cpu_self_" not '
                               f'implemented for '
                               f"'{_SCALAR_NAME[input.dtype]}'")
        _check_p_tensor(input)
        r = _C.empty(tuple(input.shape), dtype=input.dtype,
                     device=input.device)
        _C._sample(r, _BERNOULLI, 0.0, 1.0, generator,
                   input.detach().contiguous())
    else:
        r = _C.empty(tuple(input.shape), dtype=input.dtype,
                     device=input.device)
        _bernoulli_into(r, p, generator)
    if out is not None:
        out.copy_(r)
        return out
    return r


def _bernoulli_into(self, p, generator):
    """self <- 1 with probability p (a float, or a float tensor broadcast
    to self), else 0: one draw into a contiguous tensor of self's dtype
    (p's for a tensor p, float32 for an integer self), copied in."""
    shape = tuple(self.shape)
    if isinstance(p, Tensor):
        if not _is_float(p.dtype):
            raise RuntimeError("expected probabilities tensor to have "
                               "floating type, got "
                               f"{_SCALAR_NAME[p.dtype]}")
        _check_p_tensor(p)
        probs = p.detach().to(self.device).expand(*shape).contiguous()
        tmp = _C.empty(shape, dtype=p.dtype, device=self.device)
        _C._sample(tmp, _BERNOULLI, 0.0, 1.0, generator, probs)
    else:
        p = float(p)
        _check_p("bernoulli_", p)
        dt = self.dtype if _is_float(self.dtype) else _C.float32
        tmp = _C.empty(shape, dtype=dt, device=self.device)
        _C._sample(tmp, _BERNOULLI, p, 1.0, generator, None)
    self.copy_(tmp)
    return self


def normal(mean, std=1.0, size=None, *, generator=None, out=None,
           dtype=None, device=None, requires_grad=False, pin_memory=False):
    """normal(mean, std, *, generator=None): a normal number per element
    of mean and std broadcast (either may be a float); normal(mean, std,
    size): floats mean and std, a tensor of that size."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of "
                            "arguments: size is required when mean and std "
                            "are numbers")
        shape = _size("normal", size)
        _check_std(std)
        dt = _C.get_default_dtype() if dtype is None else dtype
        t = _C.randn(shape, dtype=dt, device=_device(device),
                     generator=generator)
        if std != 1.0:
            t.mul_(float(std))
        if mean != 0.0:
            t.add_(float(mean))
        if out is not None:
            out.copy_(t)
            return out
        if pin_memory:
            t = t.pin_memory()
        return _with_grad(t, requires_grad)
    if size is not None:
        raise TypeError("normal() received an invalid combination of "
                        "arguments: size is taken only with float mean and "
                        "std")
    ref = mean if mt else std
    if st:
        if bool((std.detach() < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        _check_std(std)
    shape = tuple(mean.shape) if mt else tuple(std.shape)
    if mt and st:
        shape = tuple(np.broadcast_shapes(tuple(mean.shape),
                                          tuple(std.shape)))
    dt = promote_types(mean.dtype, std.dtype) if mt and st else ref.dtype
    if not _is_float(dt):
        raise RuntimeError(f'"normal_kernel_cpu" not implemented for '
                           f"'{_SCALAR_NAME[dt]}'")
    z = _C.randn(shape, dtype=dt, device=ref.device, generator=generator)
    r = z * std + mean
    if out is not None:
        out.copy_(r)
        return out
    return r


def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std "
                           f"{_num(float(std))}")


def poisson(input, generator=None):
    """poisson(input, generator=None): a Poisson count of rate input[i]
    per element, in input's (floating) dtype."""
    if not isinstance(input, Tensor):
        raise TypeError("poisson(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not _is_float(input.dtype):
        raise RuntimeError(f'"poisson_cpu" not implemented for '
                           f"'{_SCALAR_NAME[input.dtype]}'")
    rates = input.detach().contiguous()
    if bool((rates < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be "
                           "non-negative")
    out = _C.empty(tuple(input.shape), dtype=input.dtype,
                   device=input.device)
    return _C._sample(out, _POISSON, 0, 0, generator, rates)


# ------------------------------------------------------ Tensor methods


def _float_only(self, what):
    if not _is_float(self.dtype):
        raise RuntimeError(f'"{what}" not implemented for '
                           f"'{_SCALAR_NAME[self.dtype]}'")


def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    """uniform_(from=0, to=1, *, generator=None): fill with uniform
    numbers in [from, to)."""
    from_ = kw.pop("from", from_)
    if kw:
        raise TypeError(f"uniform_() got an unexpected keyword argument "
                        f"'{next(iter(kw))}'")
    _float_only(self, "check_uniform_bounds")
    from_, to = float(from_), float(to)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, "
                           f"but found from={_num(from_)} > to={_num(to)}")
    u = _C.rand(tuple(self.shape), dtype=self.dtype, device=self.device,
                generator=generator)
    if from_ != 0.0 or to != 1.0:
        u = u * (to - from_) + from_
    return self.copy_(u)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """normal_(mean=0, std=1, *, generator=None): fill with normal
    numbers."""
    _float_only(self, "normal_kernel_cpu")
    _check_std(float(std))
    z = _C.randn(tuple(self.shape), dtype=self.dtype, device=self.device,
                 generator=generator)
    if std != 1.0:
        z = z * float(std)
    if mean != 0.0:
        z = z + float(mean)
    return self.copy_(z)


def _random_(self, *args, generator=None, **kw):
    """random_(), random_(to), random_(from, to) (to None: the dtype's
    largest): integers uniform in [from, to), into self."""
    frm, to = 0, None
    if "from" in kw:
        frm = kw.pop("from")
    if "to" in kw:
        to = kw.pop("to")
    if kw:
        raise TypeError(f"random_() got an unexpected keyword argument "
                        f"'{next(iter(kw))}'")
    if len(args) == 1:
        to = args[0]
    elif len(args) == 2:
        frm, to = args
    elif len(args) > 2:
        raise TypeError("random_() takes at most 2 positional arguments")
    lo, hi = _HOLDS[self.dtype]
    frm = _int_arg("random_", "from", frm)
    if to is None:
        to = hi + 1
    else:
        to = _int_arg("random_", "to", to)
    return self.copy_(_integers("random_", tuple(self.shape), frm, to,
                                self.dtype, self.device, generator))


def _exponential_(self, lambd=1.0, *, generator=None):
    """exponential_(lambd=1, *, generator=None): fill with exponential
    numbers of rate lambd."""
    _float_only(self, "exponential_cpu")
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found "
                           f"lambda={_num(lambd)}")
    out = _C.empty(tuple(self.shape), dtype=self.dtype, device=self.device)
    _C._sample(out, _EXPONENTIAL, lambd, 0, generator, None)
    return self.copy_(out)


def _bernoulli_(self, p=0.5, *, generator=None):
    """bernoulli_(p=0.5, *, generator=None): 1 with probability p (a
    float, or a tensor broadcast to self), else 0."""
    return _bernoulli_into(self, p, generator)


def _t_bernoulli(self, p=None, *, generator=None):
    """bernoulli(p=None, *, generator=None): pygpu.bernoulli(self, p)."""
    return bernoulli(self, p, generator=generator)


def _t_multinomial(self, num_samples, replacement=False, *,
                   generator=None):
    """multinomial(num_samples, replacement=False, *, generator=None):
    pygpu.multinomial(self, ...)."""
    return multinomial(self, num_samples, replacement, generator=generator)


for _name, _fn in (("uniform_", _uniform_), ("normal_", _normal_),
                   ("random_", _random_),
                   ("exponential_", _exponential_),
                   ("bernoulli_", _bernoulli_),
                   ("bernoulli", _t_bernoulli),
                   ("multinomial", _t_multinomial)):
    _fn.__name__ = _name
    _fn.__qualname__ = "Tensor." + _name
    setattr(Tensor, _name, _fn)


# ------------------------------------------------------ generators' state

default_generator = _C._default_generator("cpu")
seed = _C.seed


def get_rng_state():
    """The CPU default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the CPU default generator's state from get_rng_state."""
    default_generator.set_state(new_state)


__all__ = ["Generator", "randint", "randint_like", "randperm",
           "multinomial", "bernoulli", "normal", "poisson",
           "default_generator", "seed", "get_rng_state", "set_rng_state"]
