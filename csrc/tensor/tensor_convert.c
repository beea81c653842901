/* tensor_convert.c - moving and converting tensors: to / cpu / cuda /
 * float / half / double / long / bool / int / byte / bfloat16,
 * contiguous, numpy, tolist, item, __array__.  bfloat16 meets NumPy as
 * float32 (tolist, item) or not at all (numpy, __array__: TypeError). */
#include "tensor/tensor.h"
#include "cuda/cuda_stream.h"

#include <string.h>

/* ----------------------------------------------------------- .to() */

/* Classify one positional argument of .to(): a dtype, a tensor, or a
 * device. */
static int
to_arg(PyObject *arg, int *dtype, pygpu_device *dev, int *has_dev)
{
    if (DType_Check(arg)) {
        *dtype = ((DTypeObject *)arg)->code;
        return 0;
    }
    if (Tensor_Check(arg)) {
        *dtype = ((TensorObject *)arg)->dtype;
        *dev = ((TensorObject *)arg)->device;
        *has_dev = 1;
        return 0;
    }
    if (arg == Py_None) {
        return 0;
    }
    *has_dev = 1;
    return pygpu_parse_device(arg, dev);
}

/* The result of moving/converting self; self itself when nothing changes
 * (and copy is false). */
static PyObject *
to_impl(TensorObject *self, pygpu_device dev, int dtype, int copy,
        int non_blocking)
{
    if (pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    if (!copy && dtype == self->dtype &&
        pygpu_device_equal(&dev, &self->device)) {
        return Py_NewRef((PyObject *)self);
    }
    return (PyObject *)pygpu_ag_to(self, dev, dtype, non_blocking);
}

PyObject *
pygpu_t_to(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    static const char *const names[] = {"a0", "a1", "device", "dtype",
                                        "non_blocking", "copy",
                                        "memory_format"};
    TensorObject *self = (TensorObject *)op;
    PyObject *a[7];
    pygpu_device dev = self->device;
    int dtype = self->dtype, has_dev = 0, copy = 0, non_blocking = 0;
    if (pygpu_parse_args("to", args, nargs, kwnames, names, 7, 2, 0, a) < 0) {
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (a[i] != NULL && to_arg(a[i], &dtype, &dev, &has_dev) < 0) {
            return NULL;
        }
    }
    if (a[2] != NULL && a[2] != Py_None &&
        pygpu_parse_device(a[2], &dev) < 0) {
        return NULL;
    }
    if (a[3] != NULL && pygpu_parse_dtype_opt(a[3], dtype, &dtype) < 0) {
        return NULL;
    }
    if (pygpu_parse_bool(a[5], 0, &copy) < 0 ||
        pygpu_parse_bool(a[4], 0, &non_blocking) < 0) {
        return NULL;
    }
    return to_impl(self, dev, dtype, copy, non_blocking);
}

PyObject *
pygpu_t_cuda(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    static const char *const names[] = {"device", "non_blocking",
                                        "memory_format"};
    TensorObject *self = (TensorObject *)op;
    PyObject *a[3];
    pygpu_device dev = {PYGPU_CUDA, -1};
    int non_blocking = 0;
    if (pygpu_parse_args("cuda", args, nargs, kwnames, names, 3, 2, 0, a) <
            0 ||
        pygpu_parse_bool(a[1], 0, &non_blocking) < 0) {
        return NULL;
    }
    if (a[0] != NULL && a[0] != Py_None) {
        if (pygpu_parse_device(a[0], &dev) < 0) {
            return NULL;
        }
        if (dev.type != PYGPU_CUDA) {
            PyErr_SetString(PyExc_RuntimeError,
                            "Invalid device, must be cuda device");
            return NULL;
        }
    }
    return to_impl(self, dev, self->dtype, 0, non_blocking);
}

PyObject *
pygpu_t_cpu(PyObject *op, PyObject *noargs)
{
    TensorObject *self = (TensorObject *)op;
    pygpu_device cpu = {PYGPU_CPU, -1};
    return to_impl(self, cpu, self->dtype, 0, 0);
}

static PyObject *
to_dtype(PyObject *op, int dtype)
{
    TensorObject *self = (TensorObject *)op;
    return to_impl(self, self->device, dtype, 0, 0);
}

PyObject *pygpu_t_float(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_FLOAT32);
}
PyObject *pygpu_t_half(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_FLOAT16);
}
PyObject *pygpu_t_double(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_FLOAT64);
}
PyObject *pygpu_t_long(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_INT64);
}
PyObject *pygpu_t_to_bool(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_BOOL);
}
PyObject *pygpu_t_to_int(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_INT32);
}
PyObject *pygpu_t_to_byte(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_UINT8);
}
PyObject *pygpu_t_to_bfloat16(PyObject *op, PyObject *n)
{
    return to_dtype(op, PYGPU_BFLOAT16);
}

PyObject *
pygpu_t_contiguous(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    TensorObject *t = (TensorObject *)op;
    if (pygpu_is_contiguous(t)) {
        return Py_NewRef(op);
    }
    return (PyObject *)pygpu_ag_to(t, t->device, t->dtype, 0);
}

/* ------------------------------------------------------------- NumPy */

/* NumPy has no bfloat16: .numpy() and __array__ refuse it, as torch
 * does (convert with .float() first). */
static int
check_numpy_dtype(TensorObject *t)
{
    if (t->dtype == PYGPU_BFLOAT16) {
        PyErr_SetString(PyExc_TypeError,
                        "Got unsupported ScalarType BFloat16");
        return -1;
    }
    return 0;
}

static int
check_cpu_for_numpy(TensorObject *t)
{
    if (check_numpy_dtype(t) < 0) {
        return -1;
    }
    if (t->device.type != PYGPU_CPU) {
        char buf[32];
        pygpu_device_str(&t->device, buf, sizeof(buf));
        PyErr_Format(PyExc_TypeError,
                     "can't convert %s device type tensor to numpy. Use "
                     "Tensor.cpu() to copy the tensor to host memory first.",
                     buf);
        return -1;
    }
    return 0;
}

PyObject *
pygpu_t_numpy(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"force"};
    PyObject *a[1];
    int force;
    TensorObject *self = (TensorObject *)op;
    if (pygpu_parse_args("numpy", args, nargs, kwnames, names, 1, 0, 0,
                         a) < 0 ||
        pygpu_parse_bool(a[0], 0, &force) < 0) {
        return NULL;
    }
    if (!force && pygpu_requires_grad(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Can't call numpy() on Tensor that requires grad. "
                        "Use tensor.detach().numpy() instead.");
        return NULL;
    }
    if (check_numpy_dtype(self) < 0) {
        return NULL;
    }
    if (force && self->device.type != PYGPU_CPU) {
        PyObject *host = pygpu_t_cpu(op, NULL);
        if (host == NULL) {
            return NULL;
        }
        PyObject *arr = pygpu_tensor_to_ndarray((TensorObject *)host);
        Py_DECREF(host);
        return arr;
    }
    if (check_cpu_for_numpy(self) < 0) {
        return NULL;
    }
    return pygpu_tensor_to_ndarray(self);
}

/* __array__(dtype=None, copy=None), NumPy 2's protocol. */
PyObject *
pygpu_t_array(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "copy"};
    PyObject *a[2];
    TensorObject *self = (TensorObject *)op;
    PyArray_Descr *descr = NULL;
    PyObject *arr = NULL, *result = NULL;
    if (pygpu_parse_args("__array__", args, nargs, kwnames, names, 2, 2, 0,
                         a) < 0) {
        return NULL;
    }
    if (check_cpu_for_numpy(self) < 0) {
        return NULL;
    }
    arr = pygpu_tensor_to_ndarray(self);
    if (arr == NULL) {
        return NULL;
    }
    int copy = a[1] != NULL && a[1] != Py_None && PyObject_IsTrue(a[1]);
    int no_copy = a[1] != NULL && a[1] != Py_None && !PyObject_IsTrue(a[1]);
    if (a[0] != NULL && a[0] != Py_None) {
        if (!PyArray_DescrConverter(a[0], &descr)) {
            goto fail;
        }
        if (!PyArray_EquivTypes(descr, PyArray_DESCR((PyArrayObject *)arr))) {
            if (no_copy) {
                PyErr_SetString(PyExc_ValueError,
                                "Unable to avoid copy while creating an "
                                "array as requested.");
                goto fail;
            }
            result = PyArray_CastToType((PyArrayObject *)arr, descr, 0);
            descr = NULL; /* stolen */
            goto fail;
        }
    }
    if (copy) {
        result = PyArray_NewCopy((PyArrayObject *)arr, NPY_KEEPORDER);
    }
    else {
        result = Py_NewRef(arr);
    }
fail:
    Py_XDECREF(descr);
    Py_XDECREF(arr);
    return result;
}

/* A NumPy array with the tensor's values, wherever it is (bfloat16 as
 * float32, which holds every bfloat16 exactly). */
static PyObject *
host_array(TensorObject *self)
{
    PyObject *host = NULL, *arr = NULL;
    if (self->device.type == PYGPU_CPU && self->dtype != PYGPU_BFLOAT16) {
        return pygpu_tensor_to_ndarray(self);
    }
    pygpu_device cpu = {PYGPU_CPU, -1};
    host = (PyObject *)pygpu_tensor_to(
        self, cpu, self->dtype == PYGPU_BFLOAT16 ? PYGPU_FLOAT32 : self->dtype);
    if (host != NULL) {
        arr = pygpu_tensor_to_ndarray((TensorObject *)host);
        Py_DECREF(host);
    }
    return arr;
}

PyObject *
pygpu_t_tolist(PyObject *op, PyObject *noargs)
{
    PyObject *arr = host_array((TensorObject *)op);
    if (arr == NULL) {
        return NULL;
    }
    PyObject *list = PyArray_ToList((PyArrayObject *)arr);
    Py_DECREF(arr);
    return list;
}

PyObject *
pygpu_t_item(PyObject *op, PyObject *noargs)
{
    TensorObject *self = (TensorObject *)op;
    int64_t n = pygpu_numel(self->ndim, self->shape);
    if (n != 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "a Tensor with %lld elements cannot be converted to "
                     "Scalar", (long long)n);
        return NULL;
    }
    PyObject *arr = host_array(self);
    if (arr == NULL) {
        return NULL;
    }
    PyObject *scalar = PyArray_GETITEM((PyArrayObject *)arr,
                                       PyArray_DATA((PyArrayObject *)arr));
    Py_DECREF(arr);
    if (scalar == NULL) {
        return NULL;
    }
    /* Python float, int or bool, not a NumPy scalar. */
    PyObject *r = self->dtype == PYGPU_BOOL
                      ? PyBool_FromLong(PyObject_IsTrue(scalar))
                  : pygpu_dtype_table[self->dtype].is_floating_point
                      ? PyNumber_Float(scalar)
                      : PyNumber_Long(scalar);
    Py_DECREF(scalar);
    return r;
}
