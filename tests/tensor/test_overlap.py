"""What a write may touch, with torch's rules: every in-place path (the
in-place methods and slots, copy_, out=, item assignment) refuses a
destination that overlaps itself (expand) or shares memory with an input
other than element for element; exact aliasing, disjoint views of one
memory and zero elements are fine."""
import itertools
import operator

import numpy as np
import pytest

import pygpu

PARTIAL = "some elements of the input tensor and the written-to tensor"
INTERNAL = "more than one element of the written-to tensor"

# name -> (write dst from src, the NumPy values dst should then hold)
WRITES = {
    "add_": (lambda d, s: d.add_(s), lambda d, s: d + s),
    "sub_": (lambda d, s: d.sub_(s, alpha=2), lambda d, s: d - 2 * s),
    "mul_": (lambda d, s: d.mul_(s), lambda d, s: d * s),
    "div_": (lambda d, s: d.div_(s), lambda d, s: d / s),
    "iadd": (operator.iadd, lambda d, s: d + s),
    "isub": (operator.isub, lambda d, s: d - s),
    "imul": (operator.imul, lambda d, s: d * s),
    "itruediv": (operator.itruediv, lambda d, s: d / s),
    "copy_": (lambda d, s: d.copy_(s), lambda d, s: s),
    "add_out": (lambda d, s: pygpu.add(s, 1, out=d), lambda d, s: s + 1),
    "mul_out_scalar_first": (lambda d, s: pygpu.mul(3, s, out=d),
                             lambda d, s: 3 * s),
    "sub_out_self": (lambda d, s: pygpu.sub(d, s, out=d),
                     lambda d, s: d - s),
    "setitem": (lambda d, s: d.__setitem__(Ellipsis, s), lambda d, s: s),
}


def arange(n, device, dtype=np.float64):
    return pygpu.tensor(np.arange(1, n + 1, dtype=dtype), device=device)


def host(t):
    return t.cpu().numpy().copy()


@pytest.mark.parametrize("name", WRITES)
def test_partial_overlap_refused(device, name):
    write, _ = WRITES[name]
    z = arange(8, device)
    before = host(z)
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(z[1:], z[:-1])
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(z[:-2], z[2:])
    x = arange(9, device).view(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(x, x.t())
    # Neither side dense: columns shifted by one.
    y = arange(12, device).view(3, 4)
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(y[:, 1:], y[:, :-1])
    # A dense row against a strided column through it.
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(y[1, :3], y[:, 1])
    np.testing.assert_array_equal(host(z), before)


@pytest.mark.parametrize("name", ["add_", "iadd", "mul_", "sub_out_self"])
def test_broadcast_input_overlapping_refused(device, name):
    # torch checks the input before broadcasting: row 0 is read and written.
    write, _ = WRITES[name]
    x = arange(9, device).view(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        write(x, x[0])


def test_copy_and_setitem_broadcast_source_overlapping(device):
    x = arange(9, device).view(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        x.copy_(x[0])
    with pytest.raises(RuntimeError, match=PARTIAL):
        x[1:] = x[:2]
    with pytest.raises(RuntimeError, match=PARTIAL):
        x[:, 1:] = x[:, :2]


@pytest.mark.parametrize("name", WRITES)
def test_internal_overlap_refused(device, name):
    write, _ = WRITES[name]
    base = arange(3, device)
    src = arange(12, device).view(4, 3)
    with pytest.raises(RuntimeError, match=INTERNAL):
        write(base.expand(4, 3), src)
    with pytest.raises(RuntimeError, match=INTERNAL):
        write(base.unsqueeze(1).expand(3, 2), src[:3, :2])
    np.testing.assert_array_equal(host(base), [1, 2, 3])


def test_internal_overlap_unary_and_setitem(device):
    base = arange(3, device)
    with pytest.raises(RuntimeError, match=INTERNAL):
        base.expand(2, 3).relu_()
    with pytest.raises(RuntimeError, match=INTERNAL):
        pygpu.relu_(base.expand(2, 3))
    with pytest.raises(RuntimeError, match=INTERNAL):
        pygpu.relu(base.expand(2, 3), inplace=True)
    with pytest.raises(RuntimeError, match=INTERNAL):
        base.expand(3, 3)[:, 0] = 5.0  # scalar value
    with pytest.raises(RuntimeError, match=INTERNAL):
        base.expand(3, 3)[:, 0] = arange(3, device)
    # A row of an expanded tensor has no overlap: it writes base itself.
    base.expand(3, 3)[1] = 7.0
    np.testing.assert_array_equal(host(base), [7, 7, 7])


@pytest.mark.parametrize("name", WRITES)
def test_exact_alias_allowed(device, name, rng):
    write, ref = WRITES[name]
    a = rng.uniform(0.5, 2.0, size=(3, 4))
    z = pygpu.tensor(a, device=device)
    r = write(z, z)
    np.testing.assert_allclose(host(z), ref(a, a), rtol=1e-12)
    if r is not None:
        assert r is z
    # The same memory seen through a second view object.
    z2 = pygpu.tensor(a, device=device)
    write(z2.t(), z2.t())
    np.testing.assert_allclose(host(z2).T, ref(a.T, a.T), rtol=1e-12)


def test_exact_alias_unary(device):
    a = np.array([[-1.0, 2.0], [3.0, -4.0]])
    z = pygpu.tensor(a, device=device)
    assert z.relu_() is z
    np.testing.assert_array_equal(host(z), np.maximum(a, 0))
    z = pygpu.tensor(a, device=device)
    pygpu.relu_(z.t())
    np.testing.assert_array_equal(host(z), np.maximum(a, 0))


@pytest.mark.parametrize("name", WRITES)
def test_disjoint_views_allowed(device, name):
    write, ref = WRITES[name]
    a = np.arange(1, 13, dtype=np.float64)
    z = pygpu.tensor(a, device=device)
    write(z[:3], z[3:6])
    exp = a.copy()
    exp[:3] = ref(a[:3], a[3:6])
    np.testing.assert_allclose(host(z), exp, rtol=1e-12)
    # Interleaved: the ranges meet, the elements do not.
    z = pygpu.tensor(a, device=device)
    write(z[::2], z[1::2])
    exp = a.copy()
    exp[::2] = ref(a[::2], a[1::2])
    np.testing.assert_allclose(host(z), exp, rtol=1e-12)
    # Even columns from odd ones of a matrix.
    m = a.reshape(3, 4)
    z = pygpu.tensor(m, device=device)
    write(z[:, ::2], z[:, 1::2])
    exp = m.copy()
    exp[:, ::2] = ref(m[:, ::2], m[:, 1::2])
    np.testing.assert_allclose(host(z), exp, rtol=1e-12)
    # A dense piece of row 1 from a column that passes it by.
    z = pygpu.tensor(m, device=device)
    write(z[1, 2:4], z[::2, 1])
    exp = m.copy()
    exp[1, 2:4] = ref(m[1, 2:4], m[::2, 1])
    np.testing.assert_allclose(host(z), exp, rtol=1e-12)


@pytest.mark.parametrize("name", WRITES)
def test_zero_elements_never_overlap(device, name):
    write, _ = WRITES[name]
    z = arange(4, device)
    write(z[:0], z[:0])
    write(z[2:2], z[1:1])
    write(z[:0].unsqueeze(1).expand(0, 3), pygpu.zeros(0, 3, device=device,
                                                      dtype=pygpu.float64))
    np.testing.assert_array_equal(host(z), [1, 2, 3, 4])


def test_copy_cross_dtype(device):
    z = arange(8, device)
    src = arange(8, device, np.int64)
    with pytest.raises(RuntimeError, match=INTERNAL):
        z[:3].unsqueeze(0).expand(2, 3).copy_(src[:6].view(2, 3))
    z[:3].copy_(src[5:])
    np.testing.assert_array_equal(host(z), [6, 7, 8, 4, 5, 6, 7, 8])
    z.copy_(z.float())  # a converted copy is fresh memory
    z[1:] = z[:-1].long()
    np.testing.assert_array_equal(host(z), [6, 6, 7, 8, 4, 5, 6, 7])


def test_copy_cross_dtype_shared_memory():
    # Two dtypes over one buffer (CPU: from_numpy of two NumPy views).
    buf = np.arange(8, dtype=np.int64)
    ints = pygpu.from_numpy(buf)
    floats = pygpu.from_numpy(buf.view(np.float64))
    with pytest.raises(RuntimeError, match=PARTIAL):
        floats[1:].copy_(ints[:-1])
    with pytest.raises(RuntimeError, match=PARTIAL):
        floats[:4] = ints[2:6]
    np.testing.assert_array_equal(buf, np.arange(8))
    floats.copy_(ints)  # element for element: allowed, converted in place
    np.testing.assert_array_equal(buf.view(np.float64), np.arange(8.0))
    exp = buf[1::2].astype(np.float64)
    floats[::2].copy_(ints[1::2])  # interleaved: disjoint
    np.testing.assert_array_equal(buf.view(np.float64)[::2], exp)


def test_out_must_match(device):
    z = arange(4, device)
    with pytest.raises(RuntimeError, match="shape"):
        z.add_(arange(5, device).view(5, 1))
    with pytest.raises(TypeError, match="out"):
        pygpu.add(z, 1, out=[1, 2, 3, 4])
    out = pygpu.zeros(4, device=device, dtype=pygpu.float64)
    assert pygpu.add(z, z, out=out) is out
    np.testing.assert_array_equal(host(out), [2, 4, 6, 8])


# Every pair of same-shape slices of one 4x6 tensor: a copy between them
# is refused exactly when their elements meet other than one for one, and
# otherwise gives NumPy's answer.
SLICES = [slice(None), slice(1, None), slice(None, -1), slice(None, None, 2),
          slice(1, None, 2), slice(0, 2), slice(2, 4), slice(1, 3),
          slice(None, None, 3), slice(2, None, 3)]


def slice_pairs():
    cases = []
    for r1, c1, r2, c2 in itertools.product(SLICES[:6], SLICES, SLICES[:6],
                                            SLICES):
        idx = np.arange(24).reshape(4, 6)
        a, b = idx[r1, c1], idx[r2, c2]
        if a.shape == b.shape and a.size > 0:
            cases.append(((r1, c1), (r2, c2)))
    return cases[::7]


@pytest.mark.parametrize("k1,k2", slice_pairs(), ids=str)
def test_slice_pairs_against_addresses(device, k1, k2):
    idx = np.arange(24).reshape(4, 6)
    a, b = idx[k1], idx[k2]
    full = np.array_equal(a, b)
    meet = len(set(a.ravel()) & set(b.ravel())) > 0
    same_steps = a.strides == b.strides
    m = np.arange(24, dtype=np.float64).reshape(4, 6)
    z = pygpu.tensor(m, device=device)
    if meet and not full and same_steps:
        with pytest.raises(RuntimeError, match=PARTIAL):
            z[k1].copy_(z[k2])
        return
    try:
        z[k1].copy_(z[k2])
    except RuntimeError:
        assert meet and not full  # a refusal is never a false alarm
        return
    if not meet or full:
        exp = m.copy()
        exp[k1] = m[k2]
        np.testing.assert_array_equal(host(z), exp)


def test_broadcast_view_input_overlapping(device):
    x = arange(9, device).view(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        x.add_(x[0].expand(3, 3))
    with pytest.raises(RuntimeError, match=PARTIAL):
        pygpu.mul(x[1].expand(3, 3), 2, out=x)
    x[1:].add_(x[0].expand(2, 3))  # row 0 is only read
    np.testing.assert_array_equal(host(x), [[1, 2, 3], [5, 7, 9], [8, 10, 12]])


def addresses(a, buf):
    """The index into buf of each element of a (a float64 view of buf)."""
    start = (a.__array_interface__["data"][0] -
             buf.__array_interface__["data"][0]) // 8
    return [start + sum(i * s // 8 for i, s in zip(ix, a.strides))
            for ix in np.ndindex(a.shape)]


@pytest.mark.parametrize("seed", range(300))
def test_random_layouts_against_addresses(seed):
    # Arbitrary strided views (NumPy's as_strided, shared by from_numpy):
    # a refusal is never a false alarm, a zero stride is always refused,
    # and whatever is let through without real overlap gives NumPy's copy.
    r = np.random.default_rng(seed)
    buf = np.arange(400, dtype=np.float64)
    nd = int(r.integers(1, 4))
    shape = tuple(int(v) for v in r.integers(1, 5, size=nd))

    def view(like=None):
        strides = [int(v) * 8 for v in r.integers(0, 13, size=nd)]
        if r.random() < 0.7:
            strides = [max(s, 8) for s in strides]
        if like is not None and r.random() < 0.5:
            strides = list(like.strides)  # the same steps elsewhere
        elif r.random() < 0.3:
            strides = [8 * int(np.prod(shape[k + 1:])) for k in range(nd)]
        span = sum((n - 1) * s // 8 for n, s in zip(shape, strides))
        off = int(r.integers(0, 400 - span))
        return np.lib.stride_tricks.as_strided(buf[off:], shape, strides)

    d = view()
    s = view(d)
    da, sa = addresses(d, buf), addresses(s, buf)
    internal = len(set(da)) < len(da)
    full = da == sa
    shared = bool(set(da) & set(sa))
    expected = buf.copy()
    td, ts = pygpu.from_numpy(d), pygpu.from_numpy(s)
    try:
        td.copy_(ts)
    except RuntimeError as e:
        if INTERNAL in str(e):
            assert internal
        else:
            assert PARTIAL in str(e) and shared and not full
        np.testing.assert_array_equal(buf, expected)
        return
    assert not any(st == 0 and n > 1 for st, n in zip(d.strides, shape))
    if not internal and (full or not shared):
        e = expected.copy()
        for i, j in zip(da, sa):
            e[i] = expected[j]
        np.testing.assert_array_equal(buf, e)
