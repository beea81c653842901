/* ops_getitem.c - t[key] and t[key] = value, unrecorded: for ints,
 * slices (positive steps), None, Ellipsis and bools, views of the same
 * memory and a broadcast copy into such a view.  A bool tensor key goes to
 * boolean-mask indexing (ops_mask.c); keys holding integer index tensors
 * go to ops_index_int.c.  The key's lists and NumPy arrays are tensors by
 * now and the value is one (tensor/tensor_index.c converts them, as
 * torch's binding does); autograd_select.c records. */
#include "ops/ops.h"

#include <string.h>

/* A bool index (Python or NumPy), which adds a dim of size 1 (True) or 0
 * (False) as in NumPy and torch, rather than an int.  The result is a view
 * (torch and NumPy copy), so that t[True] = v writes through it. */
static int
is_bool_index(PyObject *k)
{
    return PyBool_Check(k) || PyArray_IsScalar(k, Bool);
}

/* Several bools index together, as torch's index tensors do: their dims
 * (at output positions pos[0..nb)) become one, of size 1 if all are True,
 * where the first was when they are adjacent, else in front. */
static void
merge_bool_dims(int *n, int64_t *shape, int64_t *strides, const int *pos,
                int nb)
{
    int64_t size = 1;
    int at = pos[0], m = 0, k = 0;
    for (int i = 0; i < nb; i++) {
        size &= shape[pos[i]];
        if (pos[i] != pos[0] + i) {
            at = 0;
        }
    }
    for (int d = 0; d < *n; d++) {
        if (k < nb && pos[k] == d) {
            k++;
            continue;
        }
        shape[m] = shape[d];
        strides[m] = strides[d];
        m++;
    }
    memmove(shape + at + 1, shape + at, sizeof(int64_t) * (size_t)(m - at));
    memmove(strides + at + 1, strides + at,
            sizeof(int64_t) * (size_t)(m - at));
    shape[at] = size;
    strides[at] = 0;
    *n = m + 1;
}

/* t[index] for ints, slices (positive steps), None, Ellipsis and bools. */
static PyObject *
basic_view(TensorObject *t, PyObject *key)
{
    PyObject *tuple = NULL, *r = NULL;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS], offset = 0;
    int n = 0, src = 0, nidx = 0, nbool = 0, bool_pos[PYGPU_MAX_DIMS];
    if (PyTuple_Check(key)) {
        tuple = Py_NewRef(key);
    }
    else {
        tuple = PyTuple_Pack(1, key);
        if (tuple == NULL) {
            return NULL;
        }
    }
    Py_ssize_t nkeys = PyTuple_GET_SIZE(tuple);
    int has_ellipsis = 0;
    for (Py_ssize_t i = 0; i < nkeys; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (k == Py_Ellipsis) {
            if (has_ellipsis++) {
                PyErr_SetString(PyExc_IndexError,
                                "an index can only have a single ellipsis "
                                "('...')");
                goto fail;
            }
        }
        else if (k != Py_None && !is_bool_index(k)) {
            nidx++;
        }
    }
    if (nidx > t->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for tensor of dimension %d", t->ndim);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nkeys; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (n >= PYGPU_MAX_DIMS) {
            PyErr_SetString(PyExc_IndexError, "too many dimensions");
            goto fail;
        }
        if (k == Py_None) {
            shape[n] = 1;
            strides[n] = 1;
            n++;
        }
        else if (is_bool_index(k)) {
            int v = PyObject_IsTrue(k);
            if (v < 0) {
                goto fail;
            }
            shape[n] = v;
            strides[n] = 0;
            bool_pos[nbool++] = n++;
        }
        else if (k == Py_Ellipsis) {
            int skip = t->ndim - nidx;
            for (int j = 0; j < skip; j++, src++, n++) {
                shape[n] = t->shape[src];
                strides[n] = t->strides[src];
            }
        }
        else if (PySlice_Check(k)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
                goto fail;
            }
            if (step <= 0) {
                PyErr_SetString(PyExc_ValueError,
                                "step must be greater than zero");
                goto fail;
            }
            Py_ssize_t len = PySlice_AdjustIndices(
                (Py_ssize_t)t->shape[src], &start, &stop, step);
            offset += (int64_t)start * t->strides[src];
            shape[n] = len;
            /* With two elements or more, step < size, so the product
             * fits; the stride of one element or none does not matter,
             * and a step past the size would overflow it: kept. */
            strides[n] = t->strides[src] * (len > 1 ? step : 1);
            n++;
            src++;
        }
        else if (PyIndex_Check(k) && !Tensor_Check(k)) {
            Py_ssize_t v = PyNumber_AsSsize_t(k, PyExc_IndexError);
            if (v == -1 && PyErr_Occurred()) {
                goto fail;
            }
            int64_t size = t->shape[src];
            if (v < -size || v >= size) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for dimension %d "
                             "with size %lld", v, src, (long long)size);
                goto fail;
            }
            offset += (v < 0 ? v + size : v) * t->strides[src];
            src++;
        }
        else {
            PyErr_Format(PyExc_IndexError,
                         "only integers, slices (`:`), ellipsis (`...`) and "
                         "None are valid indices (got %.100s)",
                         Py_TYPE(k)->tp_name);
            goto fail;
        }
    }
    for (; src < t->ndim; src++, n++) {
        if (n >= PYGPU_MAX_DIMS) {
            PyErr_SetString(PyExc_IndexError, "too many dimensions");
            goto fail;
        }
        shape[n] = t->shape[src];
        strides[n] = t->strides[src];
    }
    if (nbool > 1) {
        merge_bool_dims(&n, shape, strides, bool_pos, nbool);
    }
    r = (PyObject *)pygpu_tensor_view(t, n, shape, strides, offset);
fail:
    Py_XDECREF(tuple);
    return r;
}

PyObject *
pygpu_op_getitem(TensorObject *t, PyObject *key)
{
    if (pygpu_is_mask_index(key)) {
        return pygpu_mask_getitem(t, (TensorObject *)key);
    }
    if (pygpu_index_wants(key)) { /* an integer index: ops_index_int.c */
        return pygpu_index_get(t, key);
    }
    return basic_view(t, key);
}

int
pygpu_is_basic_key(PyObject *key)
{
    PyObject *one[1] = {key};
    PyObject *const *items = one;
    Py_ssize_t n = 1;
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        if (!PyLong_Check(k) && !PySlice_Check(k) && k != Py_None &&
            k != Py_Ellipsis) {
            return 0;
        }
    }
    return 1;
}

/* t[key] = value: a view, then a checked copy (broadcast) into it. */
int
pygpu_op_setitem(TensorObject *t, PyObject *key, TensorObject *value)
{
    if (pygpu_is_mask_index(key)) {
        return pygpu_mask_setitem(t, (TensorObject *)key, value);
    }
    if (pygpu_index_wants(key)) { /* an integer index: ops_index_int.c */
        return pygpu_index_put(t, key, value);
    }
    TensorObject *view = (TensorObject *)basic_view(t, key);
    if (view == NULL) {
        return -1;
    }
    int rc = pygpu_tensor_assign(view, value);
    Py_DECREF(view);
    return rc;
}
