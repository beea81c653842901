/* ops_index_int.c - t[idx] and t[idx] = v for integer index tensors
 * (int32 or int64), with basic indices (ints, slices, None, Ellipsis)
 * around them, as torch: the basic part is applied first as a view (ints
 * select, so t[0, :, idx] has the index's dims where idx was), then one
 * index picks along its dim of that view with one GATHER (ops_index.c).
 * Several indices are first turned into element offsets (one GATHER in
 * OFFSETS mode each, which checks them, and adds), which the GATHER then
 * follows.  ops_getitem.c hands these keys here; lists and NumPy arrays
 * in a key were made int64 tensors above (tensor/tensor_index.c).  Bool
 * and uint8 tensors are masks, not ours.  Nothing here records.
 */
#include "ops/ops.h"

#include <string.h>

/* A key entry of ours: a tensor of int32/int64, or a floating one, to
 * refuse in torch's words. */
static int
is_index_entry(PyObject *k)
{
    if (!Tensor_Check(k)) {
        return 0;
    }
    const pygpu_dtype_info *info =
        &pygpu_dtype_table[((TensorObject *)k)->dtype];
    return info->is_floating_point || info->itemsize >= 4;
}

int
pygpu_index_wants(PyObject *key)
{
    if (!PyTuple_Check(key)) {
        return is_index_entry(key);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++) {
        if (is_index_entry(PyTuple_GET_ITEM(key, i))) {
            return 1;
        }
    }
    return 0;
}

/* The index tensor ix as an int32/int64 tensor on t's device. */
static TensorObject *
index_tensor(TensorObject *t, TensorObject *ix)
{
    char dev[32];
    if (pygpu_dtype_table[ix->dtype].is_floating_point) {
        PyErr_SetString(PyExc_IndexError,
                        "tensors used as indices must be long, int, byte or "
                        "bool tensors");
        return NULL;
    }
    if (pygpu_device_equal(&ix->device, &t->device)) {
        return (TensorObject *)Py_NewRef(ix);
    }
    if (ix->device.type == PYGPU_CPU) {
        return pygpu_tensor_to(ix, t->device, ix->dtype);
    }
    pygpu_device_str(&t->device, dev, sizeof(dev));
    PyErr_Format(PyExc_RuntimeError,
                 "indices should be either on cpu or on the same device as "
                 "the indexed tensor (%s)", dev);
    return NULL;
}

/* A key with integer indices: view = t[key with each index replaced by
 * ':'], dims[0..k) the dims of view they pick along; index: the one
 * index, or (several) the element offsets they give together, broadcast;
 * the GATHER picks along dim_stride, dim_size (dim in messages). */
typedef struct adv {
    TensorObject *view;
    TensorObject *index;
    int k, dim;
    int dims[PYGPU_MAX_DIMS];
    int64_t dim_stride, dim_size;
} adv;

/* The element offsets of several indices into view: each checked and
 * scaled by its dim's stride (a GATHER in OFFSETS mode), then summed,
 * broadcast.  torch's error for shapes that do not broadcast. */
static TensorObject *
offsets(TensorObject *v, TensorObject *const *ix, const int *dims, int k)
{
    TensorObject *sum = NULL;
    int nb = 0, n2;
    int64_t bshape[PYGPU_MAX_DIMS], b2[PYGPU_MAX_DIMS];
    for (int j = 0; j < k; j++) {
        if (pygpu_broadcast_shapes(nb, bshape, ix[j]->ndim, ix[j]->shape,
                                   &n2, b2) < 0) {
            PyErr_SetString(PyExc_IndexError,
                            "shape mismatch: indexing tensors could not be "
                            "broadcast together");
            return NULL;
        }
        nb = n2;
        memcpy(bshape, b2, sizeof(int64_t) * (size_t)n2);
    }
    for (int j = 0; j < k; j++) {
        TensorObject *off = pygpu_tensor_empty(ix[j]->ndim, ix[j]->shape,
                                               PYGPU_INT64, v->device);
        if (off == NULL) {
            goto fail;
        }
        const int64_t *st[3] = {off->strides, off->strides, ix[j]->strides};
        if (pygpu_index_plan_run("index", ix[j]->ndim, ix[j]->shape, st,
                                 v->strides[dims[j]], v->shape[dims[j]],
                                 dims[j], off, ix[j], ix[j],
                                 PYGPU_GATHER_OFFSETS) < 0) {
            Py_DECREF(off);
            goto fail;
        }
        if (sum == NULL) {
            sum = off;
            continue;
        }
        PyObject *both = pygpu_op_binary(PYGPU_ADD, (PyObject *)sum,
                                         (PyObject *)off, NULL);
        Py_DECREF(off);
        Py_SETREF(sum, (TensorObject *)both);
        if (sum == NULL) {
            goto fail;
        }
    }
    return sum;
fail:
    Py_XDECREF(sum);
    return NULL;
}

static int
adv_parse(TensorObject *t, PyObject *key, adv *a)
{
    PyObject *tuple = NULL, *basic = NULL;
    TensorObject *ix[PYGPU_MAX_DIMS] = {NULL};
    Py_ssize_t pos[PYGPU_MAX_DIMS];
    int rc = -1, other = 0, nidx = 0, seen = 0;
    memset(a, 0, sizeof(*a));
    tuple = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (tuple == NULL) {
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (is_index_entry(k) && a->k < PYGPU_MAX_DIMS) {
            pos[a->k++] = i;
        }
        else if (PyBool_Check(k) || PyArray_IsScalar(k, Bool) ||
                 Tensor_Check(k) || PyArray_Check(k) || PyList_Check(k)) {
            other++; /* a mask, a bool, or too many indices */
        }
        if (k != Py_None && k != Py_Ellipsis) {
            nidx++;
        }
    }
    if (other > 0) {
        PyErr_SetString(PyExc_IndexError,
                        "pygpu does not index with integer indices and a "
                        "mask or a bool together: index in steps");
        goto fail;
    }
    /* the dims of the view the indices pick along */
    for (Py_ssize_t i = 0, d = 0; i < n && seen < a->k; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (i == pos[seen]) {
            a->dims[seen++] = (int)d++;
        }
        else if (k == Py_Ellipsis) {
            d += t->ndim > nidx ? t->ndim - nidx : 0;
        }
        else if (k == Py_None || PySlice_Check(k)) {
            d++;
        }
    }
    basic = PyTuple_New(n);
    if (basic == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0, j = 0; i < n; i++) {
        int picked = j < a->k && pos[j] == i;
        PyObject *k = picked ? PySlice_New(NULL, NULL, NULL)
                             : Py_NewRef(PyTuple_GET_ITEM(tuple, i));
        j += picked;
        if (k == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(basic, i, k);
    }
    a->view = (TensorObject *)pygpu_op_getitem(t, basic);
    if (a->view == NULL) {
        goto fail;
    }
    for (int j = 0; j < a->k; j++) {
        ix[j] = index_tensor(a->view,
                             (TensorObject *)PyTuple_GET_ITEM(tuple, pos[j]));
        if (ix[j] == NULL) {
            goto fail;
        }
    }
    a->dim = a->dims[0];
    if (a->k == 1) {
        a->index = (TensorObject *)Py_NewRef(ix[0]);
        a->dim_stride = a->view->strides[a->dim];
        a->dim_size = a->view->shape[a->dim];
    }
    else {
        /* offsets are checked and never negative */
        a->index = offsets(a->view, ix, a->dims, a->k);
        a->dim_stride = 1;
        a->dim_size = INT64_MAX;
    }
    if (a->index == NULL) {
        goto fail;
    }
    if (a->view->ndim - a->k + a->index->ndim > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_IndexError,
                     "pygpu tensors have at most %d dimensions",
                     PYGPU_MAX_DIMS);
        goto fail;
    }
    rc = 0;
fail:
    if (rc < 0) {
        Py_CLEAR(a->view);
        Py_CLEAR(a->index);
    }
    for (int j = 0; j < a->k; j++) {
        Py_XDECREF(ix[j]);
    }
    Py_XDECREF(tuple);
    Py_XDECREF(basic);
    return rc;
}

/* The result's shape and the strides the view (st[1]) and the index
 * (st[2]) walk it with: the index's dims where the picked dims were when
 * those are adjacent, else first (NumPy's and torch's rule). */
static int
adv_shape(const adv *a, int64_t *shape, int64_t st[3][PYGPU_MAX_DIMS])
{
    TensorObject *v = a->view, *ix = a->index;
    int picked[PYGPU_MAX_DIMS] = {0}, adjacent = 1, n = 0;
    for (int j = 0; j < a->k; j++) {
        picked[a->dims[j]] = 1;
        adjacent &= a->dims[j] == a->dims[0] + j;
    }
    int at = adjacent ? a->dims[0] : 0;
    for (int d = 0; d < v->ndim; d++) {
        for (int j = 0; d == at && j < ix->ndim; j++) {
            shape[n] = ix->shape[j];
            st[1][n] = 0;
            st[2][n++] = ix->strides[j];
        }
        if (!picked[d]) {
            shape[n] = v->shape[d];
            st[1][n] = v->strides[d];
            st[2][n++] = 0;
        }
    }
    return n;
}

static void
adv_clear(adv *a)
{
    Py_CLEAR(a->view);
    Py_CLEAR(a->index);
}

PyObject *
pygpu_index_get(TensorObject *t, PyObject *key)
{
    adv a;
    int64_t shape[PYGPU_MAX_DIMS], st[3][PYGPU_MAX_DIMS];
    TensorObject *res = NULL;
    if (adv_parse(t, key, &a) < 0) {
        return NULL;
    }
    int nd = adv_shape(&a, shape, st);
    res = pygpu_tensor_empty(nd, shape, a.view->dtype, a.view->device);
    if (res != NULL) {
        const int64_t *sts[3] = {res->strides, st[1], st[2]};
        if (pygpu_index_plan_run("index", nd, shape, sts, a.dim_stride,
                                 a.dim_size, a.dim, res, a.view, a.index,
                                 PYGPU_GATHER_READ) < 0) {
            Py_CLEAR(res);
        }
    }
    adv_clear(&a);
    return (PyObject *)res;
}

/* The strides of value broadcast to shape (leading size-1 dims of value
 * dropped, as torch); RuntimeError in torch's words when it does not fit. */
static int
broadcast_value(const TensorObject *val, int nd, const int64_t *shape,
                int64_t *st)
{
    int lead = 0;
    while (val->ndim - lead > nd && val->shape[lead] == 1) {
        lead++;
    }
    int vn = val->ndim - lead, ok = vn <= nd;
    for (int d = 0; ok && d < nd; d++) {
        int s = d - (nd - vn);
        int64_t size = s >= 0 ? val->shape[lead + s] : 1;
        ok = size == shape[d] || size == 1;
        st[d] = s >= 0 && size == shape[d] ? val->strides[lead + s] : 0;
    }
    if (!ok) {
        char vs[256], rs[256];
        pygpu_format_shape(vs, sizeof(vs), val->ndim, val->shape);
        pygpu_format_shape(rs, sizeof(rs), nd, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "shape mismatch: value tensor of shape [%s] cannot be "
                     "broadcast to indexing result of shape [%s]", vs, rs);
        return -1;
    }
    return 0;
}

int
pygpu_index_put(TensorObject *t, PyObject *key, TensorObject *value)
{
    adv a;
    int64_t shape[PYGPU_MAX_DIMS], st[3][PYGPU_MAX_DIMS];
    TensorObject *val = NULL;
    int rc = -1;
    if (adv_parse(t, key, &a) < 0) {
        return -1;
    }
    TensorObject *v = a.view;
    int nd = adv_shape(&a, shape, st);
    if (pygpu_check_write(v, NULL, NULL) < 0) {
        goto fail;
    }
    val = (TensorObject *)Py_NewRef(value);
    /* the bytes moved are v's dtype; a value sharing memory with t is
     * copied first, as the writes may reach what is still to be read */
    if (val->dtype != v->dtype ||
        !pygpu_device_equal(&val->device, &v->device) ||
        pygpu_get_overlap(v, val) != PYGPU_ALIAS_NONE) {
        Py_SETREF(val, pygpu_tensor_to(val, v->device, v->dtype));
        if (val == NULL) {
            goto fail;
        }
    }
    if (pygpu_get_overlap(v, a.index) != PYGPU_ALIAS_NONE) { /* t[t] = v */
        Py_SETREF(a.index,
                  pygpu_tensor_to(a.index, a.index->device, a.index->dtype));
        if (a.index == NULL) {
            goto fail;
        }
        adv_shape(&a, shape, st); /* the copy's strides */
    }
    if (broadcast_value(val, nd, shape, st[0]) < 0) {
        goto fail;
    }
    const int64_t *sts[3] = {st[0], st[1], st[2]};
    rc = pygpu_index_plan_run("index_put", nd, shape, sts, a.dim_stride,
                              a.dim_size, a.dim, val, v, a.index,
                              PYGPU_GATHER_SCATTER);
fail:
    Py_XDECREF(val);
    adv_clear(&a);
    return rc;
}
