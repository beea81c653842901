/* allocator_module.c - the process-wide allocators (one per CUDA device,
 * one for pinned host memory), created on first use and kept for the life
 * of the process as PyTorch keeps its own, and the module functions
 * _cuda_allocator, _pinned_allocator and _bench_allocator.
 */
#include "memory/memory.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory/allocator_py.h"

#ifdef PYGPU_WITH_CUDA
#include "memory/cuda_backend.h"

/* The slots are written once, under registry_lock.  An allocator is built
 * outside the lock (building runs Python code, which may run finalizers
 * that allocate) and the loser of a race for a slot is dropped. */
static AllocatorObject *device_allocators[PYGPU_MAX_DEVICES];
static AllocatorObject *pinned_allocator;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* Called after pygpu_cuda_require succeeded. */
static AllocatorObject *make_allocator(int device, int pinned)
{
    const char *env = getenv("PYGPU_NO_CUDA_CACHING");
    int caching = !(env != NULL && strcmp(env, "1") == 0);
    int count = pygpu_cuda_device_count();
    pygpu_alloc_backend backend;
    pygpu_device dev;

    if (pinned) {
        dev.type = PYGPU_CPU;
        dev.index = -1;
    } else {
        if (device < 0 || device >= count ||
            device >= PYGPU_MAX_DEVICES) {
            PyErr_Format(PyExc_RuntimeError,
                         "CUDA error: invalid device ordinal %d (%d CUDA "
                         "device%s available)",
                         device, count, count == 1 ? "" : "s");
            return NULL;
        }
        dev.type = PYGPU_CUDA;
        dev.index = device;
    }
    pygpu_cuda_backend_init(&backend, device, pinned);
    return pygpu_allocator_object_new(&backend, 0, dev, dev.index, caching);
}

static AllocatorObject *registry_get(AllocatorObject **slot, int device,
                                     int pinned)
{
    AllocatorObject *a, *made;

    /* Every use of a CUDA or pinned allocator starts here: CUDA's lazy
     * initialisation, and the refusal in a forked child. */
    if (pygpu_cuda_require() < 0) {
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    a = *slot;
    pthread_mutex_unlock(&registry_lock);
    if (a != NULL) {
        return a;
    }
    made = make_allocator(device, pinned);
    if (made == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    if (*slot == NULL) {
        *slot = made; /* the registry keeps this reference */
        made = NULL;
    }
    a = *slot;
    pthread_mutex_unlock(&registry_lock);
    Py_XDECREF(made);
    return a;
}

AllocatorObject *pygpu_cuda_allocator(int device)
{
    if (device < 0 || device >= PYGPU_MAX_DEVICES) {
        if (pygpu_cuda_require() < 0) {
            return NULL;
        }
        return make_allocator(device, 0); /* raises the ordinal error */
    }
    return registry_get(&device_allocators[device], device, 0);
}

size_t pygpu_cuda_allocator_release(int device)
{
    AllocatorObject *a = NULL;

    if (device < 0 || device >= PYGPU_MAX_DEVICES) {
        return 0;
    }
    pthread_mutex_lock(&registry_lock);
    a = device_allocators[device]; /* kept for the life of the process */
    pthread_mutex_unlock(&registry_lock);
    return a != NULL ? pygpu_allocator_empty_cache(a->alloc) : 0;
}

AllocatorObject *pygpu_pinned_allocator(void)
{
    return registry_get(&pinned_allocator, -1, 1);
}

#else /* !PYGPU_WITH_CUDA */

AllocatorObject *pygpu_cuda_allocator(int device)
{
    (void)device;
    pygpu_raise_no_cuda();
    return NULL;
}

AllocatorObject *pygpu_pinned_allocator(void)
{
    pygpu_raise_no_cuda();
    return NULL;
}

#endif /* PYGPU_WITH_CUDA */

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
