"""The CPU's draws follow the documented element rules exactly
(csrc/kernels/sample.h, csrc/ops/ops_sample_host.c), checked against an
independent NumPy Philox4x32-10: element e takes word e % 4 of counter
offset + e / 4 (sub-block 1 for the high words of wide integers), and a
draw of n numbers moves the offset by ceil(n / 4).  The CUDA kernels are
checked against the same rules by the kernel self-test
(tests/native/kernels_selftest/sample.cu)."""
import numpy as np
import pytest

import pygpu as torch

MASK = np.uint64(0xFFFFFFFF)


def philox(counter, seed, sub=0):
    """The four words of Philox4x32-10 blocks (counter: uint64 array)."""
    counter = np.asarray(counter, dtype=np.uint64)
    c0, c1 = counter & MASK, counter >> np.uint64(32)
    c2 = np.full_like(counter, sub)
    c3 = np.zeros_like(counter)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK)
        k0 = (k0 + np.uint64(0x9E3779B9)) & MASK
        k1 = (k1 + np.uint64(0xBB67AE85)) & MASK
    return np.stack([c0, c1, c2, c3], axis=1)


def words(n, seed, offset=0, sub=0):
    """Word e % 4 of counter offset + e / 4 for e < n."""
    e = np.arange(n, dtype=np.uint64)
    blocks = philox(np.uint64(offset) + e // np.uint64(4), seed, sub)
    return blocks[np.arange(n), (e % np.uint64(4)).astype(np.int64)]


SEED = 0x1234_5678_9ABC_DEF1


@pytest.mark.parametrize("n", [1, 5, 1030])
def test_integers_follow_the_rule(n):
    g = torch.Generator().manual_seed(SEED)
    got = torch.randint(-3, 17, (n,), generator=g).numpy()
    want = -3 + (words(n, SEED) % np.uint64(20)).astype(np.int64)
    np.testing.assert_array_equal(got, want)
    # the next draw starts ceil(n / 4) counters on; a wide range takes the
    # high words from sub-block 1
    lo, span = -(1 << 40), 3 << 40
    got = torch.randint(lo, lo + span, (n,), generator=g).numpy()
    off = (n + 3) // 4
    bits = (words(n, SEED, off, 1) << np.uint64(32)) | words(n, SEED, off)
    want = lo + (bits % np.uint64(span)).astype(np.int64)
    np.testing.assert_array_equal(got, want)


def test_bernoulli_and_exponential_follow_the_rule():
    n = 999
    g = torch.Generator().manual_seed(SEED)
    got = torch.empty(n, dtype=torch.float64).bernoulli_(0.37, generator=g)
    w = words(n, SEED).astype(np.float64)
    np.testing.assert_array_equal(got.numpy(), (w * 2.0 ** -32 < 0.37) * 1.0)
    p = np.random.default_rng(0).random(n)
    got = torch.bernoulli(torch.tensor(p), generator=g).numpy()
    w = words(n, SEED, (n + 3) // 4).astype(np.float64)
    np.testing.assert_array_equal(got, (w * 2.0 ** -32 < p) * 1.0)
    got = torch.empty(n, dtype=torch.float64).exponential_(
        2.0, generator=torch.Generator().manual_seed(SEED)).numpy()
    want = -np.log((words(n, SEED).astype(np.float64) + 1) * 2.0 ** -32) / 2
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_randperm_follows_the_rule():
    n = 257
    got = torch.randperm(n, generator=torch.Generator().manual_seed(SEED))
    w = words(n, SEED)
    want = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(w[i] % np.uint64(i + 1))
        want[i], want[j] = want[j], want[i]
    assert got.numpy().tolist() == want


def test_multinomial_with_replacement_follows_the_rule():
    p = np.array([[0.2, 0.0, 0.5, 0.3], [1.0, 2.0, 3.0, 4.0]])
    s = 37
    got = torch.multinomial(torch.tensor(p), s, True,
                            generator=torch.Generator().manual_seed(SEED))
    w = words(2 * s, SEED).astype(np.float64).reshape(2, s) * 2.0 ** -32
    cdf = np.cumsum(p, axis=1)
    want = np.stack([np.searchsorted(cdf[r], w[r] * cdf[r, -1], "right")
                     for r in range(2)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_multinomial_without_replacement_follows_the_rule():
    p = np.array([[0.2, 0.0, 0.5, 0.3, 0.1], [1.0, 2.0, 3.0, 4.0, 5.0]])
    got = torch.multinomial(torch.tensor(p), 4,
                            generator=torch.Generator().manual_seed(SEED))
    u = (words(10, SEED).astype(np.float64) + 0.5) * 2.0 ** -32
    keys = p / -np.log(u.reshape(2, 5))
    want = np.argsort(-keys, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(got.numpy(), want)
