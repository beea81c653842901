/* storage_deferred.c - record_stream and the blocks it holds back: a
 * Storage used on streams other than its own gives its block back to the
 * allocator only once the work those streams had queued when it died is
 * done (events from the allocator's backend), checked at every allocation
 * and waited for by empty_cache and before an out-of-memory error.
 */
#include "memory/memory.h"

#include "memory/allocator_py.h"

#include <pthread.h>
#include <stdatomic.h>

/* Blocks of dead storages waiting for their recorded streams: each holds
 * its allocator (a reference) and one event per recorded stream.  A
 * storage that dies while a CUDA graph is being captured keeps its streams
 * instead (nevents is -1): no event may be recorded, queried or waited for
 * then, so the events are recorded once no capture is underway, as
 * PyTorch defers them. */
typedef struct deferred_free {
    struct deferred_free *next;
    AllocatorObject *allocator;
    pygpu_block *block;
    int nevents;
    void *events[PYGPU_MAX_RECORDED_STREAMS];
    int nstreams;
    void *streams[PYGPU_MAX_RECORDED_STREAMS];
    int devices[PYGPU_MAX_RECORDED_STREAMS];
} deferred_free;

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static deferred_free *deferred_head; /* under deferred_lock */
static atomic_int deferred_count;    /* its length, read without the lock */

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
int pygpu_storage_defer_free(StorageObject *self)
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
    if (pygpu_cuda_captures_underway() > 0) {
        d->nevents = -1; /* recorded after the capture */
        d->nstreams = self->nrecorded;
        for (int i = 0; i < self->nrecorded; i++) {
            d->streams[i] = self->recorded[i];
            d->devices[i] = self->recorded_device[i];
        }
    }
    for (int i = 0; d->nevents >= 0 && i < self->nrecorded; i++) {
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

/* Whether all of d's events are done (destroying those that are); the
 * events of a storage that died during a capture are recorded first. */
static int deferred_ready(deferred_free *d, int wait)
{
    const pygpu_alloc_backend *be = &d->allocator->backend;
    int kept = 0;

    if (d->nevents < 0) {
        d->nevents = 0;
        for (int i = 0; i < d->nstreams; i++) {
            void *ev = NULL;
            if (be->record_event(be->ctx, d->devices[i], d->streams[i],
                                 &ev) == 0) {
                d->events[d->nevents++] = ev;
            }
        }
    }
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

    /* Events cannot be queried or waited for while a capture is underway:
     * the blocks wait for its end (and reserved memory may grow). */
    if (pygpu_cuda_captures_underway() > 0) {
        return;
    }
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

int pygpu_storage_deferred_waiting(void)
{
    return atomic_load(&deferred_count) > 0;
}
