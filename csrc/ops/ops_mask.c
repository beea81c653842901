/* ops_mask.c - boolean-mask indexing: x[mask] (a copy of the selected
 * rows, in row-major order) and x[mask] = v.
 *
 * A bool mask covers the leading dims of x: x is seen as rows (one per
 * mask element) of the remaining dims.  The selected rows are listed on
 * the host (the mask is copied there when on CUDA: the result's size
 * depends on it, as in torch), then the index-rows kind of the dispatch
 * table gathers them, or scatters a value tensor into them.  Assigning a
 * 0-d tensor (a number, as tensor_index.c converts it) needs no list: a
 * masked copy with the mask broadcast over the rows. */
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

static const pygpu_device cpu_device = {PYGPU_CPU, -1};

int
pygpu_is_mask_index(PyObject *key)
{
    return Tensor_Check(key) && (((TensorObject *)key)->dtype == PYGPU_BOOL ||
                                 ((TensorObject *)key)->dtype == PYGPU_UINT8);
}

/* The mask as bool: a uint8 one is converted, with torch's warning. */
static TensorObject *
bool_mask(TensorObject *m)
{
    if (m->dtype == PYGPU_BOOL) {
        return (TensorObject *)Py_NewRef((PyObject *)m);
    }
    if (PyErr_WarnEx(PyExc_UserWarning,
                     "indexing with dtype torch.uint8 is now deprecated, "
                     "please use a dtype torch.bool instead.", 1) < 0) {
        return NULL;
    }
    return pygpu_tensor_to(m, m->device, PYGPU_BOOL);
}

static void
shape_str(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim && used < size; d++) {
        used += (size_t)snprintf(buf + used, size - used, "%s%lld",
                                 d ? ", " : "", (long long)shape[d]);
    }
}

/* The mask's shape must be the leading dims of x's, in torch's words;
 * *rows and *row are then the number of rows and the elements of one. */
static int
check_mask(const TensorObject *x, const TensorObject *m, int64_t *rows,
           int64_t *row)
{
    if (m->ndim > x->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for tensor of dimension %d", x->ndim);
        return -1;
    }
    for (int d = 0; d < m->ndim; d++) {
        if (m->shape[d] != x->shape[d]) {
            char ms[256], xs[256];
            shape_str(ms, sizeof ms, m->ndim, m->shape);
            shape_str(xs, sizeof xs, x->ndim, x->shape);
            PyErr_Format(PyExc_IndexError,
                         "The shape of the mask [%s] at index %d does not "
                         "match the shape of the indexed tensor [%s] at "
                         "index %d", ms, d, xs, d);
            return -1;
        }
    }
    *rows = pygpu_numel(m->ndim, m->shape);
    *row = pygpu_numel(x->ndim - m->ndim, x->shape + m->ndim);
    return 0;
}

/* The indices of the mask's true elements as an int64 tensor on dev
 * (row-major order); *count is their number. */
static TensorObject *
selected_rows(TensorObject *m, int64_t rows, pygpu_device dev,
              int64_t *count)
{
    TensorObject *host = NULL, *idx = NULL, *result = NULL;
    host = pygpu_device_equal(&m->device, &cpu_device) && pygpu_is_contiguous(m)
               ? (TensorObject *)Py_NewRef(m)
               : pygpu_tensor_to(m, cpu_device, PYGPU_BOOL);
    if (host == NULL) {
        return NULL;
    }
    const uint8_t *bits = (const uint8_t *)host->data;
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        n += bits[r] != 0;
    }
    idx = pygpu_tensor_empty(1, &n, PYGPU_INT64, cpu_device);
    if (idx == NULL) {
        goto fail;
    }
    int64_t *out = (int64_t *)idx->data;
    for (int64_t r = 0, j = 0; r < rows; r++) {
        if (bits[r]) {
            out[j++] = r;
        }
    }
    *count = n;
    result = pygpu_device_equal(&dev, &cpu_device)
                 ? (TensorObject *)Py_NewRef(idx)
                 : pygpu_tensor_to(idx, dev, PYGPU_INT64);
fail:
    Py_XDECREF(host);
    Py_XDECREF(idx);
    return result;
}

static int
run_index_rows(TensorObject *out, TensorObject *in, TensorObject *idx,
               int64_t n, int64_t row, int scatter)
{
    if (n == 0 || row == 0) {
        return 0;
    }
    pygpu_kargs k;
    k.out = out->data;
    k.in[0] = in->data;
    k.indices = (int64_t *)idx->data;
    k.n = n;
    k.inner = row;
    k.flag = scatter;
    k.numel = n * row;
    return pygpu_dispatch(PYGPU_K_INDEX_ROWS, out->device, out->dtype, &k,
                          "index");
}

static PyObject *
mask_getitem(TensorObject *x, TensorObject *m)
{
    TensorObject *idx = NULL, *in = NULL, *out = NULL;
    PyObject *result = NULL;
    int64_t rows, row, count = 0, shape[PYGPU_MAX_DIMS];
    if (check_mask(x, m, &rows, &row) < 0) {
        return NULL;
    }
    idx = selected_rows(m, rows, x->device, &count);
    if (idx == NULL) {
        return NULL;
    }
    int ndim = 1 + x->ndim - m->ndim;
    shape[0] = count;
    memcpy(shape + 1, x->shape + m->ndim,
           sizeof(int64_t) * (size_t)(x->ndim - m->ndim));
    out = pygpu_tensor_empty(ndim, shape, x->dtype, x->device);
    in = out ? pygpu_tensor_contiguous(x) : NULL;
    if (in == NULL || run_index_rows(out, in, idx, count, row, 0) < 0) {
        goto fail;
    }
    result = (PyObject *)out;
    out = NULL;
fail:
    Py_XDECREF(idx);
    Py_XDECREF(in);
    Py_XDECREF(out);
    return result;
}

/* x[m] = v for a 0-d tensor v: the mask, viewed with size-1
 * trailing dims, broadcast over x in a masked copy. */
static int
assign_uniform(TensorObject *x, TensorObject *m, TensorObject *v)
{
    TensorObject *mv = NULL, *here = NULL;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    int rc = -1;
    for (int d = 0; d < x->ndim; d++) {
        shape[d] = d < m->ndim ? m->shape[d] : 1;
        strides[d] = d < m->ndim ? m->strides[d] : 0;
    }
    mv = pygpu_device_equal(&m->device, &x->device)
             ? pygpu_tensor_view(m, x->ndim, shape, strides, 0)
             : NULL;
    if (mv == NULL) {
        TensorObject *moved = pygpu_tensor_to(m, x->device, PYGPU_BOOL);
        if (moved == NULL) {
            return -1;
        }
        for (int d = 0; d < m->ndim; d++) {
            strides[d] = moved->strides[d];
        }
        mv = pygpu_tensor_view(moved, x->ndim, shape, strides, 0);
        Py_DECREF(moved);
        if (mv == NULL) {
            return -1;
        }
    }
    here = pygpu_device_equal(&v->device, &x->device)
               ? (TensorObject *)Py_NewRef(v)
               : pygpu_tensor_to(v, x->device, v->dtype);
    if (here != NULL) {
        rc = pygpu_op_masked_copy(x, mv, here, "index_put_");
    }
    Py_XDECREF(mv);
    Py_XDECREF(here);
    return rc;
}

/* The value broadcast to the selected rows' shape, as x's dtype and
 * contiguous; torch's words when it does not broadcast. */
static TensorObject *
value_rows(TensorObject *x, TensorObject *v, int ndim, const int64_t *shape)
{
    int n;
    int64_t b[PYGPU_MAX_DIMS];
    if (pygpu_broadcast_shapes(v->ndim, v->shape, ndim, shape, &n, b) < 0 ||
        n != ndim || memcmp(b, shape, sizeof(int64_t) * (size_t)n) != 0) {
        char vs[256], ss[256];
        PyErr_Clear();
        shape_str(vs, sizeof vs, v->ndim, v->shape);
        shape_str(ss, sizeof ss, ndim, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "shape mismatch: value tensor of shape [%s] cannot be "
                     "broadcast to indexing result of shape [%s]", vs, ss);
        return NULL;
    }
    TensorObject *full = pygpu_tensor_empty(ndim, shape, x->dtype, x->device);
    if (full != NULL && pygpu_tensor_assign(full, v) < 0) {
        Py_CLEAR(full);
    }
    return full;
}

static int
mask_setitem(TensorObject *x, TensorObject *m, TensorObject *v)
{
    TensorObject *idx = NULL, *full = NULL, *dst = NULL;
    int64_t rows, row, count = 0, shape[PYGPU_MAX_DIMS];
    int rc = -1;
    if (check_mask(x, m, &rows, &row) < 0 ||
        pygpu_check_write(x, NULL, NULL) < 0) {
        return -1;
    }
    if (v->ndim == 0) {
        return assign_uniform(x, m, v);
    }
    idx = selected_rows(m, rows, x->device, &count);
    if (idx == NULL) {
        goto fail;
    }
    int ndim = 1 + x->ndim - m->ndim;
    shape[0] = count;
    memcpy(shape + 1, x->shape + m->ndim,
           sizeof(int64_t) * (size_t)(x->ndim - m->ndim));
    full = value_rows(x, v, ndim, shape);
    if (full == NULL) {
        goto fail;
    }
    /* Scatter into x, or into a contiguous copy written back. */
    dst = pygpu_tensor_contiguous(x);
    if (dst == NULL || run_index_rows(dst, full, idx, count, row, 1) < 0 ||
        (dst != x && pygpu_tensor_copy_into(x, dst) < 0)) {
        goto fail;
    }
    rc = 0;
fail:
    Py_XDECREF(idx);
    Py_XDECREF(full);
    Py_XDECREF(dst);
    return rc;
}

PyObject *
pygpu_mask_getitem(TensorObject *x, TensorObject *m)
{
    TensorObject *b = bool_mask(m);
    PyObject *r = b ? mask_getitem(x, b) : NULL;
    Py_XDECREF(b);
    return r;
}

int
pygpu_mask_setitem(TensorObject *x, TensorObject *m, TensorObject *value)
{
    TensorObject *b = bool_mask(m);
    int rc = b ? mask_setitem(x, b, value) : -1;
    Py_XDECREF(b);
    return rc;
}
