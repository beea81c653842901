"""Integer indexing: index_select, gather, t[idx] and t[idx] = v with an
integer tensor, a list of ints or a NumPy integer array, against NumPy,
with torch's rules and errors."""
import numpy as np
import pytest

import pygpu

from conftest import NP, assert_no_leak, exact, host, make, raising

DTYPES = [pygpu.float32, pygpu.float16, pygpu.float64, pygpu.int64]


def index_of(rng, n, shape, device, negative=False):
    """Indices into a dim of n, negative ones too when asked (t[idx]
    counts them from the end; index_select and gather refuse them)."""
    i = rng.integers(-n if negative else 0, n, shape)
    return i, pygpu.tensor(i, device=device)


# -- index_select -----------------------------------------------------------

@pytest.mark.parametrize("shape,dim,k", [((5,), 0, 7), ((4, 6), 0, 3),
                                         ((4, 6), 1, 9), ((4, 6), -1, 1),
                                         ((2, 3, 5), 1, 4), ((3, 0), 0, 2),
                                         ((4, 6), 1, 0)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select(device, rng, shape, dim, k, dtype):
    a, t = make(rng, shape, dtype, device)
    i, ti = index_of(rng, a.shape[dim], (k,), device)
    exact(pygpu.index_select(t, dim, ti), np.take(a, i, dim))
    exact(t.index_select(dim, ti), np.take(a, i, dim))


def test_index_keeps_nan_and_inf(device):
    a = np.array([[np.nan, np.inf, -0.0], [1.0, -np.inf, 2.0]], np.float32)
    t = pygpu.tensor(a, device=device)
    exact(t[[1, 0, 1]], a[[1, 0, 1]])
    exact(t.index_select(1, pygpu.tensor([2, 0], device=device)),
          a[:, [2, 0]])
    assert np.signbit(host(t[:, [2]])[0, 0])
    t[[1], [0]] = float("nan")
    a[[1], [0]] = np.nan
    exact(t, a)


def test_index_select_strided(device, rng):
    a, t = make(rng, (6, 8), device=device)
    i, ti = index_of(rng, 6, (10,), device)
    exact(t.T.index_select(1, ti[::2]), np.take(a.T, i[::2], 1))
    exact(t[:, 1::3].index_select(0, ti), np.take(a[:, 1::3], i, 0))
    # a 0-d index gives a dim of 1; a 0-d input takes index 0
    exact(t.index_select(0, pygpu.tensor(2, device=device)), a[2:3])
    s = pygpu.tensor(5.0, device=device)
    exact(s.index_select(0, pygpu.tensor([0], device=device)),
          np.array(5.0, np.float32))
    if device == "cpu":
        with pytest.raises(IndexError, match="index out of range in self"):
            s.index_select(0, pygpu.tensor([-1]))


def test_index_select_errors(device):
    x = pygpu.zeros(2, 3, device=device)
    i = pygpu.tensor([0], device=device)
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, pygpu.tensor([[0]], device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 "
                                           "for index"):
        x.index_select(0, pygpu.tensor([0.0], device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_select(2, i)
    with pytest.raises(TypeError, match="index"):
        x.index_select(0, [0])
    if device == "cpu":
        for bad in ([2], [-3]):
            with pytest.raises(IndexError, match="index out of range in "
                                                 "self"):
                x.index_select(0, pygpu.tensor(bad))


# -- gather -----------------------------------------------------------------

def gather_ref(a, dim, i):
    """out[..] = a[.., i[..], ..] over i's shape."""
    idx = list(np.indices(i.shape, sparse=True))
    idx[dim] = i
    return a[tuple(idx)]


@pytest.mark.parametrize("shape,ishape,dim", [((5,), (8,), 0),
                                              ((3, 4), (3, 6), 1),
                                              ((3, 4), (2, 4), 0),
                                              ((3, 4), (2, 2), -1),
                                              ((2, 3, 4), (2, 1, 3), 2),
                                              ((3, 4), (0, 4), 0),
                                              ((), (), 0)])
@pytest.mark.parametrize("dtype", [pygpu.float32, pygpu.int64])
def test_gather(device, rng, shape, ishape, dim, dtype):
    a, t = make(rng, shape, dtype, device)
    n = a.shape[dim] if a.ndim else 1
    i, ti = index_of(rng, n, ishape, device)
    ref = gather_ref(a, dim % max(a.ndim, 1), i) if a.ndim else a
    exact(pygpu.gather(t, dim, ti), ref)
    exact(t.gather(dim, ti, sparse_grad=False), ref)


def test_gather_strided(device, rng):
    a, t = make(rng, (5, 6), device=device)
    i, ti = index_of(rng, 5, (4, 3), device)
    exact(t.T.gather(1, ti.T), gather_ref(a.T, 1, i.T))


def test_gather_errors(device):
    x = pygpu.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Index tensor must have the same "
                                           "number of dimensions"):
        x.gather(1, pygpu.tensor([0], device=device))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension "
                       r"0 expected index \[3, 2\] to be no larger than self "
                       r"\[2, 3\] apart from dimension 1"):
        x.gather(1, pygpu.zeros(3, 2, dtype=pygpu.int64, device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64"):
        x.gather(1, pygpu.zeros(2, 3, device=device))
    if device == "cpu":
        with pytest.raises(RuntimeError, match="index 5 is out of bounds for "
                                               "dimension 1 with size 3"):
            x.gather(1, pygpu.tensor([[5]]))
        with pytest.raises(RuntimeError, match="index -4 is out of bounds"):
            x.gather(1, pygpu.tensor([[-4]]))


# -- t[idx] -----------------------------------------------------------------

KEYS = [
    lambda i: ([1, 0, -1],), lambda i: (i,), lambda i: (i, slice(1, None)),
    lambda i: (slice(None), i), lambda i: (Ellipsis, i),
    lambda i: (None, i), lambda i: (i, None), lambda i: (0, slice(None), i),
    lambda i: (slice(None, None, 2), i, 1), lambda i: ([],),
]


@pytest.mark.parametrize("key", range(len(KEYS)))
@pytest.mark.parametrize("as_tensor", [False, True])
def test_getitem_int_index(device, rng, key, as_tensor):
    a, t = make(rng, (4, 4, 5), device=device)
    i = np.array([3, -1, 0, 0])
    ref_key = KEYS[key](i)
    key_t = KEYS[key](pygpu.tensor(i, device=device) if as_tensor else i)
    if key == 7:  # torch applies the int first: index dims where i was
        ref = a[0][:, i]
    else:
        ref = a[ref_key]
    got = t[key_t if len(key_t) > 1 else key_t[0]]
    exact(got, ref)
    assert got.numel() == 0 or got.data_ptr() != t.data_ptr()  # a copy


def test_getitem_index_shapes(device, rng):
    a, t = make(rng, (5, 3), pygpu.int64, device)
    i, ti = index_of(rng, 5, (2, 3), device, negative=True)
    exact(t[ti], a[i])                    # a 2-d index
    exact(t.T[:, ti], a.T[:, i])          # strided source
    exact(t[ti[:, ::2]], a[i[:, ::2]])    # strided index
    exact(t[pygpu.tensor(1, device=device)], a[1])  # a 0-d index
    exact(t[np.array([4, 0], dtype=np.int32)], a[[4, 0]])
    exact(t[np.array([], dtype=np.int64)], a[[]])
    exact(t[[np.int64(2)]], a[[2]])


def test_getitem_cpu_index_on_any_device(device, rng):
    a, t = make(rng, (3, 2), device=device)
    exact(t[pygpu.tensor([2, 0])], a[[2, 0]])


def test_getitem_errors(device):
    x = pygpu.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="tensors used as indices must be "
                                         "long, int, byte or bool tensors"):
        x[pygpu.tensor([0.0], device=device)]
    with pytest.raises(IndexError, match="tensors used as indices"):
        x[np.array([0.0])]
    # a nested list key is a tuple of indices, as torch reads it
    assert host(x[[[0, 1], [1, 0]]]).shape == (2,)
    with pytest.raises(IndexError, match="mask or a bool"):
        x[[0, 1], True]
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors "
                                         "could not be broadcast together"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices"):
        pygpu.tensor(1.0, device=device)[[0]]
    if device == "cpu":
        with pytest.raises(IndexError, match="index 5 is out of bounds for "
                                             "dimension 0 with size 2"):
            x[[5]]
        with pytest.raises(IndexError, match="index -3 is out of bounds"):
            x[pygpu.tensor([-3])]
        with pytest.raises(IndexError, match="index 3 is out of bounds for "
                                             "dimension 1 with size 3"):
            x[:, [0, 3]]


def test_getitem_several_indices(device, rng):
    a, t = make(rng, (3, 4, 5), device=device)
    i = np.array([[0], [2], [-1]])
    j = np.array([1, 3, -5, 4])
    ti, tj = pygpu.tensor(i, device=device), pygpu.tensor(j, device=device)
    exact(t[[0, 2], [1, 3]], a[[0, 2], [1, 3]])        # adjacent: in place
    exact(t[:, ti, tj], a[:, i, j])
    exact(t[ti, :, tj], a[i, :, j])                    # apart: dims first
    exact(t[ti, [1, 3, -4, 0], tj], a[i, [1, 3, -4, 0], j])
    exact(t[ti, 0, tj], a[:, 0, :][i, j])  # torch: the int selects first
    exact(t[[[0, 1], [1, 0]]], a[[0, 1], [1, 0]])      # a tuple, as torch
    exact(t.T[tj, [1]], a.T[j, [1]])                   # strided source
    exact(t[[], []], a[[], []])
    if device == "cpu":
        with pytest.raises(IndexError, match="index 4 is out of bounds for "
                                             "dimension 1 with size 4"):
            t[[0, 1], [0, 4]]


# -- t[idx] = v -------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_int_index(device, rng, dtype):
    a, t = make(rng, (4, 3), dtype, device)
    a, b = a.copy(), make(rng, (2, 3), dtype, device)
    t[[2, -4]] = b[1]
    a[[2, -4]] = b[0]
    exact(t, a)
    t[:, pygpu.tensor([2], device=device)] = 7
    a[:, [2]] = 7
    exact(t, a)
    col = np.array([[1], [2], [3], [4]], dtype=NP[dtype])
    t[..., np.array([0, 1])] = pygpu.tensor(col, device=device)
    a[..., [0, 1]] = col
    exact(t, a)
    t[[]] = 5  # nothing to write
    exact(t, a)


def test_setitem_several_indices(device, rng):
    a, t = make(rng, (3, 4, 5), device=device)
    a = a.copy()
    t[[0, 2], :, [1, -1]] = 7.5
    a[[0, 2], :, [1, -1]] = 7.5
    exact(t, a)
    v = rng.standard_normal((2, 3)).astype(np.float32)
    t[[[1], [2]], [0, 1, 3]] = pygpu.tensor(v[..., None], device=device)
    a[[[1], [2]], [0, 1, 3]] = v[..., None]
    exact(t, a)


def test_setitem_converts_and_broadcasts(device):
    t = pygpu.zeros(3, 4, device=device)
    t[[0, 2]] = pygpu.arange(4, device=device)  # int64 into float32
    assert host(t).tolist() == [[0, 1, 2, 3], [0] * 4, [0, 1, 2, 3]]
    t[[1]] = pygpu.tensor([[[9.0]]], device=device)  # leading 1s dropped
    assert host(t)[1].tolist() == [9.0] * 4
    t[[0]] = pygpu.tensor([5.0])  # a CPU value
    assert host(t)[0].tolist() == [5.0] * 4


def test_setitem_duplicates_last_wins_on_cpu():
    x = pygpu.zeros(3)
    x[[0, 0, 1]] = pygpu.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [2.0, 3.0, 0.0]


def test_setitem_from_itself(device, rng):
    a, t = make(rng, (3, 2), device=device)
    t[[2, 0, 1]] = t  # reads all of t before writing any of it
    b = a.copy()
    b[[2, 0, 1]] = a
    exact(t, b)


def test_setitem_index_from_itself(device):
    x = pygpu.tensor([2, 0, 1, 1], device=device)
    x[x] = 0  # the index is read in full before anything is written
    assert host(x).tolist() == [0, 0, 0, 1]
    y = pygpu.tensor([3, 0, 1, 2], device=device)
    y[y[:2]] = y[2:]
    assert host(y).tolist() == [2, 0, 1, 1]


def test_setitem_errors(device):
    x = pygpu.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of "
                       r"shape \[2\] cannot be broadcast to indexing result "
                       r"of shape \[1, 3\]"):
        x[[0]] = pygpu.ones(2, device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="index 4 is out of bounds for "
                                             "dimension 0 with size 2"):
            x[[4]] = 1
        ro = np.zeros((2, 3), np.float32)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            pygpu.from_numpy(ro)[[0]] = 1
    with pytest.raises(TypeError):
        del x[[0]]


@pytest.mark.parametrize("key", [10, [10], (0, 9)])
def test_setitem_value_converted_before_the_key(device, key):
    # as torch's binding: the value becomes a tensor first, so a value that
    # cannot is refused even where the key is out of range
    x = pygpu.zeros(2, 3, device=device)
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        x[key] = "abc"
    assert host(x).tolist() == [[0.0] * 3] * 2


# -- CUDA: the index check -----------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("op", ["index", "index_put", "index_select",
                                "gather"])
def test_cuda_bad_index_raises_and_the_device_stays_usable(op):
    x = pygpu.arange(6.0, device="cuda").view(2, 3)
    bad = pygpu.tensor([5], device="cuda")
    run = {"index": lambda: x[bad],
           "index_put": lambda: x.__setitem__(bad, 1.0),
           "index_select": lambda: x.index_select(0, bad),
           "gather": lambda: x.gather(1, bad.view(1, 1))}[op]
    with pytest.raises(RuntimeError, match="device-side assert triggered") \
            as info:
        run()
    assert op in str(info.value) and "index 5 is out of bounds" in \
        str(info.value)
    assert x.sum().item() == 15.0  # the context is still usable
    assert host(x[pygpu.tensor([1], device="cuda")]).tolist() == \
        [[3.0, 4.0, 5.0]]


@pytest.mark.cuda
def test_cuda_index_on_another_device():
    with pytest.raises(RuntimeError, match="indices should be either on cpu "
                                           "or on the same device"):
        pygpu.zeros(3)[pygpu.tensor([0], device="cuda")]


# -- leaks ------------------------------------------------------------------

def _index_cycle():
    t = pygpu.ones(4, 3)
    i = pygpu.tensor([0, 2])
    t[i]
    t[[1, -1], 1:]
    t.index_select(1, i)
    t.gather(0, pygpu.zeros(2, 3, dtype=pygpu.int64))
    t[[3]] = 2.0
    t[:, i] = t[:, [0, 1]]
    t[i, [1, 2]] = t[[0, 1], i]


ERRORS = {
    "oob": raising(IndexError, pygpu.ones(2, 3).__getitem__, [5]),
    "oob_put": raising(IndexError, pygpu.ones(2, 3).__setitem__, [5], 1),
    "float_index": raising(IndexError, pygpu.ones(2, 3).__getitem__,
                           pygpu.ones(1)),
    "shape": raising(RuntimeError, pygpu.ones(2, 3).__setitem__, [0],
                     pygpu.ones(2)),
    "gather_oob": raising(RuntimeError, pygpu.ones(2, 3).gather, 1,
                          pygpu.tensor([[7]])),
}


@pytest.mark.parametrize("case", ["ops"] + list(ERRORS))
def test_no_leak(case):
    fn = _index_cycle if case == "ops" else ERRORS[case]
    assert_no_leak(fn, cycles=600, warmup=100)
