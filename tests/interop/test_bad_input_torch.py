"""Bad input answered as PyTorch answers it: zero-sized Linear layers,
optimizer hyper-parameters and parameter lists, negative indices of the
gather-like ops, loss targets and class weights of the wrong shape,
MemoryError messages, malformed files given to pygpu.load (with a
mutation fuzz), and the CUDA array interface without a driver."""
import io
import math
import pickle
import warnings

import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.nn import functional as F

from conftest import HAS_CUDA


def host(t):
    return t.detach().cpu().to(pygpu.float64).numpy()


# -- nn.Linear with a zero-sized side -----------------------------------------

def test_linear_with_no_inputs(device, rng):
    with pytest.warns(UserWarning, match="Initializing zero-element tensors "
                                         "is a no-op"):
        lin = nn.Linear(0, 3, device=device)
    assert lin.weight.shape == (3, 0)
    # fan_in 0: the bias is drawn from U(-0, 0), as torch's
    np.testing.assert_array_equal(host(lin.bias), np.zeros(3))
    b = rng.standard_normal(3).astype(np.float32)
    with pygpu.no_grad():
        lin.bias.copy_(pygpu.tensor(b, device=device))
    x = pygpu.empty(4, 0, device=device, requires_grad=True)
    y = lin(x)
    assert y.shape == (4, 3)
    np.testing.assert_array_equal(host(y), np.broadcast_to(b, (4, 3)))
    y.sum().backward()
    np.testing.assert_array_equal(host(lin.bias.grad), np.full(3, 4.0))
    assert lin.weight.grad.shape == (3, 0) and x.grad.shape == (4, 0)


def test_linear_with_no_outputs(device, rng):
    with pytest.warns(UserWarning, match="zero-element"):
        lin = nn.Linear(5, 0, device=device)
    assert lin.weight.shape == (0, 5) and lin.bias.shape == (0,)
    x = pygpu.tensor(rng.standard_normal((2, 5)).astype(np.float32),
                     device=device)
    assert lin(x).shape == (2, 0)


def test_he_initialisers_skip_zero_element_tensors():
    for init in (nn.init.kaiming_uniform_, nn.init.kaiming_normal_):
        w = pygpu.empty(4, 0)
        with pytest.warns(UserWarning, match="Initializing zero-element "
                                             "tensors is a no-op"):
            assert init(w) is w
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = nn.init.kaiming_uniform_(pygpu.empty(3, 4))  # no warning
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 4)  # gain(leaky_relu, 0)
    assert 0 < np.abs(host(w)).max() <= bound


# -- optimizers ---------------------------------------------------------------

NAN = float("nan")
BAD_HYPER = [
    (optim.SGD, dict(lr=NAN), "Invalid learning rate: nan"),
    (optim.SGD, dict(lr=-0.5), "Invalid learning rate: -0.5"),
    (optim.SGD, dict(lr=0.1, momentum=NAN), "Invalid momentum value: nan"),
    (optim.SGD, dict(lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (optim.SGD, dict(lr=0.1, dampening=NAN), "Invalid dampening value: nan"),
    (optim.SGD, dict(lr=0.1, weight_decay=NAN),
     "Invalid weight_decay value: nan"),
    (optim.SGD, dict(lr=0.1, weight_decay=-1e-3),
     "Invalid weight_decay value: -0.001"),
    (optim.Adam, dict(lr=NAN), "Invalid learning rate: nan"),
    (optim.Adam, dict(eps=NAN), "Invalid epsilon value: nan"),
    (optim.Adam, dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (optim.Adam, dict(betas=(NAN, 0.999)),
     "Invalid beta parameter at index 0: nan"),
    (optim.Adam, dict(betas=(-0.1, 0.999)),
     "Invalid beta parameter at index 0: -0.1"),
    (optim.Adam, dict(betas=(0.9, NAN)),
     "Invalid beta parameter at index 1: nan"),
    (optim.Adam, dict(betas=(0.9, 1.0)),
     "Invalid beta parameter at index 1: 1.0"),
    (optim.Adam, dict(weight_decay=NAN), "Invalid weight_decay value: nan"),
    (optim.AdamW, dict(lr=NAN), "Invalid learning rate: nan"),
    (optim.AdamW, dict(eps=NAN), "Invalid epsilon value: nan"),
    (optim.AdamW, dict(betas=(NAN, 0.9)),
     "Invalid beta parameter at index 0: nan"),
    (optim.AdamW, dict(weight_decay=NAN), "Invalid weight_decay value: nan"),
    (optim.AdamW, dict(weight_decay=-1.0),
     "Invalid weight_decay value: -1.0"),
]


@pytest.mark.parametrize("cls,kw,msg", BAD_HYPER,
                         ids=[f"{c.__name__}-{m}" for c, _, m in BAD_HYPER])
def test_optimizer_hyper_parameters(cls, kw, msg):
    p = nn.Parameter(pygpu.randn(3))
    with pytest.raises(ValueError) as e:
        cls([p], **kw)
    assert str(e.value) == msg


def test_adam_betas_must_be_a_pair():
    p = nn.Parameter(pygpu.randn(3))
    with pytest.raises(ValueError, match="betas must be a pair"):
        optim.Adam([p], betas=(0.9,))


DUPLICATE = ("optimizer contains a parameter group with duplicate "
             "parameters; in future, this will cause an error; see "
             "github.com/pytorch/pytorch/issues/40967 for more information")


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW])
def test_parameter_listed_twice_in_a_group_warns(cls):
    p, q = nn.Parameter(pygpu.randn(3)), nn.Parameter(pygpu.randn(2))
    with pytest.warns(UserWarning) as rec:
        opt = cls([p, q, p], lr=0.1)
    assert [str(w.message) for w in rec] == [DUPLICATE]
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt.add_param_group({"params": [nn.Parameter(pygpu.randn(1))] * 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls([p, q], lr=0.1)  # no warning


def test_parameter_in_two_groups_and_unordered_params():
    p, q = nn.Parameter(pygpu.randn(3)), nn.Parameter(pygpu.randn(2))
    with pytest.raises(ValueError) as e:
        optim.SGD([{"params": [p]}, {"params": [q, p]}], lr=0.1)
    assert str(e.value) == ("some parameters appear in more than one "
                            "parameter group")
    opt = optim.Adam([p])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": p})
    assert len(opt.param_groups) == 1
    with pytest.raises(TypeError, match="optimizer parameters need to be "
                                        "organized in ordered collections"):
        optim.SGD([{"params": {p, q}}], lr=0.1)


def run(opt, params, grads):
    for p, g in zip(params, grads):
        p.grad = g.clone()
    opt.step()


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.01, foreach=False),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)],
    ids=["Adam", "AdamW-per-op", "SGD"])
def test_load_state_dict_casts_state_to_the_parameters(device, rng, make):
    """A state saved from float64 parameters on the CPU loads into float32
    parameters on `device` as float32 state there (the step count left
    alone), as torch's load_state_dict casts it."""
    p0 = [rng.standard_normal(s) for s in ((3, 4), (5,))]
    g0 = [[rng.standard_normal(s) for s in ((3, 4), (5,))] for _ in range(3)]
    wide = [nn.Parameter(pygpu.tensor(v)) for v in p0]
    opt_wide = make(wide)
    for gs in g0[:2]:
        run(opt_wide, wide, [pygpu.tensor(g) for g in gs])
    sd = opt_wide.state_dict()

    narrow = [nn.Parameter(pygpu.tensor(host(p), dtype=pygpu.float32,
                                        device=device)) for p in wide]
    opt = make(narrow)
    opt.load_state_dict(sd)
    for p in narrow:
        st = opt.state[p]
        for k, v in st.items():
            if k == "step":
                assert v == 2 and type(v) is int
            else:
                assert v.dtype == pygpu.float32, k
                assert v.device == p.device, k
    # the loaded state is the saved one, rounded to float32
    for p, w in zip(narrow, wide):
        for k, v in opt.state[p].items():
            if k != "step":
                ref = host(opt_wide.state[w][k])
                np.testing.assert_allclose(host(v), ref, rtol=1e-6,
                                           atol=1e-30)
    run(opt, narrow, [pygpu.tensor(g, dtype=pygpu.float32, device=device)
                      for g in g0[2]])
    run(opt_wide, wide, [pygpu.tensor(g) for g in g0[2]])
    for p, w in zip(narrow, wide):
        assert p.dtype == pygpu.float32
        np.testing.assert_allclose(host(p), host(w), rtol=1e-5, atol=1e-6)


def test_load_state_dict_keeps_integer_parameters_state_dtype():
    """torch casts state to the parameter's dtype only for a floating
    parameter; for others it only moves it."""
    p = pygpu.zeros(3, dtype=pygpu.int64)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.load_state_dict({"state": {0: {"momentum_buffer": pygpu.ones(3)}},
                         "param_groups": opt.state_dict()["param_groups"]})
    assert opt.state[p]["momentum_buffer"].dtype == pygpu.float32


# -- negative indices of gather, scatter_add, index_select, index_add_ --------

def bounds(index, size, dim=0):
    return f"index {index} is out of bounds for dimension {dim} with size " \
        f"{size}"


@pytest.mark.parametrize("itype", [pygpu.int64, pygpu.int32])
def test_gather_refuses_negative_indices(device, rng, itype):
    x = pygpu.tensor(rng.standard_normal((4, 3)), device=device)
    ix = pygpu.tensor([[0, 1, 2], [-1, 0, 0]], dtype=itype, device=device)
    with pytest.raises(RuntimeError, match=bounds(-1, 4)):
        x.gather(0, ix)
    with pytest.raises(RuntimeError, match=bounds(-3, 3, 1)):
        pygpu.gather(x, 1, pygpu.tensor([[1, -3]], dtype=itype,
                                        device=device))
    x.requires_grad_()
    with pytest.raises(RuntimeError, match=bounds(-1, 4)):
        x.gather(0, ix)
    good = pygpu.tensor([[3, 1, 2], [0, 0, 1]], dtype=itype, device=device)
    a = host(x)
    np.testing.assert_array_equal(
        host(x.gather(0, good)),
        np.take_along_axis(a, np.array([[3, 1, 2], [0, 0, 1]]), 0))


def test_scatter_add_refuses_negative_indices(device, rng):
    x = pygpu.zeros(4, 2, device=device)
    src = pygpu.tensor(rng.standard_normal((2, 2)).astype(np.float32),
                       device=device)
    ix = pygpu.tensor([[0, 1], [-1, 2]], device=device)
    with pytest.raises(RuntimeError, match=bounds(-1, 4)):
        x.scatter_add(0, ix, src)
    with pytest.raises(RuntimeError, match=bounds(-1, 4)):
        pygpu.scatter_add(x, 0, ix, src)
    with pytest.raises(RuntimeError, match=bounds(-4, 4)):
        x.scatter_add_(0, pygpu.tensor([[-4, 0]], device=device), src[:1])


def test_index_select_and_index_add_refuse_negative_indices(device, rng):
    x = pygpu.tensor(rng.standard_normal((4, 3)).astype(np.float32),
                     device=device)
    ix = pygpu.tensor([1, -1], device=device)
    # the CPU raises torch's IndexError; CUDA the CudaError of the gather
    # runner, which names the index
    cpu = device == "cpu"
    exc = IndexError if cpu else pygpu.CudaError
    msg = "index out of range in self" if cpu else bounds(-1, 4)
    with pytest.raises(exc, match=msg):
        x.index_select(0, ix)
    with pytest.raises(exc, match=msg):
        pygpu.index_add(x, 0, ix, pygpu.ones(2, 3, device=device))
    with pytest.raises(exc, match=msg if cpu else bounds(-2, 3, 1)):
        x.index_add_(1, pygpu.tensor([-2], device=device),
                     pygpu.ones(4, 1, device=device))


def test_scatter_add_cpu_error_types():
    """torch's CPU words: scatter_add's RuntimeError names the index,
    index_add_'s IndexError does not."""
    t = pygpu.zeros(3)
    with pytest.raises(RuntimeError) as e:
        t.scatter_add_(0, pygpu.tensor([3]), pygpu.ones(1))
    assert type(e.value) is RuntimeError and str(e.value) == bounds(3, 3)
    with pytest.raises(IndexError) as e:
        t.index_add_(0, pygpu.tensor([0, 3]), pygpu.ones(2))
    assert str(e.value) == "index out of range in self"


def test_tensor_indexing_still_counts_from_the_end(device, rng):
    a = rng.standard_normal((4, 3))
    t = pygpu.tensor(a, device=device)
    np.testing.assert_array_equal(host(t[[-1, 0, -4]]), a[[-1, 0, -4]])
    t[[-1]] = 5.0
    a[[-1]] = 5.0
    np.testing.assert_array_equal(host(t), a)


# -- loss targets and class weights -------------------------------------------

def test_bce_with_logits_refuses_a_target_of_another_shape(device, rng):
    x = pygpu.tensor(rng.standard_normal((3, 1)), device=device)
    y = pygpu.tensor(rng.random(3), device=device)
    with pytest.raises(ValueError) as e:
        F.binary_cross_entropy_with_logits(x, y)
    assert str(e.value) == ("Target size (pygpu.Size([3])) must be the same "
                            "as input size (pygpu.Size([3, 1]))")
    with pytest.raises(ValueError, match="must be the same as input size"):
        nn.BCEWithLogitsLoss()(x, y.reshape(1, 3))
    ok = F.binary_cross_entropy_with_logits(x, y.reshape(3, 1))
    xs, ys = host(x), host(y).reshape(3, 1)
    ref = np.mean(np.maximum(xs, 0) - xs * ys + np.log1p(np.exp(-abs(xs))))
    assert abs(ok.item() - ref) <= 1e-12 * max(abs(ref), 1)


def weight_msg(n, shape, prefix=""):
    return (f"{prefix}weight tensor should be defined either for all {n} "
            f"classes or no classes but got weight tensor of shape: {shape}")


@pytest.mark.parametrize("weight,shape", [((3,), "[3]"), ((2, 5), "[2, 5]"),
                                          ((11,), "[11]")])
def test_class_weight_of_the_wrong_length(device, rng, weight, shape):
    x = pygpu.tensor(rng.standard_normal((4, 10)), device=device)
    t = pygpu.tensor([1, 2, 0, 1], device=device)  # all < 3: no index error
    w = pygpu.tensor(rng.random(weight), device=device)
    logp = F.log_softmax(x, 1) if hasattr(F, "log_softmax") else \
        pygpu.log_softmax(x, 1)
    for call in (lambda: F.nll_loss(logp, t, weight=w),
                 lambda: nn.NLLLoss(weight=w)(logp, t),
                 lambda: F.cross_entropy(x, t, weight=w),
                 lambda: nn.CrossEntropyLoss(weight=w)(x, t)):
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value) == weight_msg(10, shape)
    probs = pygpu.softmax(pygpu.tensor(rng.standard_normal((4, 10)),
                                       device=device), 1)
    with pytest.raises(RuntimeError) as e:
        F.cross_entropy(x, probs, weight=w)
    assert str(e.value) == weight_msg(10, shape, "cross_entropy: ")


def test_nll_loss_with_a_right_weight(device, rng):
    x = rng.standard_normal((5, 4))
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    t = np.array([0, 3, 1, 1, 2])
    w = rng.random(4) + 0.5
    got = F.nll_loss(pygpu.tensor(logp, device=device),
                     pygpu.tensor(t, device=device),
                     weight=pygpu.tensor(w, device=device))
    ref = -(logp[np.arange(5), t] * w[t]).sum() / w[t].sum()
    assert abs(got.item() - ref) <= 1e-12 * abs(ref)


# -- MemoryError messages -----------------------------------------------------

def test_tensor_allocation_failure_has_a_message():
    # 2**50 bytes: more than any address space, far from int64 overflow
    with pytest.raises((MemoryError, RuntimeError)) as e:
        pygpu.empty(2 ** 48, dtype=pygpu.float32)
    assert str(e.value) and str(2 ** 50) in str(e.value)


def failing_first_allocation(call):
    """The exception of call() with the first host allocation it makes
    failing (CPython's test hooks)."""
    testcapi = pytest.importorskip("_testcapi")
    testcapi.set_nomemory(0, 1)
    try:
        call()
    except MemoryError as e:
        return e
    finally:
        testcapi.remove_mem_hooks()
    return None


@pytest.mark.parametrize("what,call", [
    ("Size", lambda s, t: s.numel()),
    ("split", lambda s, t: t.split((2, 3, 5))),
])
def test_host_allocation_failures_have_a_message(what, call):
    s = pygpu.Size([2, 3, 4])
    t = pygpu.arange(10.0)
    e = failing_first_allocation(lambda: call(s, t))
    assert e is not None, "no MemoryError"
    assert "can't allocate memory" in str(e) and "bytes" in str(e)


# -- pygpu.load ---------------------------------------------------------------

def saved(obj):
    buf = io.BytesIO()
    pygpu.save(obj, buf)
    return buf.getvalue()


def loaded(data, **kw):
    return pygpu.load(io.BytesIO(data), **kw)


def test_load_keeps_views_of_one_storage(device, rng):
    x = pygpu.tensor(rng.standard_normal((4, 6)), device=device)
    obj = {"x": x, "row": x[1], "t": x.T, "cols": x[:, 2:4],
           "e": x[2:3].expand(5, 6), "other": x.clone()}
    back = loaded(saved(obj))
    for k, v in obj.items():
        assert back[k].shape == v.shape and back[k].stride() == v.stride()
        np.testing.assert_array_equal(host(back[k]), host(v))
    bx = back["x"]
    isz = bx.element_size()
    assert back["row"].data_ptr() == bx.data_ptr() + 6 * isz
    assert back["t"].data_ptr() == bx.data_ptr()
    assert back["cols"].data_ptr() == bx.data_ptr() + 2 * isz
    before = host(x)
    bx.add_(1.0)  # writes through one are seen through the others
    a = before + 1.0
    np.testing.assert_array_equal(host(back["row"]), a[1])
    np.testing.assert_array_equal(host(back["t"]), a.T)
    np.testing.assert_array_equal(host(back["cols"]), a[:, 2:4])
    np.testing.assert_array_equal(host(back["e"]), np.repeat(a[2:3], 5, 0))
    np.testing.assert_array_equal(host(back["other"]), before)


def test_load_keeps_views_that_only_overlap_through_a_third(device):
    x = pygpu.arange(12.0, device=device)
    a, b, c = x[0:5], x[4:9], x[8:12]  # a and c meet only through b
    back = loaded(saved([c, a, b]))
    back[1].fill_(-1.0)
    np.testing.assert_array_equal(host(back[2])[0], -1.0)
    back[0].fill_(7.0)
    np.testing.assert_array_equal(host(back[2])[4], 7.0)


def test_load_keeps_requires_grad(device, rng):
    w = pygpu.tensor(rng.standard_normal(3), device=device,
                     requires_grad=True)
    p = nn.Parameter(pygpu.tensor(rng.standard_normal(2), device=device))
    frozen = nn.Parameter(pygpu.ones(2, device=device), requires_grad=False)
    back = loaded(saved({"w": w, "n": w.detach(), "p": p, "f": frozen}))
    assert back["w"].requires_grad and back["w"].is_leaf
    assert not back["n"].requires_grad
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["f"], nn.Parameter) and \
        not back["f"].requires_grad
    c = pickle.loads(pickle.dumps(w))
    assert c.requires_grad and c.is_leaf
    np.testing.assert_array_equal(host(c), host(w))


@pytest.mark.parametrize("dtype", ["bfloat16", "bool", "uint8", "int32",
                                   "float16"])
def test_round_trip_of_every_dtype(rng, dtype):
    v = rng.standard_normal((3, 4)) * 10
    t = pygpu.tensor(v > 0 if dtype == "bool" else
                     np.abs(v) if dtype == "uint8" else v,
                     dtype=getattr(pygpu, dtype))
    back = loaded(saved({"t": t, "v": t[1:, ::2]}))
    assert back["t"].dtype == t.dtype
    np.testing.assert_array_equal(host(back["t"]), host(t))
    np.testing.assert_array_equal(host(back["v"]), host(t[1:, ::2]))


def crafted(*records):
    """A pickle of the records, each (function name, args) of
    pygpu.serialization, nested as given."""
    import pygpu.serialization as ser

    class Call:
        def __init__(self, name, args):
            self.name, self.args = name, args

        def __reduce__(self):
            return getattr(ser, self.name), self.args

    def build(r):
        if isinstance(r, tuple) and r and r[0] in ("_rebuild_tensor",
                                                  "_rebuild_storage",
                                                  "_rebuild_view"):
            return Call(r[0], tuple(build(a) for a in r[1]))
        return r

    return pickle.dumps([build(r) for r in records], protocol=4)


def storage(data, dtype="float32", numel=None, loc="cpu"):
    size = np.dtype(dtype if dtype != "bool" else np.uint8).itemsize
    return ("_rebuild_storage",
            (data, dtype, len(data) // size if numel is None else numel, loc))


MALFORMED = {
    "bool byte 2": [("_rebuild_tensor", (b"\x00\x02", "bool", (2,),
                                         "cpu"))],
    "bool storage byte 255": [("_rebuild_view", (
        storage(b"\x01\xff", "bool"), 0, (2,), (1,), False))],
    "unknown dtype": [("_rebuild_tensor", (b"\x00" * 4, "float128", (1,),
                                           "cpu"))],
    "dtype not a str": [("_rebuild_tensor", (b"\x00" * 4, ["float32"], (1,),
                                             "cpu"))],
    "data too short": [("_rebuild_tensor", (b"\x00" * 4, "float32", (2,),
                                            "cpu"))],
    "huge shape": [("_rebuild_tensor", (b"\x00" * 4, "float32",
                                        (2 ** 40, 2 ** 40), "cpu"))],
    "negative size": [("_rebuild_tensor", (b"", "float32", (-1,), "cpu"))],
    "huge storage": [("_rebuild_storage", (b"\x00" * 8, "float64", 2 ** 62,
                                           "cpu"))],
    "view past storage": [("_rebuild_view", (
        storage(b"\x00" * 16), 2, (3,), (1,), False))],
    "view stride past storage": [("_rebuild_view", (
        storage(b"\x00" * 16), 0, (2, 2), (3, 1), False))],
    "negative stride": [("_rebuild_view", (
        storage(b"\x00" * 16), 3, (2,), (-1,), False))],
    "negative offset": [("_rebuild_view", (
        storage(b"\x00" * 16), -1, (1,), (1,), False))],
    "view of no storage": [("_rebuild_view", (
        pygpu.zeros(4), 0, (2,), (1,), False))],
    "float offset": [("_rebuild_view", (
        storage(b"\x00" * 16), 0.0, (2,), (1,), False))],
    "bad location": [("_rebuild_tensor", (b"\x00" * 4, "float32", (1,),
                                          "gpu:0"))],
    "location not a str": [("_rebuild_tensor", (b"\x00" * 4, "float32",
                                                (1,), 7))],
    "int requires grad": [("_rebuild_tensor", (b"\x00" * 8, "int64", (1,),
                                               "cpu", True))],
    "requires_grad not a bool": [("_rebuild_view", (
        storage(b"\x00" * 4), 0, (1,), (1,), "yes"))],
    "too few fields": [("_rebuild_storage", (b"", "float32"))],
    "data not bytes": [("_rebuild_tensor", ("abcd", "float32", (1,),
                                            "cpu"))],
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_records(name):
    with pytest.raises(pickle.UnpicklingError, match="malformed"):
        loaded(crafted(*MALFORMED[name]))


def test_malformed_pickles():
    good = saved({"w": pygpu.randn(3, 4), "b": [pygpu.ones(2)]})
    for data in (good[: len(good) // 2], good[:-1], b"", b"\x80\x04\xff",
                 b"\x80\x04\x8e" + (2 ** 62).to_bytes(8, "little") + b"x",
                 b"(" * 3 + b"."):
        with pytest.raises(pickle.UnpicklingError):
            loaded(data)


def test_declared_length_past_the_file_is_not_allocated(tmp_path):
    # BINBYTES8 of 2**62 bytes: refused as truncated, without asking the
    # allocator for that much
    p = tmp_path / "huge.pt"
    p.write_bytes(b"\x80\x04\x8e" + (2 ** 62).to_bytes(8, "little") + b"ab")
    with pytest.raises(pickle.UnpicklingError):
        pygpu.load(p)


def test_errors_that_are_not_the_files_keep_their_types(tmp_path):
    data = saved({"w": pygpu.randn(2)})

    def boom(s, loc):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        loaded(data, map_location=boom)
    with pytest.raises(RuntimeError, match="zip"):
        loaded(b"PK\x03\x04rest")
    with pytest.raises(FileNotFoundError):
        pygpu.load(tmp_path / "absent.pt")


@pytest.mark.skipif(HAS_CUDA, reason="needs a machine without CUDA")
def test_cuda_location_without_cuda_is_not_malformed():
    data = crafted(("_rebuild_view", (storage(b"\x00" * 8, loc="cuda:0"),
                                      0, (2,), (1,), False)))
    with pytest.raises(RuntimeError, match="Attempting to deserialize "
                                           "object on a CUDA device") as e:
        loaded(data)
    assert not isinstance(e.value, pickle.UnpicklingError)
    assert loaded(data, map_location="cpu")[0].tolist() == [0.0, 0.0]


def test_load_mutation_fuzz():
    """300 random mutations of a saved file: each loads or raises
    pickle.UnpicklingError, never another exception (nor a crash)."""
    rng = np.random.default_rng(20260127)
    x = pygpu.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    sd = {"w": x, "w_t": x.T, "row": x[1], "b": pygpu.tensor([True, False]),
          "n": pygpu.arange(5), "h": pygpu.ones(2, dtype=pygpu.float16),
          "p": nn.Parameter(pygpu.randn(2)), "meta": [1, 2.5, "s", (3,)]}
    good = saved(sd)
    back = loaded(good)
    np.testing.assert_array_equal(host(back["w_t"]), host(x.T))
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(300):
        data = bytearray(good)
        kind = i % 3
        if kind == 0:  # truncate
            data = data[:int(rng.integers(0, len(data)))]
        else:  # overwrite 1 to 4 bytes with random ones
            for _ in range(int(rng.integers(1, 5))):
                data[int(rng.integers(0, len(data)))] = \
                    int(rng.integers(0, 256))
        try:
            loaded(bytes(data))
            outcomes["loaded"] += 1
        except pickle.UnpicklingError:
            outcomes["refused"] += 1
    assert outcomes["refused"] >= 100, outcomes


# -- the CUDA array interface without a driver --------------------------------

class CudaArray:
    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": (3,), "typestr": "<f4", "data": (self.ptr, False),
                "version": 3, "strides": None}


@pytest.mark.skipif(HAS_CUDA, reason="needs a machine without CUDA")
@pytest.mark.parametrize("ptr", [0x7F0000001000, 0])
def test_cuda_array_interface_without_a_driver(ptr):
    with pytest.raises(RuntimeError) as ref:
        pygpu.zeros(1, device="cuda")
    for convert in (pygpu.as_tensor, pygpu.tensor,
                    lambda o: pygpu.tensor(o, device="cpu")):
        with pytest.raises(RuntimeError) as e:
            convert(CudaArray(ptr))
        assert type(e.value) is type(ref.value)
        assert str(e.value) == str(ref.value)
