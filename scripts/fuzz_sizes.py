"""A fuzz family for sizes (scripts/fuzz.py runs it with its own): counts
at the corners of int64, whose products, sums and roundings pass it
(resize_, repeat, chunk, split, narrow, cat, expand, view, factories),
and size lists that an __index__ empties while they are read.  Each call
must give a right result or a clean error, never a wrap-around into a
wrong shape, a view past the memory or a crash; and a read-only tensor
never leaves through a legacy DLPack capsule, which cannot say so.  The
family takes (rng, h), h being the fuzz module with its checker and the
device under test."""
import numpy as np

import pygpu

FAMILIES = ["bad_sizes"]

# Counts near the limits, and a few small ones to mix with them: none is
# allocatable (over 2**60 elements), so what passes the checks is empty, a
# view or small.
CORNERS = [2**63 - 1, -2**63, 2**62, -2**62, 2**61, 2**60 + 1, -1, 0, 1,
           2, 3]


class Index:
    """An integer only the list holds: freed when the list is emptied."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value

    def __repr__(self):
        return f"Index({self.value})"


class EmptiesList(Index):
    """An integer whose __index__ empties the list it is read from."""

    def __init__(self, value, target):
        super().__init__(value)
        self.target = target

    def __index__(self):
        self.target.clear()
        return self.value


def emptied_list(*values):
    """[EmptiesList(values[0]), Index(values[1]), ...]: the list's only
    references to all but the first item (tests/conftest.py uses it too)."""
    lst = []
    lst.append(EmptiesList(values[0], lst))
    lst.extend(Index(v) for v in values[1:])
    return lst


def small_shape(rng):
    return [int(rng.integers(0, 4)) for _ in range(int(rng.integers(1, 4)))]


def fam_bad_sizes(rng, h):
    t = pygpu.ones(2, 3, device=h.DEVICE)
    x, y = (int(CORNERS[rng.integers(len(CORNERS))]) for _ in range(2))
    k = int(rng.integers(1, 4))
    calls = [
        lambda: t.clone().resize_(x), lambda: t.clone().resize_(x, y),
        lambda: t.clone().resize_(k, x), lambda: t.repeat(x, y),
        lambda: t.repeat(x, 1, y), lambda: t.repeat(k, x),
        lambda: t.chunk(x), lambda: t.chunk(x, 1), lambda: t.split(x, 1),
        lambda: t.split([x, y]), lambda: t.split([x, y, 2 - x - y]),
        lambda: t.narrow(1, k - 1, x), lambda: t.narrow(1, x, y),
        lambda: pygpu.cat([t[:1, :1].expand(1, x)] * k, dim=1),
        lambda: pygpu.stack([t[:1, :1].expand(x, 1)] * k),
        lambda: t[:1, :1].expand(x, y), lambda: t[:1, :1].expand(x, y).nbytes,
        lambda: t[:1, :1].expand(1, x).contiguous(),
        lambda: t.view(x, y), lambda: t.reshape(x, -1), lambda: t.view(-1, x),
        lambda: pygpu.zeros(x, y, device=h.DEVICE),
        lambda: pygpu.empty(x, 0, y, device=h.DEVICE),
        lambda: t.new_zeros(x, y), lambda: pygpu.Size([x, y]),
        lambda: t[x], lambda: t[:, x:y], lambda: t[::abs(x) or 1],
        lambda: t.unsqueeze(x), lambda: t.transpose(x, y),
    ]
    i = int(rng.integers(len(calls) + 2))
    if i < len(calls):
        h.expect_clean_error(calls[i], what=f"size call #{i} with {x}, {y}")
    elif i == len(calls):
        emptied_lists(rng, h, t)
    else:
        read_only_export(rng, h)


def emptied_lists(rng, h, t):
    """Each parser reads an emptied list as the list it was."""
    shape = small_shape(rng)
    n = int(np.prod(shape))
    u = pygpu.arange(float(n), device=h.DEVICE).view(shape)
    a = np.arange(float(n)).reshape(shape)
    perm = [int(p) for p in rng.permutation(len(shape))]
    tile = [int(r) for r in rng.integers(0, 3, size=len(shape))]
    cases = [
        (lambda s: pygpu.zeros(s, device=h.DEVICE), shape, np.zeros(shape)),
        (lambda s: u.view(s), [n], a.reshape(n)),
        (lambda s: u.reshape(s), [1, n], a.reshape(1, n)),
        (lambda s: u.permute(s), perm, a.transpose(perm)),
        (lambda s: u.repeat(s), tile, np.tile(a, tile)),
        (lambda s: u.flip(s), perm, np.flip(a, perm)),
        (lambda s: u.clone().resize_(s), shape, a),
    ]
    op, values, ref = cases[int(rng.integers(len(cases)))]
    lst = emptied_list(*values)
    got = op(lst)
    if lst:
        raise h.Wrong("the list was not emptied")
    h.compare(got, ref, "float32", f"emptied list {values} on {shape}")


def read_only_export(rng, h):
    """A read-only tensor: a legacy capsule is refused (BufferError), a
    versioned one carries the flag, copy=True exports a copy."""
    data = np.arange(6.0).tobytes()
    t = pygpu.from_numpy(np.frombuffer(data, dtype=np.float64))
    if rng.random() < 0.5:
        t = t[int(rng.integers(0, 6)):]
    try:
        t.__dlpack__()
    except BufferError as e:
        if not str(e):
            raise h.Unclean("BufferError without a message") from e
    else:
        raise h.Unclean("a legacy capsule of a read-only tensor was made")
    u = pygpu.from_dlpack(t.__dlpack__(copy=True))
    if u.numel() and u.data_ptr() == t.data_ptr():
        raise h.Unclean("copy=True shared the read-only memory")
