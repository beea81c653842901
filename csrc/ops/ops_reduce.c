/* ops_reduce.c - the reductions: sum, mean, prod, max and min over all
 * elements or over dims, with keepdim; max and min over a dim also give
 * the indices, as torch's do, and argmax/argmin only those.  They never
 * record: autograd_reduce.c and autograd_extrema.c wrap them, and their
 * Python entries are in tensor/tensor_reduce.c. */
#include "ops/reduce.h"

#include <string.h>

static const char *const redop_names[PYGPU_NREDOPS] = {
    "sum", "mean", "max", "min", "prod"};

/* Reduce contiguous `in` seen as [outer, n, inner] into out (and
 * indices): the row of in's own dtype reads it as it is. */
static int
run_reduce(int op, int to_acc, TensorObject *out, TensorObject *indices,
           TensorObject *in, int64_t outer, int64_t n, int64_t inner)
{
    pygpu_kargs k = {.op = op, .out = out->data, .in = {in->data},
                     .indices = indices ? (int64_t *)indices->data : NULL,
                     .flag = to_acc, .outer = outer, .n = n, .inner = inner,
                     .numel = outer * n * inner};
    return pygpu_dispatch(PYGPU_K_REDUCE, in->device, in->dtype, &k,
                          redop_names[op]);
}

void
pygpu_dim_split(int ndim, const int64_t *shape, int dim, int64_t *outer,
                int64_t *n, int64_t *inner)
{
    *outer = *n = *inner = 1;
    for (int d = 0; d < ndim; d++) {
        if (d < dim) {
            *outer *= shape[d];
        }
        else if (d > dim) {
            *inner *= shape[d];
        }
        else {
            *n = shape[d];
        }
    }
}

/* op over one dim (dim < 0: all elements, as a 0-d result, or all ones
 * with keepdim) into *values, of pygpu_reduce_out_dtype(op, t->dtype,
 * to_acc), and, when `indices` is not NULL, *indices.  0 or -1. */
static int
reduce_dim(int op, int to_acc, TensorObject *t, int dim, int keepdim,
           const char *name, TensorObject **values, TensorObject **indices)
{
    TensorObject *in = NULL, *out = NULL, *idx = NULL;
    int64_t shape[PYGPU_MAX_DIMS];
    int ndim = 0, rc = -1;
    int64_t outer = 1, n = 1, inner = 1;
    if (dim < 0) {
        n = pygpu_numel(t->ndim, t->shape);
        if (keepdim) {
            ndim = t->ndim;
            for (int d = 0; d < ndim; d++) {
                shape[d] = 1;
            }
        }
    }
    else if (t->ndim > 0) { /* (dim 0 / -1 of a 0-d tensor: itself) */
        pygpu_dim_split(t->ndim, t->shape, dim, &outer, &n, &inner);
        for (int d = 0; d < t->ndim; d++) {
            if (d != dim) {
                shape[ndim++] = t->shape[d];
            }
            else if (keepdim) {
                shape[ndim++] = 1;
            }
        }
    }
    if ((op == PYGPU_MAX || op == PYGPU_MIN) && n == 0) {
        if (dim < 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s(): Expected reduction dim to be specified for "
                         "input.numel() == 0. Specify the reduction dim with "
                         "the 'dim' argument.", name);
        }
        else {
            PyErr_Format(PyExc_IndexError,
                         "%s(): Expected reduction dim %d to have non-zero "
                         "size.", name, dim);
        }
        return -1;
    }
    /* No converted copy: the loop reads t's dtype and accumulates wide
     * (sum and prod of bool and integers give int64, as in torch). */
    in = pygpu_tensor_contiguous(t);
    out = in ? pygpu_tensor_empty(ndim, shape,
                                  pygpu_reduce_out_dtype(op, t->dtype,
                                                         to_acc),
                                  t->device)
             : NULL;
    if (out == NULL) {
        goto fail;
    }
    if (indices != NULL) {
        idx = pygpu_tensor_empty(ndim, shape, PYGPU_INT64, t->device);
        if (idx == NULL) {
            goto fail;
        }
    }
    if (outer * inner > 0 &&
        run_reduce(op, to_acc, out, idx, in, outer, n, inner) < 0) {
        goto fail;
    }
    *values = out;
    out = NULL;
    if (indices != NULL) {
        *indices = idx;
        idx = NULL;
    }
    rc = 0;
fail:
    Py_XDECREF(in);
    Py_XDECREF(out);
    Py_XDECREF(idx);
    return rc;
}

/* (values, indices) as pygpu.return_types.<max|min>; steals both. */
static PyObject *
make_pair(int op, TensorObject *values, TensorObject *indices)
{
    PyObject *r = PyStructSequence_New(op == PYGPU_MAX
                                           ? pygpu_state->MaxResult_Type
                                           : pygpu_state->MinResult_Type);
    if (r == NULL) {
        Py_DECREF(values);
        Py_DECREF(indices);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, (PyObject *)values);
    PyStructSequence_SET_ITEM(r, 1, (PyObject *)indices);
    return r;
}

int64_t
pygpu_reduce_mark_dims(TensorObject *t, PyObject *dimobj, const char *name,
                       int mark[PYGPU_MAX_DIMS], int *all)
{
    int64_t count = 1;
    int nd = 0;
    memset(mark, 0, sizeof(int) * PYGPU_MAX_DIMS);
    *all = 0;
    if (dimobj == NULL || dimobj == Py_None) {
        *all = 1;
    }
    else if (PyIndex_Check(dimobj) && !PyFloat_Check(dimobj)) {
        int d; /* any integer (a bool is refused there) */
        if (pygpu_parse_dim(dimobj, t->ndim, &d) < 0) {
            return -1;
        }
        if (t->ndim > 0) {
            mark[d] = 1;
        }
        nd = 1;
    }
    else if (PyTuple_Check(dimobj) || PyList_Check(dimobj)) {
        Py_ssize_t n = PySequence_Size(dimobj);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_GetItem(dimobj, i);
            int d, rc = item ? pygpu_parse_dim(item, t->ndim, &d) : -1;
            Py_XDECREF(item);
            if (rc < 0) {
                return -1;
            }
            if (t->ndim > 0 && mark[d]++) {
                PyErr_Format(PyExc_RuntimeError,
                             "dim %d appears multiple times in the list of "
                             "dims", d);
                return -1;
            }
            nd++;
        }
        *all = nd == 0;
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "%s(): dim must be an int or a tuple of ints, not "
                     "%.100s", name, Py_TYPE(dimobj)->tp_name);
        return -1;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (*all) {
            mark[d] = 1;
        }
        if (mark[d]) {
            count *= t->shape[d];
        }
    }
    return count;
}

PyObject *
pygpu_reduce_over(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                  int pair, const char *name)
{
    return pygpu_reduce_over_to(op, 0, t, dimobj, keepdim, pair, name);
}

PyObject *
pygpu_reduce_over_to(int op, int to_acc, TensorObject *t, PyObject *dimobj,
                     int keepdim, int pair, const char *name)
{
    TensorObject *v = NULL, *ix = NULL;
    int mark[PYGPU_MAX_DIMS], all, single = -1, nmarked = 0;
    if (op == PYGPU_MEAN && !pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_Format(PyExc_RuntimeError,
                     "mean(): could not infer output dtype. Input dtype must "
                     "be either a floating point or complex dtype. Got: %s",
                     pygpu_dtype_table[t->dtype].scalar_name);
        return NULL;
    }
    if (pair && dimobj != NULL && dimobj != Py_None &&
        !(PyIndex_Check(dimobj) && !PyFloat_Check(dimobj))) {
        PyErr_Format(PyExc_TypeError, "%s(): dim must be an int, not %.100s",
                     name, Py_TYPE(dimobj)->tp_name);
        return NULL;
    }
    if (pygpu_reduce_mark_dims(t, dimobj, name, mark, &all) < 0) {
        return NULL;
    }
    if (all) {
        return reduce_dim(op, to_acc, t, -1, keepdim, name, &v, NULL) < 0
                   ? NULL : (PyObject *)v;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (mark[d]) {
            single = d;
            nmarked++;
        }
    }
    if (nmarked <= 1) { /* one dim (or a 0-d tensor's dim 0) */
        int d = single < 0 ? 0 : single;
        int want = pair && (op == PYGPU_MAX || op == PYGPU_MIN);
        if (reduce_dim(op, to_acc, t, d, keepdim, name, &v,
                       want ? &ix : NULL) < 0) {
            return NULL;
        }
        return want ? make_pair(op, v, ix) : (PyObject *)v;
    }
    /* Several dims: reduce one at a time from the last, keeping dims so
     * the remaining indices stay valid, then drop them. */
    PyObject *cur = Py_NewRef((PyObject *)t);
    for (int d = t->ndim - 1; d >= 0 && cur != NULL; d--) {
        if (mark[d]) {
            TensorObject *next = NULL;
            int rc = reduce_dim(op, to_acc, (TensorObject *)cur, d, 1, name,
                                &next, NULL);
            Py_SETREF(cur, rc < 0 ? NULL : (PyObject *)next);
        }
    }
    if (cur != NULL && !keepdim) {
        TensorObject *c = (TensorObject *)cur;
        int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
        int k = 0;
        for (int d = 0; d < c->ndim; d++) {
            if (!mark[d]) {
                shape[k] = c->shape[d];
                strides[k++] = c->strides[d];
            }
        }
        Py_SETREF(cur, (PyObject *)pygpu_tensor_view(c, k, shape, strides, 0));
    }
    return cur;
}

/* argmax / argmin: the index of the first maximum (minimum; a NaN counts
 * as both) of all elements (of t flattened), or over dim. */
PyObject *
pygpu_reduce_arg(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                 const char *name)
{
    TensorObject *c = NULL, *flat = NULL, *v = NULL, *ix = NULL;
    PyObject *r = NULL;
    if (t->dtype == PYGPU_BOOL) { /* torch has no bool loop here */
        PyErr_Format(PyExc_RuntimeError,
                     "\"%s_cpu\" not implemented for 'Bool'", name);
        return NULL;
    }
    if (dimobj != NULL && dimobj != Py_None) {
        int d;
        if (pygpu_parse_dim(dimobj, t->ndim, &d) < 0 ||
            reduce_dim(op, 0, t, d, keepdim, name, &v, &ix) < 0) {
            return NULL;
        }
        Py_DECREF(v);
        return (PyObject *)ix;
    }
    int64_t n = pygpu_numel(t->ndim, t->shape), one = 1;
    if (n == 0) {
        PyErr_Format(PyExc_IndexError,
                     "%s(): Expected reduction dim to be specified for "
                     "input.numel() == 0.", name);
        return NULL;
    }
    c = pygpu_tensor_contiguous(t);
    flat = c ? pygpu_tensor_view(c, 1, &n, &one, 0) : NULL;
    if (flat == NULL || reduce_dim(op, 0, flat, 0, 0, name, &v, &ix) < 0) {
        goto fail;
    }
    if (keepdim) { /* all ones, as torch */
        int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) {
            shape[d] = strides[d] = 1;
        }
        r = (PyObject *)pygpu_tensor_view(ix, t->ndim, shape, strides, 0);
    }
    else {
        r = Py_NewRef((PyObject *)ix);
    }
fail:
    Py_XDECREF(c);
    Py_XDECREF(flat);
    Py_XDECREF(v);
    Py_XDECREF(ix);
    return r;
}

TensorObject *
pygpu_as_dtype(TensorObject *t, int dtype)
{
    if (t->dtype == dtype) {
        return (TensorObject *)Py_NewRef((PyObject *)t);
    }
    return pygpu_tensor_to(t, t->device, dtype);
}

/* Integers sum into int64, and dtype= may name the accumulator's dtype
 * without a converted copy; any other dtype= converts first. */
PyObject *
pygpu_op_reduce_as(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                   int dtype, const char *name)
{
    int natural = pygpu_reduce_out_dtype(op, t->dtype, 0);
    int acc = op == PYGPU_MEAN &&
                      !pygpu_dtype_table[t->dtype].is_floating_point
                  ? -1 : pygpu_reduce_out_dtype(op, t->dtype, 1);
    int to_acc = dtype >= 0 && dtype != natural && dtype == acc;
    if (dtype < 0 || dtype == natural || to_acc) {
        return pygpu_reduce_over_to(op, to_acc, t, dimobj, keepdim, 0,
                                    name);
    }
    TensorObject *x = pygpu_as_dtype(t, dtype);
    PyObject *r = x ? pygpu_reduce_over(op, x, dimobj, keepdim, 0, name)
                    : NULL;
    Py_XDECREF(x);
    return r;
}

PyObject *
pygpu_op_reduce(int op, TensorObject *t, PyObject *dimobj, int keepdim)
{
    return pygpu_reduce_over(op, t, dimobj, keepdim, 1, redop_names[op]);
}
