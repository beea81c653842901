"""float32 / float16 / bfloat16 normal numbers: pygpu's own Box-Muller
(csrc/kernels/normal.h), the same bits on every CPU clone, thread count
and on CUDA.  The formula is rebuilt here in NumPy float32 (every step an
IEEE float32 operation, as in C) from the Philox words, which rand in
float64 exposes exactly (word * 2^-32)."""
import numpy as np
import pytest

import pygpu

F = np.float32


def words(seed, n):
    """The Philox words of elements 0..n-1 for a fresh seed."""
    pygpu.manual_seed(seed)
    x = pygpu.rand(n, dtype=pygpu.float64).numpy()
    return (x * 2.0**32).astype(np.uint64).astype(np.uint32)


def horner(x, coefs):
    p = F(coefs[0])
    for c in coefs[1:]:
        p = p * x + F(c)
    return p


def radius2(w0):
    u = (w0 >> 8).astype(np.int32) + 1
    u = u.astype(F) * F(2.0**-24)
    b = u.view(np.uint32)
    k = ((b - np.uint32(0x3f3504f3) + np.uint32(0x40000000)) >> 23)
    k = k.astype(np.int32) - 128
    m = (b - (k.astype(np.uint32) << 23)).view(F)
    f = m - F(1)
    fk = k.astype(F)
    fh = (f.view(np.uint32) & np.uint32(0xfffff000)).view(F)
    fl = f - fh
    h = (fh * fh) * F(0.5)
    t = (fl * (f + fh)) * F(0.5)
    a = f - h
    ea = (f - a) - h
    r = horner(f, [-0.0763449669, 0.127615765, -0.131601825, 0.142017573,
                   -0.166233569, 0.200012267, -0.250008196, 0.333333313])
    cube = (f * (f * f)) * r
    hi = fk * F(0.693359375)
    s = hi + a
    es = a - (s - hi)
    lo = ((cube - t) + fk * F(-2.12194440e-4)) + (ea + es)
    return (s + lo) * F(-2)


def cossin(w1):
    i = (w1 >> 8).astype(np.int64)
    q = (i + (1 << 21)) >> 22
    d = i - (q << 22)
    dl = np.fmod(d, 2048)
    dh = d - dl
    f = d.astype(F) * F(2.0**-24)
    g = f * f
    ps = horner(g, [41.4846764, -76.6982956, 81.6052094, -41.3417015])
    a = F(6.283203125 * 2.0**-24)
    sn = dh.astype(F) * a + (dl.astype(F) * a
                             + f * (ps * g + F(-1.78178e-5)))
    dl2 = np.fmod(d, 8192)
    dh2 = d - dl2
    gh = (dh2.astype(F) * dh2.astype(F)) * F(2.0**-48)
    gl = (dl2.astype(F) * (d + dh2).astype(F)) * F(2.0**-48)
    x = gh * F(-19.5)
    one = F(1) + x
    eone = x - (one - F(1))
    pc = horner(g, [59.3497009, -85.4471436, 64.9393616])
    rest = (gl * F(-19.5) + g * F(-0.239208802)) + ((g * g) * pc + eone)
    cs = one + rest
    odd = (q & 1) == 1
    c = np.where(odd, sn, cs)
    s = np.where(odd, cs, sn)
    c = np.where(((q + 1) >> 1) & 1 == 1, -c, c)
    s = np.where((q >> 1) & 1 == 1, -s, s)
    return c, s


def formula(w, n):
    """float32 normals of elements 0..n-1 from words w (len >= n + 1)."""
    pairs = (n + 1) // 2
    w0, w1 = w[0:2 * pairs:2], w[1:2 * pairs:2]
    r = np.sqrt(radius2(w0))
    c, s = cossin(w1)
    z = np.empty(2 * pairs, F)
    z[0::2], z[1::2] = r * c, r * s
    return z[:n]


def exact(w, n):
    """The same formula in float64 (exact turn reduction)."""
    pairs = (n + 1) // 2
    w0, w1 = w[0:2 * pairs:2], w[1:2 * pairs:2]
    r = np.sqrt(-2 * np.log(((w0 >> 8) + 1.0) * 2.0**-24))
    t = 2 * np.pi * ((w1 >> 8) * 2.0**-24)
    z = np.empty(2 * pairs)
    z[0::2], z[1::2] = r * np.cos(t), r * np.sin(t)
    return z[:n]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 3, 64, 131, 200003])
def test_float32_is_the_formula(n, threads):
    old = pygpu.get_num_threads()
    pygpu.set_num_threads(threads)
    try:
        w = words(11 + n, n + 4)
        pygpu.manual_seed(11 + n)
        z = pygpu.randn(n).numpy()
    finally:
        pygpu.set_num_threads(old)
    want = formula(w, n)
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z.view(np.uint32), want.view(np.uint32))


def test_half_types_round_the_float32_numbers():
    n = 1001
    pygpu.manual_seed(5)
    z = pygpu.randn(n)
    for dt, npdt in ((pygpu.float16, np.float16), (pygpu.bfloat16, None)):
        pygpu.manual_seed(5)
        h = pygpu.randn(n, dtype=dt)
        want = z.to(dt)
        assert h.dtype == dt
        np.testing.assert_array_equal(h.float().numpy(), want.float().numpy())
        if npdt is not None:
            np.testing.assert_array_equal(h.numpy(),
                                          z.numpy().astype(npdt))


def test_within_a_few_ulp_of_double():
    n = 1 << 18
    w = words(3, n + 4)
    got = formula(w, n).astype(np.float64)
    want = exact(w, n)
    ulp = np.spacing(np.abs(want).astype(F)).astype(np.float64)
    err = np.abs(got - want) / ulp
    assert err.max() <= 2.6
    assert np.mean(err > 1) < 0.07


def test_statistics():
    n = 1 << 20
    pygpu.manual_seed(2024)
    z = pygpu.randn(n).numpy().astype(np.float64)
    assert abs(z.mean()) < 0.005
    assert abs(z.std() - 1) < 0.004
    c = z - z.mean()
    kurt = (c**4).mean() / (c**2).mean()**2 - 3
    assert abs(kurt) < 0.03
    # P(|z| > 4) = 6.334e-5: about 66 of 2^20 (sd 8).
    assert 30 <= np.count_nonzero(np.abs(z) > 4) <= 105


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 7, 1001, 65539])
def test_cuda_same_bits_as_cpu(dt, n):
    dtype = getattr(pygpu, dt)
    pygpu.manual_seed(99)
    a = pygpu.randn(n, dtype=dtype)
    pygpu.manual_seed(99)
    b = pygpu.randn(n, dtype=dtype, device="cuda").cpu()
    np.testing.assert_array_equal(a.float().numpy().view(np.uint32),
                                  b.float().numpy().view(np.uint32))
