/* ops_softmax.c - softmax, log_softmax and logsumexp along a dim: the ops
 * of the SOFTMAX kind.  dtype= converts the input first, as torch;
 * logsumexp of bools and integers computes in the default dtype.  They
 * never record: autograd_reduce.c wraps them, and their Python entries
 * are in tensor/tensor_softmax.c. */
#include "ops/reduce.h"

#include <math.h>

static const char *const soft_names[PYGPU_NSOFTOPS] = {
    "softmax", "log_softmax", "logsumexp"};

/* op along dim of t (floating): out like t, or for LOGSUMEXP t with dim
 * kept as size 1.  New reference or NULL. */
static TensorObject *
softmax_dim(int op, TensorObject *t, int dim)
{
    TensorObject *in = NULL, *out = NULL;
    int64_t shape[PYGPU_MAX_DIMS], outer, n, inner;
    pygpu_dim_split(t->ndim, t->shape, dim, &outer, &n, &inner);
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = d == dim && op == PYGPU_LOGSUMEXP ? 1 : t->shape[d];
    }
    in = pygpu_tensor_contiguous(t);
    out = in ? pygpu_tensor_empty(t->ndim, shape, t->dtype, t->device)
             : NULL;
    if (out == NULL || outer * inner == 0) {
        goto fail;
    }
    if (n == 0) { /* only logsumexp has outputs: log(0) */
        if (pygpu_op_fill(out, -INFINITY) < 0) {
            Py_CLEAR(out);
        }
        goto fail;
    }
    pygpu_kargs k = {.op = op, .out = out->data, .in = {in->data},
                     .outer = outer, .n = n, .inner = inner,
                     .numel = outer * n * inner};
    if (pygpu_dispatch(PYGPU_K_SOFTMAX, t->device, t->dtype, &k,
                       soft_names[op]) < 0) {
        Py_CLEAR(out);
    }
fail:
    Py_XDECREF(in);
    return out;
}

PyObject *
pygpu_op_softmax(int op, TensorObject *t, int dim, int dtype)
{
    if (dtype < 0) {
        dtype = t->dtype;
    }
    if (!pygpu_dtype_table[dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"%s\" not implemented for '%s'", soft_names[op],
                     pygpu_dtype_table[dtype].scalar_name);
        return NULL;
    }
    TensorObject *x = pygpu_as_dtype(t, dtype);
    TensorObject *r = x ? softmax_dim(op, x, dim) : NULL;
    Py_XDECREF(x);
    return (PyObject *)r;
}

/* One dim at a time from the last (the logsumexp of logsumexps is the
 * logsumexp of all), kept, then dropped. */
PyObject *
pygpu_op_logsumexp(TensorObject *t, PyObject *dimobj, int keepdim)
{
    int mark[PYGPU_MAX_DIMS], all;
    if (pygpu_reduce_mark_dims(t, dimobj, "logsumexp", mark, &all) < 0) {
        return NULL;
    }
    TensorObject *cur = pygpu_as_dtype(
        t, pygpu_dtype_table[t->dtype].is_floating_point
               ? t->dtype
               : pygpu_default_dtype());
    if (t->ndim == 0 && cur != NULL) { /* dim 0 of a 0-d tensor */
        Py_SETREF(cur, softmax_dim(PYGPU_LOGSUMEXP, cur, 0));
    }
    for (int d = t->ndim - 1; d >= 0 && cur != NULL; d--) {
        if (mark[d]) {
            Py_SETREF(cur, softmax_dim(PYGPU_LOGSUMEXP, cur, d));
        }
    }
    if (cur != NULL && !keepdim && t->ndim > 0) {
        int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
        int k = 0;
        for (int d = 0; d < cur->ndim; d++) {
            if (!mark[d]) {
                shape[k] = cur->shape[d];
                strides[k++] = cur->strides[d];
            }
        }
        Py_SETREF(cur, pygpu_tensor_view(cur, k, shape, strides, 0));
    }
    return (PyObject *)cur;
}
