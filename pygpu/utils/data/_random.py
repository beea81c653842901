"""Where the data package's random draws come from.

pygpu has no Generator objects of its own yet, and its C generator makes
tensors, not permutations.  So every shuffle here is drawn from a NumPy
Generator seeded with a 64-bit seed, and that seed comes from:

- generator=None: pygpu's global generator (two float64 draws of
  pygpu.rand, 52 random bits each, 63 kept), so pygpu.manual_seed(s)
  fixes every order that follows, and each draw advances the global
  state;
- a numpy.random.Generator: that generator itself (draws advance it);
- an object with initial_seed() (a torch-style Generator): its seed and a
  per-object count of the seeds drawn so far, so a fresh generator seeded
  with s always gives the same sequence, and successive draws (epochs)
  differ; manual_seed(t) with a new t restarts the count.  If pygpu.rand
  accepts generator=, that generator's own state is used instead.
"""
import weakref

import numpy as np

import pygpu

_MASK = (1 << 63) - 1  # seeds in [0, 2**63), as torch's int64 draws
_counts = weakref.WeakKeyDictionary()  # generator -> (seed seen, draws)
_plain_counts = {}  # id(generator) -> same, for objects without weakrefs


def _from_pygpu(generator=None):
    kwargs = {} if generator is None else {"generator": generator}
    hi, lo = pygpu.rand(2, dtype=pygpu.float64, **kwargs).tolist()
    return ((int(hi * (1 << 52)) << 32) ^ int(lo * (1 << 52))) & _MASK


def _mix(seed, count):
    """A seed in [0, 2**63) from (seed, count), by NumPy's SeedSequence."""
    seq = np.random.SeedSequence([seed & ((1 << 64) - 1), count])
    return int(seq.generate_state(1, np.uint64)[0]) & _MASK


def _counted(generator):
    seed = int(generator.initial_seed())
    try:
        table, key = _counts, generator
        seen = table.get(key)
    except TypeError:
        table, key = _plain_counts, id(generator)
        seen = table.get(key)
    count = seen[1] if seen is not None and seen[0] == seed else 0
    table[key] = (seed, count + 1)
    return _mix(seed, count)


def draw_seed(generator=None):
    """A seed in [0, 2**63) from generator (see the module's docstring)."""
    if generator is None:
        return _from_pygpu()
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(0, _MASK, dtype=np.int64,
                                      endpoint=True))
    if not hasattr(generator, "initial_seed"):
        raise TypeError(
            "generator must be None, a numpy.random.Generator or a "
            "Generator with initial_seed(), not "
            f"{type(generator).__name__}")
    try:
        return _from_pygpu(generator)
    except TypeError:
        return _counted(generator)


def numpy_rng(generator=None):
    """A NumPy Generator seeded from draw_seed(generator)."""
    return np.random.default_rng(draw_seed(generator))


def randperm(n, generator=None):
    """A random permutation of range(n) as a NumPy int64 array."""
    return numpy_rng(generator).permutation(n).astype(np.int64)
