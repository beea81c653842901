"""Autograd semantics that follow torch beyond the derivative formulas:
only floating tensors take part (casts to integer or bool dtypes, integer
results), index tensors saved with their versions and NumPy/list indices
copied when indexing, torch's values of norm's and pow's gradients where
the naive formula divides by zero, and a .grad that always fits its
tensor after `.data` is replaced."""
import math

import numpy as np
import pytest

import pygpu


def leaf(a, device, dtype=None):
    return pygpu.tensor(np.asarray(a, dtype=dtype or np.float64),
                        device=device, requires_grad=True)


def host(t):
    return t.detach().cpu().numpy()


# ------------------------------------------ only floating tensors take part

CASTS = [
    ("to_int64", lambda x: x.to(pygpu.int64), np.int64),
    ("to_device_int64", lambda x: x.to(x.device, pygpu.int64), np.int64),
    ("to_dtype_kw", lambda x: x.to(dtype=pygpu.int32), np.int32),
    ("long", lambda x: x.long(), np.int64),
    ("int", lambda x: x.int(), np.int32),
    ("bool", lambda x: x.bool(), np.bool_),
    ("type_int32", lambda x: x.type(pygpu.int32), np.int32),
    ("type_str", lambda x: x.type("torch.LongTensor"), np.int64),
    ("tensor_dtype", lambda x: pygpu.tensor(x, dtype=pygpu.int64), np.int64),
    ("as_tensor_dtype", lambda x: pygpu.as_tensor(x, dtype=pygpu.int64),
     np.int64),
]


@pytest.mark.parametrize("name,cast,np_dtype", CASTS,
                         ids=[c[0] for c in CASTS])
def test_casts_to_integer_or_bool_do_not_require_grad(device, name, cast,
                                                      np_dtype, rng):
    a = rng.standard_normal(7) * 4
    a[2] = 0.0
    x = leaf(a, device)
    r = cast(x)
    assert r.requires_grad is False
    assert r.grad_fn is None
    assert r.is_leaf
    if name != "type_str":  # torch.LongTensor names a CPU tensor
        assert r.device == x.device
    np.testing.assert_array_equal(host(r), a.astype(np_dtype))
    # ops on the cast result do not require grad either
    s = r.long() * 2 if np_dtype is not np.bool_ else r.logical_not()
    assert s.requires_grad is False and s.grad_fn is None


@pytest.mark.parametrize("dtype", [pygpu.float32, pygpu.float16,
                                   pygpu.float64])
def test_casts_to_floating_dtypes_keep_autograd(device, dtype, rng):
    a = rng.standard_normal(5)
    x = leaf(a, device, np.float32)
    y = x.to(dtype)
    assert y.requires_grad
    if dtype != pygpu.float32:
        assert y.grad_fn.name() == "ToCopyBackward0"
    g = rng.standard_normal(5)
    y.backward(pygpu.tensor(g, device=device).to(dtype))
    tol = 1e-2 if dtype == pygpu.float16 else 1e-6
    np.testing.assert_allclose(host(x.grad), g, rtol=tol, atol=tol)
    assert x.grad.dtype == pygpu.float32


INTEGER_RESULTS = [
    ("argmax", lambda x: x.argmax()),
    ("argmin_dim", lambda x: x.argmin(dim=1)),
    ("max_dim_indices", lambda x: x.max(1)[1]),
    ("min_dim_indices", lambda x: x.min(dim=0).indices),
    ("gt", lambda x: x > 0),
    ("eq", lambda x: x == x),
    ("ne_tensor", lambda x: x.ne(x * 2)),
    ("le_method", lambda x: x.le(0.5)),
    ("isnan", lambda x: x.isnan()),
    ("isfinite", lambda x: x.isfinite()),
    ("any", lambda x: (x > 0).any()),
    ("sum_int64", lambda x: x.sum(dtype=pygpu.int64)),
    ("sum_dim_int32", lambda x: x.sum(1, dtype=pygpu.int32)),
    ("cumsum_int64", lambda x: x.cumsum(0, dtype=pygpu.int64)),
    ("prod_int64", lambda x: x.prod(dtype=pygpu.int64)),
]


@pytest.mark.parametrize("name,op", INTEGER_RESULTS,
                         ids=[c[0] for c in INTEGER_RESULTS])
def test_integer_and_bool_results_never_require_grad(device, name, op, rng):
    x = leaf(rng.standard_normal((3, 4)) * 3, device)
    r = op(x)
    assert not r.dtype.is_floating_point
    assert r.requires_grad is False
    assert r.grad_fn is None


REQUIRES_GRAD_WORDS = ("only Tensors of floating point and complex dtype "
                       "can require gradients")


@pytest.mark.parametrize("dtype", [pygpu.int64, pygpu.int32, pygpu.bool,
                                   pygpu.uint8])
def test_integer_tensors_cannot_require_grad(device, dtype):
    t = pygpu.zeros(3, dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match=REQUIRES_GRAD_WORDS):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match=REQUIRES_GRAD_WORDS):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match=REQUIRES_GRAD_WORDS):
        pygpu.ones(2, dtype=dtype, device=device, requires_grad=True)
    assert t.requires_grad_(False) is t  # turning it off is fine
    assert t.requires_grad is False


def test_integer_tensor_written_from_a_tensor_that_requires_grad(device,
                                                                 rng):
    t = pygpu.zeros(5, dtype=pygpu.int64, device=device)
    v = leaf(rng.uniform(1, 9, 2), device)
    t[pygpu.tensor([1, 3], device=device)] = v
    assert t.requires_grad is False and t.grad_fn is None
    want = np.zeros(5, np.int64)
    want[[1, 3]] = host(v).astype(np.int64)
    np.testing.assert_array_equal(host(t), want)


def test_data_of_a_tensor_that_requires_grad_must_be_floating(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="data set to a tensor that "
                       "requires gradients must be floating point or "
                       "complex dtype"):
        x.data = pygpu.tensor([1, 2], device=device)
    assert x.dtype == pygpu.float64


# --------------------------------------- index tensors saved with versions

def index_grad(shape, pick, g):
    """float64 reference: g added at the places pick selects."""
    z = np.zeros(shape)
    np.add.at(z, pick, g)
    return z


KEYS = [
    ("int", lambda i, m: (i,)),
    ("second_dim", lambda i, m: (slice(None), i)),
    ("two_indices", lambda i, m: (i, i)),
    ("mask", lambda i, m: (m,)),
]


@pytest.mark.parametrize("kind,make", KEYS, ids=[k[0] for k in KEYS])
def test_index_gradient_and_index_changed_in_place(device, kind, make, rng):
    a = rng.standard_normal((4, 4))
    i_np = np.array([2, 0, 2])
    m_np = rng.standard_normal((4, 4)) > 0
    i = pygpu.tensor(i_np, device=device)
    m = pygpu.tensor(m_np, device=device)
    key = make(i, m)
    np_key = make(i_np, m_np)
    x = leaf(a, device)
    y = x[key if len(key) > 1 else key[0]]
    g = rng.standard_normal(tuple(y.shape))
    y.backward(pygpu.tensor(g, device=device), retain_graph=True)
    want = index_grad(a.shape, np_key if len(np_key) > 1 else np_key[0], g)
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-12, atol=1e-12)
    # the index changed in place after the op: torch's error, not a
    # gradient put at the new places
    x.grad = None
    if kind == "mask":
        m.logical_not_() if hasattr(m, "logical_not_") else m.fill_(True)
    else:
        i.add_(1)
    with pytest.raises(RuntimeError,
                       match="one of the variables needed for gradient "
                             "computation has been modified by an inplace "
                             r"operation: \[.* \[[\d, ]+\]\], which is needed "
                             r"by IndexBackward0, is at version \d+; "
                             r"expected version \d+ instead"):
        y.backward(pygpu.tensor(g, device=device))
    assert x.grad is None


def test_setitem_index_changed_in_place(device, rng):
    x = leaf(rng.standard_normal(5), device)
    v = leaf(rng.standard_normal(2), device)
    i = pygpu.tensor([4, 1], device=device)
    y = x * 1.0
    y[i] = v
    g = rng.standard_normal(5)
    y.backward(pygpu.tensor(g, device=device), retain_graph=True)
    gx = g.copy()
    gx[[4, 1]] = 0
    np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)
    np.testing.assert_allclose(host(v.grad), g[[4, 1]], rtol=1e-12)
    i[0] = 0
    with pytest.raises(RuntimeError, match="modified by an inplace "
                       "operation: .*IndexPutBackward0"):
        y.backward(pygpu.tensor(g, device=device))


@pytest.mark.parametrize("form", ["numpy", "list", "nested_list",
                                  "numpy_in_tuple", "list_second_dim"])
def test_numpy_and_list_indices_are_copied_when_indexing(device, form, rng):
    a = rng.standard_normal((5, 3))
    x = leaf(a, device)
    if form == "numpy":
        idx = np.array([3, 0, 3])
        key, pick = idx, np.array([3, 0, 3])
    elif form == "list":
        idx = [3, 0, 3]
        key, pick = idx, [3, 0, 3]
    elif form == "nested_list":
        idx = [[3, 0, 3], [2, 2, 1]]
        key, pick = idx, ([3, 0, 3], [2, 2, 1])
    elif form == "numpy_in_tuple":
        idx = np.array([1, 1, 4])
        key, pick = (idx, 2), (np.array([1, 1, 4]), 2)
    else:
        idx = [2, 0]
        key, pick = (slice(None), idx), (slice(None), [2, 0])
    y = x[key]
    # mutate the index after the op: the gradient must not follow it
    if isinstance(idx, np.ndarray):
        idx[:] = 0
    elif isinstance(idx[0], list):
        idx[0][0] = 0
        idx[1].append(0)
    else:
        idx[0] = 1
    g = rng.standard_normal(tuple(y.shape))
    y.backward(pygpu.tensor(g, device=device))
    np.testing.assert_allclose(host(x.grad), index_grad(a.shape, pick, g),
                               rtol=1e-12, atol=1e-12)


def test_setitem_numpy_index_copied(device, rng):
    x = leaf(rng.standard_normal(6), device)
    v = leaf(rng.standard_normal(2), device)
    idx = np.array([5, 2])
    y = x * 1.0
    y[idx] = v
    idx[:] = 0
    g = rng.standard_normal(6)
    y.backward(pygpu.tensor(g, device=device))
    gx = g.copy()
    gx[[5, 2]] = 0
    np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)
    np.testing.assert_allclose(host(v.grad), g[[5, 2]], rtol=1e-12)


def test_index_select_and_gather_index_changed_in_place(device, rng):
    x = leaf(rng.standard_normal((3, 4)), device)
    i = pygpu.tensor([2, 0], device=device)
    y = x.index_select(1, i)
    i.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        y.sum().backward()


# ------------------------------------------------- norm and pow at zeros

P_VALUES = [2, "fro", 1, math.inf, -math.inf, 0.5, 1.5, 3, -1]


def norm_grad_reference(a, p, axis, g):
    """torch's norm gradient in float64, reducing over axis (kept)."""
    ab = np.abs(a)
    if p in (2, "fro"):
        n = np.sqrt((a * a).sum(axis, keepdims=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(n == 0, 0.0, a / n)
        return g * r
    if p == 1:
        return g * np.sign(a)
    if np.isinf(p):
        n = ab.max(axis, keepdims=True) if p > 0 else \
            ab.min(axis, keepdims=True)
        m = (ab == n).astype(np.float64)
        return np.sign(a) * g / m.sum(axis, keepdims=True) * m
    with np.errstate(divide="ignore", invalid="ignore"):
        n = (ab ** p).sum(axis, keepdims=True) ** (1.0 / p)
        s = np.where(a == 0, 0.0, np.sign(a) * ab ** (p - 1))
        if p < 1:
            return s * g * n ** (1 - p)
        return s * np.where(n == 0, 0.0, g / n ** (p - 1))


@pytest.mark.parametrize("p", P_VALUES, ids=[str(p) for p in P_VALUES])
def test_norm_gradient_at_zero_input_is_torchs(device, p, rng):
    x = leaf(np.zeros(6), device)
    n = x.norm(p)
    assert host(n) == 0.0
    assert n.grad_fn.name() == "LinalgVectorNormBackward0"
    n.backward()
    np.testing.assert_array_equal(host(x.grad), np.zeros(6))
    # the function form, over a dim, with rows of zeros among others
    a = rng.standard_normal((4, 5))
    a[1] = 0.0
    a[3, ::2] = 0.0
    for keepdim in (False, True):
        x = leaf(a, device)
        n = pygpu.norm(x, p, dim=1, keepdim=keepdim)
        g = rng.standard_normal(tuple(n.shape))
        n.backward(pygpu.tensor(g, device=device))
        gk = g if keepdim else g[:, None]
        want = norm_grad_reference(a, p, 1, gk)
        assert np.isfinite(want).all()
        np.testing.assert_allclose(host(x.grad), want, rtol=1e-10,
                                   atol=1e-12)


def test_norm_zero_p_has_no_gradient(device, rng):
    x = leaf(rng.standard_normal(5), device)
    n = x.norm(0)
    assert host(n) == 5.0
    n.backward()
    assert x.grad is None  # torch: p = 0 gives no gradient


@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 0.5, 3, -1.5])
def test_norm_gradient_matches_finite_differences(device, p, rng):
    a = rng.standard_normal((3, 4)) + np.sign(rng.standard_normal((3, 4)))
    x = leaf(a, device)
    assert pygpu.autograd.gradcheck(lambda t: t.norm(p, dim=(0, 1)), (x,))
    assert pygpu.autograd.gradcheck(lambda t: t.norm(p, dim=0), (x,))


def test_norm_float32_and_non_contiguous_input(device, rng):
    a = rng.standard_normal((5, 4)).astype(np.float32)
    a[:, 2] = 0.0
    x = pygpu.tensor(a, device=device, requires_grad=True)
    n = x.T.norm(dim=1)  # rows of x.T: a non-contiguous input
    n.backward(pygpu.ones(4, device=device))
    want = norm_grad_reference(a.T.astype(np.float64), 2, 1,
                               np.ones((4, 1))).T
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-5, atol=1e-6)


def test_norm_backward_checks_its_input_version(device, rng):
    x = leaf(rng.standard_normal(4), device)
    y = x * 1.0
    n = y.norm()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        n.backward()


def test_pow_gradients_at_a_zero_base(device, rng):
    a = np.array([0.0, 0.0, 0.0, 1.5, 2.0, 0.0, 0.7])
    b = np.array([0.0, 2.0, 0.5, -1.3, 0.0, -1.0, 3.0])
    x, e = leaf(a, device), leaf(b, device)
    y = x ** e
    g = rng.standard_normal(a.shape)
    y.backward(pygpu.tensor(g, device=device))
    with np.errstate(divide="ignore", invalid="ignore"):
        ga = np.where(b == 0, 0.0, g * b * a ** (b - 1))
        gb = np.where((a == 0) & (b >= 0), 0.0, g * a ** b * np.log(a))
    assert not np.isnan(ga).any() and not np.isnan(gb).any()
    np.testing.assert_allclose(host(x.grad), ga, rtol=1e-12)
    np.testing.assert_allclose(host(e.grad), gb, rtol=1e-12)


def test_pow_exponent_gradient_with_a_number_base(device, rng):
    b = np.array([0.0, 2.0, -1.0, 0.5, 3.0])
    g = rng.standard_normal(b.shape)
    for base in (0.0, 2.5):
        e = leaf(b, device)
        y = base ** e
        y.backward(pygpu.tensor(g, device=device))
        with np.errstate(divide="ignore", invalid="ignore"):
            want = g * base ** b * np.log(base)
            if base == 0.0:
                want = np.where(b >= 0, 0.0, want)
        assert not np.isnan(want).any()
        np.testing.assert_allclose(host(e.grad), want, rtol=1e-12)


def test_pow_broadcast_exponent_at_zero_base(device, rng):
    a = np.array([[0.0, 1.2, 0.0], [0.4, 0.0, 2.0]])
    b = np.array([1.0, 0.0, 2.5])
    x, e = leaf(a, device), leaf(b, device)
    (x ** e).sum().backward()
    with np.errstate(divide="ignore", invalid="ignore"):
        ga = np.where(b == 0, 0.0, b * a ** (b - 1))
        gb = np.where((a == 0) & (b >= 0), 0.0, a ** b * np.log(a)).sum(0)
    np.testing.assert_allclose(host(x.grad), ga, rtol=1e-12)
    np.testing.assert_allclose(host(e.grad), gb, rtol=1e-12)


# ------------------------------------------------ .data of another shape

ACCUMULATE_WORDS = (r"Function AccumulateGrad returned an invalid gradient "
                    r"at index 0 - got \[3\] but expected shape compatible "
                    r"with \[5\]")


def test_data_of_another_shape_then_backward_over_the_old_graph(device, rng):
    x = leaf(rng.standard_normal(3), device)
    y = (x * 2.0).sum()
    x.data = pygpu.zeros(5, dtype=pygpu.float64, device=device)
    assert tuple(x.shape) == (5,)
    with pytest.raises(RuntimeError, match=ACCUMULATE_WORDS):
        y.backward()
    assert x.grad is None
    # a graph recorded after the change accumulates as usual
    b = rng.standard_normal(5)
    (x * pygpu.tensor(b, device=device)).sum().backward()
    np.testing.assert_allclose(host(x.grad), b, rtol=1e-12)
    assert y.grad_fn.next_functions[0][0].next_functions[0][0].name() == \
        "AccumulateGrad"


def test_data_of_another_shape_and_back(device, rng):
    a = rng.standard_normal(3)
    x = leaf(a, device)
    y = (x * x).sum()
    old = x.data
    x.data = pygpu.zeros(5, dtype=pygpu.float64, device=device)
    x.data = old
    y.backward()
    np.testing.assert_allclose(host(x.grad), 2 * a, rtol=1e-12)


def test_data_of_another_shape_with_a_grad_of_the_old_shape(device, rng):
    x = leaf(rng.standard_normal(3), device)
    y = (x * 3.0).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(host(x.grad), np.full(3, 3.0))
    x.data = pygpu.zeros(1, dtype=pygpu.float64, device=device)
    # torch keeps the old .grad ...
    assert tuple(x.grad.shape) == (3,)
    # ... but nothing accumulates into it: neither the old graph's
    # gradient nor a new one's (which would broadcast into it)
    with pytest.raises(RuntimeError, match="AccumulateGrad"):
        y.backward()
    with pytest.raises(RuntimeError, match="AccumulateGrad"):
        (x * 2.0).sum().backward()
    np.testing.assert_allclose(host(x.grad), np.full(3, 3.0))
    x.grad = None
    (x * 2.0).sum().backward()
    np.testing.assert_allclose(host(x.grad), [2.0])


def test_data_of_another_shape_that_the_gradient_sums_to(device, rng):
    x = leaf(rng.standard_normal(3), device)
    y = (x * pygpu.tensor([1.0, 2.0, 4.0], device=device)).sum()
    x.data = pygpu.zeros(1, dtype=pygpu.float64, device=device)
    y.backward()  # [3] sums to [1], as torch's validate_outputs does
    np.testing.assert_allclose(host(x.grad), [7.0])


def test_assigned_grad_must_match_the_tensor(device):
    x = leaf([1.0, 2.0, 3.0], device)
    with pytest.raises(RuntimeError,
                       match="assigned grad has data of a different size"):
        x.grad = pygpu.zeros(4, dtype=pygpu.float64, device=device)
    x.data = pygpu.zeros(5, dtype=pygpu.float64, device=device)
    with pytest.raises(RuntimeError,
                       match="assigned grad has data of a different size"):
        x.grad = pygpu.zeros(3, dtype=pygpu.float64, device=device)
    with pytest.raises(RuntimeError,
                       match="assigned grad has data of a different type"):
        x.grad = pygpu.zeros(5, dtype=pygpu.float32, device=device)
    x.grad = pygpu.ones(5, dtype=pygpu.float64, device=device)
    assert tuple(x.grad.shape) == (5,)
