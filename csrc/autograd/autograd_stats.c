/* autograd_stats.c - var, std and the vector norm recorded, over the ops
 * of ops/ops_stats.c.  var and std are recorded step by step, each step
 * by its own wrapper (from a float32 copy of a float16 or bfloat16 input:
 * the mean, the deviations, their squares' sum, the division, the square
 * root, the conversion back); the norm as one Node with torch's rule
 * (LinalgVectorNormBackward0), whose gradient is zero where the norm is
 * zero.
 */
#include "autograd/autograd.h"
#include "ops/reduce.h"

#include <math.h>

/* ---------------------------------------------------------- var, std */

/* a <op> the number s, recorded; steals a. */
static TensorObject *
recorded_scalar(int op, TensorObject *a, double s)
{
    PyObject *f = a ? PyFloat_FromDouble(s) : NULL;
    PyObject *r = f ? pygpu_ag_binary(op, (PyObject *)a, f, NULL) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(a);
    return (TensorObject *)r;
}

PyObject *
pygpu_ag_var_std(TensorObject *t, PyObject *dimobj, double correction,
                 int keepdim, int take_sqrt, const char *name)
{
    int mark[PYGPU_MAX_DIMS], all;
    TensorObject *x = NULL, *m = NULL, *d = NULL, *r = NULL;
    PyObject *res = NULL;
    if (!pygpu_ag_wanted(1, &t) ||
        !pygpu_dtype_table[t->dtype].is_floating_point) {
        return pygpu_op_var_std(t, dimobj, correction, keepdim, take_sqrt,
                                name); /* (or its refusal) */
    }
    int64_t count = pygpu_reduce_mark_dims(t, dimobj, name, mark, &all);
    if (count < 0) {
        return NULL;
    }
    x = pygpu_ag_to_dtype(t, pygpu_reduce_acc_dtype(t->dtype));
    m = x ? (TensorObject *)pygpu_ag_reduce(PYGPU_MEAN, x, dimobj, 1, 0,
                                            name)
          : NULL;
    d = m ? (TensorObject *)pygpu_ag_binary(PYGPU_SUB, (PyObject *)x,
                                            (PyObject *)m, NULL)
          : NULL;
    if (d != NULL && pygpu_numel(d->ndim, d->shape) > 0) {
        PyObject *sq = pygpu_ag_binary(PYGPU_MUL, (PyObject *)d,
                                       (PyObject *)d, NULL);
        Py_SETREF(d, (TensorObject *)sq);
    }
    r = d ? (TensorObject *)pygpu_ag_reduce(PYGPU_SUM, d, dimobj, keepdim, 0,
                                            name)
          : NULL;
    double dof = (double)count - correction;
    r = recorded_scalar(PYGPU_DIV, r, dof > 0 ? dof : 0.0);
    if (take_sqrt && r != NULL) {
        Py_SETREF(r, (TensorObject *)pygpu_ag_unary(PYGPU_SQRT, r, NULL, 0));
    }
    res = r ? (PyObject *)pygpu_ag_to_dtype(r, t->dtype) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(m);
    Py_XDECREF(d);
    Py_XDECREF(r);
    return res;
}

/* ---------------------------------------------------------------- norm */

/* A new reference to t (NULL passes through). */
static TensorObject *
ref(TensorObject *t)
{
    return (TensorObject *)Py_XNewRef((PyObject *)t);
}

/* a <op> b for two tensors; steals both (either may be NULL after an
 * error: NULL). */
static TensorObject *
bin2(int op, TensorObject *a, TensorObject *b)
{
    TensorObject *r = a && b ? pygpu_ag_bin(op, a, (PyObject *)b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* a <cmp> b as a bool tensor (b a tensor or a number). */
static TensorObject *
cmp(int op, TensorObject *a, PyObject *b)
{
    return a && b ? (TensorObject *)pygpu_op_compare(op, (PyObject *)a, b,
                                                     NULL)
                  : NULL;
}

static TensorObject *
cmp_s(int op, TensorObject *a, double s)
{
    PyObject *v = PyFloat_FromDouble(s);
    TensorObject *r = cmp(op, a, v);
    Py_XDECREF(v);
    return r;
}

/* |x|^e. */
static TensorObject *
abs_pow(TensorObject *x, double e)
{
    TensorObject *a = pygpu_ag_un(PYGPU_ABS, x);
    TensorObject *r = a ? pygpu_ag_bin_s(PYGPU_POW, a, e) : NULL;
    Py_XDECREF(a);
    return r;
}

/* inf and -inf: sign(x) g / (the count of elements at the norm), where
 * |x| is the norm (or NaN); 0 elsewhere. */
static TensorObject *
extreme_norm_grad(pygpu_node *n, TensorObject *x, TensorObject *gs,
                  TensorObject *ns)
{
    TensorObject *a = pygpu_ag_un(PYGPU_ABS, x);
    TensorObject *m = bin2(PYGPU_OR, cmp(PYGPU_EQ, a, (PyObject *)ns),
                           cmp(PYGPU_NE, a, (PyObject *)a));
    TensorObject *mf = m ? pygpu_ag_as_dtype(m, gs->dtype) : NULL;
    TensorObject *c = mf ? (TensorObject *)pygpu_reduce_over(
                               PYGPU_SUM, mf, n->key, n->flag, 0, "norm")
                         : NULL;
    TensorObject *cs = c ? pygpu_ag_spread(n, c) : NULL;
    TensorObject *r = bin2(PYGPU_DIV, ref(gs), cs);
    r = bin2(PYGPU_MUL, r, mf);
    r = bin2(PYGPU_MUL, r, pygpu_ag_un(PYGPU_SIGN, x));
    Py_XDECREF(a);
    Py_XDECREF(m);
    Py_XDECREF(c);
    return r;
}

/* torch's norm_backward, with gs and ns the gradient and the norm spread
 * over x: p = 1: sign(x) gs; 2: x gs / ns; +-inf: extreme_norm_grad;
 * p < 1: sign(x) |x|^(p-1) gs ns^(1-p), |x|^(p-1) taken as 0 where x is
 * 0; other p: sign(x) |x|^(p-1) gs / ns^(p-1).  Where the norm is 0 the
 * gradient is 0 (a subgradient) rather than 0/0; p = 0 gives none. */
static int
norm_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *nrm = pygpu_ag_saved(n, 1);
    TensorObject *gs = NULL, *ns = NULL, *s = NULL, *v = NULL, *r = NULL;
    double p = n->scalar;
    if (x == NULL || nrm == NULL) {
        return -1;
    }
    if (p == 0.0) {
        return 0;
    }
    gs = pygpu_ag_spread(n, g);
    ns = gs ? pygpu_ag_spread(n, nrm) : NULL;
    if (ns == NULL) {
        goto done;
    }
    if (isinf(p)) {
        r = extreme_norm_grad(n, x, gs, ns);
        goto done;
    }
    if (p == 1.0) {
        r = bin2(PYGPU_MUL, pygpu_ag_un(PYGPU_SIGN, x), ref(gs));
        goto done;
    }
    if (p < 1.0) {
        s = pygpu_ag_zero_where(abs_pow(x, p - 1.0), cmp_s(PYGPU_EQ, x, 0.0));
        s = bin2(PYGPU_MUL, s, pygpu_ag_un(PYGPU_SIGN, x));
        s = bin2(PYGPU_MUL, s, ref(gs));
        r = bin2(PYGPU_MUL, s, pygpu_ag_bin_s(PYGPU_POW, ns, 1.0 - p));
        goto done;
    }
    s = p == 2.0 ? ref(x)
        : p < 2.0 ? bin2(PYGPU_MUL, pygpu_ag_un(PYGPU_SIGN, x),
                         abs_pow(x, p - 1.0))
                  : bin2(PYGPU_MUL, ref(x), abs_pow(x, p - 2.0));
    v = bin2(PYGPU_DIV, ref(gs),
             p == 2.0 ? ref(ns) : pygpu_ag_bin_s(PYGPU_POW, ns, p - 1.0));
    v = pygpu_ag_zero_where(v, cmp_s(PYGPU_EQ, ns, 0.0));
    r = bin2(PYGPU_MUL, s, v);
done:
    Py_XDECREF(gs);
    Py_XDECREF(ns);
    grads[0] = r;
    return r == NULL ? -1 : 0;
}

/* The norm is computed with grad mode off: the elementwise ops it is
 * made of would record their own steps while it is on. */
PyObject *
pygpu_ag_norm(TensorObject *t, double p, PyObject *dimobj, int keepdim,
              int dtype)
{
    int all;
    PyObject *res;
    if (!pygpu_ag_wanted(1, &t)) {
        return pygpu_op_norm(t, p, dimobj, keepdim, dtype);
    }
    TensorObject *x = pygpu_ag_to_dtype(t, dtype < 0 ? t->dtype : dtype);
    if (x == NULL) {
        return NULL;
    }
    res = pygpu_op_norm(x, p, dimobj, keepdim, -1);
    if (res != NULL && pygpu_ag_wanted(1, &x)) {
        pygpu_node *n = pygpu_ag_node("LinalgVectorNormBackward0",
                                      norm_backward, 1, &x);
        if (n != NULL &&
            (pygpu_reduce_mark_dims(x, dimobj, "norm", n->perm, &all) < 0 ||
             pygpu_ag_save(n, 0, x) < 0 ||
             pygpu_ag_save(n, 1, (TensorObject *)res) < 0)) {
            Py_CLEAR(n);
        }
        if (n != NULL) {
            n->flag = keepdim;
            n->scalar = p;
            n->key = dimobj == Py_None ? NULL : Py_XNewRef(dimobj);
        }
        res = pygpu_ag_finish(res, n);
    }
    Py_DECREF(x);
    return res;
}
