"""Random sampling: randint, randperm, multinomial, bernoulli, normal,
poisson, the in-place draws, Generator objects and the generators' state.

Statistical checks use fixed seeds and bounds of several standard errors
(or a chi-square bound of dof + 6 sqrt(2 dof)), so they are deterministic
and still fail for a wrong distribution.  The CPU == CUDA tests draw the
same seed on both devices and compare the numbers."""
import math

import numpy as np
import pytest

import pygpu as torch


def chi2_bound(dof):
    return dof + 6.0 * math.sqrt(2.0 * dof)


def chi2(counts, expected):
    counts = np.asarray(counts, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    return float(((counts - expected) ** 2 / expected).sum())


def gen(device, seed):
    return torch.Generator(device=device).manual_seed(seed)


# ------------------------------------------------------------ Generator


def test_generator_basics():
    g = torch.Generator()
    assert g.device == torch.device("cpu")
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(123) is g
    assert g.initial_seed() == 123
    assert "cpu" in repr(g)
    assert torch.Generator("cuda").device.type == "cuda"
    # negative seeds wrap to 64 bits, as torch's
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(TypeError, match="seed must be an int"):
        g.manual_seed(1.5)
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s


def test_generator_reproducible_and_independent(device):
    torch.manual_seed(5)
    a = torch.rand(100, device=device, generator=gen(device, 7))
    b = torch.rand(100, device=device)  # the default stream: untouched
    c = torch.rand(100, device=device, generator=gen(device, 7))
    torch.manual_seed(5)
    d = torch.rand(100, device=device)
    np.testing.assert_array_equal(a.cpu().numpy(), c.cpu().numpy())
    np.testing.assert_array_equal(b.cpu().numpy(), d.cpu().numpy())
    assert not np.array_equal(a.cpu().numpy(), b.cpu().numpy())
    # a generator seeded like the default stream draws the same numbers
    torch.manual_seed(7)
    e = torch.rand(100, device=device)
    np.testing.assert_array_equal(a.cpu().numpy(), e.cpu().numpy())


def test_generator_state_roundtrip(device):
    g = gen(device, 11)
    torch.randn(13, device=device, generator=g)
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    first = torch.randn(50, device=device, generator=g).cpu().numpy()
    torch.randint(0, 9, (7,), device=device, generator=g)
    g.set_state(state)
    again = torch.randn(50, device=device, generator=g).cpu().numpy()
    np.testing.assert_array_equal(first, again)
    # the state is another generator's too
    h = torch.Generator(device=device).set_state(state)
    np.testing.assert_array_equal(
        torch.randn(50, device=device, generator=h).cpu().numpy(), first)


def test_generator_state_errors():
    g = torch.Generator()
    with pytest.raises(TypeError, match="expected a torch.ByteTensor"):
        g.set_state(torch.zeros(16))
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(torch.zeros(15, dtype=torch.uint8))
    with pytest.raises(TypeError, match="generator must be a"):
        torch.rand(3, generator=5)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type "
                       "for generator but found 'cuda'"):
        torch.rand(3, generator=torch.Generator("cuda"))
    with pytest.raises(TypeError, match="unexpected keyword argument "
                       "'generator'"):
        torch.zeros(3, generator=g)


@pytest.mark.cuda
def test_generator_device_mismatch_cuda():
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type "
                       "for generator but found 'cpu'"):
        torch.rand(3, device="cuda", generator=torch.Generator())


def test_module_seed_functions():
    g = torch.manual_seed(42)
    assert isinstance(g, torch.Generator)
    assert torch.initial_seed() == 42
    assert torch.default_generator.initial_seed() == 42
    state = torch.get_rng_state()
    a = torch.rand(20).numpy()
    torch.set_rng_state(state)
    np.testing.assert_array_equal(torch.rand(20).numpy(), a)
    # the default generator object is the default stream
    torch.default_generator.manual_seed(3)
    b = torch.rand(20).numpy()
    torch.manual_seed(3)
    np.testing.assert_array_equal(torch.rand(20).numpy(), b)
    s = torch.seed()
    assert isinstance(s, int) and torch.initial_seed() == s


@pytest.mark.cuda
def test_cuda_rng_state_functions():
    torch.cuda.manual_seed(9)
    assert torch.cuda.initial_seed() == 9
    state = torch.cuda.get_rng_state()
    a = torch.rand(20, device="cuda").cpu().numpy()
    torch.cuda.set_rng_state(state)
    np.testing.assert_array_equal(torch.rand(20, device="cuda").cpu().numpy(),
                                  a)
    states = torch.cuda.get_rng_state_all()
    assert len(states) == torch.cuda.device_count()
    torch.cuda.set_rng_state_all(states)
    torch.cuda.manual_seed_all(4)
    assert torch.cuda.initial_seed() == 4


# -------------------------------------------------------------- randint


def test_randint_overloads_and_range(device):
    g = gen(device, 1)
    a = torch.randint(10, (1000,), device=device, generator=g)
    assert a.dtype == torch.int64 and a.shape == (1000,)
    v = a.cpu().numpy()
    assert v.min() >= 0 and v.max() <= 9
    b = torch.randint(-5, 5, (20, 50), device=device, generator=g)
    assert b.shape == (20, 50)
    v = b.cpu().numpy()
    assert v.min() >= -5 and v.max() <= 4
    assert set(np.unique(v)) == set(range(-5, 5))
    c = torch.randint(low=3, high=4, size=(5,), device=device)
    assert c.cpu().numpy().tolist() == [3] * 5
    d = torch.randint(high=7, size=[3], device=device, dtype=torch.float32)
    assert d.dtype == torch.float32
    assert np.all(d.cpu().numpy() == np.floor(d.cpu().numpy()))


def test_randint_uniform_counts(device):
    k, n = 12, 120000
    v = torch.randint(0, k, (n,), device=device,
                      generator=gen(device, 2)).cpu().numpy()
    counts = np.bincount(v, minlength=k)
    assert chi2(counts, [n / k] * k) < chi2_bound(k - 1)


def test_randint_wide_range(device):
    """Ranges past 2^32 take 64 bits: the values cover the range."""
    lo, hi = -(1 << 40), 1 << 40
    v = torch.randint(lo, hi, (4000,), device=device,
                      generator=gen(device, 3)).cpu().numpy()
    assert v.min() >= lo and v.max() < hi
    # mean 0 within a few standard errors of a uniform over 2^41 values
    se = (hi - lo) / math.sqrt(12 * 4000)
    assert abs(v.astype(np.float64).mean()) < 5 * se
    # both halves of the range and high bits occur
    assert (v < 0).any() and (v > (1 << 39)).any()


def test_randint_dtypes_and_degenerate(device):
    for dt, hi in ((torch.uint8, 256), (torch.int32, 1000),
                   (torch.bool, 2), (torch.float64, 1 << 40),
                   (torch.float16, 2048)):
        t = torch.randint(0, hi, (300,), dtype=dt, device=device)
        assert t.dtype == dt
        v = t.cpu().numpy().astype(np.float64)
        assert v.min() >= 0 and v.max() < hi
    e = torch.randint(5, (0, 3), device=device)
    assert e.shape == (0, 3)
    one = torch.randint(2, 3, (1,), device=device)
    assert one.cpu().numpy().tolist() == [2]
    s = torch.randint(4, (), device=device)
    assert s.shape == () and 0 <= s.item() < 4


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be "
                       "less than 'to', but got from=5 >= to=5"):
        torch.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for "
                       "unsigned char"):
        torch.randint(0, 300, (3,), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds for "
                       "unsigned char"):
        torch.randint(-1, 3, (3,), dtype=torch.uint8)
    with pytest.raises(TypeError, match="size"):
        torch.randint(5, 3)
    with pytest.raises(TypeError, match="missing required argument"):
        torch.randint(size=(3,))
    with pytest.raises(RuntimeError, match="floating point"):
        torch.randint(3, (2,), requires_grad=True)


def test_randint_requires_grad_float():
    t = torch.randint(3, (2,), dtype=torch.float32, requires_grad=True)
    assert t.requires_grad


def test_randint_like(device):
    x = torch.zeros(4, 5, dtype=torch.int32, device=device)
    a = torch.randint_like(x, 10)
    assert a.shape == (4, 5) and a.dtype == torch.int32
    assert a.device.type == device
    v = a.cpu().numpy()
    assert v.min() >= 0 and v.max() < 10
    b = torch.randint_like(x, 3, 6, dtype=torch.float64)
    v = b.cpu().numpy()
    assert b.dtype == torch.float64 and v.min() >= 3 and v.max() < 6
    c = torch.randint_like(x, low=-2, high=-1)
    assert (c.cpu().numpy() == -2).all()


def test_randint_reproducible(device):
    a = torch.randint(0, 1000, (257,), device=device, generator=gen(device, 9))
    b = torch.randint(0, 1000, (257,), device=device, generator=gen(device, 9))
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())


# ------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 4097])
def test_randperm_is_permutation(device, n):
    p = torch.randperm(n, device=device, generator=gen(device, n))
    assert p.dtype == torch.int64 and p.shape == (n,)
    assert p.device.type == device
    assert sorted(p.cpu().numpy().tolist()) == list(range(n))


def test_randperm_uniform_positions():
    """Where element 0 lands, over many permutations of 6: uniform."""
    g = gen("cpu", 4)
    n, trials = 6, 6000
    where = [int(np.argmax(torch.randperm(n, generator=g).numpy() == 0))
             for _ in range(trials)]
    counts = np.bincount(where, minlength=n)
    assert chi2(counts, [trials / n] * n) < chi2_bound(n - 1)


def test_randperm_dtype_and_errors(device):
    p = torch.randperm(10, dtype=torch.float32, device=device)
    assert p.dtype == torch.float32
    assert sorted(p.cpu().numpy().tolist()) == list(range(10))
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        torch.randperm(-1)
    with pytest.raises(RuntimeError, match="n is too large"):
        torch.randperm(300, dtype=torch.uint8)


# ---------------------------------------------------------- multinomial


def test_multinomial_with_replacement_counts(device):
    p = np.array([0.1, 0.0, 0.3, 0.6, 0.0], dtype=np.float32)
    n = 60000
    s = torch.multinomial(torch.tensor(p, device=device), n, True,
                          generator=gen(device, 5))
    assert s.dtype == torch.int64 and s.shape == (n,)
    counts = np.bincount(s.cpu().numpy(), minlength=5)
    assert counts[1] == 0 and counts[4] == 0  # zero weight: never drawn
    nz = p > 0
    assert chi2(counts[nz], n * p[nz] / p.sum()) < chi2_bound(2)


def test_multinomial_unnormalised_rows(device):
    w = torch.tensor([[1.0, 3.0], [5.0, 0.0], [0.0, 2.0]], device=device)
    s = torch.multinomial(w, 4000, replacement=True,
                          generator=gen(device, 6)).cpu().numpy()
    assert s.shape == (3, 4000)
    assert (s[1] == 0).all() and (s[2] == 1).all()
    frac = (s[0] == 1).mean()
    assert abs(frac - 0.75) < 5 * math.sqrt(0.75 * 0.25 / 4000)


def test_multinomial_without_replacement(device):
    w = torch.rand(50, 20, device=device, generator=gen(device, 7)) + 0.01
    s = torch.multinomial(w, 20, generator=gen(device, 8)).cpu().numpy()
    for row in s:  # all of them: permutations
        assert sorted(row.tolist()) == list(range(20))
    s = torch.multinomial(w, 7).cpu().numpy()
    for row in s:
        assert len(set(row.tolist())) == 7


def test_multinomial_without_replacement_first_draw(device):
    """The first of a draw without replacement is drawn in proportion to
    the weights; zero weights come last."""
    p = np.array([0.5, 0.3, 0.2, 0.0])
    rows = 6000
    w = torch.tensor(np.tile(p, (rows, 1)), dtype=torch.float32,
                     device=device)
    s = torch.multinomial(w, 3, generator=gen(device, 9)).cpu().numpy()
    assert (s != 3).all()
    counts = np.bincount(s[:, 0], minlength=4)[:3]
    assert chi2(counts, rows * p[:3]) < chi2_bound(2)
    # the probability that 1 comes second: P(0 first) * 0.3 / 0.5 + ...
    second_is_1 = (0.5 * 0.3 / 0.5 + 0.2 * 0.3 / 0.8)
    frac = (s[:, 1] == 1).mean()
    assert abs(frac - second_is_1) < 5 * math.sqrt(
        second_is_1 * (1 - second_is_1) / rows)


def test_multinomial_degenerate_and_method(device):
    w = torch.tensor([0.0, 1.0, 0.0], device=device)
    assert w.multinomial(1).cpu().numpy().tolist() == [1]
    assert torch.multinomial(w, 5, True).cpu().numpy().tolist() == [1] * 5
    e = torch.multinomial(torch.ones(0, 4, device=device), 2)
    assert e.shape == (0, 2)
    d = torch.multinomial(torch.ones(3, dtype=torch.float64, device=device),
                          3)
    assert sorted(d.cpu().numpy().tolist()) == [0, 1, 2]


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        torch.multinomial(torch.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="multinomial only supports "
                       "floating-point dtypes for input, got: Long"):
        torch.multinomial(torch.ones(3, dtype=torch.int64), 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0"):
        torch.multinomial(torch.ones(3), 0)
    with pytest.raises(RuntimeError, match=r"cannot sample n_sample > "
                       r"prob_dist.size\(-1\) samples without replacement"):
        torch.multinomial(torch.ones(3), 4)
    with pytest.raises(RuntimeError, match="probability tensor contains "
                       "either `inf`, `nan` or element < 0"):
        torch.multinomial(torch.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        torch.multinomial(torch.tensor([1.0, float("nan")]), 1)
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        torch.multinomial(torch.tensor([1.0, float("inf")]), 2)
    with pytest.raises(RuntimeError, match=r"invalid multinomial "
                       r"distribution \(sum of probabilities <= 0\)"):
        torch.multinomial(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), 1)
    with pytest.raises(RuntimeError, match=r"encountering probability "
                       r"entry < 0"):
        torch.multinomial(torch.tensor([1.0, -1.0]), 3, True)
    with pytest.raises(RuntimeError, match="infinity or NaN"):
        torch.multinomial(torch.tensor([1.0, float("inf")]), 3, True)
    with pytest.raises(RuntimeError, match=r"sum of probabilities <= 0"):
        torch.multinomial(torch.zeros(3), 3, True)


# ------------------------------------------------------------ bernoulli


def test_bernoulli_rates(device):
    n = 40000
    for dt in (torch.float32, torch.float64, torch.float16):
        p = torch.full((n,), 0.3, dtype=dt, device=device)
        b = torch.bernoulli(p, generator=gen(device, 10))
        assert b.dtype == dt
        v = b.cpu().numpy().astype(np.float64)
        assert set(np.unique(v)) <= {0.0, 1.0}
        assert abs(v.mean() - 0.3) < 5 * math.sqrt(0.21 / n)
    # per-element probabilities
    p = torch.tensor([0.0, 1.0, 0.5], device=device).expand(n, 3)
    v = torch.bernoulli(p).cpu().numpy()
    assert (v[:, 0] == 0).all() and (v[:, 1] == 1).all()
    assert abs(v[:, 2].mean() - 0.5) < 5 * math.sqrt(0.25 / n)


def test_bernoulli_scalar_p_and_inplace(device):
    n = 40000
    x = torch.empty(n, device=device)
    b = torch.bernoulli(x, 0.8, generator=gen(device, 11))
    v = b.cpu().numpy()
    assert abs(v.mean() - 0.8) < 5 * math.sqrt(0.16 / n)
    y = torch.empty(200, 200, device=device)
    assert y.bernoulli_(0.25, generator=gen(device, 12)) is y
    v = y.cpu().numpy()
    assert abs(v.mean() - 0.25) < 5 * math.sqrt(0.1875 / v.size)
    # a tensor p broadcast over self; an integer self
    z = torch.empty(n, 2, dtype=torch.int64, device=device)
    z.bernoulli_(torch.tensor([0.1, 0.9], device=device))
    v = z.cpu().numpy()
    assert abs(v[:, 0].mean() - 0.1) < 5 * math.sqrt(0.09 / n)
    assert abs(v[:, 1].mean() - 0.9) < 5 * math.sqrt(0.09 / n)
    assert torch.ones(5, device=device).bernoulli(0.0).sum().item() == 0
    t = torch.rand(10, device=device)
    assert t.bernoulli().shape == (10,)


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in "
                       r"\[0, 1\], but got p=1.5"):
        torch.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        torch.bernoulli(torch.tensor([0.5, 2.0]))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.bernoulli(torch.ones(3, dtype=torch.int64))


def test_bernoulli_reproducible(device):
    p = torch.rand(1000, device=device)
    a = torch.bernoulli(p, generator=gen(device, 13)).cpu().numpy()
    b = torch.bernoulli(p, generator=gen(device, 13)).cpu().numpy()
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------- normal


def check_moments(v, mean, std, n_se=5.0):
    v = np.asarray(v, dtype=np.float64).ravel()
    n = v.size
    assert abs(v.mean() - mean) < n_se * std / math.sqrt(n)
    # the variance's standard error for a normal: var sqrt(2 / n)
    assert abs(v.var() - std ** 2) < n_se * std ** 2 * math.sqrt(2.0 / n)


def test_normal_forms(device):
    g = gen(device, 14)
    a = torch.normal(2.0, 3.0, (200, 100), generator=g, device=device)
    assert a.shape == (200, 100) and a.dtype == torch.float32
    check_moments(a.cpu().numpy(), 2.0, 3.0)
    mean = torch.full((40000,), -1.0, device=device)
    check_moments(torch.normal(mean, 0.5, generator=g).cpu().numpy(),
                  -1.0, 0.5)
    std = torch.full((40000,), 2.0, dtype=torch.float64, device=device)
    b = torch.normal(4.0, std, generator=g)
    assert b.dtype == torch.float64
    check_moments(b.cpu().numpy(), 4.0, 2.0)
    # tensors broadcast: mean per column, std per row
    m = torch.tensor([0.0, 10.0], device=device)
    s = torch.full((30000, 1), 1.0, device=device)
    c = torch.normal(m, s, generator=g)
    assert c.shape == (30000, 2)
    v = c.cpu().numpy()
    check_moments(v[:, 0], 0.0, 1.0)
    check_moments(v[:, 1], 10.0, 1.0)
    z = torch.normal(0.0, 0.0, (3,), device=device)
    assert (z.cpu().numpy() == 0).all()
    assert torch.normal(0.0, 1.0, (0,), device=device).shape == (0,)


def test_normal_grad():
    mean = torch.zeros(5, requires_grad=True)
    std = torch.ones(5, requires_grad=True)
    out = torch.normal(mean, std, generator=gen("cpu", 15))
    out.sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones(5))
    # d out / d std is the standard normal number drawn
    z = torch.randn(5, generator=gen("cpu", 15)).numpy()
    np.testing.assert_allclose(std.grad.numpy(), z, rtol=1e-6)


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but "
                       "found std -1"):
        torch.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="normal expects all elements of "
                       "std >= 0.0"):
        torch.normal(torch.zeros(2), torch.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.empty(3).normal_(0, -2)


# -------------------------------------------------------------- poisson


@pytest.mark.parametrize("rate", [0.5, 4.0, 9.9, 10.0, 30.0, 500.0])
def test_poisson_moments(device, rate):
    n = 40000
    r = torch.full((n,), rate, device=device)
    v = torch.poisson(r, gen(device, 16)).cpu().numpy().astype(np.float64)
    assert (v == np.floor(v)).all() and v.min() >= 0
    assert abs(v.mean() - rate) < 5 * math.sqrt(rate / n)
    # the variance of a Poisson count is its rate
    assert abs(v.var() - rate) < 6 * rate * math.sqrt(2.0 / n) + \
        6 * math.sqrt(rate / n)


def test_poisson_small_rate_counts():
    """P(k) for rate 1.5 matches the Poisson probabilities."""
    n, rate = 50000, 1.5
    v = torch.poisson(torch.full((n,), rate), gen("cpu", 17)).numpy()
    k = np.arange(6)
    pk = np.exp(-rate) * rate ** k / np.array([math.factorial(i) for i in k])
    counts = np.bincount(v.astype(np.int64), minlength=7)
    observed = np.append(counts[:6], counts[6:].sum())
    expected = np.append(pk, 1 - pk.sum()) * n
    assert chi2(observed, expected) < chi2_bound(6)


def test_poisson_dtypes_zero_and_errors(device):
    r = torch.tensor([0.0, 3.0, 0.0, 250.0], dtype=torch.float64,
                     device=device)
    v = torch.poisson(r).cpu().numpy()
    assert v[0] == 0 and v[2] == 0 and v.dtype == np.float64
    for dt in (torch.float16, torch.bfloat16):
        t = torch.poisson(torch.full((100,), 2.0, dtype=dt, device=device))
        assert t.dtype == dt
    assert torch.poisson(torch.ones(0, device=device)).shape == (0,)
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected "
                       "rate to be non-negative"):
        torch.poisson(torch.tensor([1.0, -1.0], device=device))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.poisson(torch.ones(2, dtype=torch.int64))


# ----------------------------------------------------- in-place draws


def test_uniform_(device):
    x = torch.empty(300, 200, device=device)
    assert x.uniform_(-2.0, 3.0, generator=gen(device, 18)) is x
    v = x.cpu().numpy().astype(np.float64)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 5 * 5 / math.sqrt(12 * v.size)
    assert abs(v.var() - 25 / 12) < 0.05
    torch.empty(3, device=device).uniform_(**{"from": 1.0, "to": 2.0})
    # a non-contiguous target is filled in full
    base = torch.zeros(50, 40, device=device)
    view = base.t()
    view.uniform_(5.0, 6.0)
    assert (base.cpu().numpy() >= 5.0).all()
    h = torch.empty(1000, dtype=torch.float16, device=device).uniform_()
    assert h.cpu().numpy().max() < 1.0


def test_normal_(device):
    x = torch.empty(400, 100, dtype=torch.float64, device=device)
    x.normal_(1.0, 2.0, generator=gen(device, 19))
    check_moments(x.cpu().numpy(), 1.0, 2.0)
    b = torch.empty(20000, dtype=torch.bfloat16, device=device).normal_()
    check_moments(b.float().cpu().numpy(), 0.0, 1.0, n_se=8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64,
                                   torch.float16, torch.bfloat16])
def test_exponential_(device, dtype):
    n, lambd = 40000, 2.5
    x = torch.empty(n, dtype=dtype, device=device)
    assert x.exponential_(lambd, generator=gen(device, 20)) is x
    v = x.float().cpu().numpy().astype(np.float64)
    assert v.min() >= 0
    mean = 1 / lambd
    tol = 5 * mean / math.sqrt(n) + (0.01 if dtype in (torch.float16,
                                                       torch.bfloat16) else 0)
    assert abs(v.mean() - mean) < tol
    # P(X > 1 / lambd) = 1 / e
    frac = (v > mean).mean()
    assert abs(frac - math.exp(-1)) < 5 * math.sqrt(0.25 / n) + (
        0.02 if dtype == torch.bfloat16 else 0)


def test_random_(device):
    x = torch.empty(5000, dtype=torch.int64, device=device)
    x.random_(10, generator=gen(device, 21))
    v = x.cpu().numpy()
    assert v.min() == 0 and v.max() == 9
    x.random_(-3, 3)
    v = x.cpu().numpy()
    assert v.min() == -3 and v.max() == 2
    x.random_()
    v = x.cpu().numpy()
    assert v.min() >= 0 and (v > 2 ** 62).any()
    u = torch.empty(5000, dtype=torch.uint8, device=device).random_()
    assert u.cpu().numpy().max() == 255
    f = torch.empty(5000, device=device).random_()
    vf = f.cpu().numpy()
    assert vf.min() >= 0 and vf.max() <= 2 ** 24 and (vf > 2 ** 23).any()
    assert (vf == np.floor(vf)).all()
    b = torch.empty(1000, dtype=torch.bool, device=device).random_()
    assert 300 < int(b.sum().item()) < 700
    y = torch.empty(10, dtype=torch.int32, device=device)
    y.random_(5, None)
    assert y.cpu().numpy().min() >= 5


def test_inplace_errors():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a "
                       r"\[from, to\) range, but found from=2 > to=1"):
        torch.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.empty(3, dtype=torch.int64).uniform_()
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > "
                       "0.0, but found lambda=0"):
        torch.empty(3).exponential_(0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be "
                       "less than 'to'"):
        torch.empty(3, dtype=torch.int64).random_(4, 2)
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.uniform_()


def test_inplace_empty_tensors(device):
    for fn in (lambda t: t.uniform_(), lambda t: t.normal_(),
               lambda t: t.exponential_(), lambda t: t.random_(3),
               lambda t: t.bernoulli_(0.5)):
        t = torch.empty(0, 3, device=device)
        assert fn(t).shape == (0, 3)


# ------------------------------------------------- CPU == CUDA numbers


def both(fn, seed=31):
    """fn(device, generator) on the CPU and on CUDA, as NumPy arrays
    (bfloat16 widened to float32, exactly: NumPy has no bfloat16)."""
    out = [fn(d, gen(d, seed)) for d in ("cpu", "cuda")]
    return [np.asarray((t.float() if t.dtype == torch.bfloat16 else t)
                       .cpu().numpy()) for t in out]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   torch.bfloat16, torch.float64])
def test_cpu_cuda_same_uniform_normal_exponential(dtype):
    for fn in (lambda d, g: torch.rand(1001, dtype=dtype, device=d,
                                       generator=g),
               lambda d, g: torch.empty(1001, dtype=dtype, device=d)
               .uniform_(-1, 4, generator=g),
               lambda d, g: torch.empty(1001, dtype=dtype, device=d)
               .exponential_(3.0, generator=g)):
        a, b = both(fn)
        if dtype == torch.float64:
            np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)
        else:
            np.testing.assert_array_equal(a, b)
    if dtype != torch.float64:
        a, b = both(lambda d, g: torch.randn(1001, dtype=dtype, device=d,
                                             generator=g))
        np.testing.assert_array_equal(a, b)


@pytest.mark.cuda
def test_cpu_cuda_same_integers():
    for lo, hi in ((0, 10), (-7, 1000), (-(1 << 40), 1 << 41),
                   (-(1 << 63), (1 << 63) - 1)):
        a, b = both(lambda d, g: torch.randint(lo, hi, (1003,), device=d,
                                               generator=g))
        np.testing.assert_array_equal(a, b)
    a, b = both(lambda d, g: torch.empty(999, dtype=torch.uint8, device=d)
                .random_(generator=g))
    np.testing.assert_array_equal(a, b)


@pytest.mark.cuda
def test_cpu_cuda_same_bernoulli_randperm_multinomial():
    p = np.random.default_rng(0).random((7, 30)).astype(np.float32)
    a, b = both(lambda d, g: torch.bernoulli(torch.tensor(p, device=d),
                                             generator=g))
    np.testing.assert_array_equal(a, b)
    a, b = both(lambda d, g: torch.randperm(5000, device=d, generator=g))
    np.testing.assert_array_equal(a, b)
    for repl, k in ((True, 50), (False, 30), (False, 5)):
        a, b = both(lambda d, g: torch.multinomial(
            torch.tensor(p, device=d), k, repl, generator=g))
        np.testing.assert_array_equal(a, b)


@pytest.mark.cuda
def test_cpu_cuda_same_poisson():
    rates = np.concatenate([np.full(2000, 0.7), np.full(2000, 6.0),
                            np.full(2000, 40.0), np.full(2000, 1e4)])
    a, b = both(lambda d, g: torch.poisson(
        torch.tensor(rates, device=d), g))
    # exp / log may differ in their last bit between the C library and
    # CUDA: a count may differ where a test lands within an ulp
    assert (a != b).mean() < 1e-3


@pytest.mark.cuda
def test_cpu_cuda_same_default_stream():
    torch.manual_seed(77)
    a = torch.randint(0, 100, (513,)).numpy()
    c = torch.randperm(100).numpy()
    torch.manual_seed(77)
    b = torch.randint(0, 100, (513,), device="cuda").cpu().numpy()
    d = torch.randperm(100, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, d)


# ---------------------------------------------------- CPU thread pool


def test_draws_do_not_depend_on_threads():
    """Large draws are cut over the CPU's pool at multiples of 4 elements,
    each part starting at its own counter: the numbers are the same with
    one thread or several, and the same as a small draw's prefix."""
    old = torch.get_num_threads()
    n = 300001

    def draws():
        out = []
        out.append(torch.randint(-5, 1 << 40, (n,), generator=gen("cpu", 1)))
        out.append(torch.empty(n).exponential_(1.5,
                                               generator=gen("cpu", 2)))
        out.append(torch.poisson(torch.full((n,), 3.0), gen("cpu", 3)))
        out.append(torch.empty(n, dtype=torch.int32).random_(
            generator=gen("cpu", 4)))
        return [t.numpy().copy() for t in out]

    try:
        torch.set_num_threads(1)
        one = draws()
        torch.set_num_threads(4)
        four = draws()
    finally:
        torch.set_num_threads(old)
    for a, b in zip(one, four):
        np.testing.assert_array_equal(a, b)
    small = torch.randint(-5, 1 << 40, (10,), generator=gen("cpu", 1))
    np.testing.assert_array_equal(small.numpy(), one[0][:10])


def test_generator_draws_from_threads_take_every_counter():
    """Draws from several threads at once each take their own counters
    under the generators' lock: the offset ends at the sum of them
    all."""
    import threading
    g = torch.Generator().manual_seed(0)
    sizes = [5, 64, 1001, 7]
    per_thread = 50
    results = [[] for _ in range(len(sizes))]

    def work(i):
        for _ in range(per_thread):
            results[i].append(torch.rand(sizes[i], generator=g).numpy())

    threads = [threading.Thread(target=work, args=(i,))
               for i in range(len(sizes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = g.get_state().numpy()
    offset = int.from_bytes(bytes(state[8:]), "little")
    assert offset == per_thread * sum((n + 3) // 4 for n in sizes)
    assert all(len(r) == per_thread for r in results)
