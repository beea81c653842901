/* storage_py.c - the Storage type and the path every allocation takes
 * from Python: the core (whose backend allocations run without the GIL),
 * then on out-of-memory a gc.collect() and one more try, then
 * OutOfMemoryError with PyTorch's message.
 */
#include "memory/memory.h"

#include "memory/allocator_py.h"

#include "memory/cuda_backend.h"

#include <pthread.h>
#include <stdatomic.h>

/* Blocks of dead storages waiting for their recorded streams: each holds
 * its allocator (a reference) and one event per recorded stream. */
typedef struct deferred_free {
    struct deferred_free *next;
    AllocatorObject *allocator;
    pygpu_block *block;
    int nevents;
    void *events[PYGPU_MAX_RECORDED_STREAMS];
} deferred_free;

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static deferred_free *deferred_head; /* under deferred_lock */
static atomic_int deferred_count;    /* its length, read without the lock */

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
    core->raw_free = raw_free_through;
    core->mem_info = mem_info_through;
    core->record_event = NULL; /* the Python layer uses inner's */
    core->event_done = NULL;
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
    char msg[256];

    if (pygpu_cuda_backend_describe(&self->backend, msg, sizeof(msg))) {
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
                      pygpu_block **out)
{
    pygpu_alloc_stats before, after;
    int rc = pygpu_allocator_malloc(self->alloc, nbytes, stream, out);

    if (rc == PYGPU_ALLOC_OOM) {
        pygpu_storage_free_deferred(1); /* blocks recorded on streams */
        if (collect_garbage() < 0) {
            return -1;
        }
        pygpu_allocator_get_stats(self->alloc, &before);
        rc = pygpu_allocator_malloc(self->alloc, nbytes, stream, out);
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
                                   void *stream)
{
    PyTypeObject *tp = pygpu_state->Storage_Type;
    pygpu_block *b = NULL;
    StorageObject *s;

    if (atomic_load(&deferred_count) > 0) {
        pygpu_storage_free_deferred(0);
    }
    if (take_block(a, nbytes, stream, &b) < 0) {
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

/* -------------------------------------------------------- record_stream */
/* 1 recorded (or nothing to record), 0 when st is full. */
static int record(StorageObject *st, void *stream, int device)
{
    if (stream == (void *)1) {
        stream = NULL; /* the legacy default stream's other name */
    }
    if (st->allocator == NULL || st->block == NULL) {
        return 1;
    }
    /* A CUDA block is ordered on its own stream; pinned memory is not. */
    if (st->device.type == PYGPU_CUDA && device == st->device.index &&
        stream == st->stream) {
        return 1;
    }
    for (int i = 0; i < st->nrecorded; i++) {
        if (st->recorded[i] == stream && st->recorded_device[i] == device) {
            return 1;
        }
    }
    if (st->nrecorded == PYGPU_MAX_RECORDED_STREAMS) {
        return 0;
    }
    st->recorded[st->nrecorded] = stream;
    st->recorded_device[st->nrecorded] = device;
    st->nrecorded++;
    return 1;
}

int pygpu_storage_record_stream(StorageObject *st, void *stream, int device)
{
    if (!record(st, stream, device)) {
        PyErr_Format(PyExc_RuntimeError,
                     "record_stream: a tensor's memory can be recorded on "
                     "at most %d streams", PYGPU_MAX_RECORDED_STREAMS);
        return -1;
    }
    return 0;
}

int pygpu_storage_guard_copy(StorageObject *st, void *stream, int device)
{
    return record(st, stream, device);
}

/* Storage_dealloc of a block recorded on streams: an event on each (on
 * that stream's device), and the block waits in the list.  0, or -1 when
 * that could not be arranged (the block is then freed at once). */
static int defer_free(StorageObject *self)
{
    AllocatorObject *a = (AllocatorObject *)self->allocator;
    const pygpu_alloc_backend *be = &a->backend;
    deferred_free *d;

    if (be->record_event == NULL || be->event_done == NULL) {
        return -1;
    }
    d = PyMem_RawCalloc(1, sizeof(*d));
    if (d == NULL) {
        return -1;
    }
    for (int i = 0; i < self->nrecorded; i++) {
        void *ev = NULL;
        if (be->record_event(be->ctx, self->recorded_device[i],
                             self->recorded[i], &ev) != 0) {
            continue; /* nothing to wait for that can be waited for */
        }
        d->events[d->nevents++] = ev;
    }
    d->allocator = a; /* the reference */
    d->block = self->block;
    pthread_mutex_lock(&deferred_lock);
    d->next = deferred_head;
    deferred_head = d;
    atomic_fetch_add(&deferred_count, 1);
    pthread_mutex_unlock(&deferred_lock);
    return 0;
}

/* Whether all of d's events are done (destroying those that are). */
static int deferred_ready(deferred_free *d, int wait)
{
    const pygpu_alloc_backend *be = &d->allocator->backend;
    int kept = 0;

    for (int i = 0; i < d->nevents; i++) {
        if (!be->event_done(be->ctx, d->events[i], wait)) {
            d->events[kept++] = d->events[i];
        }
    }
    d->nevents = kept;
    return kept == 0;
}

void pygpu_storage_free_deferred(int wait)
{
    deferred_free *ready = NULL, **link;

    pthread_mutex_lock(&deferred_lock);
    link = &deferred_head;
    while (*link != NULL) {
        deferred_free *d = *link;
        if (deferred_ready(d, wait)) {
            *link = d->next;
            d->next = ready;
            ready = d;
            atomic_fetch_sub(&deferred_count, 1);
        } else {
            link = &d->next;
        }
    }
    pthread_mutex_unlock(&deferred_lock);
    while (ready != NULL) {
        deferred_free *d = ready;
        ready = d->next;
        pygpu_allocator_free(d->allocator->alloc, d->block);
        Py_DECREF(d->allocator);
        PyMem_RawFree(d);
    }
}

/* --------------------------------------------------------------- Storage */
static void Storage_dealloc(StorageObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);

    if (self->allocator != NULL && self->nrecorded > 0 &&
        self->block != NULL && defer_free(self) == 0) {
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
    } else if (dev.type == PYGPU_CPU) {
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
    return pygpu_storage_alloc(a, nbytes, stream);
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
