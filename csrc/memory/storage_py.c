/* storage_py.c - the Storage type and the path every allocation takes
 * from Python: the core (whose backend allocations run without the GIL),
 * then on out-of-memory a gc.collect() and one more try, then
 * OutOfMemoryError with PyTorch's message.
 */
#include "memory/memory.h"

#include "memory/allocator_py.h"

/* ------------------------------------------------- backend without GIL */
/* The core runs over these hooks, whose ctx is the real backend: a backend
 * allocation (cudaMalloc, cudaHostAlloc: seconds for gigabytes) runs
 * without the GIL, as the core runs it without its lock. */
static int raw_alloc_nogil(void *ctx, int device, size_t size, void **ptr)
{
    const pygpu_alloc_backend *be = ctx;
    PyThreadState *ts = PyGILState_Check() ? PyEval_SaveThread() : NULL;
    int rc = be->raw_alloc(be->ctx, device, size, ptr);

    if (ts != NULL) {
        PyEval_RestoreThread(ts);
    }
    return rc;
}

static int raw_alloc_private_nogil(void *ctx, int device, size_t size,
                                   void **ptr)
{
    const pygpu_alloc_backend *be = ctx;
    PyThreadState *ts = PyGILState_Check() ? PyEval_SaveThread() : NULL;
    int rc = be->raw_alloc_private(be->ctx, device, size, ptr);

    if (ts != NULL) {
        PyEval_RestoreThread(ts);
    }
    return rc;
}

static void raw_free_through(void *ctx, int device, void *ptr)
{
    const pygpu_alloc_backend *be = ctx;

    be->raw_free(be->ctx, device, ptr);
}

static int mem_info_through(void *ctx, int device, size_t *free_bytes,
                            size_t *total_bytes)
{
    const pygpu_alloc_backend *be = ctx;

    return be->mem_info(be->ctx, device, free_bytes, total_bytes);
}

void pygpu_backend_without_gil(pygpu_alloc_backend *core,
                               const pygpu_alloc_backend *inner)
{
    core->name = inner->name;
    core->raw_alloc = raw_alloc_nogil;
    core->raw_alloc_private =
        inner->raw_alloc_private != NULL ? raw_alloc_private_nogil : NULL;
    core->raw_free = raw_free_through;
    core->mem_info = mem_info_through;
    core->record_event = NULL; /* the Python layer uses inner's */
    core->event_done = NULL;
    core->last_error = NULL;
    core->ctx = (void *)inner;
}

/* ------------------------------------------------------ out of memory */
/* The segment the core would have asked the backend for: PyTorch reports
 * that size ("Tried to allocate 20.00 MiB" for a small tensor). */
static size_t request_size(size_t nbytes, int caching)
{
    const size_t mib = (size_t)1 << 20;
    size_t rounded;

    if (nbytes > SIZE_MAX / 4) {
        return nbytes;
    }
    rounded = (nbytes + 511) / 512 * 512;
    if (!caching) {
        return rounded;
    }
    if (rounded <= mib) {
        return 2 * mib;
    }
    if (rounded < 10 * mib) {
        return 20 * mib;
    }
    return (rounded + 2 * mib - 1) / (2 * mib) * (2 * mib);
}

static void raise_oom(AllocatorObject *self, size_t nbytes)
{
    const pygpu_alloc_backend *be = &self->backend;
    int device = pygpu_allocator_device(self->alloc);
    size_t free_b = 0, total_b = 0, limit;
    pygpu_alloc_stats st;
    char req[32], tot[32], fre[32], used[32], idle[32], cap[32];
    char where[48], capinfo[128];

    pygpu_allocator_get_stats(self->alloc, &st);
    limit = pygpu_allocator_get_limit(self->alloc);
    if (be->mem_info(be->ctx, device, &free_b, &total_b) != 0) {
        free_b = 0;
        total_b = 0;
    }
    pygpu_format_size(req, sizeof(req), request_size(nbytes, self->caching));
    pygpu_format_size(tot, sizeof(tot), total_b);
    pygpu_format_size(fre, sizeof(fre), free_b);
    pygpu_format_size(used, sizeof(used), (uint64_t)st.allocated_bytes.current);
    pygpu_format_size(idle, sizeof(idle),
                      (uint64_t)(st.reserved_bytes.current -
                                 st.allocated_bytes.current));
    if (device >= 0) {
        snprintf(where, sizeof(where), "GPU %d", device);
    } else {
        snprintf(where, sizeof(where), "Pinned host memory");
    }
    capinfo[0] = '\0';
    if (limit != 0) {
        pygpu_format_size(cap, sizeof(cap), limit);
        snprintf(capinfo, sizeof(capinfo),
                 "This process has a memory cap of %s set by "
                 "set_per_process_memory_fraction. ", cap);
    }
    PyErr_Format(pygpu_state->OutOfMemoryError,
                 "CUDA out of memory. Tried to allocate %s. %s has a total "
                 "capacity of %s of which %s is free. %sOf the allocated "
                 "memory %s is allocated by pygpu, and %s is reserved by "
                 "pygpu but unallocated.",
                 req, where, tot, fre, capinfo, used, idle);
}

static void raise_backend_error(AllocatorObject *self, size_t nbytes)
{
    const pygpu_alloc_backend *be = &self->backend;
    char msg[256];

    if (be->last_error != NULL && be->last_error(be->ctx, msg, sizeof(msg))) {
        PyErr_SetString(pygpu_state->CudaError, msg);
        return;
    }
    PyErr_Format(pygpu_state->CudaError,
                 "allocating %zu bytes failed in the '%s' backend", nbytes,
                 self->backend.name);
}

static int collect_garbage(void)
{
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *r;

    if (gc == NULL) {
        return -1;
    }
    r = PyObject_CallMethod(gc, "collect", NULL);
    Py_DECREF(gc);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* A block of nbytes on stream, or -1 with an exception.  When the core is
 * out of memory (it has already emptied its cache and retried once),
 * collect Python's garbage, since blocks of tensors caught in reference
 * cycles come back that way, and ask once more.
 *
 * Counting: the core counts an OOM and a retry per failed attempt, which
 * would make one request count twice.  Python sees one num_ooms per
 * OutOfMemoryError raised, none for a request the gc pass rescued, and at
 * most one num_alloc_retries per request; the difference is kept in
 * uncounted_* and taken off in stats(). */
static int take_block(AllocatorObject *self, size_t nbytes, void *stream,
                      uint64_t route, pygpu_block **out)
{
    pygpu_alloc_stats before, after;
    int rc = pygpu_allocator_malloc_routed(self->alloc, nbytes, stream, route,
                                           out);

    if (rc == PYGPU_ALLOC_OOM) {
        pygpu_storage_free_deferred(1); /* blocks recorded on streams */
        if (collect_garbage() < 0) {
            return -1;
        }
        pygpu_allocator_get_stats(self->alloc, &before);
        rc = pygpu_allocator_malloc_routed(self->alloc, nbytes, stream, route,
                                           out);
        pygpu_allocator_get_stats(self->alloc, &after);
        self->uncounted_ooms += 1;
        self->uncounted_retries +=
            after.num_alloc_retries - before.num_alloc_retries;
    }
    if (rc == PYGPU_ALLOC_OK) {
        return 0;
    }
    if (rc == PYGPU_ALLOC_OOM) {
        raise_oom(self, nbytes);
    } else {
        raise_backend_error(self, nbytes);
    }
    return -1;
}

StorageObject *pygpu_storage_alloc(AllocatorObject *a, size_t nbytes,
                                   void *stream, uint64_t route)
{
    PyTypeObject *tp = pygpu_state->Storage_Type;
    pygpu_block *b = NULL;
    StorageObject *s;

    if (pygpu_storage_deferred_waiting()) {
        pygpu_storage_free_deferred(0);
    }
    if (take_block(a, nbytes, stream, route, &b) < 0) {
        return NULL;
    }
    s = (StorageObject *)tp->tp_alloc(tp, 0);
    if (s == NULL) {
        pygpu_allocator_free(a->alloc, b);
        return NULL;
    }
    s->ptr = pygpu_block_ptr(b);
    s->nbytes = nbytes;
    s->block = b;
    Py_INCREF(a);
    s->allocator = (PyObject *)a;
    s->device = a->device;
    s->stream = stream;
    return s;
}

/* --------------------------------------------------------------- Storage */
static void Storage_dealloc(StorageObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);

    if (self->allocator != NULL && self->nrecorded > 0 &&
        self->block != NULL && pygpu_storage_defer_free(self) == 0) {
        self->allocator = NULL; /* the list holds block and reference */
    }
    if (self->allocator != NULL) {
        pygpu_allocator_free(((AllocatorObject *)self->allocator)->alloc,
                             self->block);
        Py_DECREF(self->allocator);
    }
    Py_XDECREF(self->owner);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *Storage_repr(StorageObject *self)
{
    return PyUnicode_FromFormat("<pygpu._C.Storage ptr=%p nbytes=%zu "
                                "device=%d>",
                                self->ptr, self->nbytes, self->device.index);
}

static PyObject *Storage_get_ptr(StorageObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyObject *Storage_get_nbytes(StorageObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(self->nbytes);
}

static PyObject *Storage_get_size(StorageObject *self, void *closure)
{
    (void)closure;
    if (self->block == NULL) {
        return PyLong_FromSize_t(self->nbytes); /* foreign or empty */
    }
    return PyLong_FromSize_t(pygpu_block_size(self->block));
}

static PyObject *Storage_get_device(StorageObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->device.index);
}

static PyGetSetDef Storage_getset[] = {
    {"ptr", (getter)Storage_get_ptr, NULL,
     "Address of the memory (0 for an empty storage).", NULL},
    {"nbytes", (getter)Storage_get_nbytes, NULL, "Bytes requested.", NULL},
    {"size", (getter)Storage_get_size, NULL,
     "Bytes in the block (the request rounded up).", NULL},
    {"device", (getter)Storage_get_device, NULL,
     "Index of the device (that of its allocator; -1 for pinned host "
     "memory).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot Storage_slots[] = {
    {Py_tp_dealloc, (void *)Storage_dealloc},
    {Py_tp_repr, (void *)Storage_repr},
    {Py_tp_getset, Storage_getset},
    {Py_tp_doc, (void *)"A block of memory from an Allocator, given back "
                        "when the Storage dies."},
    {0, NULL}};

PyType_Spec pygpu_storage_spec = {
    "pygpu._C.Storage", sizeof(StorageObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, Storage_slots};


/* ------------------------------------------------------------ C interface */
StorageObject *pygpu_storage_new(pygpu_device dev, size_t nbytes)
{
    AllocatorObject *a;
    void *stream = NULL;
    uint64_t route = 0;
    int index = dev.index;

    if (dev.type == PYGPU_CUDA) {
        if (index < 0 && pygpu_cuda_current_device(&index) < 0) {
            return NULL;
        }
        a = pygpu_cuda_allocator(index);
        if (a == NULL) {
            return NULL;
        }
        stream = pygpu_cuda_current_stream(index);
        /* During a graph capture on that stream: the graph's pool. */
        route = pygpu_cuda_capture_route(index, stream);
    } else if (dev.type == PYGPU_CPU) {
        /* cudaHostAlloc is a call a capture forbids, as a wait is. */
        if (pygpu_cuda_capture_refuse(-1, NULL, PYGPU_CAPTURE_WAITS,
                                      "allocating page-locked host memory "
                                      "(pin_memory(), a non_blocking copy "
                                      "to the host)") < 0) {
            return NULL;
        }
        a = pygpu_pinned_allocator();
        if (a == NULL) {
            return NULL;
        }
    } else {
        PyErr_SetString(PyExc_RuntimeError,
                        "pygpu: storages live on cuda or in pinned host "
                        "memory only");
        return NULL;
    }
    return pygpu_storage_alloc(a, nbytes, stream, route);
}

StorageObject *pygpu_storage_foreign(pygpu_device dev, void *ptr,
                                     size_t nbytes, PyObject *owner)
{
    PyTypeObject *tp = pygpu_state->Storage_Type;
    StorageObject *s = (StorageObject *)tp->tp_alloc(tp, 0);

    if (s == NULL) {
        return NULL;
    }
    s->ptr = ptr;
    s->nbytes = nbytes;
    s->device = dev;
    s->owner = Py_NewRef(owner);
    return s;
}
