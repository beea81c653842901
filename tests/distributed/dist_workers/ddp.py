"""DistributedDataParallel against single-process training on the whole
batch (each rank sees its share of it).  Writes "ok" or the error per
check to $DIST_OUT/rank<r>.json, as collectives.py."""

import numpy as np

from checks import run_and_report

CHECKS = ["construction_syncs", "grads_match_whole_batch",
          "grads_match_one_bucket", "training_steps_match", "no_sync",
          "state_dict_prefix", "broadcast_buffers", "find_unused_parameters",
          "unused_without_detection_raises"]


def model(torch, nn, seed, width=16):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, width), nn.ReLU(),
                         nn.Linear(width, 3))


def batch(torch, seed=0, n=8):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = rng.integers(0, 3, n)
    return torch.tensor(x), torch.tensor(y)


def shard(t, rank, world):
    n = t.shape[0] // world
    return t[rank * n:(rank + 1) * n]


def grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def assert_close(a_list, b_list, tol=1e-5):
    for a, b in zip(a_list, b_list):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def run_check(name, torch, nn, dist, DDP):
    rank, world = dist.get_rank(), dist.get_world_size()
    loss_fn = nn.CrossEntropyLoss()
    x, y = batch(torch)
    if name == "construction_syncs":
        m = model(torch, nn, seed=rank)  # different on every rank
        DDP(m)
        ref = model(torch, nn, seed=0)
        for p, q in zip(m.parameters(), ref.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(),
                                          q.detach().numpy())
    elif name in ("grads_match_whole_batch", "grads_match_one_bucket"):
        cap = 0.0005 if name.endswith("batch") else 25  # several / one
        m = model(torch, nn, seed=rank)
        ddp = DDP(m, bucket_cap_mb=cap)
        if name.endswith("batch"):
            assert len(ddp._buckets) > 1
        loss_fn(ddp(shard(x, rank, world)), shard(y, rank, world)).backward()
        ref = model(torch, nn, seed=0)
        loss_fn(ref(x), y).backward()
        assert_close(grads(m), grads(ref))
    elif name == "training_steps_match":
        m = model(torch, nn, seed=rank)
        ddp = DDP(m, bucket_cap_mb=0.0005)
        ref = model(torch, nn, seed=0)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for step in range(4):
            xb, yb = batch(torch, seed=step + 1)
            opt.zero_grad()
            loss_fn(ddp(shard(xb, rank, world)),
                    shard(yb, rank, world)).backward()
            opt.step()
            ropt.zero_grad()
            loss_fn(ref(xb), yb).backward()
            ropt.step()
        for p, q in zip(m.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().numpy(),
                                       q.detach().numpy(), rtol=1e-4,
                                       atol=1e-5)
    elif name == "no_sync":
        m = model(torch, nn, seed=0)
        ddp = DDP(m)
        x2, y2 = batch(torch, seed=9)
        with ddp.no_sync():
            loss_fn(ddp(shard(x, rank, world)),
                    shard(y, rank, world)).backward()
        local = model(torch, nn, seed=0)
        loss_fn(local(shard(x, rank, world)),
                shard(y, rank, world)).backward()
        assert_close(grads(m), grads(local))  # nothing communicated
        loss_fn(ddp(shard(x2, rank, world)),
                shard(y2, rank, world)).backward()
        ref = model(torch, nn, seed=0)  # mean of the ranks' accumulations
        loss_fn(ref(x), y).backward()
        loss_fn(ref(x2), y2).backward()
        assert_close(grads(m), grads(ref))
    elif name == "state_dict_prefix":
        ddp = DDP(model(torch, nn, seed=0))
        keys = list(ddp.state_dict())
        assert keys == ["module.0.weight", "module.0.bias",
                        "module.2.weight", "module.2.bias"], keys
        assert ddp.module is not None
    elif name == "broadcast_buffers":
        m = model(torch, nn, seed=0)
        m.register_buffer("running", torch.full((3,), float(rank + 1)))
        ddp = DDP(m, init_sync=False)
        assert m.running.tolist() == [rank + 1.0] * 3
        ddp(x)
        assert m.running.tolist() == [1.0] * 3
    elif name == "find_unused_parameters":
        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)
                self.a = nn.Linear(6, 3)
                self.b = nn.Linear(6, 3)  # unused

            def forward(self, t):
                return self.a(t)
        m = Two()
        ddp = DDP(m, find_unused_parameters=True, bucket_cap_mb=0.00005)
        for _ in range(2):
            m.a.weight.grad = None
            loss_fn(ddp(shard(x, rank, world)),
                    shard(y, rank, world)).backward()
        ref = Two()
        loss_fn(ref.a(x), y).backward()
        np.testing.assert_allclose(m.a.weight.grad.numpy(),
                                   ref.a.weight.grad.numpy(), rtol=1e-5,
                                   atol=1e-6)
        assert m.b.weight.grad is None or \
            not np.any(m.b.weight.grad.numpy())
    elif name == "unused_without_detection_raises":
        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(6, 3)
                self.b = nn.Linear(6, 3)

            def forward(self, t):
                return self.a(t)
        ddp = DDP(Two(), bucket_cap_mb=0.00005)
        loss_fn(ddp(x), y).backward()
        try:
            ddp(x)
        except RuntimeError as e:
            assert "find_unused_parameters=True" in str(e)
        else:
            raise AssertionError("no error")
    else:
        raise KeyError(name)


def main():
    import pygpu as torch
    import pygpu.distributed as dist
    from pygpu import nn
    DDP = nn.parallel.DistributedDataParallel
    dist.init_process_group("mpi")

    def check(name):
        run_check(name, torch, nn, dist, DDP)
    run_and_report(CHECKS, check, dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
