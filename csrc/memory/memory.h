/* memory.h - the memory layer: Storage (a block of a caching allocator,
 * owned by the tensors viewing it), the allocator's Python face, and new
 * tensors with memory of their own.  Above the core (pygpu.h) and the
 * allocator core (allocator.h). */
#ifndef PYGPU_MEMORY_H
#define PYGPU_MEMORY_H

#include "core/pygpu.h"
#include "memory/allocator.h"

#define PYGPU_MAX_RECORDED_STREAMS 8

/* ---------------------------------------------------------------- storage */
/* The owner of a block of device (or pinned host) memory.  Tensors on CUDA,
 * and pinned CPU tensors, hold one as their base; it returns its block to
 * its allocator when the last tensor viewing it dies. */
typedef struct {
    PyObject_HEAD
    void *ptr;               /* NULL for a zero-byte storage */
    size_t nbytes;           /* bytes requested */
    pygpu_block *block;      /* NULL for zero bytes */
    PyObject *allocator;     /* AllocatorObject owning block (strong) */
    pygpu_device device;     /* where ptr lives: cuda:N, or cpu if pinned */
    /* Memory pygpu did not allocate (DLPack, __cuda_array_interface__):
     * no block, no allocator; `owner` keeps it alive and is released
     * when the Storage dies. */
    PyObject *owner;
    /* record_stream: the stream the block was allocated on, and other
     * streams using it (with their CUDA devices: for pinned memory, not
     * the storage's); the block goes back to the allocator only after
     * their work queued before the Storage died is done. */
    void *stream;
    int nrecorded;
    void *recorded[PYGPU_MAX_RECORDED_STREAMS];
    int recorded_device[PYGPU_MAX_RECORDED_STREAMS];
} StorageObject;

/* A Python handle on a pygpu_allocator: one per CUDA device (created on
 * first use), one for pinned host memory, and any number of host-backed
 * ones for tests. */
typedef struct {
    PyObject_HEAD
    pygpu_allocator *alloc;
    pygpu_alloc_backend backend;
    pygpu_host_backend_ctx host_ctx; /* used by the host backend only */
    pygpu_device device;             /* device its storages report */
    int caching;                     /* as given to pygpu_allocator_new */
    /* Out-of-memory events the core counted but Python does not see: the
     * gc.collect() retry makes one request two core attempts, and each
     * request should count once (see allocator_py.c). */
    int64_t uncounted_ooms;
    int64_t uncounted_retries;
} AllocatorObject;

/* ---------------------------------------------------------------- storage */
/* New Storage of nbytes on a CUDA device (through its caching allocator,
 * with out-of-memory retry and OutOfMemoryError) or, for pinned host
 * memory, pass dev.type == PYGPU_CPU.  NULL with an exception. */
StorageObject *pygpu_storage_new(pygpu_device dev, size_t nbytes);
/* A Storage over nbytes of foreign memory at ptr on dev, kept alive by
 * `owner` (referenced): never given to a caching allocator, not counted
 * in its figures.  NULL with an exception. */
StorageObject *pygpu_storage_foreign(pygpu_device dev, void *ptr,
                                     size_t nbytes, PyObject *owner);
/* Tensor.record_stream: st's block must not be reused until the work
 * queued on `stream` (a cudaStream_t of CUDA device `device`) when st
 * dies is done.  Nothing for foreign memory or, for a CUDA storage, its
 * own stream (a pinned storage has none: every stream counts, the legacy
 * default one too).  0, or -1 with RuntimeError when more than
 * PYGPU_MAX_RECORDED_STREAMS streams are recorded. */
int pygpu_storage_record_stream(StorageObject *st, void *stream, int device);
/* The same for a copy about to be queued on `stream` of `device` that
 * reads or writes st (a non_blocking copy from or into pinned memory):
 * 1 when st's block is guarded (or needs no guard), 0 when st already
 * records as many streams as it can: the caller must then wait for the
 * copy.  Never fails. */
int pygpu_storage_guard_copy(StorageObject *st, void *stream, int device);
/* Give the allocator back the blocks of dead storages whose recorded
 * streams are done (with `wait`, all of them, after waiting).  Called by
 * every allocation through an allocator (CUDA, pinned, host) and by
 * empty_cache; needs the GIL. */
void pygpu_storage_free_deferred(int wait);

/* ------------------------------------------------- the devices' allocators */
/* The process-wide allocators of the device runtime: one per CUDA device
 * and one for pinned host memory, made on first use and kept for the life
 * of the process (cuda/cuda_allocators.c in a CUDA build, over its
 * backends; cuda/cuda_none.c's refusals in a CPU-only one).  cuda/'s init
 * installs them; memory/ asks through them and never names a backend. */
typedef struct pygpu_device_allocators {
    /* The allocator of CUDA device `device` (borrowed), or NULL with an
     * exception (an invalid ordinal, CUDA unusable or not built). */
    AllocatorObject *(*device)(int device);
    /* The allocator of pinned host memory (borrowed), or NULL with an
     * exception. */
    AllocatorObject *(*pinned)(void);
} pygpu_device_allocators;

/* The installed table: written once by cuda/'s init under the GIL (the
 * module's init calls it before anything can allocate), read-only
 * afterwards (memory/device_allocators.c). */
extern const pygpu_device_allocators *pygpu_allocators;
void pygpu_allocators_install(const pygpu_device_allocators *al);

static inline AllocatorObject *
pygpu_cuda_allocator(int device)
{
    return pygpu_allocators->device(device);
}

static inline AllocatorObject *
pygpu_pinned_allocator(void)
{
    return pygpu_allocators->pinned();
}

/* A new Allocator object whose core runs over a copy of *backend with
 * device number core_device; with backend NULL, over host memory of
 * `capacity` bytes.  Its storages report `dev`.  NULL with an exception
 * (allocator_py.c; what a device runtime builds its allocators with). */
AllocatorObject *pygpu_allocator_object_new(const pygpu_alloc_backend *backend,
                                            size_t capacity, pygpu_device dev,
                                            int core_device, int caching);

/* Adds Storage and the allocator types and functions to the module. */
int pygpu_allocator_register(PyObject *m);

/* ------------------------------------------------------------ tensors */
/* tensor_alloc.c: an uninitialised contiguous tensor (a NumPy array on the
 * CPU, a Storage on CUDA).  shape may be NULL when ndim == 0. */
TensorObject *pygpu_tensor_empty(int ndim, const int64_t *shape, int dtype,
                                 pygpu_device dev);
/* Test aid: when set, every new tensor's memory is filled with 0xFF bytes
 * (NaN for floats, -1 for int64) so that tests see unwritten outputs. */
void pygpu_set_poison(int on);
/* Test aid: the nth tensor allocation from now (1: the next) fails with
 * the device's out-of-memory error; 0 turns it off. */
void pygpu_set_fail_allocation_in(long n);
/* A contiguous tensor over a storage (which it references). */
TensorObject *pygpu_tensor_on_storage(StorageObject *st, int ndim,
                                      const int64_t *shape, int dtype,
                                      pygpu_device dev);

#endif /* PYGPU_MEMORY_H */
