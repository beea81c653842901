"""einsum against np.einsum (float64): implicit and explicit outputs,
ellipses with broadcasting, diagonals, traces, sums, several operands,
0-d and empty operands, non-contiguous operands; one bmm per contraction
of two operands; gradients against the exact derivative (einsum is linear
in each operand); torch's errors for bad equations."""
import itertools

import numpy as np
import pytest

import pygpu

from conftest import host

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i", [(5,), (5,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->ji", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ba", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("Ab,bA->", [(3, 4), (4, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...j,jk", [(2, 3, 4), (4, 5)]),
    ("i...,i...->...", [(3, 2, 2), (3, 1, 2)]),
    ("...,...", [(2, 3), (2, 3)]),
    ("ij...->...j", [(2, 3, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 3)]),
    ("ij,kj,ik->", [(3, 4), (5, 4), (3, 5)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,j->i", [(3, 4), (1,)]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    ("ij,jk->", [(3, 0), (0, 5)]),
    (" i j , j k -> i k ", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_numpy(device, rng, eq, shapes):
    arrs = [rng.standard_normal(s) for s in shapes]
    ts = [pygpu.tensor(a, device=device) for a in arrs]
    got = pygpu.einsum(eq, *ts)
    ref = np.einsum(eq.replace(" ", ""), *arrs)
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(host(got), ref, rtol=1e-12, atol=1e-12)
    got_list = pygpu.einsum(eq, ts)          # the list form
    np.testing.assert_allclose(host(got_list), ref, rtol=1e-12, atol=1e-12)


def test_einsum_ellipsis_summed(device, rng):
    """An ellipsis left out of an explicit output is summed (torch; NumPy
    refuses it)."""
    a = rng.standard_normal((2, 3, 4, 5))
    got = pygpu.einsum("ij...->j", pygpu.tensor(a, device=device))
    np.testing.assert_allclose(host(got), a.sum(axis=(0, 2, 3)), rtol=1e-12)


def test_einsum_float32_strided(device, rng):
    a = rng.standard_normal((6, 5, 4)).astype(np.float32)
    b = rng.standard_normal((4, 7)).astype(np.float32)
    ta = pygpu.tensor(a, device=device).transpose(0, 2)   # (4, 5, 6)
    tb = pygpu.tensor(b, device=device)[:, ::2]            # (4, 4)
    got = pygpu.einsum("kji,kl->ijl", ta, tb)
    ref = np.einsum("kji,kl->ijl", a.transpose(2, 1, 0).astype(np.float64),
                    b[:, ::2].astype(np.float64))
    err = np.abs(host(got) - ref).max() / np.abs(ref).max()
    assert got.dtype is pygpu.float32 and err < 1e-5


def test_one_bmm_per_pair(monkeypatch, rng):
    calls = []
    real = pygpu._C.bmm

    def counting(a, b):
        calls.append((tuple(a.shape), tuple(b.shape)))
        return real(a, b)
    monkeypatch.setattr(pygpu._C, "bmm", counting)
    a = pygpu.tensor(rng.standard_normal((8, 3, 4)))
    b = pygpu.tensor(rng.standard_normal((8, 4, 5)))
    pygpu.einsum("bij,bjk->bik", a, b)
    assert calls == [((8, 3, 4), (8, 4, 5))]
    calls.clear()
    c = pygpu.tensor(rng.standard_normal((5, 2)))
    pygpu.einsum("bij,bjk,kl->bil", a, b, c)
    assert len(calls) == 2


def numeric_grads(eq, arrs, g):
    """d(sum(g * einsum(eq, arrs))) / d arrs[i], exactly (linear in each)."""
    grads = []
    for i, a in enumerate(arrs):
        gi = np.zeros_like(a)
        for idx in itertools.product(*[range(s) for s in a.shape]):
            e = np.zeros_like(a)
            e[idx] = 1.0
            ops = list(arrs)
            ops[i] = e
            gi[idx] = np.sum(g * np.einsum(eq, *ops))
        grads.append(gi)
    return grads


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bkj->bik", [(2, 2, 3), (2, 4, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("...j,jk->...k", [(2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij,j->i", [(2, 3), (1,)]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_einsum_gradients(device, rng, eq, shapes):
    arrs = [rng.standard_normal(s) for s in shapes]
    ts = [pygpu.tensor(a, device=device, requires_grad=True) for a in arrs]
    out = pygpu.einsum(eq, *ts)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(pygpu.tensor(g, device=device))
    for t, ref in zip(ts, numeric_grads(eq, arrs, g)):
        np.testing.assert_allclose(host(t.grad), ref, rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij", [(2, 3, 4)], "einsum(): the number of subscripts in the equation "
     "(2) does not match the number of dimensions (3) for operand 0 and no "
     "ellipsis was given"),
    ("ijk...", [(2, 3)], "einsum(): the number of subscripts in the equation "
     "(3) is more than the number of dimensions (2) for operand 0"),
    ("ij,jk", [(2, 3)], "einsum(): fewer operands were provided than "
     "specified in the equation"),
    ("ij", [(2, 3), (3, 4)], "einsum(): more operands were provided than "
     "specified in the equation"),
    ("i1", [(2, 3)], "einsum(): invalid subscript given at index 1 in the "
     "equation string, subscripts must be in [a-zA-Z]"),
    ("i.j", [(2, 3)], "einsum(): found '.' for operand 0 that is not part "
     "of any ellipsis"),
    ("...i...", [(2, 3)], "einsum(): found '.' for operand 0 for which an "
     "ellipsis was already found"),
    ("ij->ii", [(2, 3)], "einsum(): output subscript i appears more than "
     "once in the output"),
    ("ij->k", [(2, 3)], "einsum(): output subscript k does not appear in "
     "the equation for any input operand"),
    ("ii", [(2, 3)], "einsum(): subscript i is repeated for operand 0 but "
     "the sizes don't match, 2 != 3"),
    ("ij,jk", [(2, 3), (4, 5)], "einsum(): operands do not broadcast"),
])
def test_einsum_errors(device, eq, shapes, msg):
    ts = [pygpu.ones(*s, device=device) for s in shapes]
    with pytest.raises(RuntimeError) as e:
        pygpu.einsum(eq, *ts)
    assert str(e.value).startswith(msg), str(e.value)


def test_einsum_bad_arguments():
    with pytest.raises(RuntimeError, match="at least one operand"):
        pygpu.einsum("i")
    with pytest.raises(TypeError, match="operand 0"):
        pygpu.einsum("i", [1, 2])
