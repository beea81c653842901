/* tensor_layout.c - what a tensor's layout alone decides: element counts
 * and shape checks, contiguity, views (a new tensor object over the same
 * memory), NumPy views of CPU memory, the geometry of an elementwise op,
 * and a same-device copy through the dispatch table. */
#include "core/dispatch.h"

#include <string.h>

int64_t
pygpu_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    return n;
}

void
pygpu_format_shape(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim; d++) {
        if (used + 32 > n) {
            PyOS_snprintf(buf + used, n - used, "...");
            return;
        }
        used += (size_t)PyOS_snprintf(buf + used, n - used,
                                      d ? ", %lld" : "%lld",
                                      (long long)shape[d]);
    }
}

int
pygpu_shape_numel(int ndim, const int64_t *shape, int64_t *out)
{
    char buf[256];
    int64_t n = 1, span = 1; /* span: the product of the non-zero sizes */
    int overflow = 0, span_overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            pygpu_format_shape(buf, sizeof(buf), ndim, shape);
            PyErr_Format(PyExc_RuntimeError,
                         "Trying to create tensor with negative dimension "
                         "%lld: [%s]", (long long)shape[d], buf);
            return -1;
        }
        overflow |= __builtin_mul_overflow(n, shape[d], &n);
        span_overflow |=
            __builtin_mul_overflow(span, shape[d] ? shape[d] : 1, &span);
    }
    if (overflow) {
        pygpu_format_shape(buf, sizeof(buf), ndim, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "numel: integer multiplication overflow for shape [%s]",
                     buf);
        return -1;
    }
    if (span_overflow) {
        /* No elements, but contiguous strides that would not fit. */
        pygpu_format_shape(buf, sizeof(buf), ndim, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "shape [%s]: the product of its non-zero sizes "
                     "overflows int64, so its strides cannot be represented",
                     buf);
        return -1;
    }
    *out = n;
    return 0;
}

/* Byte counts: the one overflow-checked size product.  A count must fit
 * int64 (torch's storage_max) as well as size_t. */
static int
storage_overflow(int ndim, const int64_t *shape, const int64_t *strides)
{
    char sizes[256], strs[256];
    pygpu_format_shape(sizes, sizeof(sizes), ndim, shape);
    if (strides == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "Storage size calculation overflowed with sizes=[%s]",
                     sizes);
        return -1;
    }
    pygpu_format_shape(strs, sizeof(strs), ndim, strides);
    PyErr_Format(PyExc_RuntimeError,
                 "Storage size calculation overflowed with sizes=[%s] and "
                 "strides=[%s]", sizes, strs);
    return -1;
}

int
pygpu_shape_nbytes(int ndim, const int64_t *shape, int dtype, size_t *out)
{
    int64_t n = 1;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            return pygpu_shape_numel(ndim, shape, &n); /* its error */
        }
        overflow |= __builtin_mul_overflow(n, shape[d], &n);
    }
    overflow |= __builtin_mul_overflow(
        n, (int64_t)pygpu_dtype_table[dtype].itemsize, &n);
    if (overflow || (uint64_t)n > (uint64_t)SIZE_MAX) {
        return storage_overflow(ndim, shape, NULL);
    }
    *out = (size_t)n;
    return 0;
}

int
pygpu_strided_nbytes(int ndim, const int64_t *shape, const int64_t *strides,
                     int dtype, size_t *out)
{
    int64_t last = 0, step, nbytes;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *out = 0;
            return 0;
        }
    }
    for (int d = 0; d < ndim; d++) {
        /* shape[d] > 0 and strides[d] >= 0: (shape - 1) cannot overflow */
        overflow |= __builtin_mul_overflow(shape[d] - 1, strides[d], &step);
        overflow |= __builtin_add_overflow(last, step, &last);
    }
    overflow |= __builtin_add_overflow(last, (int64_t)1, &last);
    overflow |= __builtin_mul_overflow(
        last, (int64_t)pygpu_dtype_table[dtype].itemsize, &nbytes);
    if (overflow || (uint64_t)nbytes > (uint64_t)SIZE_MAX) {
        return storage_overflow(ndim, shape, strides);
    }
    *out = (size_t)nbytes;
    return 0;
}

int
pygpu_is_contiguous(const TensorObject *t)
{
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 0) {
            return 1;
        }
        if (t->shape[d] != 1 && t->strides[d] != expected) {
            return 0;
        }
        expected *= t->shape[d];
    }
    return 1;
}

void
pygpu_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

int
pygpu_version_share(TensorObject *view, TensorObject *src)
{
    if (src->shared == NULL) {
        src->shared = PyMem_Malloc(sizeof(pygpu_version));
        if (src->shared == NULL) {
            pygpu_raise_no_memory("a shared version counter",
                                  sizeof(pygpu_version));
            return -1;
        }
        src->shared->refs = 1;
        src->shared->value = src->version;
    }
    pygpu_version_release(view);
    view->shared = src->shared;
    view->shared->refs++;
    return 0;
}

void
pygpu_version_release(TensorObject *t)
{
    if (t->shared != NULL) {
        t->version = t->shared->value;
        if (--t->shared->refs == 0) {
            PyMem_Free(t->shared);
        }
        t->shared = NULL;
    }
}

/* A new tensor object of type tp viewing src with its own geometry. */
TensorObject *
pygpu_tensor_view_as(PyTypeObject *tp, TensorObject *src, int ndim,
             const int64_t *shape, const int64_t *strides,
             int64_t elem_offset)
{
    TensorObject *t = (TensorObject *)tp->tp_alloc(tp, 0);
    if (t == NULL) {
        return NULL;
    }
    t->base = Py_NewRef(src->base);
    if (pygpu_version_share(t, src) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    t->readonly = src->readonly;
    t->dtype = src->dtype;
    t->device = src->device;
    t->ndim = ndim;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    t->data = src->data +
              elem_offset * (int64_t)pygpu_dtype_table[src->dtype].itemsize;
    return t;
}

TensorObject *
pygpu_tensor_view(TensorObject *t, int ndim, const int64_t *shape,
                  const int64_t *strides, int64_t elem_offset)
{
    return pygpu_tensor_view_as(pygpu_state->Tensor_Type, t, ndim, shape, strides,
                        elem_offset);
}

int
pygpu_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim,
                  int64_t *shape)
{
    PyObject *seq;
    PyObject *const *items;
    Py_ssize_t n;
    int64_t numel;
    int rc = -1;
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return -1;
    }
    if (pygpu_parse_sizes("size", items, n, shape) < 0 ||
        pygpu_shape_numel((int)n, shape, &numel) < 0) {
        goto fail;
    }
    *ndim = (int)n;
    rc = 0;
fail:
    Py_XDECREF(seq);
    return rc;
}

/* ------------------------------------------------------------- NumPy */

PyObject *
pygpu_tensor_to_ndarray(TensorObject *t)
{
    npy_intp dims[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    int itemsize = pygpu_dtype_table[t->dtype].itemsize;
    for (int d = 0; d < t->ndim; d++) {
        dims[d] = (npy_intp)t->shape[d];
        strides[d] = (npy_intp)(t->strides[d] * itemsize);
    }
    PyArray_Descr *descr =
        PyArray_DescrFromType(pygpu_dtype_table[t->dtype].npy_type);
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, t->ndim, dims,
                                         strides, t->data,
                                         t->readonly ? 0 : NPY_ARRAY_WRITEABLE,
                                         NULL);
    if (arr == NULL) {
        return NULL;
    }
    /* The array keeps the tensor's memory alive (its base, not the
     * tensor: resize_ and the data setter may move the tensor). */
    if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(t->base)) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ----------------------------------------------------------- geometry */

int
pygpu_make_geom(pygpu_geom *g, int ndim, const int64_t *shape,
                TensorObject *out, TensorObject *a, TensorObject *b)
{
    TensorObject *ops[3] = {out, a, b};
    int64_t st[3][PYGPU_MAX_DIMS];
    /* Right-align each operand against the output shape; broadcast dims
     * (missing or of size 1 where the output is larger) get stride 0. */
    for (int k = 0; k < 3; k++) {
        TensorObject *t = ops[k];
        for (int d = 0; d < ndim; d++) {
            int sd = t ? d - (ndim - t->ndim) : -1;
            st[k][d] = (sd >= 0 && t->shape[sd] == shape[d]) ? t->strides[sd]
                                                             : 0;
        }
    }
    /* Then coalesced: size-1 dims dropped, runs walked as one merged. */
    const int64_t *stp[3] = {st[0], st[1], st[2]};
    return pygpu_geom_build(g, ndim, shape, 3, stp);
}

int
pygpu_geom_build(pygpu_geom *g, int ndim, const int64_t *shape, int nops,
                 const int64_t *const *st)
{
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) {
            continue;
        }
        if (n > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++) {
                merge &= g->stride[k][n - 1] == st[k][d] * shape[d];
            }
            if (merge) {
                g->shape[n - 1] *= shape[d];
                for (int k = 0; k < nops; k++) {
                    g->stride[k][n - 1] = st[k][d];
                }
                continue;
            }
        }
        if (n == PYGPU_MAX_DIMS) {
            return -1;
        }
        g->shape[n] = shape[d];
        for (int k = 0; k < 3; k++) {
            g->stride[k][n] = k < nops ? st[k][d] : 0;
        }
        n++;
    }
    g->ndim = n;
    return 0;
}

int
pygpu_op_copy_geom(pygpu_device dev, int out_dtype, void *out, int in_dtype,
                   const void *in, const pygpu_geom *g, int64_t numel)
{
    pygpu_kargs k;
    if (numel == 0) {
        return 0;
    }
    k.in_dtypes[0] = in_dtype;
    k.out = out;
    k.in[0] = in;
    k.g = g;
    k.numel = numel;
    return pygpu_dispatch(PYGPU_K_COPY, dev, out_dtype, &k, "copy");
}

int
pygpu_op_copy_same_device(TensorObject *dst, TensorObject *src)
{
    pygpu_geom g;
    int64_t numel = pygpu_numel(dst->ndim, dst->shape);
    if (numel == 0) {
        return 0;
    }
    pygpu_make_geom(&g, dst->ndim, dst->shape, dst, src, NULL);
    return pygpu_op_copy_geom(dst->device, dst->dtype, dst->data, src->dtype,
                              src->data, &g, numel);
}

