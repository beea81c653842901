"""pygpu.utils.data's datasets, random_split, default_collate and
default_convert against torch.utils.data's documented behaviour."""
import collections
import warnings

import numpy as np
import pytest

import pygpu
from pygpu.utils.data import (ChainDataset, ConcatDataset, Dataset,
                              IterableDataset, Subset, TensorDataset,
                              default_collate, default_convert,
                              random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


Point = collections.namedtuple("Point", "x y")


def test_namespace():
    import pygpu.utils.data as data
    assert pygpu.utils.data is data
    assert data.DataLoader is pygpu.utils.data.dataloader.DataLoader
    for name in data.__all__:
        assert getattr(data, name) is not None
    assert "data" in pygpu.utils.__all__


def test_base_classes_raise():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


def test_tensor_dataset_rows():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.integers(0, 5, 7)
    ds = TensorDataset(pygpu.from_numpy(x), pygpu.from_numpy(y))
    assert len(ds) == 7
    a, b = ds[4]
    np.testing.assert_array_equal(a.numpy(), x[4])
    assert b.item() == y[4] and b.dim() == 0
    a, b = ds[-1]
    np.testing.assert_array_equal(a.numpy(), x[-1])
    with pytest.raises(IndexError):
        ds[7]
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(pygpu.zeros(3), pygpu.zeros(4))


def test_subset_and_getitems():
    ds = Squares(10)
    sub = Subset(ds, [9, 2, 5])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [81, 4, 25]
    assert sub.__getitems__([2, 0]) == [25, 81]
    # a base dataset's own batched fetch is used
    t = TensorDataset(pygpu.arange(10))
    t.__getitems__ = lambda idx: ("batched", idx)
    assert Subset(t, [3, 4]).__getitems__([1]) == ("batched", [4])


def test_concat_dataset():
    a, b = Squares(3), Squares(2)
    c = ConcatDataset([a, b])
    assert len(c) == 5 and c.cumulative_sizes == [3, 5]
    assert [c[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert c[-1] == 1 and c[-5] == 0
    with pytest.raises(ValueError, match="should not exceed"):
        c[-6]
    with pytest.raises(IndexError):
        c[5]
    d = a + b
    assert isinstance(d, ConcatDataset) and len(d) == 5
    with pytest.raises(AssertionError, match="empty"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([a, Count(0, 2)])
    # an empty member is skipped over
    e = ConcatDataset([Squares(0), b])
    assert [e[i] for i in range(2)] == [0, 1]


def test_chain_dataset():
    c = Count(0, 3) + Count(10, 12)
    assert isinstance(c, ChainDataset)
    assert list(c) == [0, 1, 2, 10, 11] and len(c) == 5
    with pytest.raises(AssertionError, match="IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_random_split_lengths_and_determinism():
    ds = Squares(10)
    pygpu.manual_seed(5)
    a, b = random_split(ds, [7, 3])
    assert len(a) == 7 and len(b) == 3
    idx = list(a.indices) + list(b.indices)
    assert sorted(idx) == list(range(10))
    assert idx != list(range(10))
    pygpu.manual_seed(5)
    a2, b2 = random_split(ds, [7, 3])
    assert a2.indices == a.indices and b2.indices == b.indices
    c, _ = random_split(ds, [7, 3])  # the global generator moved on
    assert c.indices != a.indices
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [5, 4])


def test_random_split_fractions():
    ds = Squares(10)
    # floor(10 * f) = 3, 3, 3; the remainder 1 goes to the first split
    parts = random_split(ds, [1 / 3, 1 / 3, 1 / 3])
    assert [len(p) for p in parts] == [4, 3, 3]
    parts = random_split(Squares(7), [0.5, 0.25, 0.25])
    assert [len(p) for p in parts] == [4, 2, 1]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        parts = random_split(Squares(2), [0.95, 0.05])
    assert [len(p) for p in parts] == [2, 0]
    with pytest.raises(ValueError, match="not between 0 and 1"):
        random_split(ds, [1.5, -0.5])


class SeededGen:
    """A torch-style generator: initial_seed() and manual_seed()."""

    def __init__(self, seed):
        self.seed = seed

    def manual_seed(self, seed):
        self.seed = seed
        return self

    def initial_seed(self):
        return self.seed


def test_random_split_generator():
    ds = Squares(50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = random_split(ds, [0.8, 0.2], generator=SeededGen(42))
        b = random_split(ds, [0.8, 0.2], generator=SeededGen(42))
        c = random_split(ds, [0.8, 0.2], generator=SeededGen(43))
    assert a[0].indices == b[0].indices and a[1].indices == b[1].indices
    assert a[0].indices != c[0].indices
    g = SeededGen(42)
    first = random_split(ds, [25, 25], generator=g)[0].indices
    second = random_split(ds, [25, 25], generator=g)[0].indices
    assert first != second  # the generator's stream moved on
    g.manual_seed(7)
    assert random_split(ds, [25, 25], generator=g)[0].indices == \
        random_split(ds, [25, 25], generator=SeededGen(7))[0].indices
    rng = np.random.default_rng(3)
    n1 = random_split(ds, [25, 25], generator=rng)[0].indices
    n2 = random_split(ds, [25, 25], generator=np.random.default_rng(3))
    assert n1 == n2[0].indices
    with pytest.raises(TypeError, match="generator must be"):
        random_split(ds, [25, 25], generator=object())


def test_collate_tensors_numbers_strings():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    out = default_collate([pygpu.from_numpy(x) for x in xs])
    assert out.shape == (4, 2, 3) and out.dtype == pygpu.float32
    np.testing.assert_array_equal(out.numpy(), np.stack(xs))
    f = default_collate([0.5, 1.25, -2.0])
    assert f.dtype == pygpu.float64
    np.testing.assert_array_equal(f.numpy(), [0.5, 1.25, -2.0])
    i = default_collate([3, -1, 7])
    assert i.dtype == pygpu.int64 and i.tolist() == [3, -1, 7]
    bl = default_collate([True, False])
    assert bl.dtype == pygpu.bool and bl.tolist() == [True, False]
    assert default_collate(["a", "bc"]) == ["a", "bc"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    scalars = default_collate([pygpu.tensor(1.5), pygpu.tensor(2.5)])
    assert scalars.shape == (2,) and scalars.tolist() == [1.5, 2.5]


def test_collate_numpy():
    rng = np.random.default_rng(2)
    xs = [rng.integers(0, 9, (3,)).astype(np.int32) for _ in range(5)]
    out = default_collate(xs)
    assert out.dtype == pygpu.int32 and out.shape == (5, 3)
    np.testing.assert_array_equal(out.numpy(), np.stack(xs))
    s = default_collate([np.float32(1.5), np.float32(2.0)])
    assert s.dtype == pygpu.float32 and s.tolist() == [1.5, 2.0]
    with pytest.raises(TypeError, match="default_collate: batch must"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])


def test_collate_containers():
    batch = [{"x": pygpu.tensor([1.0, 2.0]), "y": 1, "name": "a"},
             {"x": pygpu.tensor([3.0, 4.0]), "y": 2, "name": "b"}]
    out = default_collate(batch)
    assert set(out) == {"x", "y", "name"}
    assert out["x"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert out["y"].tolist() == [1, 2] and out["name"] == ["a", "b"]
    od = default_collate([collections.OrderedDict(a=1)] * 2)
    assert isinstance(od, collections.OrderedDict)
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    assert p.y.dtype == pygpu.float64
    t = default_collate([(1, "a"), (2, "b")])
    assert isinstance(t, list) and t[0].tolist() == [1, 2]
    assert t[1] == ["a", "b"]
    nested = default_collate([[{"k": (1, 2)}], [{"k": (3, 4)}]])
    assert isinstance(nested, list)
    assert [v.tolist() for v in nested[0]["k"]] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_default_convert():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = default_convert(a)
    assert isinstance(t, pygpu.Tensor) and t.dtype == pygpu.float64
    np.testing.assert_array_equal(t.numpy(), a)
    x = pygpu.rand(2)
    assert default_convert(x) is x
    assert default_convert(3) == 3 and default_convert("s") == "s"
    s = np.array(["a", "b"])
    assert default_convert(s) is s
    out = default_convert({"a": np.float32(2), "b": (np.arange(2), 1)})
    assert isinstance(out["a"], pygpu.Tensor)
    assert isinstance(out["b"], list) and out["b"][1] == 1
    assert out["b"][0].tolist() == [0, 1]
    p = default_convert(Point(np.arange(2), "z"))
    assert isinstance(p, Point) and p.x.tolist() == [0, 1] and p.y == "z"
    assert default_convert([np.int64(4)])[0].item() == 4
