/* tensor_index_int.c - t[idx] and t[idx] = v for one integer index: an
 * int32/int64 tensor, a list of ints or a NumPy integer array, with basic
 * indices (ints, slices, None, Ellipsis) around it, as torch: the basic
 * part is applied first as a view (ints select, so t[0, :, idx] has the
 * index's dims where idx was), then the index picks along its dim of that
 * view with one GATHER (ops_index.c).  tensor_index.c hands these keys
 * here.  Bool and uint8 tensors and lists of bools are masks, not ours.
 */
#include "ops/ops.h"

#include <string.h>

static int
is_integer_item(PyObject *v)
{
    return (PyLong_Check(v) && !PyBool_Check(v)) ||
           PyArray_IsScalar(v, Integer);
}

/* A key entry of ours: a tensor of int32/int64 (or a floating one, to
 * refuse in torch's words), a list of ints (nested lists too, to refuse),
 * an integer or floating NumPy array. */
static int
is_index_entry(PyObject *k)
{
    if (Tensor_Check(k)) {
        const pygpu_dtype_info *info =
            &pygpu_dtype_table[((TensorObject *)k)->dtype];
        return info->is_floating_point || info->itemsize >= 4;
    }
    if (PyArray_Check(k)) {
        char kind = PyArray_DESCR((PyArrayObject *)k)->kind;
        return kind == 'i' || kind == 'u' || kind == 'f';
    }
    if (PyList_Check(k)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(k); i++) {
            PyObject *v = PyList_GET_ITEM(k, i);
            if (!is_integer_item(v) && !PyList_Check(v) &&
                !PyTuple_Check(v)) {
                return 0;
            }
        }
        return 1;
    }
    return 0;
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

/* The index as an int32/int64 tensor on t's device. */
static TensorObject *
index_tensor(TensorObject *t, PyObject *k)
{
    static const char not_int[] = "tensors used as indices must be long, "
                                  "int, byte or bool tensors";
    if (Tensor_Check(k)) {
        TensorObject *ix = (TensorObject *)k;
        char dev[32];
        if (pygpu_dtype_table[ix->dtype].is_floating_point) {
            PyErr_SetString(PyExc_IndexError, not_int);
            return NULL;
        }
        if (pygpu_device_equal(&ix->device, &t->device)) {
            return (TensorObject *)Py_NewRef(k);
        }
        if (ix->device.type == PYGPU_CPU) {
            return pygpu_tensor_to(ix, t->device, ix->dtype);
        }
        pygpu_device_str(&t->device, dev, sizeof(dev));
        PyErr_Format(PyExc_RuntimeError,
                     "indices should be either on cpu or on the same device "
                     "as the indexed tensor (%s)", dev);
        return NULL;
    }
    if (PyArray_Check(k) && PyArray_DESCR((PyArrayObject *)k)->kind == 'f') {
        PyErr_SetString(PyExc_IndexError, not_int);
        return NULL;
    }
    for (Py_ssize_t i = 0; PyList_Check(k) && i < PyList_GET_SIZE(k); i++) {
        if (!is_integer_item(PyList_GET_ITEM(k, i))) {
            PyErr_SetString(PyExc_IndexError,
                            "pygpu does not index with a nested list (torch "
                            "reads it as a tuple of indices): pass a "
                            "tensor");
            return NULL;
        }
    }
    return pygpu_tensor_from_data(k, PYGPU_INT64, t->device);
}

/* A key with one index: view = t[key with the index replaced by ':'],
 * index on its device, dim the dim of view it picks along. */
typedef struct adv {
    TensorObject *view;
    TensorObject *index;
    int dim;
} adv;

static int
adv_parse(TensorObject *t, PyObject *key, adv *a)
{
    PyObject *tuple = NULL, *basic = NULL;
    int rc = -1, count = 0, other = 0, nidx = 0;
    Py_ssize_t pos = 0;
    a->view = a->index = NULL;
    a->dim = 0;
    tuple = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (tuple == NULL) {
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (is_index_entry(k)) {
            count++;
            pos = i;
        }
        else if (PyBool_Check(k) || PyArray_IsScalar(k, Bool) ||
                 Tensor_Check(k) || PyArray_Check(k) || PyList_Check(k)) {
            other++; /* a mask or a bool */
        }
        if (k != Py_None && k != Py_Ellipsis) {
            nidx++;
        }
    }
    if (count > 1 || other > 0) {
        PyErr_SetString(PyExc_IndexError,
                        "pygpu indexes with one index tensor (or list) at a "
                        "time and no mask or bool beside it: index in steps, "
                        "or use gather");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < pos; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (k == Py_Ellipsis) {
            a->dim += t->ndim > nidx ? t->ndim - nidx : 0;
        }
        else if (k == Py_None || PySlice_Check(k)) {
            a->dim++;
        }
    }
    basic = PyTuple_New(n);
    if (basic == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = i == pos ? PySlice_New(NULL, NULL, NULL)
                               : Py_NewRef(PyTuple_GET_ITEM(tuple, i));
        if (k == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(basic, i, k);
    }
    a->view = (TensorObject *)pygpu_t_getitem((PyObject *)t, basic);
    if (a->view == NULL) {
        goto fail;
    }
    a->index = index_tensor(a->view, PyTuple_GET_ITEM(tuple, pos));
    if (a->index == NULL) {
        goto fail;
    }
    if (a->view->ndim - 1 + a->index->ndim > PYGPU_MAX_DIMS) {
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
    Py_XDECREF(tuple);
    Py_XDECREF(basic);
    return rc;
}

/* The result's shape view.shape[:dim] + index.shape + view.shape[dim+1:]
 * and the strides the view (st[1]) and the index (st[2]) walk it with. */
static int
adv_shape(const adv *a, int64_t *shape, int64_t st[3][PYGPU_MAX_DIMS])
{
    TensorObject *v = a->view, *ix = a->index;
    int n = 0;
    for (int d = 0; d < v->ndim; d++) {
        if (d != a->dim) {
            shape[n] = v->shape[d];
            st[1][n] = v->strides[d];
            st[2][n++] = 0;
            continue;
        }
        for (int j = 0; j < ix->ndim; j++) {
            shape[n] = ix->shape[j];
            st[1][n] = 0;
            st[2][n++] = ix->strides[j];
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
        if (pygpu_index_plan_run("index", nd, shape, sts,
                                 a.view->strides[a.dim],
                                 a.view->shape[a.dim], a.dim, res, a.view,
                                 a.index, 0) < 0) {
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
pygpu_index_put(TensorObject *t, PyObject *key, PyObject *value)
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
    val = Tensor_Check(value)
              ? (TensorObject *)Py_NewRef(value)
              : pygpu_tensor_from_data(value, v->dtype, v->device);
    if (val == NULL) {
        goto fail;
    }
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
    if (broadcast_value(val, nd, shape, st[0]) < 0) {
        goto fail;
    }
    const int64_t *sts[3] = {st[0], st[1], st[2]};
    rc = pygpu_index_plan_run("index_put", nd, shape, sts,
                              v->strides[a.dim], v->shape[a.dim], a.dim, val,
                              v, a.index, 1);
fail:
    Py_XDECREF(val);
    adv_clear(&a);
    return rc;
}
