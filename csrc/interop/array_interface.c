/* array_interface.c - the CUDA Array Interface (version 3): the
 * Tensor.__cuda_array_interface__ attribute of CUDA tensors, and CUDA
 * tensors over another library's arrays without copying
 * (_from_cuda_array_interface, behind pygpu.as_tensor).
 *
 * "stream" is the stream the data is being produced on, for the consumer
 * to synchronise with: pygpu's current stream, 1 for the legacy default
 * stream (None would tell the consumer that no synchronisation is needed,
 * which is only true once the producer's work is done). */
#include "interop/dlpack.h"
#include "ops/ops.h"
#include "cuda/cuda_stream.h"

#include <string.h>

static const char *const typestrs[PYGPU_NDTYPES] = {
    [PYGPU_FLOAT32] = "<f4", [PYGPU_FLOAT16] = "<f2",
    [PYGPU_FLOAT64] = "<f8", [PYGPU_INT64] = "<i8",
    [PYGPU_BOOL] = "|b1",    [PYGPU_UINT8] = "|u1",
    [PYGPU_INT32] = "<i4",   [PYGPU_BFLOAT16] = NULL,
};

PyObject *
pygpu_t_cuda_array_interface(PyObject *op, void *closure)
{
    TensorObject *t = (TensorObject *)op;
    PyObject *shape = NULL, *strides = NULL, *r = NULL;
    const char *typestr;
    size_t itemsize = (size_t)pygpu_dtype_table[t->dtype].itemsize;
    void *stream;
    int64_t numel = pygpu_numel(t->ndim, t->shape);
    (void)closure;
    if (t->device.type != PYGPU_CUDA) {
        /* AttributeError, so that hasattr() is False */
        PyErr_SetString(PyExc_AttributeError,
                        "Can't get __cuda_array_interface__ on non-CUDA "
                        "tensor type: tensor on the CPU. If CUDA data is "
                        "required use tensor.cuda() to copy tensor to device "
                        "memory.");
        return NULL;
    }
    if (pygpu_requires_grad(t)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Can't get __cuda_array_interface__ on Variable that "
                        "requires grad. If gradients aren't needed, use "
                        "var.detach() to get Variable that doesn't require "
                        "grad.");
        return NULL;
    }
    typestr = typestrs[t->dtype];
    if (typestr == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "__cuda_array_interface__ has no type string for "
                        "bfloat16");
        return NULL;
    }
    shape = PyTuple_New(t->ndim);
    if (shape == NULL) {
        goto fail;
    }
    for (int d = 0; d < t->ndim; d++) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(t->shape[d]));
    }
    if (pygpu_is_contiguous(t)) {
        strides = Py_NewRef(Py_None);
    }
    else {
        strides = PyTuple_New(t->ndim);
        for (int d = 0; strides != NULL && d < t->ndim; d++) {
            PyTuple_SET_ITEM(strides, d,
                             PyLong_FromLongLong(t->strides[d] *
                                                 (int64_t)itemsize));
        }
        if (strides == NULL) {
            goto fail;
        }
    }
    stream = pygpu_cuda_current_stream(t->device.index);
    r = Py_BuildValue(
        "{s:O,s:s,s:[(s,s)],s:(NO),s:i,s:O,s:N}", "shape", shape, "typestr",
        typestr, "descr", "", typestr, "data",
        PyLong_FromVoidPtr(numel > 0 ? (void *)t->data : NULL),
        t->readonly ? Py_True : Py_False, "version", 3, "strides", strides,
        "stream",
        stream == NULL ? PyLong_FromLong(1) : PyLong_FromVoidPtr(stream));
fail:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return r;
}

/* ------------------------------------------------------------- import */
static int
dtype_of_typestr(PyObject *obj)
{
    const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (s != NULL && strlen(s) == 3 && (s[0] == '<' || s[0] == '|' ||
                                        s[0] == '=')) {
        for (int i = 0; i < PYGPU_NDTYPES; i++) {
            if (typestrs[i] != NULL && strcmp(typestrs[i] + 1, s + 1) == 0) {
                return i;
            }
        }
    }
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError,
                     "__cuda_array_interface__: unsupported typestr %R",
                     obj);
    }
    return -1;
}

/* A tuple of ints into out[0..n); n set.  -1 with an exception. */
static int
int_tuple(PyObject *obj, const char *what, int64_t *out, int *n)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_TypeError,
                     "__cuda_array_interface__: %s must be a tuple of at "
                     "most %d ints", what, PYGPU_MAX_DIMS);
        return -1;
    }
    *n = (int)PyTuple_GET_SIZE(obj);
    for (int i = 0; i < *n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* The producer's "stream" entry: our current stream waits for it. */
static int
order_after(PyObject *entry, int device)
{
    long long v;
    if (entry == NULL || entry == Py_None) {
        return 0;
    }
    v = PyLong_AsLongLong(entry);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "__cuda_array_interface__: stream 0 is disallowed "
                        "(use None, 1 or 2)");
        return -1;
    }
    return pygpu_cuda_stream_order(device,
                                   v == 1 ? NULL : (void *)(uintptr_t)v,
                                   pygpu_cuda_current_stream(device));
}

/* The interface's entries, each held (a borrowed one could be freed by
 * an __index__ or __bool__ that changes the dict while it is read). */
enum { E_TYPESTR, E_DATA, E_SHAPE, E_MASK, E_STRIDES, E_STREAM, E_COUNT };
static const char *const entry_names[E_COUNT] = {
    "typestr", "data", "shape", "mask", "strides", "stream"};

PyObject *
pygpu_from_cuda_array_interface(PyObject *m, PyObject *obj)
{
    PyObject *cai = NULL, *e[E_COUNT] = {NULL}, *r = NULL;
    StorageObject *st = NULL;
    TensorObject *t;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS], numel;
    int ndim, nstrides, dtype, readonly, itemsize;
    size_t span;
    pygpu_device dev = {PYGPU_CUDA, -1};
    void *ptr;
    (void)m;
    cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (cai == NULL) {
        return NULL;
    }
    if (!PyDict_Check(cai)) {
        PyErr_SetString(PyExc_TypeError,
                        "__cuda_array_interface__ must be a dict");
        goto fail;
    }
    for (int i = 0; i < E_COUNT; i++) {
        e[i] = Py_XNewRef(PyDict_GetItemString(cai, entry_names[i]));
    }
    if (e[E_TYPESTR] == NULL || e[E_DATA] == NULL ||
        !PyTuple_Check(e[E_DATA]) || PyTuple_GET_SIZE(e[E_DATA]) != 2 ||
        e[E_SHAPE] == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "__cuda_array_interface__ needs shape, typestr and "
                        "data=(ptr, readonly)");
        goto fail;
    }
    if ((dtype = dtype_of_typestr(e[E_TYPESTR])) < 0 ||
        int_tuple(e[E_SHAPE], "shape", shape, &ndim) < 0 ||
        pygpu_shape_numel(ndim, shape, &numel) < 0) {
        goto fail;
    }
    if (e[E_MASK] != NULL && e[E_MASK] != Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "__cuda_array_interface__ with a mask is not "
                        "supported");
        goto fail;
    }
    itemsize = pygpu_dtype_table[dtype].itemsize;
    if (e[E_STRIDES] == NULL || e[E_STRIDES] == Py_None) {
        pygpu_contiguous_strides(ndim, shape, strides);
    }
    else {
        if (int_tuple(e[E_STRIDES], "strides", strides, &nstrides) < 0) {
            goto fail;
        }
        for (int d = 0; d < ndim; d++) {
            if (nstrides != ndim || strides[d] < 0 ||
                strides[d] % itemsize != 0) {
                PyErr_SetString(PyExc_ValueError,
                                "__cuda_array_interface__: strides must be "
                                "one non-negative multiple of the element "
                                "size per dim");
                goto fail;
            }
            strides[d] /= itemsize;
        }
    }
    if (pygpu_strided_nbytes(ndim, shape, strides, dtype, &span) < 0) {
        goto fail;
    }
    ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(e[E_DATA], 0));
    readonly = PyObject_IsTrue(PyTuple_GET_ITEM(e[E_DATA], 1));
    if ((ptr == NULL && PyErr_Occurred()) || readonly < 0) {
        goto fail;
    }
    /* The memory is CUDA's: without a driver (or in a CPU-only build) the
     * error every CUDA path gives, not the pointer query's. */
    if (pygpu_cuda_require() < 0) {
        goto fail;
    }
    if (ptr != NULL ? pygpu_cuda_pointer_device(ptr, &dev.index) < 0
                    : pygpu_device_resolve(&dev) < 0) {
        goto fail;
    }
    if (order_after(e[E_STREAM], dev.index) < 0) {
        goto fail;
    }
    st = pygpu_storage_foreign(dev, ptr, span, obj);
    if (st == NULL) {
        goto fail;
    }
    t = pygpu_tensor_on_storage(st, ndim, shape, dtype, dev);
    if (t == NULL) {
        goto fail;
    }
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    t->readonly = readonly;
    r = (PyObject *)t;
fail:
    Py_XDECREF(st);
    for (int i = 0; i < E_COUNT; i++) {
        Py_XDECREF(e[i]);
    }
    Py_XDECREF(cai);
    return r;
}

int
pygpu_has_cuda_array_interface(PyObject *obj)
{
    if (Tensor_Check(obj) || PyList_Check(obj) || PyTuple_Check(obj) ||
        PyArray_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj)) {
        return 0;
    }
    return PyObject_HasAttrString(obj, "__cuda_array_interface__");
}

PyObject *
pygpu_tensor_copy_cuda_array(PyObject *obj, int dtype, PyObject *device)
{
    TensorObject *t = (TensorObject *)pygpu_from_cuda_array_interface(NULL,
                                                                      obj);
    PyObject *r = NULL;
    pygpu_device dev;
    if (t == NULL) {
        return NULL;
    }
    if (pygpu_parse_device_opt(device, &t->device, &dev) == 0 &&
        pygpu_device_resolve(&dev) == 0) {
        r = (PyObject *)pygpu_tensor_to(t, dev, dtype < 0 ? t->dtype : dtype);
    }
    Py_DECREF(t);
    return r;
}
