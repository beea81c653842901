"""float16 and bfloat16 elementwise loops, sums and conversions on the
CPU, which run through float32 loops on widened runs (F16C where the CPU
has it): every result is the float32 result rounded once, bit for bit,
across chunk edges, for contiguous, strided, broadcast and in-place
operands."""
import numpy as np
import pytest

import pygpu

SIZES = [0, 1, 7, 8, 9, 16, 17, 511, 512, 513, 1500, 4099]


def rounded(x32, dtype):
    """float32 values rounded once to float16 (NumPy) or bfloat16 (the
    round-to-nearest-even rule on the bits, NaN kept quiet)."""
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x32.astype(np.float16).view(np.uint16)
    u = np.ascontiguousarray(x32, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x32)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def widened(bits, dtype):
    if dtype == "float16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def make(rng, n, dtype):
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    bits = rounded(x, dtype)
    t = pygpu.tensor(widened(bits, dtype)).to(getattr(pygpu, dtype))
    return t, widened(bits, dtype)


def bits_of(t):
    """The bits of a half tensor, read through its (exact) float32 copy."""
    f = t.float().contiguous().numpy().ravel()
    if t.dtype == pygpu.float16:
        return f.astype(np.float16).view(np.uint16)
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def same(t, want32, dtype):
    got = bits_of(t)
    want = rounded(np.asarray(want32, np.float32), dtype)
    both_nan = np.isnan(widened(got, dtype)) & np.isnan(
        widened(want, dtype))
    assert ((got == want) | both_nan).all(), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", SIZES)
def test_binary_scalar_unary_round_once(dtype, n):
    rng = np.random.default_rng(n)
    a, a32 = make(rng, n, dtype)
    b, b32 = make(rng, n, dtype)
    same(a + b, a32 + b32, dtype)
    same(a * b, a32 * b32, dtype)
    same(a - 2.5, a32 - np.float32(2.5), dtype)
    den = b.abs() + 1
    same(3.0 / den, np.float32(3) / den.float().numpy(), dtype)
    same(a.relu(), np.maximum(a32, 0), dtype)
    same(a.neg(), -a32, dtype)
    e = (a * 0.25).exp().float().numpy()  # * 0.25 is exact
    ref = np.exp(a32.astype(np.float64) * 0.25)
    assert np.allclose(e, ref, rtol=1e-2, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_strided_broadcast_and_in_place(dtype):
    rng = np.random.default_rng(3)
    a, a32 = make(rng, 3 * 1031, dtype)
    a2, m32 = a.view(3, 1031), a32.reshape(3, 1031)
    col, c32 = make(rng, 3, dtype)
    row, r32 = make(rng, 1031, dtype)
    same(a2.t() + row.view(1031, 1), (m32.T + r32[:, None]).ravel(), dtype)
    same(a2 * col.view(3, 1), (m32 * c32[:, None]).ravel(), dtype)
    same(a2[:, ::3] - row[::3], (m32[:, ::3] - r32[::3]).ravel(), dtype)
    out = a2.t()[::2]  # a strided output
    want = out.float().numpy() + 1
    out.add_(1)
    same(out, want.ravel(), dtype)
    c = a.clone()  # a now holds out's sums
    c32 = c.float().numpy()
    c.mul_(c)
    same(c, c32 * c32, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", SIZES + [2048, 2049, 100003])
def test_sum_is_the_sum_of_the_widened_values(dtype, n):
    """The sum of a half tensor adds the same float values in the same
    order as the sum of its float32 copy: the same bits."""
    rng = np.random.default_rng(n + 1)
    a, _ = make(rng, n, dtype)
    if n > 40:
        a[n // 3] = float("inf")
    got = a.sum().float().numpy()
    want = a.float().sum().to(getattr(pygpu, dtype)).float().numpy()
    assert got.tobytes() == want.tobytes() or (np.isnan(got) and
                                               np.isnan(want))
    if n > 40:
        a[n // 2] = float("nan")
        assert np.isnan(a.sum().float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conversions_round_to_nearest_even(dtype):
    rng = np.random.default_rng(5)
    x = np.concatenate([
        (rng.standard_normal(5000) * 10 ** rng.uniform(-9, 6, 5000))
        .astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 65519.99,
                  -65520, 2 ** -24, 2 ** -25, 3 * 2 ** -26, 1e-45, 3e38],
                 np.float32)])
    t = pygpu.tensor(x)
    h = t.to(getattr(pygpu, dtype))
    same(h, x, dtype)
    back = h.float().numpy()
    np.testing.assert_array_equal(back, widened(rounded(x, dtype), dtype))
    # strided both ways
    same(t[::3].to(getattr(pygpu, dtype)), x[::3], dtype)
