"""pygpu.utils.data's samplers: orders, lengths, seeds and torch's
errors."""
import collections

import numpy as np
import pytest

import pygpu
from pygpu.utils.data import (BatchSampler, RandomSampler, Sampler,
                              SequentialSampler, SubsetRandomSampler,
                              WeightedRandomSampler)


class Gen:
    def __init__(self, seed):
        self.seed = seed

    def manual_seed(self, seed):
        self.seed = seed
        return self

    def initial_seed(self):
        return self.seed


def test_base_and_sequential():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5
    assert list(SequentialSampler([])) == []


def test_random_sampler_permutation_and_seed():
    data = range(100)
    pygpu.manual_seed(0)
    a = list(RandomSampler(data))
    assert sorted(a) == list(range(100)) and a != list(range(100))
    assert all(isinstance(i, int) for i in a)
    pygpu.manual_seed(0)
    s = RandomSampler(data)
    assert list(s) == a
    assert list(s) != a  # the next epoch draws a new order
    assert list(RandomSampler(data, generator=Gen(1))) == \
        list(RandomSampler(data, generator=Gen(1)))
    assert list(RandomSampler(data, generator=Gen(1))) != \
        list(RandomSampler(data, generator=Gen(2)))


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(10), num_samples=25, generator=Gen(3))
    out = list(s)
    assert len(s) == 25 and len(out) == 25
    # two whole permutations, then 5 of a third
    assert sorted(out[:10]) == list(range(10))
    assert sorted(out[10:20]) == list(range(10))
    assert len(set(out[20:])) == 5
    r = RandomSampler(range(3), replacement=True, num_samples=300,
                      generator=Gen(4))
    got = list(r)
    assert len(got) == 300 and set(got) == {0, 1, 2}
    counts = collections.Counter(got)
    assert all(60 < c < 140 for c in counts.values())
    assert len(RandomSampler(range(7), replacement=True)) == 7


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    s = SubsetRandomSampler(idx, generator=Gen(5))
    out = list(s)
    assert sorted(out) == idx and len(s) == 4
    assert list(SubsetRandomSampler(idx, generator=Gen(5))) == out
    orders = {tuple(SubsetRandomSampler(idx, generator=Gen(k)))
              for k in range(20)}
    assert len(orders) > 1


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0]
    s = WeightedRandomSampler(w, 4000, generator=Gen(6))
    got = list(s)
    assert len(got) == 4000 and len(s) == 4000
    counts = collections.Counter(got)
    assert counts[0] == 0
    assert 0.2 < counts[1] / 4000 < 0.3  # 1/4
    assert list(WeightedRandomSampler(pygpu.tensor(w), 4000,
                                      generator=Gen(6))) == got
    assert s.weights.dtype == pygpu.float64
    nr = list(WeightedRandomSampler([1, 2, 3, 4], 4, replacement=False,
                                    generator=Gen(7)))
    assert sorted(nr) == [0, 1, 2, 3]


def test_weighted_random_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement="yes")
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample"):
        list(WeightedRandomSampler([1.0, 1.0], 3, replacement=False))
    with pytest.raises(RuntimeError, match="not enough non-negative"):
        list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False))
    with pytest.raises(RuntimeError, match="invalid multinomial"):
        list(WeightedRandomSampler([1.0, -1.0], 2))


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler(drop_last):
    b = BatchSampler(SequentialSampler(range(10)), 3, drop_last)
    out = list(b)
    want = [[0, 1, 2], [3, 4, 5], [6, 7, 8]] + ([] if drop_last else [[9]])
    assert out == want and len(b) == len(want)
    assert list(BatchSampler(range(6), 3, drop_last)) == [[0, 1, 2],
                                                          [3, 4, 5]]
    assert list(BatchSampler([], 2, drop_last)) == [] and \
        len(BatchSampler([], 2, drop_last)) == 0


def test_batch_sampler_arrays_match_iteration():
    makers = (lambda: SequentialSampler(range(11)),
              lambda: RandomSampler(range(11), generator=Gen(8)),
              lambda: RandomSampler(range(11), replacement=True,
                                    generator=Gen(8)),
              lambda: RandomSampler(range(5), num_samples=12,
                                    generator=Gen(9)))
    for make in makers:
        for drop_last in (False, True):
            lists = list(BatchSampler(make(), 4, drop_last))
            arrays = list(BatchSampler(make(), 4, drop_last)._arrays())
            assert [a.tolist() for a in arrays] == lists
            assert all(a.dtype == np.int64 for a in arrays)
    assert BatchSampler(SubsetRandomSampler([1, 2]), 1, False) \
        ._arrays() is None


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 0)
