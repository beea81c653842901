"""The CPU's vectorized reduction loops give exactly what the element by
element rules give: float16 widening for every bit pattern, and max / min
keeping the first NaN (bit for bit), the first index of the extreme and
the sign of the first zero, on both loop shapes (over the last dim and
over rows)."""
import numpy as np
import pytest

import pygpu

# (pygpu dtype, NumPy dtype holding the values, unsigned type of its bits)
DTYPES = [(pygpu.float32, np.float32, np.uint32),
          (pygpu.float64, np.float64, np.uint64),
          (pygpu.float16, np.float16, np.uint16),
          (pygpu.bfloat16, np.float32, np.uint32)]


def test_float16_to_float32_every_pattern():
    h = np.arange(1 << 16, dtype=np.uint32)
    sign = (h & 0x8000) << 16
    em = h & 0x7FFF
    tiny = (em.astype(np.float32) * np.float32(2.0 ** -24)).view(np.uint32)
    # a NaN keeps its payload and comes out quiet, as F16C's vcvtph2ps
    quiet = np.where(em > 0x7C00, 0x00400000, 0)
    want = sign | np.where(em >= 0x7C00,
                           0x7F800000 | ((em & 0x3FF) << 13) | quiet,
                           np.where(em >= 0x400, (em << 13) + (112 << 23),
                                    tiny))
    t = pygpu.tensor(h.astype(np.uint16).view(np.float16))
    got = t.to(pygpu.float32).cpu().numpy().view(np.uint32)
    np.testing.assert_array_equal(got, want.astype(np.uint32))
    numbers = ~np.isnan(h.astype(np.uint16).view(np.float16))
    np.testing.assert_array_equal(
        got[numbers],
        h.astype(np.uint16).view(np.float16).astype(np.float32)
        .view(np.uint32)[numbers])


def _rows(rng, n, nptype, bits):
    """Rows of n values with many ties, rows of zeros of either sign, and
    NaNs with distinct payloads (row r has one at r % n and another
    later), then rows without NaN."""
    count = min(n, 80)
    a = rng.integers(-3, 4, size=(count + 8, n)).astype(np.float64)
    zeros = rng.random((4, n)) < 0.5
    a[-4:] = np.where(zeros, 0.0, -0.0)
    a[-5] = -1.0
    a[-5, n // 3] = -0.0
    a[-5, n // 2] = 0.0
    a = a.astype(nptype)
    quiet = {np.uint16: 0x7E00, np.uint32: 0x7FC00000,
             np.uint64: 0x7FF8000000000000}[bits]
    shift = 16 if bits == np.uint32 else 0
    flat = a.view(bits)
    for r in range(count):
        for k, j in enumerate([r * 7 % n, (r * 7 + 1 + r % 5) % n]):
            flat[r, j] = quiet | ((r % 31 * 2 + k + 1) << shift)
            if r % 3 == 0:
                flat[r, j] |= 1 << (8 * bits().itemsize - 1)   # sign
    return a


def _first(a, is_max):
    idx = []
    for row in a:
        nans = np.flatnonzero(np.isnan(row))
        if nans.size:
            idx.append(nans[0])
        else:
            idx.append(np.argmax(row) if is_max else np.argmin(row))
    return np.array(idx)


def _bits(t, dt, bits):
    if dt == pygpu.bfloat16:
        t = t.to(pygpu.float32)
    return t.cpu().numpy().view(bits)


@pytest.mark.parametrize("dt,nptype,bits", DTYPES)
@pytest.mark.parametrize("n", [70, 9000])
@pytest.mark.parametrize("is_max", [True, False])
def test_max_min_first_nan_index_and_zero(rng, dt, nptype, bits, n, is_max):
    a = _rows(rng, n, nptype, bits)
    if dt == pygpu.bfloat16:
        a = (a.view(np.uint32) & 0xFFFF0000).view(np.float32)
    idx = _first(a, is_max)
    want = a[np.arange(len(a)), idx].view(bits)
    name = "max" if is_max else "min"
    rows = pygpu.tensor(a).to(dt)                       # inner == 1
    cols = pygpu.tensor(np.ascontiguousarray(a.T)).to(dt)   # inner > 1
    for t, dim in ((rows, 1), (cols, 0)):
        v, i = getattr(t, name)(dim)
        np.testing.assert_array_equal(i.tolist(), idx)
        np.testing.assert_array_equal(_bits(v, dt, bits), want)
        amax = getattr(t, "a" + name)(dim)
        np.testing.assert_array_equal(_bits(amax, dt, bits), want)
        arg = getattr(t, "arg" + name)(dim)
        np.testing.assert_array_equal(arg.tolist(), idx)
    whole = pygpu.tensor(a[-5]).to(dt)      # zeros among -1: the first
    np.testing.assert_array_equal(
        _bits(getattr(whole, "a" + name)(), dt, bits),
        a[-5, _first(a[-5:-4], is_max)[0]].view(bits))
