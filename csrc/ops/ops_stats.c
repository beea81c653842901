/* ops_stats.c - var, std and norm, composed from the reductions and the
 * elementwise ops of the dispatch table, so they run wherever those do.
 *
 * var is two-pass: the mean over the dims (kept), then the sum of squared
 * deviations from it, divided by max(0, N - correction) where N is the
 * number of elements each output covers.  Two passes are numerically
 * stable where the one-pass E[x^2] - E[x]^2 is not.  float16 and bfloat16
 * are read as they are, the mean in float32 and the deviations by a
 * mixed-dtype subtraction, rounded once at the end.
 * norm: p = 2 (and 'fro') is sqrt(sum x^2), 1 sum |x|, inf max |x|, -inf
 * min |x|, 0 the count of nonzeros, another p (sum |x|^p)^(1/p) with
 * |x|^p taken as exp(p log |x|); float16 and bfloat16 from a float32 copy.
 * Nothing here records: autograd_stats.c records var and std step by step
 * and norm as one Node; the Python entries are in tensor/tensor_stats.c.
 * The steps write in place into the tensors they made.
 */
#include "ops/reduce.h"

#include <math.h>
#include <string.h>

/* x op= scalar, in place; steals x.  New reference or NULL. */
static TensorObject *
scalar_inplace(int op, TensorObject *x, double s)
{
    PyObject *f = x ? PyFloat_FromDouble(s) : NULL;
    PyObject *r = f ? pygpu_op_binary(op, (PyObject *)x, f, x) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(x);
    return (TensorObject *)r;
}

/* op(x), in place; steals x. */
static TensorObject *
unary_inplace(int op, TensorObject *x)
{
    PyObject *r = x ? pygpu_op_unary(op, x, 1) : NULL;
    Py_XDECREF(x);
    return (TensorObject *)r;
}

/* r (steals) converted back to dtype. */
static PyObject *
finish(TensorObject *r, int dtype)
{
    if (r == NULL) {
        return NULL;
    }
    TensorObject *c = pygpu_as_dtype(r, dtype);
    Py_DECREF(r);
    return (PyObject *)c;
}

PyObject *
pygpu_op_var_std(TensorObject *t, PyObject *dimobj, double correction,
                 int keepdim, int take_sqrt, const char *name)
{
    int mark[PYGPU_MAX_DIMS], all;
    TensorObject *m = NULL, *d = NULL, *r = NULL;
    if (!pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "std and var only support floating point and "
                        "complex dtypes");
        return NULL;
    }
    int64_t count = pygpu_reduce_mark_dims(t, dimobj, name, mark, &all);
    if (count < 0) {
        return NULL;
    }
    /* (the mean of float16 and bfloat16 in their float32 accumulator) */
    m = (TensorObject *)pygpu_reduce_over_to(
        PYGPU_MEAN, pygpu_reduce_acc_dtype(t->dtype) != t->dtype, t, dimobj,
        1, 0, name);
    d = m ? (TensorObject *)pygpu_op_binary(PYGPU_SUB, (PyObject *)t,
                                            (PyObject *)m, NULL)
          : NULL;
    if (d != NULL && pygpu_numel(d->ndim, d->shape) > 0) {
        PyObject *sq = pygpu_op_binary(PYGPU_MUL, (PyObject *)d,
                                       (PyObject *)d, d);
        Py_SETREF(d, (TensorObject *)sq);
    }
    r = d ? (TensorObject *)pygpu_reduce_over(PYGPU_SUM, d, dimobj, keepdim,
                                              0, name)
          : NULL;
    double dof = (double)count - correction;
    r = scalar_inplace(PYGPU_DIV, r, dof > 0 ? dof : 0.0);
    if (take_sqrt) {
        r = unary_inplace(PYGPU_SQRT, r);
    }
    Py_XDECREF(m);
    Py_XDECREF(d);
    return finish(r, t->dtype);
}

/* ---------------------------------------------------------------- norm */

/* The norm of t (floating) in t's dtype. */
static PyObject *
norm(TensorObject *t, double p, PyObject *dimobj, int keepdim)
{
    int mark[PYGPU_MAX_DIMS], all;
    if (!pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "linalg.vector_norm: Expected a floating point or "
                     "complex tensor as input. Got %s",
                     pygpu_dtype_table[t->dtype].scalar_name);
        return NULL;
    }
    if (pygpu_reduce_mark_dims(t, dimobj, "norm", mark, &all) < 0) {
        return NULL;
    }
    /* (float16 and bfloat16 from a copy in their float32 accumulator) */
    TensorObject *x = pygpu_as_dtype(t, pygpu_reduce_acc_dtype(t->dtype));
    TensorObject *a = x ? (TensorObject *)pygpu_op_unary(PYGPU_ABS, x, 0)
                        : NULL;
    TensorObject *r = NULL;
    Py_XDECREF(x);
    if (a == NULL) {
        return NULL;
    }
    int op = PYGPU_SUM;
    if (isinf(p)) {
        op = p > 0 ? PYGPU_MAX : PYGPU_MIN;
    }
    else if (p == 0) {
        a = unary_inplace(PYGPU_SIGN, a);
    }
    else if (p == 2) {
        PyObject *sq = pygpu_op_binary(PYGPU_MUL, (PyObject *)a,
                                       (PyObject *)a, a);
        Py_SETREF(a, (TensorObject *)sq);
    }
    else if (p != 1) {
        a = unary_inplace(PYGPU_EXP,
                          scalar_inplace(PYGPU_MUL,
                                         unary_inplace(PYGPU_LOG, a), p));
    }
    if (a != NULL) {
        r = (TensorObject *)pygpu_reduce_over(op, a, dimobj, keepdim, 0,
                                              "norm");
        Py_DECREF(a);
    }
    if (p == 2) {
        r = unary_inplace(PYGPU_SQRT, r);
    }
    else if (!isinf(p) && p != 0 && p != 1) {
        r = unary_inplace(PYGPU_EXP,
                          scalar_inplace(PYGPU_DIV,
                                         unary_inplace(PYGPU_LOG, r), p));
    }
    return finish(r, t->dtype);
}

PyObject *
pygpu_op_norm(TensorObject *t, double p, PyObject *dimobj, int keepdim,
              int dtype)
{
    TensorObject *x = pygpu_as_dtype(t, dtype < 0 ? t->dtype : dtype);
    PyObject *r = x ? norm(x, p, dimobj, keepdim) : NULL;
    Py_XDECREF(x);
    return r;
}
