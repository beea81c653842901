/* allocator_module.c - the module functions _cuda_allocator,
 * _pinned_allocator and _bench_allocator over the process-wide allocators
 * (the table cuda/'s init installs, memory.h), the test aids of the deferred
 * frees (_storage_record_stream, _complete_host_events), and the private
 * pools of any allocator (_allocator_begin_pool and the rest: what a CUDA
 * graph's capture does, for tests over host-memory allocators).
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

/* Test aids for the deferred frees, over host-memory allocators. */
static PyObject *mod_storage_record_stream(PyObject *module, PyObject *args)
{
    StorageObject *st;
    PyObject *s_obj;
    void *stream;
    int device;

    (void)module;
    if (!PyArg_ParseTuple(args, "O!Oi:_storage_record_stream",
                          pygpu_state->Storage_Type, &st, &s_obj, &device)) {
        return NULL;
    }
    if (pygpu_to_stream(s_obj, &stream) < 0 ||
        pygpu_storage_record_stream(st, stream, device) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *mod_complete_host_events(PyObject *module, PyObject *arg)
{
    AllocatorObject *a = (AllocatorObject *)arg;
    long live;

    (void)module;
    if (!PyObject_TypeCheck(arg, pygpu_state->Allocator_Type) ||
        a->backend.ctx != &a->host_ctx) {
        PyErr_SetString(PyExc_TypeError,
                        "_complete_host_events needs a host-memory "
                        "Allocator");
        return NULL;
    }
    live = pygpu_host_backend_complete_events(&a->host_ctx);
    return Py_BuildValue("(li)", live,
                         __atomic_load_n(&a->host_ctx.last_event_device,
                                         __ATOMIC_RELAXED));
}

/* ------------------------------------------------------ private pools */
static int pool_args(PyObject *args, const char *format, AllocatorObject **a,
                     unsigned long long *x, unsigned long long *y)
{
    return PyArg_ParseTuple(args, format, pygpu_state->Allocator_Type, a, x,
                            y)
               ? 0
               : -1;
}

static PyObject *mod_begin_pool(PyObject *module, PyObject *args)
{
    AllocatorObject *a;
    unsigned long long pool, route;
    int rc;

    (void)module;
    if (pool_args(args, "O!KK:_allocator_begin_pool", &a, &pool, &route) <
        0) {
        return NULL;
    }
    rc = pygpu_allocator_begin_pool(a->alloc, pool, route);
    if (rc == PYGPU_ALLOC_OOM) {
        return pygpu_raise_no_memory("a private memory pool's entry", 0);
    }
    if (rc != PYGPU_ALLOC_OK) {
        PyErr_Format(PyExc_ValueError,
                     "cannot open route %llu to pool %llu: ids must be "
                     "nonzero and the route not open already", route, pool);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *mod_end_pool(PyObject *module, PyObject *args)
{
    AllocatorObject *a;
    unsigned long long route;

    (void)module;
    if (pool_args(args, "O!K:_allocator_end_pool", &a, &route, NULL) < 0) {
        return NULL;
    }
    pygpu_allocator_end_pool(a->alloc, route);
    Py_RETURN_NONE;
}

static PyObject *mod_release_pool(PyObject *module, PyObject *args)
{
    AllocatorObject *a;
    unsigned long long pool;

    (void)module;
    if (pool_args(args, "O!K:_allocator_release_pool", &a, &pool, NULL) <
        0) {
        return NULL;
    }
    if (pygpu_allocator_release_pool(a->alloc, pool) < 0) {
        PyErr_Format(PyExc_ValueError, "pool %llu has no holder to release",
                     pool);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *mod_pool_stats(PyObject *module, PyObject *args)
{
    AllocatorObject *a;
    unsigned long long pool;
    pygpu_pool_info info;

    (void)module;
    if (pool_args(args, "O!K:_allocator_pool_stats", &a, &pool, NULL) < 0) {
        return NULL;
    }
    if (!pygpu_allocator_pool_info(a->alloc, pool, &info)) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("{s:i,s:i,s:n,s:n,s:n}", "holders", info.holders,
                         "routes", info.routes, "segments",
                         (Py_ssize_t)info.segments, "reserved_bytes",
                         (Py_ssize_t)info.reserved_bytes, "allocated_bytes",
                         (Py_ssize_t)info.allocated_bytes);
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
    {"_storage_record_stream", (PyCFunction)mod_storage_record_stream,
     METH_VARARGS,
     "_storage_record_stream($module, storage, stream, device, /)\n--\n\n"
     "Test aid: record_stream on a Storage (stream an int handle of CUDA\n"
     "device `device`): its block is freed only after an event recorded\n"
     "on that stream when it dies is done."},
    {"_complete_host_events", (PyCFunction)mod_complete_host_events,
     METH_O,
     "_complete_host_events($module, allocator, /)\n--\n\n"
     "Test aid: mark done every event a host-memory Allocator recorded\n"
     "for its deferred frees; returns (events not yet released, device\n"
     "of the last event recorded, -1 if none)."},
    {"_allocator_begin_pool", (PyCFunction)mod_begin_pool, METH_VARARGS,
     "_allocator_begin_pool($module, allocator, pool, route, /)\n--\n\n"
     "Open route `route` to private pool `pool` of `allocator` (ints > 0):\n"
     "allocations tagged with the route come from the pool, which gains a\n"
     "holder (what a CUDA graph's capture_begin does)."},
    {"_allocator_end_pool", (PyCFunction)mod_end_pool, METH_VARARGS,
     "_allocator_end_pool($module, allocator, route, /)\n--\n\n"
     "Close route `route` (capture_end); its pool keeps its holder."},
    {"_allocator_release_pool", (PyCFunction)mod_release_pool, METH_VARARGS,
     "_allocator_release_pool($module, allocator, pool, /)\n--\n\n"
     "One holder of private pool `pool` lets go (a graph's reset); once\n"
     "none is left, empty_cache gives its free segments back."},
    {"_allocator_pool_stats", (PyCFunction)mod_pool_stats, METH_VARARGS,
     "_allocator_pool_stats($module, allocator, pool, /)\n--\n\n"
     "A dict of holders, routes, segments, reserved_bytes and\n"
     "allocated_bytes of private pool `pool`, or None when it does not\n"
     "exist (any more)."},
    {NULL, NULL, 0, NULL}};
