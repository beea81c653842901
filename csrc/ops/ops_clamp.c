/* ops_clamp.c - clamp (clip) as torch: min(max(input, min), max), with
 * min and max numbers or tensors (broadcast), torch's result type over the
 * three, and out= or in place.  Two passes of the maximum and minimum rows
 * (ops_elementwise.c), both computed in the result's dtype. */
#include "ops/ops.h"

#include <string.h>

/* ----------------------------------------------------------- result type */

static int
is_float(int dtype)
{
    return pygpu_dtype_table[dtype].is_floating_point;
}

static int
promote_opt(int a, int b)
{
    return a < 0 ? b : b < 0 ? a : pygpu_promote(a, b);
}

/* torch's combine_categories: a lower-priority dtype counts only when it
 * is of a higher category (a bool one takes any). */
static int
combine(int higher, int lower)
{
    if (higher < 0) {
        return lower;
    }
    if (lower < 0 || is_float(higher)) {
        return higher;
    }
    if (higher == PYGPU_BOOL || is_float(lower)) {
        return pygpu_promote(higher, lower);
    }
    return higher;
}

/* torch's result type of tensors and Python numbers (NULL entries are
 * skipped): tensors with dims first, then 0-d tensors, then numbers (a
 * float number: the default dtype).  -1 with TypeError for anything
 * else. */
static int
result_type(const char *name, const char *const *argnames,
            PyObject *const *ops, int n)
{
    int dim = -1, zero = -1, wrapped = -1;
    for (int i = 0; i < n; i++) {
        PyObject *x = ops[i];
        if (x == NULL) {
            continue;
        }
        if (Tensor_Check(x)) {
            TensorObject *t = (TensorObject *)x;
            int *slot = t->ndim ? &dim : &zero;
            *slot = promote_opt(*slot, t->dtype);
        }
        else if (PyFloat_Check(x)) {
            wrapped = promote_opt(wrapped, pygpu_default_dtype());
        }
        else if (PyBool_Check(x)) {
            wrapped = promote_opt(wrapped, PYGPU_BOOL);
        }
        else if (PyLong_Check(x)) {
            wrapped = promote_opt(wrapped, PYGPU_INT64);
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "%s(): argument '%s' must be Tensor or Number, not "
                         "%.100s", name, argnames[i], Py_TYPE(x)->tp_name);
            return -1;
        }
    }
    return combine(dim, combine(zero, wrapped));
}

/* ----------------------------------------------------------------- clamp */

/* x seen with shape (ndim, shape), its broadcast dims with stride 0. */
static TensorObject *
broadcast_view(TensorObject *x, int ndim, const int64_t *shape)
{
    int64_t strides[PYGPU_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int sd = d - (ndim - x->ndim);
        strides[d] = sd >= 0 && x->shape[sd] == shape[d] ? x->strides[sd] : 0;
    }
    return pygpu_tensor_view(x, ndim, shape, strides, 0);
}

/* One pass, dst = op(src, bound) (an in-place or exact-shape out=). */
static int
pass_into(int op, TensorObject *dst, TensorObject *src, PyObject *bound)
{
    PyObject *r = pygpu_op_binary(op, (PyObject *)src, bound, dst);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* dst = min(max(x, lo), hi) with dst of the result's shape and dtype;
 * lo or hi may be NULL. */
static int
clamp_into(TensorObject *dst, TensorObject *x, PyObject *lo, PyObject *hi)
{
    int same = x->ndim == dst->ndim;
    for (int d = 0; same && d < x->ndim; d++) {
        same = x->shape[d] == dst->shape[d];
    }
    TensorObject *xe = same ? (TensorObject *)Py_NewRef(x)
                            : broadcast_view(x, dst->ndim, dst->shape);
    if (xe == NULL) {
        return -1;
    }
    int rc = lo ? pass_into(PYGPU_MAXIMUM, dst, xe, lo) : 0;
    if (rc == 0 && hi != NULL) {
        rc = pass_into(PYGPU_MINIMUM, dst, lo ? dst : xe, hi);
    }
    Py_DECREF(xe);
    return rc;
}

/* The broadcast shape of x and the tensors among lo and hi. */
static int
clamp_shape(TensorObject *x, PyObject *lo, PyObject *hi, int *ndim,
            int64_t *shape)
{
    PyObject *bounds[2] = {lo, hi};
    *ndim = x->ndim;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    for (int i = 0; i < 2; i++) {
        if (bounds[i] != NULL && Tensor_Check(bounds[i])) {
            TensorObject *b = (TensorObject *)bounds[i];
            int64_t tmp[PYGPU_MAX_DIMS];
            memcpy(tmp, shape, sizeof(tmp));
            if (pygpu_broadcast_shapes(*ndim, tmp, b->ndim, b->shape, ndim,
                                       shape) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

PyObject *
pygpu_op_clamp(const char *name, TensorObject *x, PyObject *lo, PyObject *hi,
      TensorObject *out, int inplace)
{
    static const char *const argnames[] = {"input", "min", "max"};
    TensorObject *res = NULL, *work = NULL;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    lo = lo == Py_None ? NULL : lo;
    hi = hi == Py_None ? NULL : hi;
    if (lo == NULL && hi == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "torch.clamp: At least one of 'min' or 'max' must "
                        "not be None");
        return NULL;
    }
    PyObject *ops[3] = {(PyObject *)x, lo, hi};
    int dtype = result_type(name, argnames, ops, 3);
    if (dtype < 0 || clamp_shape(x, lo, hi, &ndim, shape) < 0) {
        return NULL;
    }
    if (inplace) {
        out = x;
    }
    TensorObject *tlo = lo && Tensor_Check(lo) ? (TensorObject *)lo : NULL;
    TensorObject *thi = hi && Tensor_Check(hi) ? (TensorObject *)hi : NULL;
    res = out ? pygpu_out_prepare(out, ndim, shape, dtype, x->device, inplace,
                                  x, tlo)
              : pygpu_tensor_empty(ndim, shape, dtype, x->device);
    if (res == NULL || (out && thi && pygpu_check_write(out, thi, NULL) < 0)) {
        Py_XDECREF(res);
        return NULL;
    }
    /* The first pass must not overwrite max (or input) before the second
     * reads it: then it runs in a temporary. */
    work = (TensorObject *)Py_NewRef(res);
    if (lo && thi && pygpu_get_overlap(res, thi) != PYGPU_ALIAS_NONE) {
        Py_SETREF(work, pygpu_tensor_empty(ndim, shape, dtype, x->device));
    }
    int rc = work ? clamp_into(work, x, lo, hi) : -1;
    if (rc == 0 && work != res) {
        rc = pygpu_op_copy_same_device(res, work);
    }
    Py_XDECREF(work);
    if (rc < 0) {
        Py_CLEAR(res);
    }
    return out ? pygpu_out_finish(out, res) : (PyObject *)res;
}
