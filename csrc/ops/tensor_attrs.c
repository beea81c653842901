/* tensor_attrs.c - the Tensor's attributes (shape, dtype, device, ...,
 * and the assignable `data`), as one getset table. */
#include "ops/dlpack.h"
#include "ops/autograd.h"

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
    return 0;
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
