/* tensor_views.c - views that share memory: T, t, transpose, permute,
 * view/reshape, flatten, unsqueeze, squeeze, expand.  Indexing is in
 * tensor_index.c. */
#include "tensor/tensor.h"

#include <string.h>

/* RuntimeError: shape (with its -1 still in) does not fit numel; -1. */
static int
shape_invalid(int n, const int64_t *shape, int64_t numel)
{
    char buf[256];
    pygpu_format_shape(buf, sizeof(buf), n, shape);
    PyErr_Format(PyExc_RuntimeError,
                 "shape '[%s]' is invalid for input of size %lld", buf,
                 (long long)numel);
    return -1;
}

/* Parse a shape given as *args or one sequence; resolve one -1 against
 * numel.  -1 with an exception. */
static int
infer_shape(PyObject *const *args, Py_ssize_t nargs, int64_t numel,
            int *ndim, int64_t *shape)
{
    int neg = -1;
    int64_t known;
    PyObject *seq;
    PyObject *const *items;
    Py_ssize_t n;
    int rc = -1;
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return -1;
    }
    if (pygpu_parse_sizes("shape", items, n, shape) < 0) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (neg >= 0) {
                PyErr_SetString(PyExc_RuntimeError,
                                "only one dimension can be inferred");
                goto fail;
            }
            neg = (int)i;
        }
        else if (shape[i] < 0) {
            PyErr_Format(PyExc_RuntimeError, "invalid shape dimension %lld",
                         (long long)shape[i]);
            goto fail;
        }
    }
    if (neg >= 0) {
        shape[neg] = 1;
    }
    if (pygpu_shape_numel((int)n, shape, &known) < 0) {
        goto fail;
    }
    if (neg >= 0) {
        shape[neg] = -1;
        if (known == 0 || numel % known != 0) {
            shape_invalid((int)n, shape, numel);
            goto fail;
        }
        shape[neg] = numel / known;
    }
    else if (known != numel) {
        shape_invalid((int)n, shape, numel);
        goto fail;
    }
    *ndim = (int)n;
    rc = 0;
fail:
    Py_XDECREF(seq);
    return rc;
}

/* Strides for viewing t with a new shape without copying, or -1 (no
 * exception) when the memory layout does not allow it: old dims are
 * grouped into runs that are contiguous among themselves, and each run
 * must be covered exactly by consecutive new dims. */
static int
view_strides(const TensorObject *t, int ndim, const int64_t *shape,
             int64_t *strides)
{
    int64_t numel = pygpu_numel(t->ndim, t->shape);
    if (numel == 0 || pygpu_is_contiguous(t)) {
        int64_t s = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            strides[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
        }
        return 0;
    }
    int nd = ndim - 1;
    int64_t chunk_base_stride = t->ndim ? t->strides[t->ndim - 1] : 1;
    int64_t tensor_numel = 1, view_numel = 1;
    for (int od = t->ndim - 1; od >= 0; od--) {
        tensor_numel *= t->shape[od];
        /* a run ends where the next-outer dim is not contiguous with it */
        if (od == 0 || (t->shape[od - 1] != 1 &&
                        t->strides[od - 1] != tensor_numel * chunk_base_stride)) {
            while (nd >= 0 && (view_numel < tensor_numel || shape[nd] == 1)) {
                strides[nd] = view_numel * chunk_base_stride;
                view_numel *= shape[nd];
                nd--;
            }
            if (view_numel != tensor_numel) {
                return -1;
            }
            if (od > 0) {
                chunk_base_stride = t->strides[od - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return nd == -1 ? 0 : -1;
}

static PyObject *
reshape_raw(TensorObject *self, int ndim, const int64_t *shape,
            int allow_copy)
{
    int64_t strides[PYGPU_MAX_DIMS];
    if (view_strides(self, ndim, shape, strides) == 0) {
        return (PyObject *)pygpu_tensor_view(self, ndim, shape, strides, 0);
    }
    if (!allow_copy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "view size is not compatible with input tensor's "
                        "size and stride (at least one dimension spans "
                        "across two contiguous subspaces). Use .reshape(...) "
                        "instead.");
        return NULL;
    }
    TensorObject *c = pygpu_tensor_contiguous(self);
    if (c == NULL) {
        return NULL;
    }
    view_strides(c, ndim, shape, strides);
    PyObject *r = (PyObject *)pygpu_tensor_view(c, ndim, shape, strides, 0);
    Py_DECREF(c);
    return r;
}

/* self in shape: a view when the layout allows, else (allow_copy) a view
 * of a contiguous copy. */
static PyObject *
reshape_to(TensorObject *self, int ndim, const int64_t *shape, int allow_copy)
{
    return pygpu_ag_view(PYGPU_AG_RESHAPE, self, NULL, NULL,
                         reshape_raw(self, ndim, shape, allow_copy));
}

static PyObject *
reshape_impl(TensorObject *self, PyObject *const *args, Py_ssize_t nargs,
             int allow_copy)
{
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t numel = pygpu_numel(self->ndim, self->shape);
    if (infer_shape(args, nargs, numel, &ndim, shape) < 0) {
        return NULL;
    }
    return reshape_to(self, ndim, shape, allow_copy);
}

PyObject *
pygpu_t_view(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 1 && DType_Check(args[0])) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "view(dtype) is not supported by pygpu");
        return NULL;
    }
    return reshape_impl((TensorObject *)op, args, nargs, 0);
}

PyObject *
pygpu_t_reshape(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    return reshape_impl((TensorObject *)op, args, nargs, 1);
}

static PyObject *
permuted(TensorObject *t, const int *perm)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[perm[d]];
        strides[d] = t->strides[perm[d]];
    }
    return pygpu_ag_view(
        PYGPU_AG_PERMUTE, t, perm, NULL,
        (PyObject *)pygpu_tensor_view(t, t->ndim, shape, strides, 0));
}

static PyObject *
transpose_dims(TensorObject *t, int d0, int d1)
{
    int perm[PYGPU_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        perm[d] = d;
    }
    if (t->ndim > 0) {
        perm[d0] = d1;
        perm[d1] = d0;
    }
    return permuted(t, perm);
}

PyObject *
pygpu_t_transpose(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    TensorObject *t = (TensorObject *)op;
    int d0, d1;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "transpose() takes 2 arguments (dim0, dim1), %zd given",
                     nargs);
        return NULL;
    }
    if (pygpu_parse_dim(args[0], t->ndim, &d0) < 0 ||
        pygpu_parse_dim(args[1], t->ndim, &d1) < 0) {
        return NULL;
    }
    return transpose_dims(t, d0, d1);
}

/* t(): 0-D and 1-D unchanged, 2-D transposed, as torch. */
PyObject *
pygpu_t_t(PyObject *op, PyObject *noargs)
{
    TensorObject *t = (TensorObject *)op;
    if (t->ndim > 2) {
        PyErr_Format(PyExc_RuntimeError,
                     "t() expects a tensor with <= 2 dimensions, but self is "
                     "%dD", t->ndim);
        return NULL;
    }
    return transpose_dims(t, 0, t->ndim == 2 ? 1 : 0);
}

/* .T: all dims reversed (torch deprecates it for ndim != 2 but allows). */
PyObject *
pygpu_t_get_T(PyObject *op, void *closure)
{
    TensorObject *t = (TensorObject *)op;
    int perm[PYGPU_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        perm[d] = t->ndim - 1 - d;
    }
    return permuted(t, perm);
}

/* .mT: the last two dims swapped. */
PyObject *
pygpu_t_get_mT(PyObject *op, void *closure)
{
    TensorObject *t = (TensorObject *)op;
    if (t->ndim < 2) {
        PyErr_SetString(PyExc_RuntimeError,
                        "tensor.mT is only supported on matrices or batches "
                        "of matrices. Got 1-D tensor.");
        return NULL;
    }
    return transpose_dims(t, t->ndim - 2, t->ndim - 1);
}

PyObject *
pygpu_t_permute(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    TensorObject *t = (TensorObject *)op;
    PyObject *seq = NULL, *r = NULL;
    PyObject *const *items = args;
    Py_ssize_t n = nargs;
    int perm[PYGPU_MAX_DIMS], seen[PYGPU_MAX_DIMS] = {0};
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    if (n != t->ndim) {
        PyErr_Format(PyExc_RuntimeError,
                     "permute(sparse_coo): number of dimensions in the tensor "
                     "input does not match the length of the desired "
                     "ordering of dimensions i.e. input.dim() = %d is not "
                     "equal to len(dims) = %zd", t->ndim, n);
        goto fail;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (pygpu_parse_dim(items[d], t->ndim, &perm[d]) < 0) {
            goto fail;
        }
        if (seen[perm[d]]++) {
            PyErr_SetString(PyExc_RuntimeError,
                            "permute(): duplicate dims are not allowed.");
            goto fail;
        }
    }
    r = permuted(t, perm);
fail:
    Py_XDECREF(seq);
    return r;
}

PyObject *
pygpu_t_flatten(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    static const char *const names[] = {"start_dim", "end_dim"};
    TensorObject *t = (TensorObject *)op;
    PyObject *a[2];
    int start = 0, end = t->ndim ? t->ndim - 1 : 0;
    if (pygpu_parse_args("flatten", args, nargs, kwnames, names, 2, 2, 0,
                         a) < 0 ||
        (a[0] && pygpu_parse_dim(a[0], t->ndim, &start) < 0) ||
        (a[1] && pygpu_parse_dim(a[1], t->ndim, &end) < 0)) {
        return NULL;
    }
    if (start > end) {
        PyErr_SetString(PyExc_RuntimeError,
                        "flatten() has invalid args: start_dim cannot come "
                        "after end_dim");
        return NULL;
    }
    if (t->ndim == 0) {
        int64_t one = 1;
        return reshape_to(t, 1, &one, 1);
    }
    int64_t shape[PYGPU_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d > start && d <= end) {
            shape[n - 1] *= t->shape[d];
        }
        else {
            shape[n++] = t->shape[d];
        }
    }
    return reshape_to(t, n, shape, 1);
}

PyObject *
pygpu_t_unsqueeze(PyObject *op, PyObject *arg)
{
    TensorObject *t = (TensorObject *)op;
    int dim;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    if (t->ndim >= PYGPU_MAX_DIMS) {
        PyErr_SetString(PyExc_RuntimeError, "too many dimensions");
        return NULL;
    }
    if (pygpu_parse_dim(arg, t->ndim + 1, &dim) < 0) {
        return NULL;
    }
    for (int d = 0, s = 0; d <= t->ndim; d++) {
        if (d == dim) {
            shape[d] = 1;
            strides[d] = (d < t->ndim) ? t->shape[d] * t->strides[d] : 1;
        }
        else {
            shape[d] = t->shape[s];
            strides[d] = t->strides[s];
            s++;
        }
    }
    return pygpu_ag_view(
        PYGPU_AG_RESHAPE, t, NULL, NULL,
        (PyObject *)pygpu_tensor_view(t, t->ndim + 1, shape, strides, 0));
}

PyObject *
pygpu_t_squeeze(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    TensorObject *t = (TensorObject *)op;
    int only = -1, n = 0;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "squeeze() takes at most one dim");
        return NULL;
    }
    if (nargs == 1 && pygpu_parse_dim(args[0], t->ndim, &only) < 0) {
        return NULL;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 1 && (only < 0 || only == d)) {
            continue;
        }
        shape[n] = t->shape[d];
        strides[n] = t->strides[d];
        n++;
    }
    return pygpu_ag_view(PYGPU_AG_RESHAPE, t, NULL, NULL,
                         (PyObject *)pygpu_tensor_view(t, n, shape, strides,
                                                       0));
}

/* expand(*sizes): broadcast size-1 dims (stride 0); -1 keeps a dim. */
PyObject *
pygpu_t_expand(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    TensorObject *t = (TensorObject *)op;
    int64_t want[PYGPU_MAX_DIMS];
    PyObject *seq = NULL;
    PyObject *const *items = args;
    Py_ssize_t n = nargs;
    PyObject *r = NULL;
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    if (n < t->ndim || n > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "expand: the number of sizes provided (%zd) must be "
                     "greater or equal to the number of dimensions in the "
                     "tensor (%d)", n, t->ndim);
        goto fail;
    }
    if (pygpu_parse_sizes("size", items, n, want) < 0) {
        goto fail;
    }
    r = pygpu_ag_view(PYGPU_AG_EXPAND, t, NULL, NULL,
                      (PyObject *)pygpu_expand_view(t, (int)n, want));
fail:
    Py_XDECREF(seq);
    return r;
}
