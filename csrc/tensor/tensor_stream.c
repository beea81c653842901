/* tensor_stream.c - Tensor.record_stream: a CUDA tensor's memory marked
 * as used by another stream, so that the caching allocator holds its
 * block back until that stream's work is done (memory/storage_py.c). */
#include "interop/dlpack.h"

/* record_stream(stream): the memory stays out of reuse until the work
 * queued on stream before this tensor's memory is freed is done. */
PyObject *
pygpu_t_record_stream(PyObject *op, PyObject *stream)
{
    PyObject *handle, *index;
    TensorObject *self = (TensorObject *)op;
    long dev;
    void *s;
    if (self->device.type != PYGPU_CUDA) {
        PyErr_SetString(PyExc_RuntimeError,
                        "record_stream: expected a CUDA tensor");
        return NULL;
    }
    handle = PyObject_GetAttrString(stream, "cuda_stream");
    index = handle == NULL ? NULL
                           : PyObject_GetAttrString(stream, "device_index");
    if (index == NULL) {
        Py_XDECREF(handle);
        PyErr_Format(PyExc_TypeError,
                     "record_stream(): expected a pygpu.cuda.Stream, got "
                     "%.100s", Py_TYPE(stream)->tp_name);
        return NULL;
    }
    s = PyLong_AsVoidPtr(handle);
    dev = PyLong_AsLong(index);
    Py_DECREF(handle);
    Py_DECREF(index);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (dev != self->device.index) {
        PyErr_Format(PyExc_RuntimeError,
                     "record_stream: the stream is on cuda:%ld, the tensor "
                     "on cuda:%d", dev, self->device.index);
        return NULL;
    }
    if (pygpu_storage_record_stream((StorageObject *)self->base, s,
                                    self->device.index) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
