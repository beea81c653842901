/* tensor_attrs.c - the Tensor's attributes (shape, dtype, device, ...,
 * and the assignable `data`), as one getset table. */
#include "interop/dlpack.h"
#include "tensor/tensor.h"

#include <string.h>

/* Defined in tensor_views.c. */
PyObject *pygpu_t_get_T(PyObject *, void *);
PyObject *pygpu_t_get_mT(PyObject *, void *);

#define SELF ((TensorObject *)op)

static PyObject *
t_get_shape(PyObject *op, void *c)
{
    return pygpu_size_new(SELF->ndim, SELF->shape);
}

static PyObject *
t_get_dtype(PyObject *op, void *c)
{
    return Py_NewRef(pygpu_state->dtypes[SELF->dtype]);
}

static PyObject *
t_get_device(PyObject *op, void *c)
{
    return pygpu_device_new(SELF->device);
}

static PyObject *
t_get_ndim(PyObject *op, void *c)
{
    return PyLong_FromLong(SELF->ndim);
}

static PyObject *
t_get_is_cuda(PyObject *op, void *c)
{
    return PyBool_FromLong(SELF->device.type == PYGPU_CUDA);
}

static PyObject *
t_get_itemsize(PyObject *op, void *c)
{
    return PyLong_FromLong(pygpu_dtype_table[SELF->dtype].itemsize);
}

static PyObject *
t_get_nbytes(PyObject *op, void *c)
{
    size_t nbytes;
    if (pygpu_shape_nbytes(SELF->ndim, SELF->shape, SELF->dtype, &nbytes) <
        0) {
        return NULL;
    }
    return PyLong_FromSize_t(nbytes);
}

static PyObject *
t_get_data(PyObject *op, void *c)
{
    /* As torch's: no history, and a version counter of its own, so that
     * updates through .data go unnoticed by autograd. */
    TensorObject *r = pygpu_tensor_view(SELF, SELF->ndim, SELF->shape,
                                        SELF->strides, 0);
    if (r != NULL) {
        pygpu_version_release(r);
        r->version = 0;
    }
    return (PyObject *)r;
}

/* ------------------------------------------ t.data = other, autograd */

/* Whether shape a (na dims) expands to shape b (nb dims), torch's
 * is_expandable_to: a gradient of shape b then sums to a. */
static int
expandable(int na, const int64_t *a, int nb, const int64_t *b)
{
    if (na > nb) {
        return 0;
    }
    for (int i = 1; i <= na; i++) {
        if (a[na - i] != b[nb - i] && a[na - i] != 1) {
            return 0;
        }
    }
    return 1;
}

static int
same_shape(const TensorObject *a, const TensorObject *b)
{
    return a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* The rule of a leaf's AccumulateGrad node once t.data has changed t's
 * shape, dtype or device: the gradient must fit t as t is now (torch's
 * error otherwise, rather than a .grad of another shape than t's), and
 * goes on to t's real AccumulateGrad node, reduced to t's shape and
 * converted to its dtype and device by the engine, as any input's. */
static int
rebound_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *t = (TensorObject *)n->variable;
    char got[256], want[256];
    pygpu_format_shape(want, sizeof(want), t->ndim, t->shape);
    if (!expandable(t->ndim, t->shape, g->ndim, g->shape)) {
        pygpu_format_shape(got, sizeof(got), g->ndim, g->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "Function %s returned an invalid gradient at index 0 - "
                     "got [%s] but expected shape compatible with [%s]",
                     n->name, got, want);
        return -1;
    }
    if (t->grad != NULL && Tensor_Check(t->grad) &&
        !same_shape((TensorObject *)t->grad, t)) {
        TensorObject *old = (TensorObject *)t->grad;
        pygpu_format_shape(got, sizeof(got), old->ndim, old->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "Function %s cannot accumulate into .grad of shape "
                     "[%s]: the tensor's shape is [%s] since its .data was "
                     "replaced; set .grad to None first", n->name, got, want);
        return -1;
    }
    n->in_ndim[0] = t->ndim;
    memcpy(n->in_shape[0], t->shape, sizeof(int64_t) * (size_t)t->ndim);
    n->in_dtype[0] = t->dtype;
    n->in_device[0] = t->device;
    grads[0] = (TensorObject *)Py_NewRef((PyObject *)g);
    return 0;
}

/* After t.data changed t's shape, dtype or device: graphs recorded before
 * send gradients of t's old kind to t's AccumulateGrad node, if one is
 * alive.  That node (its name and .variable kept) turns into a step that
 * checks each gradient against t as t is then (rebound_backward) and
 * hands it to a new AccumulateGrad node behind it; t keeps the step as
 * its accumulator, so later graphs are checked the same way.  0 or -1. */
static int
rebind_accumulator(TensorObject *t)
{
    PyObject *acc = t->grad_acc ? PyWeakref_GetObject(t->grad_acc) : Py_None;
    if (acc == NULL) {
        return -1;
    }
    pygpu_node *a = (pygpu_node *)acc;
    if (acc == Py_None || a->backward != NULL || t->grad_fn != NULL) {
        return 0; /* none, rebound already, or t is no leaf */
    }
    Py_INCREF(acc);
    Py_CLEAR(t->grad_acc);
    /* A Node over t (its edge: a new AccumulateGrad node), whose inputs'
     * block the old node takes over. */
    pygpu_node *tmp = pygpu_ag_node(a->name, rebound_backward, 1, &t);
    int rc = -1;
    if (tmp == NULL) {
        goto fail;
    }
    a->nin = tmp->nin;
    a->next = tmp->next;
    a->in_ndim = tmp->in_ndim;
    a->in_shape = tmp->in_shape;
    a->in_dtype = tmp->in_dtype;
    a->in_device = tmp->in_device;
    a->backward = rebound_backward;
    tmp->nin = 0;
    tmp->next = NULL;
    tmp->in_shape = NULL;
    Py_DECREF(tmp);
    Py_XSETREF(t->grad_acc, PyWeakref_NewRef(acc, NULL));
    rc = t->grad_acc == NULL ? -1 : 0;
fail:
    Py_DECREF(acc);
    return rc;
}

/* t.data = other: t now views other's memory with other's geometry, dtype
 * and device (torch's way for Module.to to keep Parameter objects). */
static int
t_set_data(PyObject *op, PyObject *value, void *c)
{
    if (value == NULL || !Tensor_Check(value)) {
        PyErr_SetString(PyExc_TypeError,
                        "data must be a Tensor (it cannot be deleted)");
        return -1;
    }
    TensorObject *src = (TensorObject *)value;
    if (pygpu_requires_grad(SELF) &&
        !pygpu_dtype_table[src->dtype].is_floating_point) {
        PyErr_SetString(PyExc_RuntimeError,
                        "data set to a tensor that requires gradients must "
                        "be floating point or complex dtype");
        return -1;
    }
    int changed = !same_shape(SELF, src) || SELF->dtype != src->dtype ||
                  !pygpu_device_equal(&SELF->device, &src->device);
    PyObject *old = SELF->base;
    SELF->base = Py_NewRef(src->base);
    pygpu_version_release(SELF); /* other memory: a counter of its own */
    SELF->data = src->data;
    SELF->dtype = src->dtype;
    SELF->device = src->device;
    SELF->readonly = src->readonly;
    SELF->ndim = src->ndim;
    memcpy(SELF->shape, src->shape, sizeof(src->shape));
    memcpy(SELF->strides, src->strides, sizeof(src->strides));
    Py_XDECREF(old);
    return changed ? rebind_accumulator(SELF) : 0;
}

PyGetSetDef pygpu_tensor_getset[] = {
    {"shape", t_get_shape, NULL, "The shape, a pygpu.Size.", NULL},
    {"dtype", t_get_dtype, NULL, "The element type.", NULL},
    {"device", t_get_device, NULL, "Where the tensor lives.", NULL},
    {"ndim", t_get_ndim, NULL, "The number of dimensions.", NULL},
    {"is_cuda", t_get_is_cuda, NULL, "True on a CUDA device.", NULL},
    {"itemsize", t_get_itemsize, NULL, "Bytes per element.", NULL},
    {"nbytes", t_get_nbytes, NULL, "Bytes of all elements.", NULL},
    {"T", pygpu_t_get_T, NULL, "All dims reversed (a view).", NULL},
    {"mT", pygpu_t_get_mT, NULL, "Last two dims swapped (a view).", NULL},
    {"data", t_get_data, t_set_data,
     "The tensor as a new view; assigning rebinds this tensor to another's\n"
     "memory, shape, dtype and device.", NULL},
    {"requires_grad", pygpu_t_get_requires_grad, pygpu_t_set_requires_grad,
     "Whether autograd records ops on this tensor (settable on leaves).",
     NULL},
    {"grad", pygpu_t_get_grad, pygpu_t_set_grad,
     "The gradient backward() accumulated here (leaves, or after\n"
     "retain_grad()), or None.", NULL},
    {"grad_fn", pygpu_t_get_grad_fn, NULL,
     "The Node that made this tensor, or None for a leaf.", NULL},
    {"is_leaf", pygpu_t_get_is_leaf, NULL,
     "True unless the tensor was made by a recorded op.", NULL},
    {"retains_grad", pygpu_t_get_retains_grad, NULL,
     "True after retain_grad() on a non-leaf.", NULL},
    {"_version", pygpu_t_get_version, NULL,
     "In-place writes to this tensor's memory so far.", NULL},
    {"__cuda_array_interface__", pygpu_t_cuda_array_interface, NULL,
     "The CUDA Array Interface (version 3) of a CUDA tensor; CPU tensors\n"
     "have none (AttributeError).", NULL},
    {NULL},
};
