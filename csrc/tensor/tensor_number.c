/* tensor_number.c - the Tensor's operator slots: arithmetic, @, in-place
 * forms, hash, conversions to Python numbers, len, indexing, iteration,
 * repr (the comparisons are in ops_compare.c). */
#include "tensor/tensor.h"

/* A NumPy scalar as the Python number it holds, so that it follows torch's
 * rules for Python scalars (np.float32(2) * t keeps t's dtype); any other
 * operand as it is.  New reference. */
static PyObject *
py_number(PyObject *x)
{
    if (PyArray_IsScalar(x, Integer) || PyArray_IsScalar(x, Bool)) {
        return PyNumber_Long(x);
    }
    if (PyArray_IsScalar(x, Floating)) {
        return PyNumber_Float(x);
    }
    return Py_NewRef(x);
}

PyObject *
pygpu_number_binary(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    /* A NumPy array counts as the tensor made from it (tensor_operand.c);
     * a NumPy scalar as the Python number it holds. */
    PyObject *ta = pygpu_array_operand(a, b), *tb = NULL;
    PyObject *x = NULL, *y = NULL, *r = NULL;
    if (ta == NULL || (tb = pygpu_array_operand(b, a)) == NULL) {
        goto fail;
    }
    if ((x = py_number(ta)) == NULL || (y = py_number(tb)) == NULL) {
        goto fail;
    }
    r = pygpu_ag_binary(op, x, y, out);
fail:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static PyObject *
binary(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    return pygpu_number_binary(op, a, b, out);
}

PyObject *
pygpu_t_add(PyObject *a, PyObject *b)
{
    return binary(PYGPU_ADD, a, b, NULL);
}

PyObject *
pygpu_t_sub(PyObject *a, PyObject *b)
{
    return binary(PYGPU_SUB, a, b, NULL);
}

PyObject *
pygpu_t_mul(PyObject *a, PyObject *b)
{
    return binary(PYGPU_MUL, a, b, NULL);
}

PyObject *
pygpu_t_div(PyObject *a, PyObject *b)
{
    return binary(PYGPU_DIV, a, b, NULL);
}

/* In place: a is always the tensor here (Python calls nb_inplace_* on the
 * left operand's type). */
PyObject *
pygpu_t_iadd(PyObject *a, PyObject *b)
{
    return binary(PYGPU_ADD, a, b, (TensorObject *)a);
}

PyObject *
pygpu_t_isub(PyObject *a, PyObject *b)
{
    return binary(PYGPU_SUB, a, b, (TensorObject *)a);
}

PyObject *
pygpu_t_imul(PyObject *a, PyObject *b)
{
    return binary(PYGPU_MUL, a, b, (TensorObject *)a);
}

PyObject *
pygpu_t_idiv(PyObject *a, PyObject *b)
{
    return binary(PYGPU_DIV, a, b, (TensorObject *)a);
}

PyObject *
pygpu_t_matmul(PyObject *a, PyObject *b)
{
    if (PyArray_Check(a) || PyArray_Check(b)) {
        PyObject *ta = pygpu_array_operand(a, b), *tb = NULL, *r = NULL;
        if (ta != NULL && (tb = pygpu_array_operand(b, a)) != NULL) {
            r = pygpu_t_matmul(ta, tb);
        }
        Py_XDECREF(ta);
        Py_XDECREF(tb);
        return r;
    }
    if (!Tensor_Check(a) || !Tensor_Check(b)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return pygpu_ag_matmul((TensorObject *)a, (TensorObject *)b, NULL);
}

PyObject *
pygpu_t_neg(PyObject *a)
{
    return pygpu_ag_unary(PYGPU_NEG, (TensorObject *)a, NULL, 0);
}

PyObject *
pygpu_t_pos(PyObject *a)
{
    return Py_NewRef(a);
}

/* The single element as a Python number, or RuntimeError. */
static PyObject *
single_item(PyObject *a)
{
    return pygpu_t_item(a, NULL);
}

int
pygpu_t_bool(PyObject *a)
{
    TensorObject *t = (TensorObject *)a;
    int64_t n = pygpu_numel(t->ndim, t->shape);
    if (n != 1) {
        PyErr_SetString(PyExc_RuntimeError,
                        n == 0 ? "Boolean value of Tensor with no values is "
                                 "ambiguous"
                               : "Boolean value of Tensor with more than one "
                                 "value is ambiguous");
        return -1;
    }
    PyObject *v = single_item(a);
    if (v == NULL) {
        return -1;
    }
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

PyObject *
pygpu_t_nb_float(PyObject *a)
{
    PyObject *v = single_item(a);
    if (v == NULL) {
        return NULL;
    }
    Py_SETREF(v, PyNumber_Float(v));
    return v;
}

PyObject *
pygpu_t_nb_int(PyObject *a)
{
    PyObject *v = single_item(a);
    if (v == NULL) {
        return NULL;
    }
    Py_SETREF(v, PyNumber_Long(v));
    return v;
}

PyObject *
pygpu_t_index(PyObject *a)
{
    TensorObject *t = (TensorObject *)a;
    if (pygpu_dtype_category(t->dtype) != PYGPU_CAT_INT ||
        pygpu_numel(t->ndim, t->shape) != 1) {
        PyErr_SetString(PyExc_TypeError,
                        "only integer tensors of a single element can be "
                        "converted to an index");
        return NULL;
    }
    return single_item(a);
}

Py_ssize_t
pygpu_t_len(PyObject *a)
{
    TensorObject *t = (TensorObject *)a;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

/* iter(t): the views t[0], t[1], ... */
PyObject *
pygpu_t_iter(PyObject *a)
{
    TensorObject *t = (TensorObject *)a;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d tensor");
        return NULL;
    }
    PyObject *list = PyList_New((Py_ssize_t)t->shape[0]);
    if (list == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < t->shape[0]; i++) {
        PyObject *v = (PyObject *)pygpu_tensor_view(
            t, t->ndim - 1, t->shape + 1, t->strides + 1, i * t->strides[0]);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    PyObject *it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

/* By identity, as torch's: defining comparisons must not unhash tensors. */
Py_hash_t
pygpu_t_hash(PyObject *a)
{
    return PyBaseObject_Type.tp_hash(a);
}

/* repr is presentation, not a hot path: pygpu._tensor_str does it. */
PyObject *
pygpu_t_repr(PyObject *a)
{
    PyObject *mod = PyImport_ImportModule("pygpu._tensor_str");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, "tensor_repr", "O", a);
    Py_DECREF(mod);
    return r;
}
