"""cat/concat/concatenate, stack, split, chunk, unbind, narrow, flip,
repeat and expand_as against NumPy, with torch's rules and errors."""
import numpy as np
import pytest

import pygpu

from conftest import NP, emptied_list, exact, host, make


# -- cat --------------------------------------------------------------------

@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3, 4), (2, 3, 1)], -1), ([(0, 3), (2, 3)], 0),
    ([(2, 0), (2, 3), (2, 0)], 1), ([(1,), (5,)], 0), ([(3, 1, 2)], 1),
])
def test_cat(device, rng, shapes, dim):
    pairs = [make(rng, s, device=device) for s in shapes]
    got = pygpu.cat([t for _, t in pairs], dim)
    exact(got, np.concatenate([a for a, _ in pairs], dim))
    assert got.device.type == device


def test_cat_strided_inputs(device, rng):
    a, ta = make(rng, (3, 4), device=device)
    b, tb = make(rng, (5, 3), device=device)
    c, tc = make(rng, (3, 8), device=device)
    got = pygpu.cat((ta, tb.T, tc[:, ::2]), dim=1)  # tuple, views
    exact(got, np.concatenate([a, b.T, c[:, ::2]], 1))
    exact(pygpu.cat([ta.T, tb], dim=0), np.concatenate([a.T, b]))


@pytest.mark.parametrize("dtype", [pygpu.float32, pygpu.float16])
def test_join_keeps_nan_and_inf(device, dtype):
    a = np.array([[np.nan, np.inf], [-np.inf, -0.0]], dtype=NP[dtype])
    t = pygpu.tensor(a, device=device)
    exact(pygpu.cat([t, t.T], 1), np.concatenate([a, a.T], 1))
    exact(pygpu.stack([t, t]), np.stack([a, a]))
    exact(t.flip(0), np.flip(a, 0))
    assert np.signbit(host(t.flip(1))[1, 0])  # -0.0 kept
    exact(pygpu.cat([t, t.to(pygpu.float64)]),
          np.concatenate([a, a]).astype(np.float64))


@pytest.mark.parametrize("d1,d2,want", [
    (pygpu.int64, pygpu.float16, pygpu.float16),
    (pygpu.float32, pygpu.float64, pygpu.float64),
    (pygpu.float16, pygpu.float32, pygpu.float32),
    (pygpu.int64, pygpu.int64, pygpu.int64),
])
def test_cat_promotes(device, rng, d1, d2, want):
    a, ta = make(rng, (2, 3), d1, device)
    b, tb = make(rng, (1, 3), d2, device)
    got = pygpu.cat([ta, tb])
    assert got.dtype == want
    exact(got, np.concatenate([a, b]).astype(NP[want]))


def test_cat_skips_legacy_empty(device, rng):
    a, ta = make(rng, (2, 3), device=device)
    e = pygpu.zeros(0, dtype=pygpu.float64, device=device)
    got = pygpu.cat([e, ta, e], dim=1)
    assert got.dtype == pygpu.float64  # still promoted, as torch
    exact(got, a.astype(np.float64))
    only = pygpu.cat([e, pygpu.zeros(0, dtype=pygpu.int64, device=device)])
    assert only.shape == (0,) and only.dtype == pygpu.float64


def test_cat_aliases_and_out(device, rng):
    a, ta = make(rng, (2, 3), device=device)
    ref = np.concatenate([a, a], 1)
    exact(pygpu.concat([ta, ta], 1), ref)
    exact(pygpu.concatenate([ta, ta], dim=1), ref)
    out = pygpu.empty(2, 6, dtype=pygpu.float64, device=device)
    assert pygpu.cat([ta, ta], 1, out=out) is out
    exact(out, ref.astype(np.float64))
    big = pygpu.zeros(6, 2, device=device)
    pygpu.cat([ta, ta], 1, out=big.T)  # a strided out
    exact(big.T, ref)


def test_cat_out_errors(device, rng):
    _, ta = make(rng, (2, 3), device=device)
    with pytest.raises(RuntimeError, match="shape"):
        pygpu.cat([ta, ta], out=pygpu.empty(2, 2, device=device))
    with pytest.raises(TypeError, match="can't be cast to the desired "
                                        "output type"):
        pygpu.cat([ta, ta], out=pygpu.empty(4, 3, dtype=pygpu.int64,
                                            device=device))
    with pytest.raises(RuntimeError, match="single memory location|overlap"):
        pygpu.cat([ta[:1], ta[1:]], out=ta)
    with pytest.raises(TypeError, match="out"):
        pygpu.cat([ta], out=3)


@pytest.mark.parametrize("args,exc,msg", [
    (([],), ValueError, "expected a non-empty list of Tensors"),
    (("x",), TypeError, "must be tuple of Tensors, not str"),
    (([pygpu.zeros(1), 1],), TypeError,
     "expected Tensor as element 1 in argument 0, but got int"),
    (([pygpu.zeros(2, 3), pygpu.tensor(1.0)],), RuntimeError,
     r"zero-dimensional tensor \(at position 1\) cannot be concatenated"),
    (([pygpu.zeros(2, 3), pygpu.zeros(2, 3, 1)],), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    (([pygpu.zeros(2, 3), pygpu.zeros(2, 4)],), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 "
     "but got size 4 for tensor number 1 in the list."),
    (([pygpu.zeros(2, 3)], 2), IndexError, "Dimension out of range"),
])
def test_cat_errors(args, exc, msg):
    with pytest.raises(exc, match=msg):
        pygpu.cat(*args)


@pytest.mark.cuda
def test_cat_device_mismatch():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on "
                                           "the same device"):
        pygpu.cat([pygpu.zeros(2, device="cuda"), pygpu.zeros(2)])


# -- stack ------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim", [((2, 3), 0), ((2, 3), 1), ((2, 3), 2),
                                       ((2, 3), -1), ((), 0), ((0, 4), 1),
                                       ((4,), -2)])
def test_stack(device, rng, shape, dim):
    pairs = [make(rng, shape, device=device) for _ in range(3)]
    got = pygpu.stack([t for _, t in pairs], dim)
    exact(got, np.stack([a for a, _ in pairs], dim))


def test_stack_mixed_and_strided(device, rng):
    a, ta = make(rng, (3, 2), pygpu.int64, device)
    b, tb = make(rng, (2, 3), pygpu.float32, device)
    got = pygpu.stack((ta, tb.T), dim=1)
    assert got.dtype == pygpu.float32
    exact(got, np.stack([a.astype(np.float32), b.T], 1))
    out = pygpu.empty(3, 2, 2, device=device)
    assert pygpu.stack([ta, tb.T], 1, out=out) is out


def test_stack_errors():
    with pytest.raises(RuntimeError, match="stack expects a non-empty "
                                           "TensorList"):
        pygpu.stack([])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be "
                       r"equal size, but got \[2, 3\] at entry 0 and "
                       r"\[2, 4\] at entry 1"):
        pygpu.stack([pygpu.zeros(2, 3), pygpu.zeros(2, 4)])
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        pygpu.stack([pygpu.zeros(2, 3)] * 2, 3)


# -- split, chunk, unbind, narrow: views -------------------------------------

def check_pieces(pieces, refs, base):
    assert isinstance(pieces, tuple) and len(pieces) == len(refs)
    for p, r in zip(pieces, refs):
        exact(p, r)
        assert p.numel() == 0 or base.data_ptr() <= p.data_ptr() < \
            base.data_ptr() + base.numel() * base.element_size()


@pytest.mark.parametrize("shape,size,dim", [((7, 3), 2, 0), ((7, 3), 3, 0),
                                            ((2, 5), 1, 1), ((2, 5), 9, -1),
                                            ((0, 2), 2, 0), ((0, 2), 0, 0)])
def test_split_int(device, rng, shape, size, dim):
    a, t = make(rng, shape, device=device)
    n = a.shape[dim]
    cuts = list(range(size, n, size)) if size else []
    check_pieces(pygpu.split(t, size, dim), np.split(a, cuts, dim), t)
    check_pieces(t.split(size, dim=dim), np.split(a, cuts, dim), t)


def test_split_sections(device, rng):
    a, t = make(rng, (2, 6), device=device)
    check_pieces(t.split([1, 0, 5], 1), np.split(a, [1, 1], 1), t)
    check_pieces(pygpu.split(t, (2,), dim=0), [a], t)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects "
                       r"split_sizes to sum exactly to 6 \(input tensor's "
                       r"size at dimension 1\), but got split_sizes=\[1, 1\]"):
        t.split([1, 1], 1)
    with pytest.raises(RuntimeError, match="non-negative entries"):
        t.split([-1, 7], 1)


def test_split_is_a_view(device):
    t = pygpu.zeros(4, 2, device=device)
    first, second = t.split(2)
    second.fill_(3.0)
    assert host(t).tolist() == [[0, 0], [0, 0], [3, 3], [3, 3]]


@pytest.mark.parametrize("n,chunks,want", [(6, 4, [2, 2, 2]),
                                           (5, 4, [2, 2, 1]),
                                           (5, 1, [5]), (3, 5, [1, 1, 1]),
                                           (0, 3, [0, 0, 0])])
def test_chunk(device, n, chunks, want):
    t = pygpu.arange(n, device=device)
    pieces = pygpu.chunk(t, chunks)
    assert [len(p) for p in pieces] == want
    assert np.concatenate([host(p) for p in pieces]).tolist() == \
        list(range(n))
    assert [len(p) for p in t.chunk(chunks, dim=0)] == want


def test_split_chunk_errors():
    x = pygpu.zeros(2, 3)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if "
                       "dimension size is 0, but got dimension size of 2"):
        x.split(0)
    with pytest.raises(RuntimeError, match="split expects split_size be "
                       "non-negative, but got split_size=-1"):
        x.split(-1)
    with pytest.raises(RuntimeError, match="split expects at least a "
                                           "1-dimensional tensor"):
        pygpu.tensor(1.0).split(1)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be "
                                           "greater than 0, got: 0"):
        x.chunk(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.chunk(2, 2)
    with pytest.raises(TypeError):
        x.split(1.5)


def test_unbind(device, rng):
    a, t = make(rng, (2, 3, 4), device=device)
    for dim in (0, 1, 2, -1):
        check_pieces(pygpu.unbind(t, dim),
                     [np.take(a, i, dim) for i in range(a.shape[dim])], t)
    check_pieces(t.T.unbind(), list(a.T), t)
    assert pygpu.zeros(0, 2).unbind() == ()
    with pytest.raises(IndexError, match="Dimension specified as 0 but "
                                         "tensor has no dimensions"):
        pygpu.tensor(1.0).unbind()


def test_narrow(device, rng):
    a, t = make(rng, (4, 5), device=device)
    exact(t.narrow(1, 1, 3), a[:, 1:4])
    exact(pygpu.narrow(t, 0, -2, 2), a[-2:])
    exact(t.T.narrow(0, 4, 1), a.T[4:5])
    exact(t.narrow(1, 5, 0), a[:, 5:])
    with pytest.raises(IndexError, match=r"start out of range \(expected to "
                       r"be in range of \[-5, 5\], but got 6\)"):
        t.narrow(1, 6, 0)
    with pytest.raises(RuntimeError, match=r"start \(4\) \+ length \(2\) "
                       r"exceeds dimension size \(5\)."):
        t.narrow(1, 4, 2)
    with pytest.raises(RuntimeError, match="length must be non-negative"):
        t.narrow(1, 0, -1)
    with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim"):
        pygpu.tensor(1.0).narrow(0, 0, 1)


def test_split_chunk_narrow_sizes_near_int64_max(device):
    """Sizes whose sums and roundings pass int64: no wrap-around into a
    wrong count of pieces, or into views past the memory."""
    x = pygpu.arange(2.0, device=device)
    big = 2**63 - 1
    assert [p.tolist() for p in x.chunk(big)] == [[0.0], [1.0]]
    assert [p.tolist() for p in x.chunk(2**62)] == [[0.0], [1.0]]
    assert [p.tolist() for p in x.split(big)] == [[0.0, 1.0]]
    with pytest.raises(RuntimeError, match="split_with_sizes expects "
                       "split_sizes to sum exactly to 2"):
        x.split([big, big, 4])  # sums to 2 when it wraps
    with pytest.raises(RuntimeError, match="split_with_sizes expects "
                       "split_sizes to sum exactly to 2"):
        x.split([2**62, 2**62, 2**62, 2**62, 2])
    with pytest.raises(RuntimeError, match=r"start \(1\) \+ length "
                       r"\(9223372036854775807\) exceeds dimension size"):
        x.narrow(0, 1, big)
    with pytest.raises(RuntimeError, match="out of memory"):
        pygpu.zeros(0, device=device).chunk(big)  # big empty pieces


def test_split_sizes_emptied_by_index_are_read_from_a_copy(device):
    sizes = emptied_list(1, 2, 3)
    pieces = pygpu.arange(6.0, device=device).split(sizes)
    assert sizes == []
    assert [p.tolist() for p in pieces] == [[0.0], [1.0, 2.0],
                                            [3.0, 4.0, 5.0]]


def test_cat_size_overflow_is_an_error():
    e = pygpu.ones(1).expand(2**62)
    with pytest.raises(RuntimeError, match="cat\\(\\): the result's size "
                       "along dim 0 overflows int64") as info:
        pygpu.cat([e, e])
    assert "negative" not in str(info.value)


# -- flip, repeat, expand_as: copies and views -------------------------------

@pytest.mark.parametrize("shape,dims", [((5,), (0,)), ((3, 4), (0,)),
                                        ((3, 4), (1,)), ((3, 4), (0, 1)),
                                        ((2, 3, 4), (-1, 0)), ((2, 3, 4), ()),
                                        ((0, 3), (0, 1)), ((), ())])
@pytest.mark.parametrize("dtype", [pygpu.float32, pygpu.float16,
                                   pygpu.int64])
def test_flip(device, rng, shape, dims, dtype):
    a, t = make(rng, shape, dtype, device)
    got = pygpu.flip(t, dims)
    exact(got, np.flip(a, dims) if dims else a)
    assert got.is_contiguous() and got.data_ptr() != t.data_ptr() or \
        got.numel() == 0
    exact(t.flip(*dims) if dims else t.flip(()), np.flip(a, dims))


def test_flip_strided(device, rng):
    a, t = make(rng, (4, 6), device=device)
    exact(t.T.flip(0), np.flip(a.T, 0))
    exact(t[:, ::2].flip(1, 0), np.flip(a[:, ::2], (1, 0)))
    exact(t[1:3].flip([1]), np.flip(a[1:3], 1))


def test_flip_errors():
    x = pygpu.zeros(2, 3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in "
                                           "the list of dims"):
        x.flip(0, -2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(TypeError, match="dims"):
        x.flip()


@pytest.mark.parametrize("shape,reps", [((2, 3), (2, 2)), ((2, 3), (1, 3)),
                                        ((2, 3), (2, 1, 2)), ((), (2, 3)),
                                        ((), ()), ((3,), (0,)),
                                        ((2, 1, 3), (1, 4, 1)),
                                        ((0, 2), (3, 2))])
def test_repeat(device, rng, shape, reps):
    a, t = make(rng, shape, device=device)
    exact(t.repeat(*reps) if reps else t.repeat(()), np.tile(a, reps))
    exact(t.repeat(reps), np.tile(a, reps))


def test_repeat_strided_and_errors(device, rng):
    a, t = make(rng, (3, 4), pygpu.int64, device)
    exact(t.T.repeat(2, 1), np.tile(a.T, (2, 1)))
    exact(t[:, 1::2].repeat(1, 2, 2), np.tile(a[:, 1::2], (1, 2, 2)))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat "
                       "dims can not be smaller than number of dimensions"):
        t.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        t.repeat(-1, 1)
    with pytest.raises(TypeError, match="repeats"):
        t.repeat()


def test_repeat_counts_near_int64_limits():
    """A negative count is an error however large, and a size past int64
    says so, instead of wrapping to an empty or "negative" tensor."""
    x = pygpu.ones(2)
    for reps in [(-2**63,), (-2**62,), (-1,), (2, -2**63)]:
        with pytest.raises(RuntimeError, match="negative dimension"):
            x.repeat(*reps)
    for reps in [(2**63 - 1,), (2**62,), (2**62, 2**62)]:
        with pytest.raises(RuntimeError, match="overflows int64") as info:
            x.repeat(*reps)
        assert "negative" not in str(info.value)
    with pytest.raises(RuntimeError, match="numel: integer multiplication "
                       "overflow"):
        pygpu.ones(1, 1).repeat(2**62, 2**62)
    assert x.repeat(0, 3).shape == (0, 6)


def test_expand_as(device, rng):
    a, t = make(rng, (3, 1), device=device)
    e = t.expand_as(pygpu.zeros(2, 3, 4, device=device))
    assert e.shape == (2, 3, 4) and e.data_ptr() == t.data_ptr()
    exact(e, np.broadcast_to(a, (2, 3, 4)))
    with pytest.raises(RuntimeError, match="expanded size"):
        t.expand_as(pygpu.zeros(2, 2))
    with pytest.raises(TypeError):
        t.expand_as((2, 3))


# -- leaks ------------------------------------------------------------------

def _join_cycle():
    x = pygpu.ones(3, 4)
    pygpu.cat([x, x, pygpu.zeros(0)], 1)
    pygpu.stack((x, x.T.T), dim=-1)
    x.split([1, 2])
    x.chunk(2, 1)
    x.unbind(1)
    x.narrow(0, 1, 2)
    x.flip(0, 1)
    x.repeat(2, 1, 3)
    x.expand_as(pygpu.ones(2, 3, 4))
    pygpu.arange(0, 5, 0.5)
    pygpu.linspace(0, 1, 7)
    pygpu.eye(3, 2)
    x.new_full((2,), 3)
    x.type(pygpu.int64).type()


JOIN_ERRORS = {
    "cat_empty": lambda: pygpu.cat([]),
    "cat_sizes": lambda: pygpu.cat([pygpu.ones(2, 3), pygpu.ones(2, 4)]),
    "cat_element": lambda: pygpu.cat([pygpu.ones(2), 3]),
    "cat_out": lambda: pygpu.cat([pygpu.ones(2)], out=pygpu.ones(3)),
    "stack": lambda: pygpu.stack([pygpu.ones(2), pygpu.ones(3)]),
    "split": lambda: pygpu.ones(4).split([1, 1]),
    "flip": lambda: pygpu.ones(2, 2).flip(0, 0),
    "repeat": lambda: pygpu.ones(2, 2).repeat(2),
    "arange": lambda: pygpu.arange(1, 0, 1),
    "type": lambda: pygpu.ones(2).type("pygpu.Nothing"),
}


@pytest.mark.parametrize("case", ["ops"] + list(JOIN_ERRORS))
def test_no_leak(case):
    from conftest import assert_no_leak

    def failing():
        with pytest.raises((TypeError, ValueError, RuntimeError,
                            IndexError)):
            JOIN_ERRORS[case]()
    assert_no_leak(_join_cycle if case == "ops" else failing, cycles=600,
                   warmup=100)
