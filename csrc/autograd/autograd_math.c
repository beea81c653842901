/* autograd_math.c - the backward rules of pow, maximum, minimum, fmod,
 * remainder, floor_divide and clamp.  Masks come from sign(): (sign(d) + 1) / 2 is 1, 1/2
 * or 0 as d is positive, zero or negative, which splits a tie of maximum
 * and minimum evenly between the operands, as torch does. */
#include "autograd/autograd.h"

#include <math.h>

/* Operand i: its saved tensor (new reference), or the number as a Python
 * float.  NULL with an exception. */
static PyObject *
operand(pygpu_node *n, int i)
{
    if (n->flag & (1 << i)) {
        return PyFloat_FromDouble(n->scalar);
    }
    TensorObject *t = pygpu_ag_saved(n, i);
    return t ? Py_NewRef((PyObject *)t) : NULL;
}

/* (sign(a - b) + 1) / 2, or 1 minus it (flip). */
static TensorObject *
step(PyObject *a, PyObject *b, int flip)
{
    TensorObject *d = (TensorObject *)pygpu_op_binary(PYGPU_SUB, a, b, NULL);
    TensorObject *s = d ? pygpu_ag_un(PYGPU_SIGN, d) : NULL;
    Py_XDECREF(d);
    if (s != NULL && flip) {
        Py_SETREF(s, pygpu_ag_un(PYGPU_NEG, s));
    }
    if (s != NULL) {
        Py_SETREF(s, pygpu_ag_bin_s(PYGPU_ADD, s, 1.0));
    }
    if (s != NULL) {
        Py_SETREF(s, pygpu_ag_bin_s(PYGPU_MUL, s, 0.5));
    }
    return s;
}

/* -g * q(a / b), q = trunc (fmod) or floor (remainder). */
static TensorObject *
quotient_grad(TensorObject *g, PyObject *a, PyObject *b, int floor_q)
{
    TensorObject *q = (TensorObject *)pygpu_op_binary(PYGPU_DIV, a, b, NULL);
    if (q != NULL && floor_q) {
        Py_SETREF(q, pygpu_ag_un(PYGPU_FLOOR, q));
    }
    else if (q != NULL) { /* trunc(q) = q - fmod(q, 1) */
        TensorObject *f = pygpu_ag_bin_s(PYGPU_FMOD, q, 1.0);
        Py_SETREF(q, f ? pygpu_ag_bin(PYGPU_SUB, q, (PyObject *)f) : NULL);
        Py_XDECREF(f);
    }
    TensorObject *r = q ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)q) : NULL;
    Py_XDECREF(q);
    if (r != NULL) {
        Py_SETREF(r, pygpu_ag_un(PYGPU_NEG, r));
    }
    return r;
}

/* a <cmp> b as a bool tensor (a a tensor, b a tensor or a number). */
static TensorObject *
compare_s(int op, PyObject *a, double b)
{
    PyObject *v = PyFloat_FromDouble(b);
    PyObject *r = v ? pygpu_op_compare(op, a, v, NULL) : NULL;
    Py_XDECREF(v);
    return (TensorObject *)r;
}

/* pow, torch's pow_backward: d(a^b)/da = b a^(b-1), zero where b is 0
 * (a number 0 or an element), so that 0^0 has no 0 * inf; d(a^b)/db =
 * a^b log(a), zero where a is 0 and b >= 0 (a^b is 0 or 1 there, and
 * log(0) = -inf). */
static int
pow_grads(pygpu_node *n, TensorObject *g, PyObject *a, PyObject *b,
          TensorObject **grads)
{
    if (n->next[0] != NULL) { /* a is a tensor */
        TensorObject *t = NULL, *p = NULL;
        if (n->flag & 2) { /* the number exponent s: s a^(s-1) */
            p = n->scalar == 0.0 ? NULL
                                 : pygpu_ag_bin_s(PYGPU_POW, (TensorObject *)a,
                                         n->scalar - 1.0);
            t = n->scalar == 0.0 ? pygpu_ag_bin_s(PYGPU_MUL, g, 0.0)
                : p              ? pygpu_ag_bin_s(PYGPU_MUL, p, n->scalar)
                                 : NULL;
        }
        else {
            TensorObject *bm1 = pygpu_ag_bin_s(PYGPU_SUB, (TensorObject *)b, 1.0);
            p = bm1 ? pygpu_ag_bin(PYGPU_POW, (TensorObject *)a, (PyObject *)bm1)
                    : NULL;
            Py_XDECREF(bm1);
            t = p ? pygpu_ag_bin(PYGPU_MUL, p, b) : NULL;
        }
        Py_XDECREF(p);
        if (t != NULL && !((n->flag & 2) && n->scalar == 0.0)) {
            Py_SETREF(t, pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t));
        }
        if (t != NULL && !(n->flag & 2)) {
            t = pygpu_ag_zero_where(t, compare_s(PYGPU_EQ, b, 0.0));
        }
        if (t == NULL) {
            return -1;
        }
        grads[0] = t;
    }
    if (n->next[1] != NULL) {
        TensorObject *out = (n->flag & 1)
                                ? pygpu_ag_saved(n, 2)
                                : (TensorObject *)pygpu_op_binary(
                                      PYGPU_POW, a, b, NULL);
        if (out == NULL) {
            return -1;
        }
        if (n->flag & 1) {
            Py_INCREF(out);
        }
        TensorObject *la = (n->flag & 1) ? NULL : pygpu_ag_un(PYGPU_LOG, (TensorObject *)a);
        TensorObject *t = (n->flag & 1)
                              ? pygpu_ag_bin_s(PYGPU_MUL, out, log(n->scalar))
                              : (la ? pygpu_ag_bin(PYGPU_MUL, out, (PyObject *)la)
                                    : NULL);
        Py_DECREF(out);
        Py_XDECREF(la);
        grads[1] = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        Py_XDECREF(t);
        if (grads[1] != NULL && (!(n->flag & 1) || n->scalar == 0.0)) {
            /* where a == 0 and b >= 0 */
            TensorObject *c = compare_s(PYGPU_GE, b, 0.0);
            if (c != NULL && !(n->flag & 1)) {
                TensorObject *z = compare_s(PYGPU_EQ, a, 0.0);
                Py_SETREF(c, z ? (TensorObject *)pygpu_op_binary(
                                     PYGPU_AND, (PyObject *)c, (PyObject *)z,
                                     NULL)
                               : NULL);
                Py_XDECREF(z);
            }
            grads[1] = pygpu_ag_zero_where(grads[1], c);
        }
        if (grads[1] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* floor_divide is piecewise constant: zero gradients (as floor's, and as
 * torch's div(rounding_mode='floor')). */
static int
zero_grads(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    for (int i = 0; i < 2; i++) {
        if (n->next[i] == NULL) {
            continue;
        }
        grads[i] = pygpu_tensor_empty(g->ndim, g->shape, g->dtype,
                                      g->device);
        if (grads[i] == NULL || pygpu_op_fill(grads[i], 0.0) < 0) {
            return -1;
        }
    }
    return 0;
}

int
pygpu_ag_math_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    if (n->op == PYGPU_FLOOR_DIVIDE) {
        return zero_grads(n, g, grads);
    }
    PyObject *a = operand(n, 0), *b = a ? operand(n, 1) : NULL;
    int rc = -1;
    if (b == NULL) {
        goto fail;
    }
    if (n->op == PYGPU_POW) {
        rc = pow_grads(n, g, a, b, grads);
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        TensorObject *m = NULL;
        if (n->next[i] == NULL) {
            continue;
        }
        switch (n->op) {
        case PYGPU_MAXIMUM: /* a wins where a > b */
            m = step(a, b, i == 1);
            break;
        case PYGPU_MINIMUM:
            m = step(a, b, i == 0);
            break;
        case PYGPU_FMOD:
        case PYGPU_REMAINDER:
            if (i == 0) {
                grads[0] = (TensorObject *)Py_NewRef((PyObject *)g);
                continue;
            }
            grads[1] = quotient_grad(g, a, b, n->op == PYGPU_REMAINDER);
            if (grads[1] == NULL) {
                goto fail;
            }
            continue;
        }
        grads[i] = m ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)m) : NULL;
        Py_XDECREF(m);
        if (grads[i] == NULL) {
            goto fail;
        }
    }
    rc = 0;
fail:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return rc;
}

/* ---------------------------------------------------------------- clamp */

/* min(sign(a - b) + 1, 1): 1 where a >= b, else 0. */
static TensorObject *
at_least(PyObject *a, PyObject *b)
{
    TensorObject *d = (TensorObject *)pygpu_op_binary(PYGPU_SUB, a, b, NULL);
    TensorObject *s = d ? pygpu_ag_un(PYGPU_SIGN, d) : NULL;
    Py_XDECREF(d);
    if (s != NULL) {
        Py_SETREF(s, pygpu_ag_bin_s(PYGPU_ADD, s, 1.0));
    }
    if (s != NULL) {
        Py_SETREF(s, pygpu_ag_bin_s(PYGPU_MINIMUM, s, 1.0));
    }
    return s;
}

/* Bound i (1: min, 2: max): its saved tensor or its number (new refs). */
static PyObject *
bound(pygpu_node *n, int i)
{
    PyObject *b = PyTuple_GET_ITEM(n->key, i - 1);
    if (Tensor_Check(b)) {
        TensorObject *t = pygpu_ag_saved(n, i);
        return t ? Py_NewRef((PyObject *)t) : NULL;
    }
    return Py_NewRef(b);
}

/* x's gradient flows where lo <= x <= hi; a tensor bound's where x is
 * beyond it. */
static int
clamp_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *m[3] = {NULL, NULL, NULL};
    int rc = -1;
    if (x == NULL) {
        return -1;
    }
    for (int i = 1; i <= 2; i++) {
        if (PyTuple_GET_ITEM(n->key, i - 1) == Py_None) {
            continue;
        }
        PyObject *b = bound(n, i);
        m[i] = b == NULL ? NULL
               : i == 1  ? at_least((PyObject *)x, b)
                         : at_least(b, (PyObject *)x);
        Py_XDECREF(b);
        if (m[i] == NULL) {
            goto fail;
        }
    }
    if (n->next[0] != NULL) {
        grads[0] = (TensorObject *)Py_NewRef((PyObject *)g);
        for (int i = 1; i <= 2 && grads[0] != NULL; i++) {
            if (m[i] != NULL) {
                Py_SETREF(grads[0], pygpu_ag_bin(PYGPU_MUL, grads[0], (PyObject *)m[i]));
            }
        }
        if (grads[0] == NULL) {
            goto fail;
        }
    }
    for (int i = 1; i <= 2; i++) {
        if (n->next[i] == NULL) {
            continue;
        }
        TensorObject *out = pygpu_ag_bin_s(PYGPU_MUL, m[i], -1.0);
        if (out != NULL) {
            Py_SETREF(out, pygpu_ag_bin_s(PYGPU_ADD, out, 1.0));
        }
        grads[i] = out ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)out) : NULL;
        Py_XDECREF(out);
        if (grads[i] == NULL) {
            goto fail;
        }
    }
    rc = 0;
fail:
    Py_XDECREF(m[1]);
    Py_XDECREF(m[2]);
    return rc;
}

PyObject *
pygpu_ag_clamp(const char *name, TensorObject *x, PyObject *lo,
               PyObject *hi, TensorObject *out, int inplace)
{
    lo = lo == Py_None ? NULL : lo;
    hi = hi == Py_None ? NULL : hi;
    TensorObject *in[4] = {
        x, lo && Tensor_Check(lo) ? (TensorObject *)lo : NULL,
        hi && Tensor_Check(hi) ? (TensorObject *)hi : NULL, out};
    if (!pygpu_ag_wanted(4, in)) {
        return pygpu_op_clamp(name, x, lo, hi, out, inplace);
    }
    if (out != NULL || inplace) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu's autograd does not record %s with out= or in "
                     "place; use the out-of-place form", name);
        return NULL;
    }
    PyObject *res = pygpu_op_clamp(name, x, lo, hi, NULL, 0);
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node("ClampBackward1", clamp_backward, 3, in);
    if (n != NULL) {
        n->key = PyTuple_Pack(2, lo ? lo : Py_None, hi ? hi : Py_None);
        for (int i = 0; i < 3 && n->key != NULL; i++) {
            if (in[i] != NULL && pygpu_ag_save(n, i, in[i]) < 0) {
                Py_CLEAR(n);
                break;
            }
        }
        if (n != NULL && n->key == NULL) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}
