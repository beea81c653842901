/* cuda_allocators.c - the process-wide allocators (one per CUDA device,
 * one for pinned host memory) over the backends of cuda_backend.c,
 * created on first use and kept for the life of the process as PyTorch
 * keeps its own.  memory/ reaches them through the table cuda/'s init
 * installs (pygpu_allocators, memory.h).  A CUDA build only; a CPU-only
 * build has the refusals of cuda/cuda_none.c.
 */
#include "memory/memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_runtime.h"

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

static AllocatorObject *device_allocator(int device)
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

static AllocatorObject *pinned_host_allocator(void)
{
    return registry_get(&pinned_allocator, -1, 1);
}

const pygpu_device_allocators pygpu_cuda_allocators = {
    .device = device_allocator,
    .pinned = pinned_host_allocator,
};
