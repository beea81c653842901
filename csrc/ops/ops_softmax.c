/* ops_softmax.c - softmax, log_softmax and logsumexp along a dim: the front
 * end of the SOFTMAX kind.  dtype= converts the input first, as torch;
 * logsumexp of bools and integers computes in the default dtype. */
#include "autograd/autograd.h"
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

/* t.softmax(dim, dtype=None), t.log_softmax(dim, dtype=None) */
static PyObject *
softmax_method(int op, PyObject *self, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "dtype"};
    PyObject *a[2];
    TensorObject *t = (TensorObject *)self, *r;
    int dim, dtype;
    if (pygpu_parse_args(soft_names[op], args, nargs, kwnames, names, 2, 2,
                         1, a) < 0 ||
        pygpu_parse_dim(a[0], t->ndim, &dim) < 0 ||
        pygpu_parse_dtype_opt(a[1], t->dtype, &dtype) < 0) {
        return NULL;
    }
    if (!pygpu_dtype_table[dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"%s\" not implemented for '%s'", soft_names[op],
                     pygpu_dtype_table[dtype].scalar_name);
        return NULL;
    }
    t = pygpu_as_dtype(t, dtype);
    r = t ? (TensorObject *)pygpu_ag_softmax(
                op, t, dim, (PyObject *)softmax_dim(op, t, dim))
          : NULL;
    Py_XDECREF(t);
    return (PyObject *)r;
}

/* t.logsumexp(dim, keepdim=False): one dim at a time from the last (the
 * logsumexp of logsumexps is the logsumexp of all), kept, then dropped. */
static PyObject *
t_logsumexp(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"dim", "keepdim"};
    PyObject *a[2];
    int keepdim, mark[PYGPU_MAX_DIMS], all;
    TensorObject *t = (TensorObject *)self;
    if (pygpu_parse_args("logsumexp", args, nargs, kwnames, names, 2, 2, 1,
                         a) < 0 ||
        pygpu_parse_bool(a[1], 0, &keepdim) < 0 ||
        pygpu_reduce_mark_dims(t, a[0], "logsumexp", mark, &all) < 0) {
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
    return pygpu_ag_logsumexp(t, a[0], keepdim, (PyObject *)cur);
}

PYGPU_OP_METHOD(t_softmax, softmax_method, PYGPU_SOFTMAX)
PYGPU_OP_METHOD(t_log_softmax, softmax_method, PYGPU_LOG_SOFTMAX)

#define SOFTMAX_FN(name)                                                     \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return pygpu_function_form(#name, t_##name, args, nargs, kw);        \
    }

SOFTMAX_FN(softmax)
SOFTMAX_FN(log_softmax)
SOFTMAX_FN(logsumexp)

#define DOC_SOFTMAX                                                          \
    "exp(x) / sum(exp(x)) along dim, with the maximum subtracted first;\n"  \
    "dtype converts the input first (float16 computes in float32)."
#define DOC_LOG_SOFTMAX                                                      \
    "x - logsumexp(x) along dim, with the maximum subtracted first;\n"      \
    "dtype converts the input first (float16 computes in float32)."
#define DOC_LOGSUMEXP                                                        \
    "log(sum(exp(x))) over dim (an int or a tuple), with the maximum\n"     \
    "subtracted first; integers give float32."

PyMethodDef pygpu_softmax_functions[] = {
    {"softmax", FASTKW(softmax_fn),
     "softmax($module, input, /, dim, dtype=None)\n--\n\n" DOC_SOFTMAX},
    {"log_softmax", FASTKW(log_softmax_fn),
     "log_softmax($module, input, /, dim, dtype=None)\n--\n\n"
     DOC_LOG_SOFTMAX},
    {"logsumexp", FASTKW(logsumexp_fn),
     "logsumexp($module, input, /, dim, keepdim=False)\n--\n\n"
     DOC_LOGSUMEXP},
    {NULL},
};

PyMethodDef pygpu_softmax_methods[] = {
    {"softmax", FASTKW(t_softmax),
     "softmax($self, /, dim, dtype=None)\n--\n\n" DOC_SOFTMAX},
    {"log_softmax", FASTKW(t_log_softmax),
     "log_softmax($self, /, dim, dtype=None)\n--\n\n" DOC_LOG_SOFTMAX},
    {"logsumexp", FASTKW(t_logsumexp),
     "logsumexp($self, /, dim, keepdim=False)\n--\n\n" DOC_LOGSUMEXP},
    {NULL},
};
