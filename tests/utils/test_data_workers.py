"""DataLoader with worker processes: the same batches as in the main
process, seeds, worker_init_fn and get_worker_info, IterableDataset
shares, persistent workers, and the errors: an exception in a worker, a
worker that dies, a timeout."""
import os
import random
import time

import numpy as np
import pytest

import pygpu
from pygpu.utils.data import (DataLoader, Dataset, IterableDataset,
                              TensorDataset, get_worker_info)


class Items(Dataset):
    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, 3)).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": pygpu.from_numpy(self.x[i].copy()), "i": i}


class WhoAmI(Dataset):
    """Item i: the worker's id and seed, this process's pid, and a draw of
    pygpu's and Python's generators."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.seed, info.num_workers, os.getpid(),
                pygpu.rand(1).item(), random.random())


class Shards(IterableDataset):
    """range(n), each worker taking every num_workers-th item."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("item five is broken")
        return i


class MissingKey(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return {}["nope"]


class Dies(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os._exit(7)
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(0.3 if i >= 2 else 0)
        return i


def tensor_ds(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    y = rng.integers(0, 10, n)
    return x, y, TensorDataset(pygpu.from_numpy(x), pygpu.from_numpy(y))


def as_lists(loader):
    return [[t.tolist() for t in b] for b in loader]


def test_workers_give_the_main_process_batches():
    _, _, ds = tensor_ds(203)
    pygpu.manual_seed(3)
    ref = as_lists(DataLoader(ds, batch_size=16, shuffle=True))
    pygpu.manual_seed(3)
    got = as_lists(DataLoader(ds, batch_size=16, shuffle=True,
                              num_workers=2))
    assert got == ref and len(got) == 13
    pygpu.manual_seed(3)
    three = as_lists(DataLoader(ds, batch_size=16, shuffle=True,
                                num_workers=3, prefetch_factor=1))
    assert three == ref

    class Gen:
        def initial_seed(self):
            return 99
    ref = as_lists(DataLoader(ds, batch_size=16, shuffle=True,
                              generator=Gen()))
    got = as_lists(DataLoader(ds, batch_size=16, shuffle=True,
                              generator=Gen(), num_workers=2))
    assert got == ref


def test_workers_with_a_plain_dataset_and_dicts():
    ds = Items(11)
    ref = list(DataLoader(ds, batch_size=4))
    got = list(DataLoader(ds, batch_size=4, num_workers=2))
    assert len(got) == 3
    for a, b in zip(ref, got):
        assert b["i"].tolist() == a["i"].tolist()
        assert b["x"].dtype == pygpu.float32
        np.testing.assert_array_equal(a["x"].numpy(), b["x"].numpy())


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    calls = []

    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id and info.num_workers == 2
        assert isinstance(info.dataset, WhoAmI)
        with pytest.raises(RuntimeError, match="Cannot assign"):
            info.id = 5
        calls.append(worker_id)  # in the worker's memory only

    def run(seed):
        pygpu.manual_seed(seed)
        return [tuple(v.tolist() if hasattr(v, "tolist") else v for v in b)
                for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2,
                                    worker_init_fn=init)]
    out = run(1)
    ids = [b[0] for b in out]
    assert ids == [[0, 0], [1, 1], [0, 0], [1, 1]]  # round-robin
    seeds = {b[0][0]: b[1][0] for b in out}
    assert seeds[1] == seeds[0] + 1  # base_seed + id
    assert 0 <= seeds[0] < 1 << 63
    assert {b[3][0] for b in out} - {os.getpid()} == {b[3][0] for b in out}
    assert len({b[3][0] for b in out}) == 2
    assert all(b[2] == [2, 2] for b in out)
    # same manual_seed: same worker seeds and draws (pids differ)
    again = run(1)
    strip = [[b[i] for i in (0, 1, 4, 5)] for b in out]
    assert [[b[i] for i in (0, 1, 4, 5)] for b in again] == strip
    other = run(2)
    assert [[b[i] for i in (1, 4)] for b in other] != \
        [[b[i] for i in (1, 4)] for b in out]
    assert calls == []


def test_iterable_dataset_shares():
    dl = DataLoader(Shards(10), batch_size=2, num_workers=2)
    out = [b.tolist() for b in dl]
    # worker 0 yields 0,2,4,6,8 and worker 1 1,3,5,7,9, batches alternate
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    assert len(dl) == 5
    uneven = [b.tolist() for b in DataLoader(Shards(5), batch_size=2,
                                             num_workers=2)]
    assert sorted(sum(uneven, [])) == list(range(5))
    dropped = [b.tolist() for b in DataLoader(Shards(5), batch_size=2,
                                              num_workers=2,
                                              drop_last=True)]
    assert dropped == [[0, 2], [1, 3]]
    single = [int(b) for b in DataLoader(Shards(4), batch_size=None,
                                         num_workers=2)]
    assert single == [0, 1, 2, 3]


def test_persistent_workers_across_epochs():
    _, _, ds = tensor_ds(40)
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2,
                    persistent_workers=True,
                    generator=np.random.default_rng(0))
    e1 = as_lists(dl)
    workers = [w.pid for w in dl._iterator._workers]
    e2 = as_lists(dl)
    assert [w.pid for w in dl._iterator._workers] == workers
    assert e1 != e2
    flat = sorted(sum((b[1] for b in e2), []))
    assert flat == sorted(ds.tensors[1].tolist())
    # an epoch abandoned half way does not leak into the next
    it = iter(dl)
    next(it)
    e4 = as_lists(dl)
    assert len(e4) == 5
    assert sorted(sum((b[1] for b in e4), [])) == flat
    sh = DataLoader(Shards(6), batch_size=2, num_workers=2,
                    persistent_workers=True)
    assert [b.tolist() for b in sh] == [b.tolist() for b in sh]
    dl._iterator._shutdown()
    sh._iterator._shutdown()


class FirstSlow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(0.3 if i == 0 else 0)
        return i


def test_in_order_false_yields_what_is_ready():
    ordered = [int(b) for b in DataLoader(FirstSlow(), batch_size=None,
                                          num_workers=2)]
    assert ordered == [0, 1, 2, 3]
    out = [int(b) for b in DataLoader(FirstSlow(), batch_size=None,
                                      num_workers=2, in_order=False)]
    assert sorted(out) == [0, 1, 2, 3] and out[0] != 0


def test_worker_exception_is_raised_with_its_traceback():
    dl = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as err:
        list(dl)
    msg = str(err.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0")
    assert "Original Traceback" in msg and "item five is broken" in msg
    assert "__getitem__" in msg
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader"):
        list(DataLoader(MissingKey(), batch_size=1, num_workers=1))


def test_worker_init_fn_error():
    def init(worker_id):
        raise RuntimeError(f"init of {worker_id} failed")
    with pytest.raises(RuntimeError, match="init of 0 failed"):
        list(DataLoader(Items(4), num_workers=1, worker_init_fn=init))


def test_unpicklable_batch_is_an_error_not_a_hang():
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        list(DataLoader([1, 2], batch_size=2, num_workers=1,
                        collate_fn=lambda b: (lambda: b)))


def test_dead_worker_is_a_runtime_error():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) "
                       r"exited unexpectedly with exit code 7"):
        list(DataLoader(Dies(), batch_size=2, num_workers=2))
    assert time.monotonic() - t0 < 5


def test_killed_worker_is_a_runtime_error():
    import signal
    dl = DataLoader(Slow(), batch_size=None, num_workers=1)
    it = iter(dl)
    assert next(it) == 0
    it._workers[0].kill()
    with pytest.raises(RuntimeError, match="exited unexpectedly with exit "
                       f"code {-signal.SIGKILL}"):
        list(it)


def test_timeout():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError,
                       match=r"DataLoader timed out after 0\.2 seconds"):
        list(DataLoader(Slow(), batch_size=None, num_workers=1,
                        timeout=0.2))
    assert time.monotonic() - t0 < 3
    assert [int(b) for b in DataLoader(Slow(), batch_size=None,
                                       num_workers=2, timeout=5)] == \
        [0, 1, 2, 3]


def test_workers_shut_down_after_the_epoch():
    _, _, ds = tensor_ds(20)
    it = iter(DataLoader(ds, batch_size=5, num_workers=2))
    workers = it._workers
    assert all(w.is_alive() for w in workers)
    assert len(list(it)) == 4
    assert all(not w.is_alive() for w in workers)
    it = iter(DataLoader(ds, batch_size=5, num_workers=2))
    next(it)
    workers = it._workers
    del it  # an abandoned iterator stops its workers
    for w in workers:
        w.join(3)
    assert all(not w.is_alive() for w in workers)


def test_spawn_context():
    x, _, ds = tensor_ds(6)
    out = list(DataLoader(ds, batch_size=4, num_workers=1,
                          multiprocessing_context="spawn"))
    np.testing.assert_array_equal(out[0][0].numpy(), x[:4])
    assert out[1][0].shape == (2, 5)


class Mixed(Dataset):
    """Tensors of several dtypes and shapes, a view among them."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        base = pygpu.arange(12, dtype=pygpu.float32).reshape(3, 4) + i
        return {"f16": base.to(pygpu.float16), "view": base[:, 1],
                "bool": base > 5, "u8": base.to(pygpu.uint8),
                "bf16": base.to(pygpu.bfloat16), "scalar": base[0, 0],
                "i32": base.to(pygpu.int32), "np": np.full(2, i)}


def test_batches_of_every_dtype_cross_from_workers_unchanged():
    ref = list(DataLoader(Mixed(), batch_size=4))
    got = list(DataLoader(Mixed(), batch_size=4, num_workers=2))
    assert len(got) == 2
    for a, b in zip(ref, got):
        assert set(a) == set(b)
        for k in a:
            assert b[k].dtype == a[k].dtype, k
            assert tuple(b[k].shape) == tuple(a[k].shape), k
            assert b[k].float().tolist() == a[k].float().tolist(), k
