/* allocator_py.c - the Allocator type (a Python handle on one caching
 * allocator core; the device runtime builds the process-wide allocators
 * of the CUDA devices and of pinned host memory with it), and the
 * registration of the memory floor's types and functions.
 *
 * Allocator(capacity) builds one over host memory with that capacity, so
 * the tests exercise every figure without a GPU; it reports device index 0
 * ("GPU 0" in messages) while its storages say they are on the cpu.
 */
#include "memory/memory.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory/allocator_py.h"

/* ------------------------------------------------------------- arguments */
int pygpu_to_size(PyObject *obj, const char *what, size_t *out)
{
    PyObject *v = NULL;
    long long x;
    int overflow, rc = -1;

    if (!PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        goto fail;
    }
    v = PyNumber_Index(obj);
    if (v == NULL) {
        goto fail;
    }
    x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) {
        goto fail;
    }
    if (overflow < 0 || (overflow == 0 && x < 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be non-negative, got %S",
                     what, v);
        goto fail;
    }
    *out = PyLong_AsSize_t(v); /* OverflowError beyond SIZE_MAX */
    if (*out == (size_t)-1 && PyErr_Occurred()) {
        goto fail;
    }
    rc = 0;
fail:
    Py_XDECREF(v);
    return rc;
}

/* ------------------------------------------------------------ lifecycle */
AllocatorObject *pygpu_allocator_object_new(const pygpu_alloc_backend *backend,
                                            size_t capacity, pygpu_device dev,
                                            int core_device, int caching)
{
    PyTypeObject *tp = pygpu_state->Allocator_Type;
    AllocatorObject *self = (AllocatorObject *)tp->tp_alloc(tp, 0);
    pygpu_alloc_backend core;

    if (self == NULL) {
        return NULL;
    }
    if (backend != NULL) {
        self->backend = *backend;
    } else {
        pygpu_host_backend_init(&self->backend, &self->host_ctx, capacity);
    }
    self->device = dev;
    self->caching = caching != 0;
    pygpu_backend_without_gil(&core, &self->backend); /* outlives core */
    self->alloc = pygpu_allocator_new(&core, core_device, self->caching);
    if (self->alloc == NULL) {
        Py_DECREF(self);
        pygpu_raise_no_memory("an allocator's state", 0);
        return NULL;
    }
    return self;
}

static PyObject *Allocator_new(PyTypeObject *type, PyObject *args,
                               PyObject *kwds)
{
    static char *kwlist[] = {"capacity", "caching", NULL};
    pygpu_device dev = {PYGPU_CPU, 0};
    PyObject *cap_obj;
    size_t capacity;
    int caching = 1;

    (void)type; /* not subclassable: always pygpu_state->Allocator_Type */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p:Allocator", kwlist,
                                     &cap_obj, &caching)) {
        return NULL;
    }
    if (pygpu_to_size(cap_obj, "capacity", &capacity) < 0) {
        return NULL;
    }
    return (PyObject *)pygpu_allocator_object_new(NULL, capacity, dev, 0,
                                                  caching);
}

/* Storages hold a reference to their allocator, so none is alive here. */
static void Allocator_dealloc(AllocatorObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);

    pygpu_allocator_destroy(self->alloc);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *Allocator_repr(AllocatorObject *self)
{
    return PyUnicode_FromFormat(
        "<pygpu._C.Allocator backend='%s' device=%d caching=%s>",
        self->backend.name, self->device.index,
        self->caching ? "True" : "False");
}

/* -------------------------------------------------------------- methods */
static PyObject *Allocator_malloc(AllocatorObject *self, PyObject *args,
                                  PyObject *kwds)
{
    static char *kwlist[] = {"", "stream", "route", NULL};
    PyObject *n_obj, *s_obj = NULL;
    unsigned long long route = 0;
    void *stream = NULL;
    size_t nbytes;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OK:malloc", kwlist,
                                     &n_obj, &s_obj, &route)) {
        return NULL;
    }
    if (pygpu_to_size(n_obj, "nbytes", &nbytes) < 0) {
        return NULL;
    }
    /* A CUDA or pinned allocator (not a host one): refused in a child
     * forked after CUDA was initialised. */
    if ((self->device.type == PYGPU_CUDA || self->device.index < 0) &&
        pygpu_cuda_require() < 0) {
        return NULL;
    }
    if (s_obj != NULL && pygpu_to_stream(s_obj, &stream) < 0) {
        return NULL;
    }
    return (PyObject *)pygpu_storage_alloc(self, nbytes, stream,
                                           (uint64_t)route);
}

int pygpu_to_stream(PyObject *obj, void **out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "stream must be an int (a stream handle), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyLong_AsVoidPtr(obj);
    return *out == NULL && PyErr_Occurred() ? -1 : 0;
}

static const struct {
    const char *name;
    size_t offset;
} stat_fields[] = {
    {"allocated_bytes", offsetof(pygpu_alloc_stats, allocated_bytes)},
    {"reserved_bytes", offsetof(pygpu_alloc_stats, reserved_bytes)},
    {"active_bytes", offsetof(pygpu_alloc_stats, active_bytes)},
    {"requested_bytes", offsetof(pygpu_alloc_stats, requested_bytes)},
    {"segment", offsetof(pygpu_alloc_stats, segment)},
    {"allocation", offsetof(pygpu_alloc_stats, allocation)},
    {"active", offsetof(pygpu_alloc_stats, active)},
    {"inactive_split", offsetof(pygpu_alloc_stats, inactive_split)},
    {"inactive_split_bytes",
     offsetof(pygpu_alloc_stats, inactive_split_bytes)}};

static int put(PyObject *d, const char *key, int64_t value)
{
    PyObject *v = PyLong_FromLongLong(value);
    int rc;

    if (v == NULL) {
        return -1;
    }
    rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *Allocator_stats(AllocatorObject *self, PyObject *unused)
{
    static const char *const flavours[] = {"current", "peak", "allocated",
                                           "freed"};
    PyObject *d = PyDict_New();
    pygpu_alloc_stats st;
    const pygpu_stat *s;
    int64_t values[4];
    char key[64];
    size_t i, j;

    (void)unused;
    if (d == NULL) {
        return NULL;
    }
    pygpu_allocator_get_stats(self->alloc, &st);
    for (i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++) {
        s = (const pygpu_stat *)((const char *)&st + stat_fields[i].offset);
        values[0] = s->current;
        values[1] = s->peak;
        values[2] = s->allocated;
        values[3] = s->freed;
        for (j = 0; j < 4; j++) {
            snprintf(key, sizeof(key), "%s.all.%s", stat_fields[i].name,
                     flavours[j]);
            if (put(d, key, values[j]) < 0) {
                goto fail;
            }
        }
    }
    if (put(d, "num_alloc_retries",
            st.num_alloc_retries - self->uncounted_retries) < 0 ||
        put(d, "num_ooms", st.num_ooms - self->uncounted_ooms) < 0 ||
        put(d, "num_device_alloc", st.num_raw_allocs) < 0 ||
        put(d, "num_device_free", st.num_raw_frees) < 0 ||
        put(d, "num_sync_all_streams", 0) < 0 ||
        put(d, "max_split_size", -1) < 0) {
        goto fail;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *Allocator_empty_cache(AllocatorObject *self, PyObject *unused)
{
    (void)unused;
    pygpu_storage_free_deferred(1); /* as torch, waits for recorded streams */
    /* cudaFree may wait for the device; the core never calls Python, so
     * other threads may run (and even allocate: they wait on its lock). */
    Py_BEGIN_ALLOW_THREADS
    pygpu_allocator_empty_cache(self->alloc);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Allocator_reset_peak(AllocatorObject *self, PyObject *unused)
{
    (void)unused;
    pygpu_allocator_reset_peak(self->alloc);
    Py_RETURN_NONE;
}

static PyObject *Allocator_reset_accumulated(AllocatorObject *self,
                                             PyObject *unused)
{
    (void)unused;
    pygpu_allocator_reset_accumulated(self->alloc);
    self->uncounted_ooms = 0;
    self->uncounted_retries = 0;
    Py_RETURN_NONE;
}

static PyObject *Allocator_set_limit(AllocatorObject *self, PyObject *arg)
{
    size_t limit;

    if (pygpu_to_size(arg, "limit", &limit) < 0) {
        return NULL;
    }
    pygpu_allocator_set_limit(self->alloc, limit);
    Py_RETURN_NONE;
}

static PyObject *Allocator_get_limit(AllocatorObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(pygpu_allocator_get_limit(self->alloc));
}

static int mem_info(AllocatorObject *self, size_t *free_b, size_t *total_b)
{
    const pygpu_alloc_backend *be = &self->backend;

    if (be->mem_info(be->ctx, pygpu_allocator_device(self->alloc), free_b,
                     total_b) != 0) {
        PyErr_Format(pygpu_state->CudaError,
                     "could not query the memory of device %d (backend "
                     "'%s')", self->device.index, be->name);
        return -1;
    }
    return 0;
}

static PyObject *Allocator_set_memory_fraction(AllocatorObject *self,
                                               PyObject *arg)
{
    size_t free_b, total_b, limit;
    double f;

    if (!PyFloat_Check(arg) && !PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "fraction must be a float, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    f = PyFloat_AsDouble(arg);
    if (f == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(f >= 0.0 && f <= 1.0)) {
        PyErr_Format(PyExc_ValueError,
                     "Invalid fraction value: %R. Allowed range: 0~1", arg);
        return NULL;
    }
    if (mem_info(self, &free_b, &total_b) < 0) {
        return NULL;
    }
    /* A limit of 0 means "none" to the core; a cap of one byte admits no
     * segment, which is what a fraction of 0 asks for. */
    limit = (size_t)(f * (double)total_b);
    pygpu_allocator_set_limit(self->alloc, limit > 0 ? limit : 1);
    Py_RETURN_NONE;
}

static PyObject *Allocator_mem_get_info(AllocatorObject *self,
                                        PyObject *unused)
{
    size_t free_b, total_b;

    (void)unused;
    if (mem_info(self, &free_b, &total_b) < 0) {
        return NULL;
    }
    return Py_BuildValue("(nn)", (Py_ssize_t)free_b, (Py_ssize_t)total_b);
}

static int by_address(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const pygpu_segment_info *)x)->ptr;
    uintptr_t b = (uintptr_t)((const pygpu_segment_info *)y)->ptr;

    return a < b ? -1 : a > b;
}

static PyObject *Allocator_segments(AllocatorObject *self, PyObject *unused)
{
    pygpu_segment_info *info = NULL;
    PyObject *list = NULL, *item;
    size_t n, cap = 0, i;

    (void)unused;
    /* The count may grow between the two calls only if another thread
     * allocates without the GIL; loop until the snapshot fits. */
    while ((n = pygpu_allocator_segments(self->alloc, info, cap)) > cap) {
        PyMem_Free(info);
        cap = n + 8;
        info = PyMem_Malloc(cap * sizeof(*info));
        if (info == NULL) {
            pygpu_raise_no_memory("the allocator's segment list",
                                  cap * sizeof(*info));
            goto fail;
        }
    }
    if (n > 1) {  /* info is NULL when there are no segments */
        qsort(info, n, sizeof(*info), by_address);
    }
    list = PyList_New((Py_ssize_t)n);
    if (list == NULL) {
        goto fail;
    }
    for (i = 0; i < n; i++) {
        item = Py_BuildValue("{s:N,s:n,s:n,s:O,s:i,s:K}", "ptr",
                             PyLong_FromVoidPtr(info[i].ptr), "size",
                             (Py_ssize_t)info[i].size, "allocated",
                             (Py_ssize_t)info[i].allocated, "is_small",
                             info[i].is_small ? Py_True : Py_False,
                             "nblocks", info[i].nblocks, "pool",
                             (unsigned long long)info[i].pool_id);
        if (item == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    PyMem_Free(info);
    return list;
fail:
    PyMem_Free(info);
    Py_XDECREF(list);
    return NULL;
}

static PyObject *Allocator_inject_failure(AllocatorObject *self,
                                          PyObject *args)
{
    pygpu_host_backend_ctx *c = &self->host_ctx;
    long n, count = 1;
    if (!PyArg_ParseTuple(args, "l|l:inject_failure", &n, &count)) {
        return NULL;
    }
    if (self->backend.ctx != c) {
        PyErr_SetString(PyExc_RuntimeError,
                        "inject_failure needs a host-memory Allocator");
        return NULL;
    }
    __atomic_store_n(&c->fail_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->fail_first, n, __ATOMIC_RELAXED);
    __atomic_store_n(&c->fail_count, n > 0 && count > 0 ? count : 0,
                     __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}

static PyObject *Allocator_get_device(AllocatorObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->device.index);
}

#define KW_METHOD(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef Allocator_methods[] = {
    {"malloc", KW_METHOD(Allocator_malloc), METH_VARARGS | METH_KEYWORDS,
     "malloc($self, nbytes, /, stream=0, route=0)\n--\n\n"
     "A Storage of nbytes for use on stream (an int handle), from the\n"
     "private pool of route `route` when that route is open.  Raises\n"
     "OutOfMemoryError when the memory cannot be had even after emptying\n"
     "the cache and collecting garbage."},
    {"stats", (PyCFunction)Allocator_stats, METH_NOARGS,
     "stats($self, /)\n--\n\n"
     "The figures under PyTorch's memory_stats() names, as a dict."},
    {"empty_cache", (PyCFunction)Allocator_empty_cache, METH_NOARGS,
     "empty_cache($self, /)\n--\n\n"
     "Give every wholly unused segment back to the backend."},
    {"reset_peak_memory_stats", (PyCFunction)Allocator_reset_peak,
     METH_NOARGS,
     "reset_peak_memory_stats($self, /)\n--\n\n"
     "Set every peak figure to its current value."},
    {"reset_accumulated_memory_stats",
     (PyCFunction)Allocator_reset_accumulated, METH_NOARGS,
     "reset_accumulated_memory_stats($self, /)\n--\n\n"
     "Zero the allocated/freed totals, num_alloc_retries and num_ooms."},
    {"set_limit", (PyCFunction)Allocator_set_limit, METH_O,
     "set_limit($self, nbytes, /)\n--\n\n"
     "Cap the reserved bytes at nbytes (0: no cap)."},
    {"get_limit", (PyCFunction)Allocator_get_limit, METH_NOARGS,
     "get_limit($self, /)\n--\n\n"
     "The cap on reserved bytes (0: none)."},
    {"set_memory_fraction", (PyCFunction)Allocator_set_memory_fraction,
     METH_O,
     "set_memory_fraction($self, fraction, /)\n--\n\n"
     "Cap the reserved bytes at fraction (0 to 1) of the total memory."},
    {"mem_get_info", (PyCFunction)Allocator_mem_get_info, METH_NOARGS,
     "mem_get_info($self, /)\n--\n\n"
     "(free, total) bytes of the device, as the backend reports them."},
    {"segments", (PyCFunction)Allocator_segments, METH_NOARGS,
     "segments($self, /)\n--\n\n"
     "The segments held, by address: dicts of ptr, size, allocated,\n"
     "is_small, nblocks and pool (the private pool's id, 0 for none)."},
    {"inject_failure", (PyCFunction)Allocator_inject_failure, METH_VARARGS,
     "inject_failure($self, n, count=1, /)\n--\n\n"
     "Test aid: backend allocations n to n + count - 1 from now (1: the\n"
     "next) fail as if the device were out of memory; n = 0 turns it off."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Allocator_getset[] = {
    {"device", (getter)Allocator_get_device, NULL,
     "Index of the device (-1 for pinned host memory).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot Allocator_slots[] = {
    {Py_tp_new, (void *)Allocator_new},
    {Py_tp_dealloc, (void *)Allocator_dealloc},
    {Py_tp_repr, (void *)Allocator_repr},
    {Py_tp_methods, Allocator_methods},
    {Py_tp_getset, Allocator_getset},
    {Py_tp_doc,
     (void *)"Allocator(capacity, caching=True)\n--\n\n"
             "A caching allocator over host memory holding at most capacity\n"
             "bytes: the CUDA allocator's logic and figures without a GPU."},
    {0, NULL}};

static PyType_Spec Allocator_spec = {"pygpu._C.Allocator",
                                     sizeof(AllocatorObject), 0,
                                     Py_TPFLAGS_DEFAULT, Allocator_slots};

/* ----------------------------------------------------------- registration */
int pygpu_allocator_register(PyObject *m)
{
    PyObject *t;

    t = PyType_FromModuleAndSpec(m, &Allocator_spec, NULL);
    if (t == NULL) {
        return -1;
    }
    pygpu_state->Allocator_Type = (PyTypeObject *)t;
    if (PyModule_AddType(m, (PyTypeObject *)t) < 0) {
        return -1;
    }
    t = PyType_FromModuleAndSpec(m, &pygpu_storage_spec, NULL);
    if (t == NULL) {
        return -1;
    }
    pygpu_state->Storage_Type = (PyTypeObject *)t;
    if (PyModule_AddType(m, (PyTypeObject *)t) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(m, pygpu_allocator_functions);
}
