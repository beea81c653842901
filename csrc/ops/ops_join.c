/* ops_join.c - new tensors made of others by strided copies: cat (concat,
 * concatenate) and stack.
 *
 * Each is one allocation and one copy per input through the COPY kind of
 * the dispatch table, into the input's slice of the output, converting to
 * the promoted dtype as it goes.  Nothing here records autograd history
 * (autograd_layout.c's pygpu_ag_join does); the Python-facing functions
 * are in tensor/tensor_join.c.
 */
#include "ops/ops.h"

#include <string.h>

/* Copy src into out's memory at byte offset `at`, walked with strides
 * out_st over src's shape. */
static int
copy_into(TensorObject *out, int64_t at, const int64_t *out_st,
          TensorObject *src)
{
    pygpu_geom g;
    const int64_t *st[2] = {out_st, src->strides};
    pygpu_geom_build(&g, src->ndim, src->shape, 2, st);
    return pygpu_op_copy_geom(out->device, out->dtype, out->data + at,
                              src->dtype, src->data, &g,
                              pygpu_numel(src->ndim, src->shape));
}

/* ------------------------------------------------------------ the inputs */

int
pygpu_tensor_list_parse(const char *fname, PyObject *obj,
                        pygpu_tensor_list *l)
{
    l->seq = NULL;
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'tensors' (position 1) must be tuple of "
                     "Tensors, not %.100s", fname, Py_TYPE(obj)->tp_name);
        return -1;
    }
    l->seq = pygpu_sequence_tuple(obj, "tensors");
    if (l->seq == NULL) {
        return -1;
    }
    l->n = PySequence_Fast_GET_SIZE(l->seq);
    l->items = PySequence_Fast_ITEMS(l->seq);
    for (Py_ssize_t i = 0; i < l->n; i++) {
        if (!Tensor_Check(l->items[i])) {
            PyErr_Format(PyExc_TypeError,
                         "expected Tensor as element %zd in argument 0, but "
                         "got %.100s", i, Py_TYPE(l->items[i])->tp_name);
            goto fail;
        }
        TensorObject *t = (TensorObject *)l->items[i];
        if (i == 0) {
            l->dtype = t->dtype;
            continue;
        }
        if (pygpu_check_same_device((TensorObject *)l->items[0], t) < 0) {
            goto fail;
        }
        l->dtype = pygpu_promote(l->dtype, t->dtype);
    }
    return 0;
fail:
    Py_CLEAR(l->seq);
    return -1;
}

/* out= of cat/stack: a tensor of the result's shape on its device that
 * the result's dtype can be cast to, sharing no memory with an input. */
static int
check_out(const char *fname, TensorObject *out, int ndim,
          const int64_t *shape, int dtype, PyObject **items, Py_ssize_t n)
{
    char want[256], got[256];
    if (pygpu_check_same_device((TensorObject *)items[0], out) < 0) {
        return -1;
    }
    if (out->ndim != ndim ||
        memcmp(out->shape, shape, sizeof(int64_t) * (size_t)ndim) != 0) {
        pygpu_format_shape(want, sizeof(want), ndim, shape);
        pygpu_format_shape(got, sizeof(got), out->ndim, out->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): out has shape [%s] but the result has shape [%s] "
                     "(pygpu does not resize out)", fname, got, want);
        return -1;
    }
    if (pygpu_dtype_table[dtype].is_floating_point &&
        !pygpu_dtype_table[out->dtype].is_floating_point) {
        PyErr_Format(PyExc_TypeError,
                     "torch.%s(): input types can't be cast to the desired "
                     "output type %s", fname,
                     pygpu_dtype_table[out->dtype].name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pygpu_check_write(out, (TensorObject *)items[i], NULL) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The result: out (a new reference) after its checks, or a new tensor. */
static TensorObject *
make_result(const char *fname, PyObject *out, int ndim, const int64_t *shape,
            int dtype, PyObject **items, Py_ssize_t n)
{
    TensorObject *first = (TensorObject *)items[0];
    if (out == NULL || out == Py_None) {
        return pygpu_tensor_empty(ndim, shape, dtype, first->device);
    }
    if (pygpu_tensor_arg(out, fname, "out") < 0 ||
        check_out(fname, (TensorObject *)out, ndim, shape, dtype, items,
                  n) < 0) {
        return NULL;
    }
    return (TensorObject *)Py_NewRef(out);
}

/* ------------------------------------------------------------------ cat */

/* torch's legacy rule: a 1-d tensor with no elements joins anything. */
static int
skipped(const TensorObject *t)
{
    return t->ndim == 1 && t->shape[0] == 0;
}

static PyObject *
cat(const char *fname, const pygpu_tensor_list *l, PyObject *dimobj,
    PyObject *out, int *dimp)
{
    PyObject **items = l->items;
    Py_ssize_t n = l->n;
    TensorObject *res = NULL, *ref = NULL;
    int dim = 0;
    int64_t shape[PYGPU_MAX_DIMS] = {0};
    if (n == 0) {
        PyErr_Format(PyExc_ValueError,
                     "torch.%s(): expected a non-empty list of Tensors",
                     fname);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (t->ndim == 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "zero-dimensional tensor (at position %zd) cannot "
                         "be concatenated", i);
            return NULL;
        }
        if (ref == NULL && !skipped(t)) {
            ref = t;
        }
    }
    int ndim = ref ? ref->ndim : 1;
    if (dimobj != NULL && pygpu_parse_dim(dimobj, ndim, &dim) < 0) {
        return NULL;
    }
    if (ref != NULL) {
        memcpy(shape, ref->shape, sizeof(int64_t) * (size_t)ndim);
        shape[dim] = 0;
    }
    for (Py_ssize_t i = 0; ref != NULL && i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (skipped(t)) {
            continue;
        }
        if (t->ndim != ndim) {
            PyErr_Format(PyExc_RuntimeError,
                         "Tensors must have same number of dimensions: got "
                         "%d and %d", ndim, t->ndim);
            return NULL;
        }
        for (int d = 0; d < ndim; d++) {
            if (d != dim && t->shape[d] != ref->shape[d]) {
                PyErr_Format(PyExc_RuntimeError,
                             "Sizes of tensors must match except in "
                             "dimension %d. Expected size %lld but got size "
                             "%lld for tensor number %zd in the list.", dim,
                             (long long)ref->shape[d],
                             (long long)t->shape[d], i);
                return NULL;
            }
        }
        if (__builtin_add_overflow(shape[dim], t->shape[dim], &shape[dim])) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s(): the result's size along dim %d overflows "
                         "int64 (at tensor number %zd in the list)", fname,
                         dim, i);
            return NULL;
        }
    }
    res = make_result(fname, out, ndim, shape, l->dtype, items, n);
    if (res == NULL) {
        return NULL;
    }
    int64_t at = 0, step = res->strides[dim] *
                           (int64_t)pygpu_dtype_table[res->dtype].itemsize;
    for (Py_ssize_t i = 0; ref != NULL && i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (skipped(t)) {
            continue;
        }
        if (copy_into(res, at, res->strides, t) < 0) {
            Py_DECREF(res);
            return NULL;
        }
        at += t->shape[dim] * step;
    }
    *dimp = dim;
    return (PyObject *)res;
}

/* ---------------------------------------------------------------- stack */

static PyObject *
stack(const pygpu_tensor_list *l, PyObject *dimobj, PyObject *out,
      int *dimp)
{
    PyObject **items = l->items;
    Py_ssize_t n = l->n;
    TensorObject *res = NULL;
    int dim = 0;
    int64_t shape[PYGPU_MAX_DIMS], st[PYGPU_MAX_DIMS];
    char s0[256], si[256];
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "stack expects a non-empty TensorList");
        return NULL;
    }
    TensorObject *first = (TensorObject *)items[0];
    int ndim = first->ndim;
    if (ndim + 1 > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %d",
                     PYGPU_MAX_DIMS, ndim + 1);
        return NULL;
    }
    if (dimobj != NULL && pygpu_parse_dim(dimobj, ndim + 1, &dim) < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (t->ndim != ndim ||
            memcmp(t->shape, first->shape, sizeof(int64_t) * (size_t)ndim)) {
            pygpu_format_shape(s0, sizeof(s0), ndim, first->shape);
            pygpu_format_shape(si, sizeof(si), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "stack expects each tensor to be equal size, but "
                         "got [%s] at entry 0 and [%s] at entry %zd", s0, si,
                         i);
            return NULL;
        }
    }
    for (int d = 0, s = 0; d <= ndim; d++) {
        shape[d] = d == dim ? (int64_t)n : first->shape[s++];
    }
    res = make_result("stack", out, ndim + 1, shape, l->dtype, items, n);
    if (res == NULL) {
        return NULL;
    }
    /* input i goes to res[..., i, ...]: res's strides without dim */
    for (int d = 0, s = 0; d <= ndim; d++) {
        if (d != dim) {
            st[s++] = res->strides[d];
        }
    }
    int64_t step = res->strides[dim] *
                   (int64_t)pygpu_dtype_table[res->dtype].itemsize;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (copy_into(res, (int64_t)i * step, st,
                      (TensorObject *)items[i]) < 0) {
            Py_DECREF(res);
            return NULL;
        }
    }
    *dimp = dim;
    return (PyObject *)res;
}

PyObject *
pygpu_op_join(const char *fname, const pygpu_tensor_list *l, PyObject *dim,
              PyObject *out, int is_stack, int *joined_dim)
{
    int d = 0;
    PyObject *res = is_stack ? stack(l, dim, out, &d)
                             : cat(fname, l, dim, out, &d);
    if (joined_dim != NULL) {
        *joined_dim = d;
    }
    return res;
}
