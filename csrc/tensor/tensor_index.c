/* tensor_index.c - t[key] and t[key] = value, the Tensor's mapping slots,
 * as torch's binding does them: a key's lists of ints and NumPy integer
 * arrays are made int64 tensors on t's device, a value that is no tensor
 * one of t's dtype on t's device, then autograd_select.c's
 * pygpu_ag_getitem / pygpu_ag_setitem record what ops_getitem.c computes.
 */
#include "tensor/tensor.h"

static int
is_integer_item(PyObject *v)
{
    return (PyLong_Check(v) && !PyBool_Check(v)) ||
           PyArray_IsScalar(v, Integer);
}

/* A key entry to make a tensor: a list of ints or of lists of ints, an
 * integer (not uint8: a mask) or floating NumPy array (a floating one,
 * for ops_index_int.c to refuse in torch's words).  A nested list is a
 * tuple of indices (key_tuple) at the top of a key, an index of several
 * dims in a tuple. */
static int
needs_tensor(PyObject *k)
{
    if (PyArray_Check(k)) {
        char kind = PyArray_DESCR((PyArrayObject *)k)->kind;
        return kind == 'i' || kind == 'f' ||
               (kind == 'u' && PyArray_ITEMSIZE((PyArrayObject *)k) > 1);
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

/* torch reads a list key holding a sequence as a tuple of indices:
 * t[[[0, 1], [1, 0]]] is t[[0, 1], [1, 0]]. */
static PyObject *
key_tuple(PyObject *key)
{
    if (PyTuple_Check(key)) {
        return Py_NewRef(key);
    }
    for (Py_ssize_t i = 0; PyList_Check(key) && i < PyList_GET_SIZE(key);
         i++) {
        PyObject *v = PyList_GET_ITEM(key, i);
        if (PyList_Check(v) || PyTuple_Check(v)) {
            return PyList_AsTuple(key);
        }
    }
    return PyTuple_Pack(1, key);
}

/* key with its list and array entries as tensors on t's device (key
 * itself when it has none).  New reference or NULL. */
static PyObject *
tensor_key(TensorObject *t, PyObject *key)
{
    int any = needs_tensor(key);
    for (Py_ssize_t i = 0; PyTuple_Check(key) && i < PyTuple_GET_SIZE(key);
         i++) {
        any |= needs_tensor(PyTuple_GET_ITEM(key, i));
    }
    if (!any) {
        return Py_NewRef(key);
    }
    PyObject *tuple = key_tuple(key), *r = NULL;
    if (tuple == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    r = PyTuple_New(n);
    for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i), *e;
        if (needs_tensor(k)) {
            int floating = PyArray_Check(k) &&
                           PyArray_DESCR((PyArrayObject *)k)->kind == 'f';
            e = (PyObject *)pygpu_tensor_from_data(
                k, floating ? -1 : PYGPU_INT64, t->device);
        }
        else {
            e = Py_NewRef(k);
        }
        if (e == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, e);
    }
    Py_DECREF(tuple);
    return r;
}

PyObject *
pygpu_t_getitem(PyObject *op, PyObject *key)
{
    TensorObject *t = (TensorObject *)op;
    PyObject *k = tensor_key(t, key), *r;
    if (k == NULL) {
        return NULL;
    }
    r = pygpu_ag_getitem(t, k);
    Py_DECREF(k);
    return r;
}

int
pygpu_t_setitem(PyObject *op, PyObject *key, PyObject *value)
{
    TensorObject *t = (TensorObject *)op, *v = NULL;
    PyObject *k = NULL;
    int rc = -1;
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "tensor items cannot be deleted");
        return -1;
    }
    k = tensor_key(t, key);
    if (k == NULL) {
        goto fail;
    }
    v = Tensor_Check(value)
            ? (TensorObject *)Py_NewRef(value)
            : pygpu_tensor_from_data(value, t->dtype, t->device);
    if (v == NULL) {
        goto fail;
    }
    rc = pygpu_ag_setitem(t, k, v);
fail:
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc;
}
