/* allocator_module.c - the module functions _cuda_allocator,
 * _pinned_allocator and _bench_allocator over the process-wide allocators
 * (cuda_allocators.c in a CUDA build).
 */
#include "memory/memory.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory/allocator_py.h"

/* ------------------------------------------------------ module functions */
static PyObject *new_ref(AllocatorObject *a)
{
    Py_XINCREF(a);
    return (PyObject *)a;
}

static PyObject *mod_cuda_allocator(PyObject *module, PyObject *arg)
{
    int overflow;
    long device;

    (void)module;
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "device must be an int, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    device = PyLong_AsLongAndOverflow(arg, &overflow);
    if (device == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow != 0 || device < -1 || device > INT_MAX) {
        device = -1; /* an invalid ordinal, reported as such */
    }
    return new_ref(pygpu_cuda_allocator((int)device));
}

static PyObject *mod_pinned_allocator(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return new_ref(pygpu_pinned_allocator());
}

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static PyObject *mod_bench_allocator(PyObject *module, PyObject *args)
{
    AllocatorObject *a;
    PyObject *n_obj;
    Py_ssize_t iters, i;
    pygpu_block *b;
    size_t nbytes;
    double t0, t1;

    (void)module;
    if (!PyArg_ParseTuple(args, "O!On:_bench_allocator",
                          pygpu_state->Allocator_Type, &a, &n_obj, &iters)) {
        return NULL;
    }
    if (pygpu_to_size(n_obj, "nbytes", &nbytes) < 0) {
        return NULL;
    }
    if (iters < 1) {
        PyErr_Format(PyExc_ValueError, "iters must be positive, got %zd",
                     iters);
        return NULL;
    }
    /* Warm-up: the first pair may create the segment the others reuse. */
    if (pygpu_allocator_malloc(a->alloc, nbytes, NULL, &b) != PYGPU_ALLOC_OK) {
        PyErr_Format(pygpu_state->OutOfMemoryError,
                     "_bench_allocator: cannot allocate %zu bytes", nbytes);
        return NULL;
    }
    pygpu_allocator_free(a->alloc, b);
    t0 = now_ns();
    for (i = 0; i < iters; i++) {
        if (pygpu_allocator_malloc(a->alloc, nbytes, NULL, &b) !=
            PYGPU_ALLOC_OK) {
            PyErr_Format(pygpu_state->OutOfMemoryError,
                         "_bench_allocator: cannot allocate %zu bytes",
                         nbytes);
            return NULL;
        }
        pygpu_allocator_free(a->alloc, b);
    }
    t1 = now_ns();
    return PyFloat_FromDouble((t1 - t0) / (double)iters);
}

PyMethodDef pygpu_allocator_functions[] = {
    {"_cuda_allocator", (PyCFunction)mod_cuda_allocator, METH_O,
     "_cuda_allocator($module, device, /)\n--\n\n"
     "The caching allocator of CUDA device `device` (an int), created on\n"
     "first use.  PYGPU_NO_CUDA_CACHING=1 at creation turns caching off."},
    {"_pinned_allocator", (PyCFunction)mod_pinned_allocator, METH_NOARGS,
     "_pinned_allocator($module, /)\n--\n\n"
     "The caching allocator of page-locked host memory."},
    {"_bench_allocator", (PyCFunction)mod_bench_allocator, METH_VARARGS,
     "_bench_allocator($module, allocator, nbytes, iters, /)\n--\n\n"
     "Nanoseconds per malloc+free pair of nbytes on the allocator's core,\n"
     "timed in C over iters pairs after one warm-up pair."},
    {NULL, NULL, 0, NULL}};
