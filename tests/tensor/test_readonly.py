"""Tensors over read-only memory (from_numpy of a non-writeable array,
np.frombuffer of bytes) and every view of them refuse each write with
NumPy's ValueError (torch only warns); reads and out-of-place ops work,
.numpy() of them is not writeable, copies are writeable."""
import operator

import numpy as np
import pytest

import pygpu

READONLY = "assignment destination is read-only"


def ro_array():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    a.flags.writeable = False
    return a


def from_bytes():
    # Immutable memory: NumPy cannot make it writeable at all.
    return np.frombuffer(np.arange(1.0, 7.0).tobytes(), dtype=np.float64
                         ).reshape(2, 3)


SOURCES = {"readonly_array": ro_array, "bytes": from_bytes}

# name -> write into t (other: a writeable tensor of t's shape on the CPU)
WRITES = {
    "add_": lambda t, o: t.add_(o),
    "add_scalar": lambda t, o: t.add_(1),
    "sub_": lambda t, o: t.sub_(o, alpha=2),
    "mul_": lambda t, o: t.mul_(2),
    "div_": lambda t, o: t.div_(o),
    "iadd": lambda t, o: operator.iadd(t, o),
    "isub": lambda t, o: operator.isub(t, 1),
    "imul": lambda t, o: operator.imul(t, o),
    "itruediv": lambda t, o: operator.itruediv(t, 2),
    "relu_": lambda t, o: t.relu_(),
    "pygpu.relu_": lambda t, o: pygpu.relu_(t),
    "relu_inplace": lambda t, o: pygpu.relu(t, inplace=True),
    "copy_": lambda t, o: t.copy_(o),
    "copy_cross_dtype": lambda t, o: t.copy_(o.long()),
    "copy_self": lambda t, o: t.copy_(t),
    "fill_": lambda t, o: t.fill_(0),
    "zero_": lambda t, o: t.zero_(),
    "setitem_tensor": lambda t, o: t.__setitem__(Ellipsis, o),
    "setitem_scalar": lambda t, o: t.__setitem__(0, 5.0),
    "add_out": lambda t, o: pygpu.add(o, 1, out=t),
    "mul_out_scalar_first": lambda t, o: pygpu.mul(2, o, out=t),
}

# Views of a read-only tensor, each still read-only.
VIEWS = {
    "self": lambda t: t,
    "row": lambda t: t[1],
    "slice": lambda t: t[:, 1:],
    "t": lambda t: t.t(),
    "T": lambda t: t.T,
    "view": lambda t: t.view(6),
    "reshape": lambda t: t.reshape(3, 2),
    "flatten": lambda t: t.flatten(),
    "unsqueeze": lambda t: t.unsqueeze(0),
    "permute": lambda t: t.permute(1, 0),
    "detach": lambda t: t.detach(),
    "data": lambda t: t.data,
    "contiguous": lambda t: t.contiguous(),
    "to_same": lambda t: t.to("cpu"),
    "iter": lambda t: next(iter(t)),
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("view", VIEWS)
def test_every_write_refused(source, write, view):
    arr = SOURCES[source]()
    before = arr.copy()
    t = VIEWS[view](pygpu.from_numpy(arr))
    other = pygpu.tensor(np.full(t.shape, 9.0))
    with pytest.raises(ValueError, match=READONLY):
        WRITES[write](t, other)
    np.testing.assert_array_equal(arr, before)


def test_writes_of_other_devices_refused(device):
    t = pygpu.from_numpy(ro_array())
    src = pygpu.tensor(np.zeros((2, 3)), device=device)
    with pytest.raises(ValueError, match=READONLY):
        t.copy_(src)
    with pytest.raises(ValueError, match=READONLY):
        t[0] = src[1]
    np.testing.assert_array_equal(t.numpy(), ro_array())


def test_zero_elements_refused():
    a = np.zeros((0, 3))
    a.flags.writeable = False
    t = pygpu.from_numpy(a)
    with pytest.raises(ValueError, match=READONLY):
        t.add_(1)
    with pytest.raises(ValueError, match=READONLY):
        t.copy_(pygpu.zeros(0, 3, dtype=pygpu.float64))


@pytest.mark.parametrize("source", SOURCES)
def test_reads_and_out_of_place_ops(source, device):
    arr = SOURCES[source]()
    t = pygpu.from_numpy(arr)
    assert t.tolist() == arr.tolist()
    assert t[1, 2].item() == 6.0
    d = t.to(device)
    np.testing.assert_array_equal((d + 1).cpu().numpy(), arr + 1)
    np.testing.assert_array_equal((d * d).cpu().numpy(), arr * arr)
    np.testing.assert_array_equal((-d).cpu().numpy(), -arr)
    np.testing.assert_array_equal(d.relu().cpu().numpy(), arr)
    np.testing.assert_allclose(d.sum().item(), arr.sum())
    np.testing.assert_allclose((d @ d.t()).cpu().numpy(), arr @ arr.T)
    # A read-only tensor may be read by a write into another one.
    w = pygpu.zeros(2, 3, dtype=pygpu.float64, device=device)
    w.add_(d)
    w.copy_(t)
    w[0] = t[1]
    pygpu.add(d, 1, out=w)
    np.testing.assert_array_equal(w.cpu().numpy(), arr + 1)


@pytest.mark.parametrize("source", SOURCES)
def test_numpy_of_readonly_not_writeable(source):
    t = pygpu.from_numpy(SOURCES[source]())
    for arr in (t.numpy(), t[1:].numpy(), t.t().numpy(), np.asarray(t),
                t.numpy(force=True)):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[...] = 0
    assert np.asarray(t).base is not None


@pytest.mark.parametrize("source", SOURCES)
def test_copies_are_writeable(source, device):
    arr = SOURCES[source]()
    t = pygpu.from_numpy(arr)
    copies = [t.clone(), t.t().contiguous(), t.float(),
              t.to(device, copy=True), pygpu.tensor(arr), pygpu.tensor(t),
              pygpu.tensor(arr, device=device), t.to(device).clone(),
              t + 0, t.relu(), t.t().reshape(6)]
    for c in copies:
        c.add_(1)
        c[0] = 0
        c.copy_(c)
        if c.device.type == "cpu":
            assert c.numpy().flags.writeable
    np.testing.assert_array_equal(arr, np.arange(1.0, 7.0).reshape(2, 3))
    # .to(device) is the tensor itself on the CPU, a fresh copy elsewhere.
    same = t.to(device)
    if device == "cpu":
        assert same is t
        with pytest.raises(ValueError, match=READONLY):
            same.add_(1)
    else:
        same.add_(1)
        np.testing.assert_array_equal(same.cpu().numpy(), arr + 1)


def test_writeable_arrays_stay_writeable():
    a = np.arange(6.0)
    t = pygpu.from_numpy(a)
    t.add_(1)
    assert t.numpy().flags.writeable
    np.testing.assert_array_equal(a, np.arange(1.0, 7.0))
    # The flag is taken when the tensor is made, as the memory was then.
    a.flags.writeable = False
    t.add_(1)
    np.testing.assert_array_equal(a, np.arange(2.0, 8.0))


def test_data_assignment_carries_readonly_both_ways():
    t = pygpu.zeros(2, 3, dtype=pygpu.float64)
    t.data = pygpu.from_numpy(ro_array())
    with pytest.raises(ValueError, match=READONLY):
        t.add_(1)
    t.data = pygpu.ones(2, 3, dtype=pygpu.float64)
    t.add_(1)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 2.0))
