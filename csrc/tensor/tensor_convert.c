/* tensor_convert.c - moving and converting tensors: to / cpu / cuda /
 * float / half / double / long / bool / int / byte / bfloat16,
 * contiguous, numpy, tolist, item, __array__.  bfloat16 meets NumPy as
 * float32 (tolist, item) or not at all (numpy, __array__: TypeError). */
#include "autograd/autograd.h"
#include "cuda/cuda_stream.h"

#include <string.h>

TensorObject *
pygpu_tensor_contiguous(TensorObject *src)
{
    if (pygpu_is_contiguous(src)) {
        Py_INCREF(src);
        return src;
    }
    return pygpu_tensor_to(src, src->device, src->dtype);
}

/* Same device: one elementwise copy/convert into a fresh tensor. */
static TensorObject *
to_same_device(TensorObject *src, int dtype)
{
    TensorObject *dst = pygpu_tensor_empty(src->ndim, src->shape, dtype,
                                           src->device);
    if (dst == NULL) {
        return NULL;
    }
    if (pygpu_op_copy_same_device(dst, src) < 0) {
        Py_DECREF(dst);
        return NULL;
    }
    return dst;
}

/* A new tensor for a copy to the host: with non_blocking, in page-locked
 * memory (as torch), so that the copy can be asynchronous. */
static TensorObject *
host_destination(const TensorObject *src, int dtype, pygpu_device dev,
                 int non_blocking)
{
    StorageObject *st;
    TensorObject *t;
    size_t nbytes;
    if (!non_blocking) {
        return pygpu_tensor_empty(src->ndim, src->shape, dtype, dev);
    }
    if (pygpu_shape_nbytes(src->ndim, src->shape, dtype, &nbytes) < 0) {
        return NULL;
    }
    st = pygpu_storage_new(dev, nbytes);
    if (st == NULL) {
        return NULL;
    }
    t = pygpu_tensor_on_storage(st, src->ndim, src->shape, dtype, dev);
    Py_DECREF(st);
    return t;
}

/* A copy about to be queued without waiting on `device`'s current stream
 * reads or writes `pinned`: its block must not be reused (the tensor may
 * die at once) before the copy is done.  0 when it could not be guarded:
 * the copy must then be waited for. */
static int
guard_pinned(TensorObject *pinned, int device)
{
    return pygpu_storage_guard_copy((StorageObject *)pinned->base,
                                    pygpu_cuda_current_stream(device),
                                    device);
}

/* Across devices: convert and compact on the source side, then copy the
 * bytes on the current stream.  With non_blocking the copy is only queued
 * when the host side is page-locked (the source itself, or a pinned
 * destination made for it), as in torch; else it is waited for.  A queued
 * copy records its stream on the pinned side, as torch's caching host
 * allocator does, so that the pinned block waits for the copy. */
static TensorObject *
to_other_device(TensorObject *src, pygpu_device dev, int dtype,
                 int non_blocking)
{
    TensorObject *staged = NULL, *dst = NULL;
    int to_host = dev.type == PYGPU_CPU;
    int sync = 1;
    if (src->dtype == dtype && pygpu_is_contiguous(src)) {
        staged = (TensorObject *)Py_NewRef(src);
    }
    else {
        staged = to_same_device(src, dtype);
        if (staged == NULL) {
            goto fail;
        }
    }
    if (to_host) {
        dst = host_destination(src, dtype, dev, non_blocking);
        sync = !non_blocking;
    }
    else {
        dst = pygpu_tensor_empty(src->ndim, src->shape, dtype, dev);
        sync = !(non_blocking && staged == src &&
                 src->device.type == PYGPU_CPU &&
                 PyObject_TypeCheck(src->base, pygpu_state->Storage_Type));
    }
    if (dst == NULL) {
        goto fail;
    }
    size_t nbytes;
    if (pygpu_shape_nbytes(dst->ndim, dst->shape, dst->dtype, &nbytes) < 0) {
        goto fail;
    }
    if (nbytes > 0) {
        int to = to_host ? PYGPU_HOST : dev.index;
        int from = src->device.type == PYGPU_CPU ? PYGPU_HOST
                                                 : src->device.index;
        if (!sync) {
            sync = !guard_pinned(to_host ? dst : src,
                                 to_host ? from : to);
        }
        if (pygpu_cuda_memcpy_on_stream(dst->data, to, staged->data, from,
                                        nbytes, sync) < 0) {
            goto fail;
        }
    }
    Py_DECREF(staged);
    return dst;
fail:
    Py_XDECREF(staged);
    Py_XDECREF(dst);
    return NULL;
}

static TensorObject *
tensor_to(TensorObject *src, pygpu_device dev, int dtype, int non_blocking)
{
    if (pygpu_ag_wanted(1, &src)) {
        return pygpu_ag_to(src, dev, dtype);
    }
    if (pygpu_device_equal(&src->device, &dev)) {
        return to_same_device(src, dtype);
    }
    if (pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    if (pygpu_device_equal(&src->device, &dev)) {
        return to_same_device(src, dtype);
    }
    return to_other_device(src, dev, dtype, non_blocking);
}

TensorObject *
pygpu_tensor_to(TensorObject *src, pygpu_device dev, int dtype)
{
    return tensor_to(src, dev, dtype, 0);
}

int
pygpu_tensor_copy_into(TensorObject *dst, TensorObject *src)
{
    if (pygpu_device_equal(&dst->device, &src->device)) {
        return pygpu_op_copy_same_device(dst, src);
    }
    TensorObject *tmp = pygpu_tensor_to(src, dst->device, dst->dtype);
    if (tmp == NULL) {
        return -1;
    }
    int rc = pygpu_op_copy_same_device(dst, tmp);
    Py_DECREF(tmp);
    return rc;
}

int
pygpu_tensor_assign(TensorObject *dst, TensorObject *src)
{
    PyObject *shape = NULL, *expanded = NULL;
    int rc = -1;
    if (pygpu_ag_refuse("copy_ (or t[k] = v) from a tensor that requires "
                        "grad", 1, &src) < 0 ||
        pygpu_check_write(dst, src, NULL) < 0) {
        return -1;
    }
    if (dst->dtype == src->dtype &&
        pygpu_get_overlap(dst, src) == PYGPU_ALIAS_FULL) {
        return 0; /* x.copy_(x) */
    }
    if (src->ndim == dst->ndim &&
        memcmp(src->shape, dst->shape,
               (size_t)dst->ndim * sizeof(dst->shape[0])) == 0) {
        return pygpu_tensor_copy_into(dst, src); /* nothing to expand */
    }
    shape = pygpu_size_new(dst->ndim, dst->shape);
    if (shape == NULL) {
        goto fail;
    }
    expanded = pygpu_t_expand((PyObject *)src, &shape, 1);
    if (expanded == NULL) {
        goto fail;
    }
    rc = pygpu_tensor_copy_into(dst, (TensorObject *)expanded);
fail:
    Py_XDECREF(shape);
    Py_XDECREF(expanded);
    return rc;
}

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
    return (PyObject *)tensor_to(self, dev, dtype, non_blocking);
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
    return (PyObject *)pygpu_tensor_contiguous((TensorObject *)op);
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
