/* ops_checksum.c - _crc32: the CRC-32 of a bytes-like object, the one
 * checkpoints write per record (cpu/cpu_crc32.c), with zlib.crc32's
 * arguments and result; _crc32_fast: whether it uses the carry-less
 * multiply (else pygpu's writer keeps to zlib's table-driven loop). */
#include "ops/ops.h"
#include "cpu/cpu_crc32.h"

/* Below this many bytes the GIL is kept: releasing it costs more. */
#define NOGIL_BYTES ((Py_ssize_t)1 << 16)

static PyObject *
crc32(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    unsigned long start = 0;
    uint32_t crc;

    if (nargs < 1 || nargs > 2) {
        return PyErr_Format(PyExc_TypeError,
                            "_crc32 expected 1 or 2 arguments, got %zd",
                            nargs);
    }
    if (nargs == 2) {
        start = PyLong_AsUnsignedLongMask(args[1]);
        if (start == (unsigned long)-1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len >= NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = pygpu_cpu_crc32((uint32_t)start, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        crc = pygpu_cpu_crc32((uint32_t)start, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *
crc32_fast(PyObject *m, PyObject *noargs)
{
    return PyBool_FromLong(pygpu_cpu_crc32_fast());
}

PyMethodDef pygpu_checksum_functions[] = {
    {"_crc32", (PyCFunction)(void (*)(void))crc32, METH_FASTCALL,
     "_crc32($module, data, value=0, /)\n--\n\n"
     "The CRC-32 of the bytes-like data continuing value, as zlib.crc32."},
    {"_crc32_fast", crc32_fast, METH_NOARGS,
     "_crc32_fast($module, /)\n--\n\n"
     "True when _crc32 uses the CPU's carry-less multiply (PCLMULQDQ)."},
    {NULL},
};
