"""Every collective on every rank, checked against NumPy.

Run under the launcher (or alone: a world of one).  Each check computes
its NumPy reference from every rank's input (each rank can make every
rank's input from the seeds) and writes "ok" or the error to
$DIST_OUT/rank<r>.json.  CHECKS (the names) is imported by the tests.
"""
import datetime
import os
import zlib

import numpy as np

from checks import run_and_report

OPS = ["SUM", "AVG", "MAX", "MIN", "PRODUCT"]
DTYPES = ["float32", "float64", "int64", "float16"]
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2,
       "bfloat16": 2e-2, "int64": 0, "int32": 0, "uint8": 0, "bool": 0}

CHECKS = (
    [f"all_reduce_{op}_{dt}" for op in OPS for dt in DTYPES] +
    ["all_reduce_SUM_bfloat16", "all_reduce_SUM_int32",
     "all_reduce_MAX_uint8", "all_reduce_SUM_bool", "all_reduce_BOR_int64",
     "all_reduce_noncontig_SUM", "all_reduce_noncontig_AVG_float16",
     "all_reduce_empty", "all_reduce_0d", "all_reduce_async",
     "broadcast", "broadcast_noncontig", "reduce_SUM", "reduce_MAX_float16",
     "all_gather", "all_gather_float16_noncontig", "all_gather_into_tensor",
     "all_gather_into_tensor_stacked", "reduce_scatter_SUM",
     "reduce_scatter_AVG", "reduce_scatter_MAX_int64",
     "reduce_scatter_SUM_float16", "send_recv_ring", "isend_irecv",
     "recv_any_source", "barrier", "new_group", "errors"])


def data(rank, dtype, shape=(3, 5), seed=0):
    """rank's input for a check, as a NumPy array of dtype."""
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.3
    if dtype in ("int64", "int32"):
        return rng.integers(-20, 20, shape).astype(dtype)
    if dtype == "uint8":
        return rng.integers(0, 250, shape).astype(np.uint8)
    a = rng.uniform(0.5, 1.5, shape)  # products stay near 1
    a[0, 0] = -a[0, 0]
    return a


def reference(op, arrays, dtype):
    stack = np.stack([a.astype(np.float64) if dtype != "bool" else a
                      for a in arrays])
    if op in ("SUM", "AVG"):
        out = stack.sum(0) if dtype != "bool" else stack.any(0)
        return out / len(arrays) if op == "AVG" else out
    if op == "MAX":
        return stack.max(0)
    if op == "MIN":
        return stack.min(0)
    if op == "PRODUCT":
        return stack.prod(0)
    if op == "BOR":
        return np.bitwise_or.reduce(np.stack(arrays), 0)
    raise ValueError(op)


def close(got, want, dtype):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    tol = TOL[dtype]
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


class Ctx:
    def __init__(self, torch, dist):
        self.torch = torch
        self.dist = dist
        self.rank = dist.get_rank()
        self.n = dist.get_world_size()

    def tensor(self, a, dtype):
        t = self.torch
        if dtype in ("float16", "bfloat16"):
            return t.tensor(np.asarray(a, np.float32)).to(getattr(t, dtype))
        return t.tensor(np.asarray(a, dtype=dtype))

    def np(self, t):
        if t.dtype in (self.torch.float16, self.torch.bfloat16):
            t = t.float()
        return t.numpy()

    def inputs(self, dtype, shape=(3, 5), seed=0):
        return [data(r, dtype, shape, seed) for r in range(self.n)]


def run_check(c, name):
    t, dist, R, n = c.torch, c.dist, c.rank, c.n
    ReduceOp = dist.ReduceOp
    if name.startswith("all_reduce_") and name.split("_")[2] in \
            OPS + ["BOR"]:
        _, _, op, dt = name.split("_")
        xs = c.inputs(dt, seed=zlib.crc32(name.encode()) % 997)
        x = c.tensor(xs[R], dt)
        if op == "AVG" and dt in ("int64", "int32"):
            try:
                dist.all_reduce(x, op=ReduceOp.AVG)
            except RuntimeError as e:
                assert "AVG" in str(e)
                return
            raise AssertionError("AVG on integers did not raise")
        dist.all_reduce(x, op=getattr(ReduceOp, op))
        assert x.dtype == getattr(t, dt)
        want = reference(op, xs, dt)
        if dt.startswith("int") and op == "AVG":
            want = np.trunc(want)
        close(c.np(x), want, dt)
    elif name == "all_reduce_noncontig_SUM":
        xs = c.inputs("float32", (5, 4), seed=3)
        base = c.tensor(np.zeros((4, 5)), "float32")
        x = base.t()  # a transposed view
        x.copy_(c.tensor(xs[R], "float32"))
        assert not x.is_contiguous()
        dist.all_reduce(x)
        close(c.np(base.t()), reference("SUM", xs, "float32"), "float32")
    elif name == "all_reduce_noncontig_AVG_float16":
        xs = c.inputs("float16", (5, 4), seed=4)
        x = c.tensor(np.stack(xs[R:R + 1] * 2, 2), "float16")[:, :, 1]
        assert not x.is_contiguous()
        dist.all_reduce(x, op=ReduceOp.AVG)
        close(c.np(x), reference("AVG", xs, "float16"), "float16")
    elif name == "all_reduce_empty":
        x = t.zeros((0, 3))
        dist.all_reduce(x)
        assert tuple(x.shape) == (0, 3)
    elif name == "all_reduce_0d":
        x = t.tensor(float(R + 1))
        dist.all_reduce(x, op=ReduceOp.MAX)
        assert x.item() == n
    elif name == "all_reduce_async":
        xs = [c.tensor(np.full(7, R + k, np.float32), "float32")
              for k in range(3)]
        works = [dist.all_reduce(x, async_op=True) for x in xs]
        for w in works:
            assert w.wait() is True
            assert w.is_completed()
        for k, x in enumerate(xs):
            close(c.np(x), np.full(7, sum(r + k for r in range(n))),
                  "float32")
    elif name == "broadcast":
        src = n - 1
        x = c.tensor(data(R, "float64", seed=5), "float64")
        dist.broadcast(x, src=src)
        close(c.np(x), data(src, "float64", seed=5), "float64")
    elif name == "broadcast_noncontig":
        src = 0
        x = c.tensor(data(R, "float32", (5, 3), seed=6), "float32").t()
        dist.broadcast(x, src=src)
        close(c.np(x), data(src, "float32", (5, 3), seed=6).T, "float32")
    elif name.startswith("reduce_") and not name.startswith("reduce_sc"):
        parts = name.split("_")
        op = parts[1]
        dt = parts[2] if len(parts) > 2 else "float32"
        dst = n - 1
        xs = c.inputs(dt, seed=7)
        x = c.tensor(xs[R], dt)
        dist.reduce(x, dst=dst, op=getattr(ReduceOp, op))
        if R == dst:
            close(c.np(x), reference(op, xs, dt), dt)
    elif name == "all_gather":
        xs = c.inputs("int64", (2, 3), seed=8)
        outs = [t.zeros((2, 3), dtype=t.int64) for _ in range(n)]
        dist.all_gather(outs, c.tensor(xs[R], "int64"))
        for r in range(n):
            close(c.np(outs[r]), xs[r], "int64")
    elif name == "all_gather_float16_noncontig":
        xs = c.inputs("float16", (3, 2), seed=9)
        outs = [t.zeros((2, 3), dtype=t.float16).t() for _ in range(n)]
        x = c.tensor(xs[R].T, "float16").t()
        dist.all_gather(outs, x)
        for r in range(n):
            close(c.np(outs[r]), xs[r], "float16")
    elif name in ("all_gather_into_tensor",
                  "all_gather_into_tensor_stacked"):
        xs = c.inputs("float32", (2, 3), seed=10)
        shape = (n * 2, 3) if name.endswith("tensor") else (n, 2, 3)
        out = t.zeros(shape)
        dist.all_gather_into_tensor(out, c.tensor(xs[R], "float32"))
        close(c.np(out), np.concatenate(xs).reshape(shape), "float32")
    elif name.startswith("reduce_scatter_"):
        parts = name.split("_")
        op = parts[2]
        dt = parts[3] if len(parts) > 3 else "float32"
        xs = c.inputs(dt, (n * 2, 3), seed=11)
        out = c.tensor(np.zeros((2, 3)), dt)
        dist.reduce_scatter_tensor(out, c.tensor(xs[R], dt),
                                   op=getattr(ReduceOp, op))
        want = reference(op, xs, dt)[2 * R:2 * R + 2]
        close(c.np(out), want, dt)
    elif name == "send_recv_ring":
        if n == 1:
            return
        x = c.tensor(data(R, "float32", seed=12), "float32")
        y = t.zeros((3, 5))
        right, left = (R + 1) % n, (R - 1) % n
        if R % 2 == 0:
            dist.send(x, dst=right)
            dist.recv(y, src=left)
        else:
            dist.recv(y, src=left)
            dist.send(x, dst=right)
        close(c.np(y), data(left, "float32", seed=12), "float32")
    elif name == "isend_irecv":
        if n == 1:
            return
        x = c.tensor(data(R, "float64", seed=13), "float64")
        y = t.zeros((3, 5), dtype=t.float64)
        right, left = (R + 1) % n, (R - 1) % n
        ws = [dist.isend(x, dst=right, tag=3), dist.irecv(y, src=left,
                                                          tag=3)]
        for w in ws:
            w.wait()
        close(c.np(y), data(left, "float64", seed=13), "float64")
    elif name == "recv_any_source":
        if n == 1:
            return
        if R == 0:
            got = set()
            for _ in range(n - 1):
                y = t.zeros(1)
                sender = dist.recv(y)
                assert y.item() == sender, (y.item(), sender)
                got.add(sender)
            assert got == set(range(1, n))
        else:
            dist.send(t.tensor([float(R)]), dst=0)
    elif name == "barrier":
        dist.barrier()
        assert dist.barrier(async_op=True).wait()
    elif name == "new_group":
        evens = list(range(0, n, 2))
        g = dist.new_group(evens)
        x = t.tensor([float(R + 1)])
        if R in evens:
            assert dist.get_rank(g) == evens.index(R)
            assert dist.get_world_size(g) == len(evens)
            dist.all_reduce(x, group=g)
            assert x.item() == sum(r + 1 for r in evens)
            y = t.tensor([float(R)])
            dist.broadcast(y, src=evens[-1], group=g)
            assert y.item() == evens[-1]
        else:
            assert g is dist.GroupMember.NON_GROUP_MEMBER
            assert dist.get_rank(g) == -1
            assert dist.all_reduce(x, group=g) is None
            assert x.item() == R + 1
        dist.barrier()
    elif name == "errors":
        x = t.zeros(3)
        for bad, exc in [
                (lambda: dist.all_reduce(np.zeros(3)), TypeError),
                (lambda: dist.all_reduce(t.zeros(3, dtype=t.int64),
                                         op=dist.ReduceOp.AVG),
                 RuntimeError),
                (lambda: dist.all_gather([x] * (n + 1), x), ValueError),
                (lambda: dist.all_gather_into_tensor(t.zeros(3 * n + 1),
                                                     x), ValueError),
                (lambda: dist.reduce_scatter_tensor(x, t.zeros(3 * n + 1)),
                 ValueError),
                (lambda: dist.broadcast(x, src=n), ValueError),
                (lambda: dist.all_reduce(x, op="sum"), TypeError),
                (lambda: dist.init_process_group("mpi"), ValueError),
                (lambda: dist.all_reduce(t.zeros(3), op=dist.ReduceOp.BOR),
                 RuntimeError)]:
            try:
                bad()
            except exc:
                continue
            raise AssertionError(f"no {exc.__name__}")
    else:
        raise KeyError(name)


def main():
    import pygpu as torch
    import pygpu.distributed as dist
    timeout = datetime.timedelta(seconds=float(
        os.environ.get("DIST_TIMEOUT", "20")))
    dist.init_process_group(os.environ.get("DIST_BACKEND") or None,
                            timeout=timeout)
    c = Ctx(torch, dist)
    run_and_report(CHECKS, lambda name: run_check(c, name), c.rank,
                   {"world_size": c.n})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
