"""einsum(equation, *operands): the Einstein summation convention over
pygpu's own ops.

The equation is parsed as torch parses it (labels a-zA-Z, at most one
``...`` per operand, an implicit output of the labels seen once, in
order, after the ellipsis dims).  Each operand then takes its diagonals
(a label repeated on it: a gather of the diagonal) and sums out the
labels no one else needs; the operands are contracted left to right, each
pair as ONE batched matrix product: the labels both keep become the batch,
those they share and nobody needs later the inner dim, the others the
rows and columns (permute and reshape around ``bmm``).  Everything is a
differentiable op, so gradients follow.
"""
import builtins

from . import _C
from ._C import Tensor

__all__ = ["einsum"]

_ELL = "."  # the label of an ellipsis dim is (_ELL, k), k from the left


def _fail(msg):
    raise RuntimeError("einsum(): " + msg)


def _parse_operand(term, start, i, ndim):
    """The labels of operand i (term starts at index `start` of the
    equation) and the number of dims its ellipsis covers (-1: none)."""
    labels, ell_at, pos = [], -1, 0
    while pos < len(term):
        ch = term[pos]
        if ch == ".":
            if ell_at >= 0:
                _fail(f"found '.' for operand {i} for which an ellipsis "
                      f"was already found")
            if term[pos:pos + 3] != "...":
                _fail(f"found '.' for operand {i} that is not part of any "
                      f"ellipsis")
            ell_at = len(labels)
            pos += 3
            continue
        if not ch.isascii() or not ch.isalpha():
            _fail(f"invalid subscript given at index {start + pos} in the "
                  f"equation string, subscripts must be in [a-zA-Z]")
        labels.append(ch)
        pos += 1
    if ell_at < 0:
        if len(labels) != ndim:
            _fail(f"the number of subscripts in the equation "
                  f"({len(labels)}) does not match the number of "
                  f"dimensions ({ndim}) for operand {i} and no ellipsis "
                  f"was given")
        return labels, -1
    if len(labels) > ndim:
        _fail(f"the number of subscripts in the equation ({len(labels)}) "
              f"is more than the number of dimensions ({ndim}) for "
              f"operand {i}")
    n_ell = ndim - len(labels)
    return labels[:ell_at] + [None] * n_ell + labels[ell_at:], n_ell


def _parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) < len(operands):
        _fail("more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        _fail("fewer operands were provided than specified in the equation")
    ops, starts, at = [], [], 0
    for term in terms:
        starts.append(at)
        at += len(term) + 1
    n_ell = 0
    parsed = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        labels, e = _parse_operand(term, starts[i], i, x.ndim)
        parsed.append((labels, e))
        n_ell = builtins.max(n_ell, e)
    # ellipsis dims right-aligned across the operands: (_ELL, k)
    for labels, e in parsed:
        k = n_ell - builtins.max(e, 0)
        named = []
        for lab in labels:
            if lab is None:
                named.append((_ELL, k))
                k += 1
            else:
                named.append(lab)
        ops.append(named)
    seen = {}
    for labels in ops:
        for lab in labels:
            seen[lab] = seen.get(lab, 0) + 1
    ell_labels = [(_ELL, k) for k in range(n_ell)]
    if arrow:
        out, pos = [], 0
        has_ell = False
        while pos < len(rhs):
            ch = rhs[pos]
            if ch == ".":
                if has_ell:
                    _fail("found '.' for output that is not part of any "
                          "ellipsis" if rhs[pos:pos + 3] != "..." else
                          "found '.' for output for which an ellipsis was "
                          "already found")
                if rhs[pos:pos + 3] != "...":
                    _fail("found '.' for output that is not part of any "
                          "ellipsis")
                has_ell = True
                out.extend(ell_labels)
                pos += 3
                continue
            if not ch.isascii() or not ch.isalpha():
                _fail(f"invalid subscript given at index "
                      f"{len(lhs) + 2 + pos} in the equation string, "
                      f"subscripts must be in [a-zA-Z]")
            if ch in out:
                _fail(f"output subscript {ch} appears more than once in "
                      f"the output")
            if ch not in seen:
                _fail(f"output subscript {ch} does not appear in the "
                      f"equation for any input operand")
            out.append(ch)
            pos += 1
    else:
        out = ell_labels + sorted(lab for lab, c in seen.items()
                                  if c == 1 and lab[0] != _ELL)
    return ops, out


def _diagonal(x, labels, i):
    """x with every repeated label reduced to its diagonal: unique labels."""
    while True:
        dup = next((lab for i, lab in enumerate(labels)
                    if lab in labels[i + 1:]), None)
        if dup is None:
            return x, labels
        a = labels.index(dup)
        b = labels.index(dup, a + 1)
        if x.shape[a] != x.shape[b]:
            _fail(f"subscript {_name(dup)} is repeated for operand {i} but "
                  f"the sizes don't match, {x.shape[a]} != {x.shape[b]}")
        rest = [d for d in range(x.ndim) if d not in (a, b)]
        x = x.permute(rest + [a, b])
        n = x.shape[-1]
        index = _C.arange(n, device=x.device).reshape(n, 1)
        index = index.expand(*x.shape[:-1], 1).contiguous()
        x = x.gather(x.ndim - 1, index).squeeze(x.ndim - 1)
        labels = [labels[d] for d in rest] + [dup]


def _sum_out(x, labels, keep):
    """x with the labels not in keep summed away."""
    dims = [i for i, lab in enumerate(labels) if lab not in keep]
    if not dims:
        return x, labels
    x = x.sum(tuple(dims))
    return x, [lab for lab in labels if lab in keep]


def _size_of(shapes, lab):
    sizes = {s for s in shapes.get(lab, ()) if s != 1}
    return sizes.pop() if sizes else 1


def _contract(a, la, b, lb, keep, sizes):
    """a (labels la) times b (labels lb) summed over the labels they share
    that are not in keep: one bmm."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    inner = [lab for lab in la if lab in lb and lab not in keep]
    rows = [lab for lab in la if lab not in lb]
    cols = [lab for lab in lb if lab not in la]
    ea = [sizes[lab] for lab in batch + rows + inner]
    eb = [sizes[lab] for lab in batch + inner + cols]
    a = a.permute([la.index(lab) for lab in batch + rows + inner])
    b = b.permute([lb.index(lab) for lab in batch + inner + cols])
    if list(a.shape) != ea:
        a = a.expand(*ea)
    if list(b.shape) != eb:
        b = b.expand(*eb)
    nb = _prod(sizes[lab] for lab in batch)
    m = _prod(sizes[lab] for lab in rows)
    k = _prod(sizes[lab] for lab in inner)
    n = _prod(sizes[lab] for lab in cols)
    r = _C.bmm(a.reshape(nb, m, k), b.reshape(nb, k, n))
    shape = [sizes[lab] for lab in batch + rows + cols]
    return r.reshape(shape), batch + rows + cols


def _prod(values):
    p = 1
    for v in values:
        p *= v
    return p


def einsum(equation, *operands):
    """Sums the product of the operands over the labels of the equation
    that the output does not name (see torch.einsum)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must "
                        f"be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        _fail("must provide at least one operand")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): expected a Tensor for operand {i}, "
                            f"not {type(x).__name__}")
    ops, out = _parse(equation, operands)
    xs, shapes = [], {}
    for i, (x, labels) in enumerate(zip(operands, ops)):
        x, labels = _diagonal(x, labels, i)
        xs.append((x, labels))
        for lab, s in zip(labels, x.shape):
            shapes.setdefault(lab, []).append(s)
    sizes = {}
    for lab, ss in shapes.items():
        big = {s for s in ss if s != 1}
        if len(big) > 1:
            dims = " ".join(str(list(x.shape)) for x in operands)
            _fail(f"operands do not broadcast with remapped shapes "
                  f"(original->remapped): {dims} (subscript "
                  f"{_name(lab)} has sizes {sorted(big)})")
        sizes[lab] = _size_of(shapes, lab)
    out_set = set(out)
    # each operand first sums out the labels no one else needs
    for i, (x, labels) in enumerate(xs):
        others = set(out_set)
        for j, (_, lj) in enumerate(xs):
            if j != i:
                others.update(lj)
        xs[i] = _sum_out(x, labels, others)
    x, labels = xs[0]
    for i in range(1, len(xs)):
        keep = set(out_set)
        for _, lj in xs[i + 1:]:
            keep.update(lj)
        b, lb = xs[i]
        x, labels = _contract(x, labels, b, lb, keep, sizes)
    x, labels = _sum_out(x, labels, out_set)
    # size-1 dims of a label broadcast against a larger one elsewhere
    shape = [sizes[lab] for lab in labels]
    if list(x.shape) != shape:
        x = x.expand(*shape)
    if labels != out:
        x = x.permute([labels.index(lab) for lab in out])
    return x


def _name(lab):
    return "..." if isinstance(lab, tuple) else lab
