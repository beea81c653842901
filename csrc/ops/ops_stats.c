/* ops_stats.c - var, std and norm, composed from the reductions and the
 * elementwise ops of the dispatch table, so they run wherever those do.
 *
 * var is two-pass: the mean over the dims (kept), then the sum of squared
 * deviations from it, divided by max(0, N - correction) where N is the
 * number of elements each output covers.  Two passes are numerically
 * stable where the one-pass E[x^2] - E[x]^2 is not.  float16 computes in
 * float32 (float64 in float64) and rounds once at the end.
 * norm: p = 2 (and 'fro') is sqrt(sum x^2), 1 sum |x|, inf max |x|, -inf
 * min |x|, 0 the count of nonzeros, another p (sum |x|^p)^(1/p) with
 * |x|^p taken as exp(p log |x|).  Autograd records norm as one Node
 * (autograd_reduce.c), var and std step by step.
 */
#include "autograd/autograd.h"
#include "ops/reduce.h"

#include <math.h>
#include <string.h>

/* Where a step may write: x itself, or nothing (a new tensor) when autograd
 * records x (its history must see the step as an op of its own). */
static TensorObject *
scratch(TensorObject *x)
{
    return pygpu_ag_wanted(1, &x) ? NULL : x;
}

/* x op= scalar, in place when allowed; steals x.  New reference or NULL. */
static TensorObject *
scalar_inplace(int op, TensorObject *x, double s)
{
    PyObject *f = x ? PyFloat_FromDouble(s) : NULL;
    PyObject *r = f ? pygpu_op_binary(op, (PyObject *)x, f, scratch(x))
                    : NULL;
    Py_XDECREF(f);
    Py_XDECREF(x);
    return (TensorObject *)r;
}

/* op(x), in place when allowed; steals x. */
static TensorObject *
unary_inplace(int op, TensorObject *x)
{
    PyObject *r = x ? pygpu_op_unary(op, x, scratch(x) != NULL) : NULL;
    Py_XDECREF(x);
    return (TensorObject *)r;
}

/* The dtype a floating input computes in. */
static int
compute_dtype(int dtype)
{
    return dtype == PYGPU_FLOAT16 || dtype == PYGPU_BFLOAT16 ? PYGPU_FLOAT32
                                                             : dtype;
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

static PyObject *
var_std(TensorObject *t, PyObject *dimobj, double correction, int keepdim,
        int take_sqrt, const char *name)
{
    int mark[PYGPU_MAX_DIMS], all;
    TensorObject *x = NULL, *m = NULL, *d = NULL, *r = NULL;
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
    /* float16 and bfloat16 are read as they are (the mean in float32,
     * the deviations by a mixed-dtype subtraction), unless autograd
     * records the steps from a float32 copy. */
    int direct = compute_dtype(t->dtype) != t->dtype &&
                 !pygpu_ag_wanted(1, &t);
    x = direct ? (TensorObject *)Py_NewRef(t)
               : pygpu_as_dtype(t, compute_dtype(t->dtype));
    m = x ? (TensorObject *)pygpu_reduce_over_to(PYGPU_MEAN, direct, x,
                                                 dimobj, 1, 0, name)
          : NULL;
    d = m ? (TensorObject *)pygpu_op_binary(PYGPU_SUB, (PyObject *)x,
                                            (PyObject *)m, NULL)
          : NULL;
    if (d != NULL && pygpu_numel(d->ndim, d->shape) > 0) {
        PyObject *sq = pygpu_op_binary(PYGPU_MUL, (PyObject *)d,
                                       (PyObject *)d, scratch(d));
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
    Py_XDECREF(x);
    Py_XDECREF(m);
    Py_XDECREF(d);
    return finish(r, t->dtype);
}

/* var / std (self, dim=None, unbiased=None, keepdim=False, *,
 * correction=None): unbiased (True: correction 1, False: 0) and correction
 * are two ways to say the same; both given is an error.  A bool in dim's
 * place is unbiased, as torch's var(input, unbiased) form. */
static PyObject *
var_std_method(int take_sqrt, PyObject *self, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "unbiased", "keepdim",
                                        "correction"};
    const char *name = take_sqrt ? "std" : "var";
    PyObject *a[4];
    int keepdim, unbiased = 1;
    double correction = 1.0;
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 4, 3, 0, a) < 0) {
        return NULL;
    }
    if (a[0] != NULL && PyBool_Check(a[0]) && a[1] == NULL) {
        a[1] = a[0];
        a[0] = NULL;
    }
    if (pygpu_parse_bool(a[2], 0, &keepdim) < 0) {
        return NULL;
    }
    if (a[1] != NULL && a[1] != Py_None) {
        if (a[3] != NULL && a[3] != Py_None) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s(): cannot specify both unbiased and correction",
                         name);
            return NULL;
        }
        if (pygpu_parse_bool(a[1], 1, &unbiased) < 0) {
            return NULL;
        }
        correction = unbiased ? 1.0 : 0.0;
    }
    else if (a[3] != NULL && a[3] != Py_None) {
        correction = PyFloat_AsDouble(a[3]);
        if (correction == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    return var_std((TensorObject *)self, a[0], correction, keepdim,
                   take_sqrt, name);
}

/* ---------------------------------------------------------------- norm */

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
    if (pygpu_ag_wanted(1, &t)) { /* one Node, with torch's rule */
        PyObject *res;
        PYGPU_UNRECORDED(res, norm(t, p, dimobj, keepdim));
        return pygpu_ag_norm(t, p, dimobj, keepdim, res);
    }
    TensorObject *x = pygpu_as_dtype(t, compute_dtype(t->dtype)), *r = NULL;
    TensorObject *a = x ? (TensorObject *)pygpu_op_unary(PYGPU_ABS, x, 0)
                        : NULL;
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
                                       (PyObject *)a, scratch(a));
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

/* norm(self, p='fro', dim=None, keepdim=False, dtype=None) */
static PyObject *
norm_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"p", "dim", "keepdim", "dtype"};
    PyObject *a[4], *r;
    int keepdim;
    double p = 2.0;
    if (pygpu_parse_args("norm", args, nargs, kwnames, names, 4, 4, 0, a) <
            0 ||
        pygpu_parse_bool(a[2], 0, &keepdim) < 0) {
        return NULL;
    }
    if (a[0] != NULL && PyUnicode_Check(a[0])) {
        if (PyUnicode_CompareWithASCIIString(a[0], "fro") != 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "norm(): p=%R is not supported (only 'fro' and "
                         "numbers)", a[0]);
            return NULL;
        }
    }
    else if (a[0] != NULL && a[0] != Py_None) {
        p = PyFloat_AsDouble(a[0]);
        if (p == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    int to_acc; /* (no accumulator form: dtype= converts first) */
    TensorObject *t = pygpu_reduce_read_as((TensorObject *)self, a[3],
                                           ((TensorObject *)self)->dtype, -1,
                                           &to_acc);
    if (t == NULL) {
        return NULL;
    }
    r = norm(t, p, a[1], keepdim);
    Py_DECREF(t);
    return r;
}

static PyObject *
t_var(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return var_std_method(0, self, args, nargs, kw);
}

static PyObject *
t_std(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return var_std_method(1, self, args, nargs, kw);
}

#define STATS_FN(name, method)                                              \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return pygpu_function_form(#name, method, args, nargs, kw);          \
    }

STATS_FN(var, t_var)
STATS_FN(std, t_std)
STATS_FN(norm, norm_method)

#define DOC_VAR(what)                                                        \
    "The " what " over dim (None: every element; an int or a tuple),\n"     \
    "dividing by N - correction (correction=1 by default; unbiased=False\n" \
    "means 0); computed in two passes, float16 in float32."
#define DOC_NORM                                                             \
    "The vector p-norm over dim (None: every element; an int or a\n"        \
    "tuple): p = 'fro' or 2 (default), 1, inf, -inf, 0 or another number."

PyMethodDef pygpu_stats_functions[] = {
    {"var", FASTKW(var_fn),
     "var($module, input, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("variance")},
    {"std", FASTKW(std_fn),
     "std($module, input, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("standard deviation")},
    {"norm", FASTKW(norm_fn),
     "norm($module, input, /, p='fro', dim=None, keepdim=False,\n"
     "     dtype=None)\n--\n\n" DOC_NORM},
    {NULL},
};

PyMethodDef pygpu_stats_methods[] = {
    {"var", FASTKW(t_var),
     "var($self, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("variance")},
    {"std", FASTKW(t_std),
     "std($self, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("standard deviation")},
    {"norm", FASTKW(norm_method),
     "norm($self, /, p='fro', dim=None, keepdim=False, dtype=None)\n--\n\n"
     DOC_NORM},
    {NULL},
};
