"""Copies between strided layouts (.contiguous(), .clone(), .to(dtype),
copy_ into views, reshape of what cannot be a view) against NumPy, exact:
random shapes, permutations, slices with steps, expands, every dtype and
conversion between them, degenerate shapes, and thread counts."""
import numpy as np
import pytest

import pygpu

NAMES = ["float32", "float16", "float64", "int64", "bool", "uint8", "int32",
         "bfloat16"]
NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
      "int64": np.int64, "bool": np.bool_, "uint8": np.uint8,
      "int32": np.int32, "bfloat16": np.float32}
# Above the size at which the CPU copy splits over threads.
BIG = 1 << 18


def values(rng, shape, name):
    """Fresh values exact in every dtype: halves in [0, 100] (bfloat16 has
    8 significant bits), 0/1 for bool, some zeros among them."""
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    v = rng.integers(0, 201, size=shape)
    if name in ("float32", "float16", "float64", "bfloat16"):
        v = v / 2.0
    return v.astype(NP[name])


def make(v, name, device):
    if name == "bfloat16":
        return pygpu.tensor(v.astype(np.float32)).to(pygpu.bfloat16).to(
            device)
    return pygpu.tensor(v).to(device)


def host(t):
    """The tensor's values as NumPy (bfloat16 widened exactly)."""
    if t.dtype is pygpu.bfloat16:
        t = t.float()
    return t.cpu().numpy()


def expected(v, name):
    """v (NumPy, its dtype's values) converted as the copy converts."""
    if name == "bool":
        return v != 0
    return v.astype(NP[name])


def assert_exact(t, ref):
    got = host(t)
    assert got.shape == ref.shape
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)


def random_view(rng, v):
    """A random view of NumPy array v: a permutation, slices with steps and
    an expand of a size-1 dim; returns (view, a function doing the same to
    a tensor)."""
    nd = v.ndim
    perm = list(rng.permutation(nd))
    starts = [int(rng.integers(0, 2)) if v.shape[d] > 2 else 0
              for d in range(nd)]
    steps = [int(rng.integers(1, 4)) for _ in range(nd)]
    sl = tuple(slice(s, None, st) for s, st in zip(starts, steps))
    nv = v[sl].transpose(perm)
    grow = int(rng.integers(2, 4))
    d1 = [d for d in range(nd) if nv.shape[d] == 1]

    def apply(t):
        t = t[sl].permute(*perm)
        if d1:
            shape = list(t.shape)
            shape[d1[0]] = grow
            t = t.expand(*shape)
        return t
    if d1:
        shape = list(nv.shape)
        shape[d1[0]] = grow
        nv = np.broadcast_to(nv, shape)
    return nv, apply


SHAPES = [(7,), (5, 9), (3, 1, 8), (4, 6, 5), (2, 3, 1, 7), (3, 2, 4, 2, 5),
          (65, 70), (2, 130, 3)]


@pytest.mark.parametrize("name", NAMES)
def test_contiguous_of_random_views(device, rng, name):
    for shape in SHAPES:
        for _ in range(3):
            v = values(rng, shape, name)
            nv, apply = random_view(rng, v)
            t = apply(make(v, name, device))
            c = t.contiguous()
            assert c.is_contiguous()
            assert_exact(c, np.ascontiguousarray(nv))
            assert_exact(t.clone(), nv)


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", NAMES)
def test_conversion_of_views(device, rng, src, dst):
    """Every pair of dtypes, from a transposed, a stepped and an expanded
    source, and a transposed source bigger than a tile."""
    pt = getattr(pygpu, dst)
    for shape in [(6, 9), (70, 130)]:
        v = values(rng, shape, src)
        t = make(v, src, device)
        assert_exact(t.t().to(pt), expected(v.T, dst))
        assert_exact(t[::2, 1::3].to(pt), expected(v[::2, 1::3], dst))
        e = t[:, :1].expand(shape[0], 5)
        assert_exact(e.to(pt), expected(np.broadcast_to(v[:, :1],
                                                        (shape[0], 5)), dst))


@pytest.mark.parametrize("name", ["float32", "float16", "int64", "bool"])
def test_copy_into_transposed_view(device, rng, name):
    for rows, cols in [(3, 4), (70, 67), (128, 256)]:
        v = values(rng, (rows, cols), name)
        w = values(rng, (cols, rows), name)
        base = make(v, name, device)
        dst = base.t()
        dst.copy_(make(w, name, device))
        assert_exact(base, np.ascontiguousarray(w.T))
        # And from a transposed view into a transposed view.
        base2 = make(values(rng, (rows, cols), name), name, device)
        base2.t().copy_(make(v, name, device).t())
        assert_exact(base2, v)


@pytest.mark.parametrize("src", ["float64", "float16"])
def test_copy_into_strided_view(device, rng, src):
    """A stepped output from a transposed source, with a conversion and
    without (tiles whose output rows are not contiguous)."""
    v = values(rng, (40, 30), src)
    out = pygpu.zeros(30, 80, dtype=pygpu.float16, device=device)
    out[:, ::2].copy_(make(v, src, device).t())
    ref = np.zeros((30, 80), np.float16)
    ref[:, ::2] = v.T
    assert_exact(out, ref)
    # A stepped source along the tiles' short side.
    w = values(rng, (50, 90), src)
    got = make(w, src, device)[:, ::2].t().contiguous()
    assert_exact(got, np.ascontiguousarray(w[:, ::2].T))


def test_reshape_of_non_viewable(device, rng):
    v = values(rng, (6, 8, 10), "float32")
    t = make(v, "float32", device).permute(2, 0, 1)
    assert_exact(t.reshape(10, 48), v.transpose(2, 0, 1).reshape(10, 48))
    assert_exact(t.reshape(-1), v.transpose(2, 0, 1).reshape(-1))


@pytest.mark.parametrize("name", NAMES)
def test_degenerate_shapes(device, rng, name):
    v = values(rng, (0, 5), name)
    t = make(v, name, device).t()
    assert t.contiguous().shape == (5, 0)
    assert_exact(t.to(pygpu.float32), np.zeros((5, 0), np.float32))
    one = values(rng, (1, 1), name)
    t1 = make(one, name, device).expand(1, 1)
    assert_exact(t1.contiguous(), one)
    assert_exact(t1.to(pygpu.float64), one.astype(np.float64))
    s = make(values(rng, (), name), name, device)
    assert_exact(s.clone(), host(s))
    # A single element broadcast to many.
    big = make(one, name, device).expand(3, 7)
    assert_exact(big.contiguous(), np.broadcast_to(one, (3, 7)))


def test_shapes_from_the_layers(device, rng):
    """The copies of upsampling, a channels-last permute and a batch
    transpose."""
    v = values(rng, (2, 3, 5, 6), "float32")
    t = make(v, "float32", device)
    e = t[:, :, :, None, :, None].expand(2, 3, 5, 2, 6, 2)
    ref = np.broadcast_to(v[:, :, :, None, :, None], (2, 3, 5, 2, 6, 2))
    assert_exact(e.contiguous(), np.ascontiguousarray(ref))
    assert_exact(e.reshape(2, 3, 10, 12), ref.reshape(2, 3, 10, 12))
    assert_exact(t.permute(0, 2, 3, 1).contiguous(), v.transpose(0, 2, 3, 1))
    assert_exact(t.transpose(2, 3).contiguous(), v.transpose(0, 1, 3, 2))


@pytest.fixture
def restore_threads():
    n = pygpu.get_num_threads()
    yield
    pygpu.set_num_threads(n)


@pytest.mark.parametrize("case", ["transpose", "expand", "permute",
                                  "convert", "step"])
def test_threads_give_the_same_bytes(rng, restore_threads, case):
    """Large copies (split over the pool) are the same with 1 and 2
    threads, and equal NumPy's."""
    if case == "transpose":
        v = values(rng, (513, 1031), "float32")
        fn, ref = (lambda t: t.t().contiguous()), v.T
    elif case == "expand":
        v = values(rng, (257, 1, 1030), "int32")
        fn = lambda t: t.expand(257, 3, 1030).contiguous()
        ref = np.broadcast_to(v, (257, 3, 1030))
    elif case == "permute":
        v = values(rng, (4, 33, 45, 67), "float64")
        fn, ref = (lambda t: t.permute(0, 2, 3, 1).contiguous(),
                   v.transpose(0, 2, 3, 1))
    elif case == "convert":
        v = values(rng, (600, 700), "float32")
        fn, ref = (lambda t: t.t().to(pygpu.float16),
                   v.T.astype(np.float16))
    else:
        v = values(rng, (1200, 900), "uint8")
        fn, ref = (lambda t: t[1::3, ::2].contiguous()), v[1::3, ::2]
    assert ref.size >= BIG // 2
    name = {np.float32: "float32", np.int32: "int32", np.float64: "float64",
            np.uint8: "uint8"}[v.dtype.type]
    t = make(v, name, "cpu")
    outs = []
    for n in (1, 2):
        pygpu.set_num_threads(n)
        outs.append(host(fn(t)))
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_array_equal(outs[0], ref)
