/* autograd_util.c - the small tensor steps the backward rules are written
 * in: arithmetic with a tensor or a number, views that add, swap or
 * reshape dims, a dtype change, and attaching a Node to a result. */
#include "autograd/autograd.h"

#include <string.h>

TensorObject *
pygpu_ag_bin(int op, TensorObject *a, PyObject *b)
{
    return (TensorObject *)pygpu_op_binary(op, (PyObject *)a, b, NULL);
}

TensorObject *
pygpu_ag_bin_s(int op, TensorObject *a, double s)
{
    PyObject *v = PyFloat_FromDouble(s);
    TensorObject *r = v ? pygpu_ag_bin(op, a, v) : NULL;
    Py_XDECREF(v);
    return r;
}

TensorObject *
pygpu_ag_un(int op, TensorObject *a)
{
    return (TensorObject *)pygpu_op_unary(op, a, 0);
}

TensorObject *
pygpu_ag_insert_dim(TensorObject *t, int pos)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    for (int d = 0, j = 0; d <= t->ndim; d++) {
        int here = d == pos;
        shape[d] = here ? 1 : t->shape[j];
        strides[d] = here ? 0 : t->strides[j++];
    }
    return pygpu_tensor_view(t, t->ndim + 1, shape, strides, 0);
}

TensorObject *
pygpu_ag_mT(TensorObject *t)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    int n = t->ndim;
    memcpy(shape, t->shape, sizeof(int64_t) * n);
    memcpy(strides, t->strides, sizeof(int64_t) * n);
    shape[n - 2] = t->shape[n - 1];
    shape[n - 1] = t->shape[n - 2];
    strides[n - 2] = t->strides[n - 1];
    strides[n - 1] = t->strides[n - 2];
    return pygpu_tensor_view(t, n, shape, strides, 0);
}

TensorObject *
pygpu_ag_reshaped(TensorObject *t, int ndim, const int64_t *shape)
{
    int64_t strides[PYGPU_MAX_DIMS];
    TensorObject *c = pygpu_tensor_contiguous(t);
    if (c == NULL) {
        return NULL;
    }
    pygpu_contiguous_strides(ndim, shape, strides);
    TensorObject *r = pygpu_tensor_view(c, ndim, shape, strides, 0);
    Py_DECREF(c);
    return r;
}

TensorObject *
pygpu_ag_as_dtype(TensorObject *g, int dtype)
{
    if (g->dtype == dtype) {
        return (TensorObject *)Py_NewRef(g);
    }
    return pygpu_tensor_to(g, g->device, dtype);
}

PyObject *
pygpu_ag_finish(PyObject *res, pygpu_node *node)
{
    if (res == NULL || node == NULL) {
        Py_XDECREF(res);
        Py_XDECREF(node);
        return NULL;
    }
    /* Only floating results take part, as torch's: an integer or bool
     * one (argmax, a cast to int64, sum(dtype=int64)) has no history. */
    if (!pygpu_dtype_table[((TensorObject *)res)->dtype].is_floating_point) {
        Py_DECREF(node);
        return res;
    }
    pygpu_ag_set_grad_fn((TensorObject *)res, node);
    return res;
}

PyObject *
pygpu_ag_no_rule(PyObject *res, const char *name)
{
    Py_XDECREF(res);
    PyErr_Format(PyExc_RuntimeError,
                 "the derivative of %s is not implemented in pygpu's "
                 "autograd yet", name);
    return NULL;
}

TensorObject *
pygpu_ag_zeros(int ndim, const int64_t *shape, int dtype, pygpu_device dev)
{
    TensorObject *z = pygpu_tensor_empty(ndim, shape, dtype, dev);
    if (z != NULL && pygpu_op_fill(z, 0.0) < 0) {
        Py_CLEAR(z);
    }
    return z;
}

TensorObject *
pygpu_ag_flip_dim(TensorObject *t, int dim)
{
    PyObject *d = PyLong_FromLong(dim);
    PyObject *r = d ? pygpu_op_flip(t, &d, 1) : NULL;
    Py_XDECREF(d);
    return (TensorObject *)r;
}

TensorObject *
pygpu_ag_zero_where(TensorObject *t, TensorObject *cond)
{
    TensorObject *z = t && cond ? pygpu_ag_zeros(0, NULL, t->dtype,
                                                 t->device)
                                : NULL;
    if (z == NULL || pygpu_op_masked_copy(t, cond, z, "masked_fill_") < 0) {
        Py_CLEAR(t);
    }
    Py_XDECREF(z);
    Py_XDECREF(cond);
    return t;
}
