/* errors.c - the extension's own errors: CudaError with the failing
 * status as `code` and its name as `name` (as CuPy's errors carry them),
 * what a CPU-only build says to a request for CUDA, and a MemoryError that
 * says what could not be allocated. */
#include "core/pygpu.h"

#include <stdarg.h>

int
pygpu_raise_no_cuda(void)
{
    PyErr_SetString(PyExc_RuntimeError, PYGPU_NO_CUDA_MESSAGE);
    return -1;
}

PyObject *
pygpu_raise_no_memory(const char *what, size_t nbytes)
{
    if (nbytes == 0) {
        return PyErr_Format(PyExc_MemoryError,
                            "can't allocate memory for %s", what);
    }
    return PyErr_Format(PyExc_MemoryError,
                        "can't allocate memory: you tried to allocate %zu "
                        "bytes for %s", nbytes, what);
}

int
pygpu_raise_cuda_error(long code, const char *name, const char *format, ...)
{
    PyObject *msg = NULL, *exc = NULL, *c = NULL, *n = NULL;
    va_list va;
    va_start(va, format);
    msg = PyUnicode_FromFormatV(format, va);
    va_end(va);
    if (msg == NULL) {
        goto fail;
    }
    exc = PyObject_CallOneArg(pygpu_state->CudaError, msg);
    c = PyLong_FromLong(code);
    n = name != NULL ? PyUnicode_FromString(name) : Py_NewRef(Py_None);
    if (exc == NULL || c == NULL || n == NULL ||
        PyObject_SetAttrString(exc, "code", c) < 0 ||
        PyObject_SetAttrString(exc, "name", n) < 0) {
        goto fail;
    }
    PyErr_SetObject(pygpu_state->CudaError, exc);
fail:
    Py_XDECREF(msg);
    Py_XDECREF(exc);
    Py_XDECREF(c);
    Py_XDECREF(n);
    return -1;
}
