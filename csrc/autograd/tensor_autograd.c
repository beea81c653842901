/* tensor_autograd.c - the Tensor's autograd attributes and methods:
 * requires_grad, grad, grad_fn, is_leaf, retains_grad, _version;
 * requires_grad_(), retain_grad(), detach_(), backward(). */
#include "autograd/autograd.h"

#include <string.h>

#define SELF ((TensorObject *)op)

PyObject *
pygpu_t_get_requires_grad(PyObject *op, void *c)
{
    return PyBool_FromLong(pygpu_requires_grad(SELF));
}

static int
is_differentiable(int dtype)
{
    return pygpu_dtype_table[dtype].is_floating_point;
}

/* Only leaves take the flag, and only floating ones, as torch. */
static int
set_requires_grad(TensorObject *t, int on)
{
    if (t->grad_fn != NULL) {
        if (on) {
            return 0;
        }
        PyErr_SetString(PyExc_RuntimeError,
                        "you can only change requires_grad flags of leaf "
                        "variables. If you want to use a computed variable "
                        "in a subgraph that doesn't require differentiation "
                        "use var_no_grad = var.detach().");
        return -1;
    }
    if (on && !is_differentiable(t->dtype)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "only Tensors of floating point and complex dtype "
                        "can require gradients");
        return -1;
    }
    t->requires_grad = (unsigned char)on;
    return 0;
}

int
pygpu_t_set_requires_grad(PyObject *op, PyObject *value, void *c)
{
    if (value == NULL || !PyBool_Check(value)) {
        PyErr_SetString(PyExc_TypeError,
                        "requires_grad must be a bool");
        return -1;
    }
    return set_requires_grad(SELF, value == Py_True);
}

PyObject *
pygpu_t_get_grad(PyObject *op, void *c)
{
    return Py_NewRef(SELF->grad != NULL ? SELF->grad : Py_None);
}

int
pygpu_t_set_grad(PyObject *op, PyObject *value, void *c)
{
    if (value == NULL || value == Py_None) {
        Py_CLEAR(SELF->grad);
        return 0;
    }
    if (!Tensor_Check(value)) {
        PyErr_Format(PyExc_TypeError,
                     "assigned grad expected to be a Tensor or None but got "
                     "grad of type %.100s", Py_TYPE(value)->tp_name);
        return -1;
    }
    TensorObject *g = (TensorObject *)value;
    if (g->ndim != SELF->ndim ||
        memcmp(g->shape, SELF->shape, sizeof(int64_t) * g->ndim) != 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "assigned grad has data of a different size");
        return -1;
    }
    if (g->dtype != SELF->dtype) {
        PyErr_SetString(PyExc_RuntimeError,
                        "assigned grad has data of a different type");
        return -1;
    }
    if (!pygpu_device_equal(&g->device, &SELF->device)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "assigned grad has data located on a different "
                        "device");
        return -1;
    }
    Py_XSETREF(SELF->grad, Py_NewRef(value));
    return 0;
}

PyObject *
pygpu_t_get_grad_fn(PyObject *op, void *c)
{
    return Py_NewRef(SELF->grad_fn != NULL ? SELF->grad_fn : Py_None);
}

PyObject *
pygpu_t_get_is_leaf(PyObject *op, void *c)
{
    return PyBool_FromLong(SELF->grad_fn == NULL);
}

PyObject *
pygpu_t_get_retains_grad(PyObject *op, void *c)
{
    return PyBool_FromLong(SELF->retains_grad);
}

PyObject *
pygpu_t_get_version(PyObject *op, void *c)
{
    return PyLong_FromUnsignedLong(*pygpu_version_counter(SELF));
}

/* ------------------------------------------------------------- methods */

PyObject *
pygpu_t_requires_grad_(PyObject *op, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"requires_grad"};
    PyObject *v[1] = {NULL};
    int on = 1;
    if (pygpu_parse_args("requires_grad_", args, nargs, kwnames, names, 1, 1,
                         0, v) < 0 ||
        pygpu_parse_bool(v[0], 1, &on) < 0 ||
        set_requires_grad(SELF, on) < 0) {
        return NULL;
    }
    return Py_NewRef(op);
}

PyObject *
pygpu_t_retain_grad(PyObject *op, PyObject *noargs)
{
    if (SELF->grad_fn == NULL) {
        if (!SELF->requires_grad) {
            PyErr_SetString(PyExc_RuntimeError,
                            "can't retain_grad on Tensor that has "
                            "requires_grad=False");
            return NULL;
        }
        Py_RETURN_NONE; /* a leaf keeps its .grad anyway */
    }
    pygpu_node *n = (pygpu_node *)SELF->grad_fn;
    PyObject *ref = PyWeakref_NewRef(op, NULL);
    if (ref == NULL) {
        return NULL;
    }
    if (n->nout > 1) { /* one per output */
        if (n->retained == NULL &&
            (n->retained = pygpu_ag_none_list(n->nout)) == NULL) {
            Py_DECREF(ref);
            return NULL;
        }
        if (PyList_SetItem(n->retained, pygpu_ag_output_nr(SELF), ref) < 0) {
            return NULL;
        }
    }
    else {
        Py_XSETREF(n->retained, ref);
    }
    SELF->retains_grad = 1;
    Py_RETURN_NONE;
}

PyObject *
pygpu_t_detach_(PyObject *op, PyObject *noargs)
{
    Py_CLEAR(SELF->grad_fn);
    SELF->requires_grad = 0;
    SELF->retains_grad = 0;
    return Py_NewRef(op);
}

PyObject *
pygpu_t_backward(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    static const char *const names[] = {"gradient", "retain_graph",
                                        "create_graph", "inputs"};
    PyObject *v[4] = {NULL, NULL, NULL, NULL}, *r;
    int retain = 0, create = 0;
    if (pygpu_parse_args("backward", args, nargs, kwnames, names, 4, 4, 0,
                         v) < 0 ||
        pygpu_parse_bool(v[2], 0, &create) < 0 ||
        (v[1] != NULL && v[1] != Py_None &&
         pygpu_parse_bool(v[1], 0, &retain) < 0)) {
        return NULL;
    }
    if (create) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "backward(create_graph=True): pygpu's autograd does "
                        "not record the backward pass (no higher-order "
                        "gradients)");
        return NULL;
    }
    if (v[3] != NULL && v[3] != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "backward(inputs=...) is not supported; use "
                        "pygpu.autograd.grad");
        return NULL;
    }
    r = Py_BuildValue("((O)(O)i)", op, v[0] ? v[0] : Py_None, retain);
    if (r == NULL) {
        return NULL;
    }
    PyObject *res = pygpu_autograd_backward_args(r);
    Py_DECREF(r);
    return res;
}
