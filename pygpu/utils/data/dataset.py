"""Datasets: the map-style and iterable bases, TensorDataset, Subset,
ConcatDataset, ChainDataset and random_split, as in torch.utils.data."""
import bisect
import itertools
import math
import warnings

from . import _random

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: __getitem__(index) gives one sample, and
    __len__ (optional, expected by the default samplers) their number."""

    def __getitem__(self, index):
        raise NotImplementedError(
            "Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: __iter__ gives the samples.  With
    num_workers > 0 each worker iterates its own copy; get_worker_info()
    in __iter__ tells a worker which share is its own."""

    def __iter__(self):
        raise NotImplementedError(
            "Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the tensors' rows: dataset[i] is
    tuple(t[i] for t in tensors)."""

    def __init__(self, *tensors):
        if any(t.size(0) != tensors[0].size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0) if self.tensors else 0


class Subset(Dataset):
    """dataset restricted to indices, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        # the DataLoader's batched fetch: the base dataset's own when it
        # has one, else one item at a time
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError(
                "datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError(
                    "ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(
                    "absolute value of index should not exceed dataset "
                    "length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The iterable datasets one after the other (IterableDataset's +)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(
                    "ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(
                    "ChainDataset only supports IterableDataset")
            total += len(d)
        return total


def _split_lengths(n, lengths):
    """Fractions summing to 1 -> lengths: floor(n * f) each, and the
    remainder handed out one by one from the first split on (torch's
    rule)."""
    for i, frac in enumerate(lengths):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    out = [int(math.floor(n * frac)) for frac in lengths]
    for i in range(n - sum(out)):
        out[i % len(out)] += 1
    for i, length in enumerate(out):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might "
                          f"result in an empty dataset.")
    return out


def random_split(dataset, lengths, generator=None):
    """Splits dataset into non-overlapping Subsets of the given lengths
    (or fractions summing to 1), drawn by a random permutation from
    generator (pygpu's global generator when None; see _random)."""
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _split_lengths(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length "
                         "of the input dataset!")
    indices = _random.randperm(sum(lengths), generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(ends, lengths)]
