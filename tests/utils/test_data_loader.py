"""DataLoader in the main process: batching, shuffling, seeds, the
one-gather TensorDataset path, lengths, degenerate cases and torch's
errors for invalid arguments."""
import numpy as np
import pytest

import pygpu
from pygpu.utils.data import (BatchSampler, DataLoader, Dataset,
                              IterableDataset, RandomSampler,
                              SequentialSampler, SubsetRandomSampler,
                              TensorDataset, default_collate)


class Items(Dataset):
    """Item i: (float32 row, int label)."""

    def __init__(self, n, width=3, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, width)).astype(np.float32)
        self.y = rng.integers(0, 10, n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return pygpu.from_numpy(self.x[i].copy()), int(self.y[i])


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def tensor_ds(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4, 2)).astype(np.float32)
    y = rng.integers(0, 10, n)
    return x, y, TensorDataset(pygpu.from_numpy(x), pygpu.from_numpy(y))


def test_sequential_batches_match_numpy():
    ds = Items(10)
    batches = list(DataLoader(ds, batch_size=4))
    assert len(batches) == 3
    for k, (x, y) in enumerate(batches):
        sl = slice(4 * k, 4 * k + 4)
        assert x.dtype == pygpu.float32 and y.dtype == pygpu.int64
        np.testing.assert_array_equal(x.numpy(), ds.x[sl])
        np.testing.assert_array_equal(y.numpy(), ds.y[sl])
    assert batches[-1][0].shape == (2, 3)


def test_default_batch_size_is_one():
    x, y, ds = tensor_ds(3)
    out = list(DataLoader(ds))
    assert len(out) == 3 and out[1][0].shape == (1, 4, 2)
    np.testing.assert_array_equal(out[1][0].numpy(), x[1:2])


@pytest.mark.parametrize("drop_last", [False, True])
def test_drop_last_and_len(drop_last):
    _, _, ds = tensor_ds(10)
    dl = DataLoader(ds, batch_size=3, drop_last=drop_last)
    out = list(dl)
    assert len(dl) == len(out) == (3 if drop_last else 4)
    assert [b[0].shape[0] for b in out] == \
        ([3, 3, 3] if drop_last else [3, 3, 3, 1])


def test_shuffle_covers_everything_once_and_is_seeded():
    x, y, ds = tensor_ds(50)
    pygpu.manual_seed(11)
    first = [b[1].tolist() for b in DataLoader(ds, batch_size=8,
                                               shuffle=True)]
    flat = sum(first, [])
    assert sorted(flat) == sorted(y.tolist()) and flat != y.tolist()
    pygpu.manual_seed(11)
    again = [b[1].tolist() for b in DataLoader(ds, batch_size=8,
                                               shuffle=True)]
    assert again == first
    dl = DataLoader(ds, batch_size=8, shuffle=True)
    assert [b[1].tolist() for b in dl] != [b[1].tolist() for b in dl]


class Gen:
    def __init__(self, seed):
        self.seed = seed

    def initial_seed(self):
        return self.seed


def test_generator_argument():
    _, _, ds = tensor_ds(40)

    def order(gen):
        return [b[1].tolist() for b in DataLoader(
            ds, batch_size=5, shuffle=True, generator=gen)]
    assert order(Gen(1)) == order(Gen(1))
    assert order(Gen(1)) != order(Gen(2))
    assert order(np.random.default_rng(4)) == order(
        np.random.default_rng(4))


def test_fast_path_equals_item_by_item():
    x, y, ds = tensor_ds(37)
    order = list(np.random.default_rng(2).permutation(37))
    fast = DataLoader(ds, batch_size=8, sampler=order)
    slow = DataLoader(ds, batch_size=8, sampler=order,
                      collate_fn=lambda b: default_collate(b))
    assert fast.collate_fn is default_collate
    n = 0
    for (a, b), (c, d) in zip(fast, slow):
        assert isinstance(a, pygpu.Tensor) and a.dtype == c.dtype
        assert tuple(a.shape) == tuple(c.shape)
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        np.testing.assert_array_equal(b.numpy(), d.numpy())
        assert b.dtype == d.dtype == pygpu.int64
        n += 1
    assert n == 5


def test_fast_path_bad_index_raises_the_items_error():
    _, _, ds = tensor_ds(5)
    with pytest.raises(IndexError, match="out of bounds"):
        list(DataLoader(ds, batch_size=2, sampler=[0, 9]))


def test_fast_path_keeps_grad():
    w = pygpu.rand(6, 2, requires_grad=True)
    batch = next(iter(DataLoader(TensorDataset(w), batch_size=3)))[0]
    assert batch.requires_grad
    batch.sum().backward()
    assert w.grad.tolist()[:3] == [[1.0, 1.0]] * 3
    assert w.grad.tolist()[3:] == [[0.0, 0.0]] * 3


def test_samplers_and_batch_sampler():
    x, y, ds = tensor_ds(12)
    out = list(DataLoader(ds, batch_size=5,
                          sampler=SubsetRandomSampler([1, 3, 5])))
    assert len(out) == 1 and sorted(out[0][1].tolist()) == sorted(
        y[[1, 3, 5]].tolist())
    bs = BatchSampler(SequentialSampler(ds), 4, False)
    dl = DataLoader(ds, batch_sampler=bs)
    assert dl.batch_size is None and dl.drop_last is False
    assert len(dl) == 3
    assert [b[1].tolist() for b in dl] == [y[i:i + 4].tolist()
                                           for i in (0, 4, 8)]
    custom = [[11, 0], [5]]
    assert [b[1].tolist() for b in DataLoader(ds, batch_sampler=custom)] \
        == [y[[11, 0]].tolist(), y[[5]].tolist()]
    r = DataLoader(ds, sampler=RandomSampler(ds, num_samples=30),
                   batch_size=10)
    assert len(r) == 3 and sum(b[0].shape[0] for b in r) == 30


def test_batch_size_none_converts_without_batching():
    ds = Items(4)
    out = list(DataLoader(ds, batch_size=None))
    assert len(out) == 4
    x, label = out[2]
    assert x.shape == (3,) and label == int(ds.y[2])
    arrays = [np.arange(3) + i for i in range(2)]
    got = list(DataLoader(arrays, batch_size=None))
    assert isinstance(got[1], pygpu.Tensor) and got[1].tolist() == [1, 2, 3]


def test_custom_collate_and_plain_list_dataset():
    dl = DataLoader([1, 2, 3, 4, 5], batch_size=2,
                    collate_fn=lambda b: sum(b))
    assert list(dl) == [3, 7, 5]
    dl = DataLoader([{"a": 1.0}, {"a": 2.0}], batch_size=2)
    b = next(iter(dl))
    assert b["a"].dtype == pygpu.float64 and b["a"].tolist() == [1.0, 2.0]


def test_empty_dataset():
    _, _, ds = tensor_ds(0)
    dl = DataLoader(ds, batch_size=4)
    assert len(dl) == 0 and list(dl) == []
    with pytest.raises(ValueError, match="num_samples=0"):
        DataLoader(ds, batch_size=4, shuffle=True)


def test_iterable_dataset():
    dl = DataLoader(Stream(7), batch_size=3)
    out = [b.tolist() for b in dl]
    assert out == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    dl = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
    assert len(dl) == 2
    dl = DataLoader(Stream(3), batch_size=None)
    assert [int(b) for b in dl] == [0, 1, 2] and len(dl) == 3


def test_iteration_is_repeatable_and_len_of_iterator():
    _, y, ds = tensor_ds(9)
    dl = DataLoader(ds, batch_size=4)
    it = iter(dl)
    assert len(it) == 3 and iter(it) is it
    assert [b[1].tolist() for b in it] == [b[1].tolist() for b in dl]


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be"),
    (dict(persistent_workers=True), "persistent_workers option needs"),
    (dict(shuffle=True, sampler=[0, 1]), "mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is"),
    (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option"),
    (dict(multiprocessing_context="fork"), "multiprocessing_context can"),
])
def test_invalid_combinations(kwargs, match):
    _, _, ds = tensor_ds(4)
    with pytest.raises(ValueError, match=match):
        DataLoader(ds, **kwargs)


@pytest.mark.parametrize("kwargs,name", [
    (dict(shuffle=True), "shuffle"), (dict(sampler=[0]), "sampler"),
    (dict(batch_sampler=[[0]]), "batch_sampler")])
def test_iterable_dataset_refuses_orderings(kwargs, name):
    with pytest.raises(ValueError, match=f"expected unspecified {name} "
                       f"option, but got {name}="):
        DataLoader(Stream(3), **kwargs)


def test_bad_multiprocessing_context():
    _, _, ds = tensor_ds(4)
    with pytest.raises(ValueError, match="valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="valid context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)


def test_attributes_fixed_after_init():
    _, _, ds = tensor_ds(4)
    dl = DataLoader(ds, batch_size=2)
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                 "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not "
                           "be set after DataLoader is initialized"):
            setattr(dl, attr, None)
    dl.num_workers = 0  # others may change
    assert isinstance(dl.sampler, SequentialSampler)
    assert isinstance(DataLoader(ds, shuffle=True).sampler, RandomSampler)


@pytest.mark.skipif(pygpu.cuda.is_available(), reason="CPU-only behaviour")
def test_pin_memory_without_cuda_warns_and_passes_batches():
    _, y, ds = tensor_ds(4)
    with pytest.warns(UserWarning, match="no accelerator is found"):
        out = list(DataLoader(ds, batch_size=2, pin_memory=True))
    assert out[0][1].tolist() == y[:2].tolist()


@pytest.mark.cuda
def test_pin_memory_with_cuda_pins_batches():
    _, y, ds = tensor_ds(4)
    out = list(DataLoader(ds, batch_size=2, pin_memory=True))
    assert all(t.is_pinned() for b in out for t in b)
    assert out[1][1].tolist() == y[2:].tolist()


@pytest.mark.cuda
def test_cuda_tensor_dataset_batches_stay_on_the_device():
    x, y, _ = tensor_ds(21)
    ds = TensorDataset(pygpu.from_numpy(x).cuda(), pygpu.from_numpy(y).cuda())
    order = list(np.random.default_rng(5).permutation(21))
    out = list(DataLoader(ds, batch_size=8, sampler=order))
    assert len(out) == 3
    for k, (a, b) in enumerate(out):
        assert a.device.type == "cuda" and b.device.type == "cuda"
        idx = order[8 * k:8 * k + 8]
        np.testing.assert_array_equal(a.cpu().numpy(), x[idx])
        np.testing.assert_array_equal(b.cpu().numpy(), y[idx])


def test_subset_batches_use_the_base_datasets_rows():
    x, y, ds = tensor_ds(10)
    sub = pygpu.utils.data.Subset(ds, [9, 7, 5, 3])
    out = list(DataLoader(sub, batch_size=3))
    assert [b[1].tolist() for b in out] == [y[[9, 7, 5]].tolist(),
                                            y[[3]].tolist()]
    np.testing.assert_array_equal(out[0][0].numpy(), x[[9, 7, 5]])
