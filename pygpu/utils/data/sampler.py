"""Samplers: the orders in which a DataLoader visits a map-style dataset's
indices (torch.utils.data's names).  Random ones draw from a NumPy
Generator seeded from `generator` or pygpu's global generator (see
_random), a fresh seed at each iteration."""
import numpy as np

import pygpu

from . import _random

__all__ = ["Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


def _is_positive_int(n):
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


class Sampler:
    """Base class: __iter__ yields indices (or lists of them, for a batch
    sampler); __len__ is optional."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def _indices(self):
        return np.arange(len(self.data_source), dtype=np.int64)

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (num_samples of them, in
    several permutations when more than the dataset's length), or
    num_samples indices drawn uniformly with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but "
                            f"got replacement={replacement}")
        if not _is_positive_int(self.num_samples):
            raise ValueError("num_samples should be a positive integer "
                             f"value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        yield from self._indices().tolist()

    def _indices(self):
        """The whole epoch's indices as one int64 array (one seed drawn)."""
        n = len(self.data_source)
        rng = _random.numpy_rng(self.generator)
        if self.replacement:
            return rng.integers(0, n, self.num_samples, dtype=np.int64)
        parts = [rng.permutation(n) for _ in range(self.num_samples // n)]
        parts.append(rng.permutation(n)[:self.num_samples % n])
        return np.concatenate(parts).astype(np.int64, copy=False)

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _random.randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in range(len(weights)), index i drawn with
    probability weights[i] / sum(weights), with or without replacement."""

    def __init__(self, weights, num_samples, replacement=True,
                 generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError("num_samples should be a positive integer "
                             f"value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but "
                             f"got replacement={replacement}")
        if isinstance(weights, pygpu.Tensor):
            w = weights.detach().cpu().double().numpy()
        else:
            w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(w.shape)}")
        self.weights = pygpu.from_numpy(w.copy())
        self._w = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        w = self._w
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of "
                               "probabilities <= 0, or a probability that "
                               "is negative, inf or nan)")
        if not self.replacement:
            if self.num_samples > w.size:
                raise RuntimeError("cannot sample n_sample > "
                                   "prob_dist.size(-1) samples without "
                                   "replacement")
            if np.count_nonzero(w) < self.num_samples:
                raise RuntimeError("invalid multinomial distribution (with "
                                   "replacement=False, not enough "
                                   "non-negative category to sample)")
        rng = _random.numpy_rng(self.generator)
        drawn = rng.choice(w.size, self.num_samples,
                           replace=self.replacement, p=w / w.sum())
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler; the last one shorter
    unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError("batch_size should be a positive integer "
                             f"value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        size = self.batch_size
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def _arrays(self):
        """The batches as int64 arrays, when the sampler is one of the
        above that can give its indices at once (else None): the same
        batches as __iter__, without a Python int per index."""
        indices = getattr(self.sampler, "_indices", None)
        if (indices is None or type(self).__iter__ is not
                BatchSampler.__iter__ or type(self.sampler).__iter__ not in
                (SequentialSampler.__iter__, RandomSampler.__iter__)):
            return None
        return self._slices(indices)

    def _slices(self, indices):
        arr = indices()
        size, n = self.batch_size, len(arr)
        stop = n - n % size if self.drop_last else n
        for start in range(0, stop, size):
            yield arr[start:start + size]

    def __len__(self):
        n = len(self.sampler)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
