/* cuda_backend.c - the cudaMalloc and cudaHostAlloc backends of the caching
 * allocator (see cuda_backend.h).  Compiled only in a CUDA build.
 *
 * The core calls raw_alloc without its mutex, so several threads may be in
 * these hooks at once.  A failure is remembered per thread: the Python
 * layer reads it right after the failing call returned, in the same thread.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_AVPHYS_PAGES) */

#include "cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>

/* The hooks tell the devices apart by the device number the core passes;
 * the contexts only make each backend's ctx distinct. */
typedef struct cuda_ctx {
    int pinned;
} cuda_ctx;

static cuda_ctx device_ctx = {0};
static cuda_ctx pinned_ctx = {1};

/* This thread's last failure other than out-of-memory. */
static _Thread_local cudaError_t last_error = cudaSuccess;
static _Thread_local const char *last_call = NULL;

/* Classify a failed call; every failure also clears the runtime's last
 * error so that it does not surface later in an unrelated check. */
static int failure(cudaError_t err, const char *call)
{
    (void)cudaGetLastError();
    if (err == cudaErrorMemoryAllocation) {
        return PYGPU_ALLOC_OOM;
    }
    last_error = err;
    last_call = call;
    return PYGPU_ALLOC_ERROR;
}

int pygpu_cuda_enter_device(int device, int *prev)
{
    cudaError_t err = cudaGetDevice(prev);

    if (err != cudaSuccess) {
        *prev = device;
        return (int)err;
    }
    if (*prev != device) {
        err = cudaSetDevice(device);
        if (err != cudaSuccess) {
            *prev = device; /* nothing to restore */
        }
    }
    return (int)err;
}

void pygpu_cuda_leave_device(int device, int prev)
{
    if (prev != device && cudaSetDevice(prev) != cudaSuccess) {
        (void)cudaGetLastError();
    }
}

/* ---------------------------------------------------------- device memory */
static int device_alloc(void *ctx, int device, size_t size, void **ptr)
{
    int prev;
    cudaError_t err = (cudaError_t)pygpu_cuda_enter_device(device, &prev);

    (void)ctx;
    if (err != cudaSuccess) {
        return failure(err, "cudaSetDevice");
    }
    err = cudaMalloc(ptr, size);
    pygpu_cuda_leave_device(device, prev);
    if (err != cudaSuccess) {
        return failure(err, "cudaMalloc");
    }
    return PYGPU_ALLOC_OK;
}

/* A segment of a private pool, made while a capture is underway: with
 * the capture's checks relaxed for this thread, as PyTorch does.  A
 * cudaMalloc is not recorded into a graph, and what it returns stays
 * allocated while any graph may use it (the pool is freed only once no
 * graph holds it), so it is safe here; in the default (global) capture
 * mode CUDA would otherwise refuse it and invalidate the capture. */
static int device_alloc_private(void *ctx, int device, size_t size,
                                void **ptr)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
    int rc;

    if (err != cudaSuccess) {
        return failure(err, "cudaThreadExchangeStreamCaptureMode");
    }
    rc = device_alloc(ctx, device, size, ptr);
    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
        (void)cudaGetLastError(); /* the mode was set once: restorable */
    }
    return rc;
}

static void device_free(void *ctx, int device, void *ptr)
{
    int prev;

    (void)ctx;
    /* Errors cannot be reported from a free (it runs in deallocators);
     * at interpreter exit the runtime may already be unloading. */
    if (pygpu_cuda_enter_device(device, &prev) == cudaSuccess) {
        (void)cudaFree(ptr);
        pygpu_cuda_leave_device(device, prev);
    }
    (void)cudaGetLastError();
}

static int device_info(void *ctx, int device, size_t *free_bytes,
                       size_t *total_bytes)
{
    int prev;
    cudaError_t err = (cudaError_t)pygpu_cuda_enter_device(device, &prev);

    (void)ctx;
    if (err == cudaSuccess) {
        err = cudaMemGetInfo(free_bytes, total_bytes);
        pygpu_cuda_leave_device(device, prev);
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        *free_bytes = 0;
        *total_bytes = 0;
        return -1;
    }
    return 0;
}

/* --------------------------------------------------- pinned host memory */
static int pinned_alloc(void *ctx, int device, size_t size, void **ptr)
{
    cudaError_t err;

    (void)ctx;
    (void)device;
    /* Portable: pinned for every device's context, not only the current. */
    err = cudaHostAlloc(ptr, size, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        return failure(err, "cudaHostAlloc");
    }
    return PYGPU_ALLOC_OK;
}

static void pinned_free(void *ctx, int device, void *ptr)
{
    (void)ctx;
    (void)device;
    (void)cudaFreeHost(ptr);
    (void)cudaGetLastError();
}

/* Pinned memory comes out of the host's physical memory. */
static int pinned_info(void *ctx, int device, size_t *free_bytes,
                       size_t *total_bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    long total = sysconf(_SC_PHYS_PAGES);
    long avail = sysconf(_SC_AVPHYS_PAGES);

    (void)ctx;
    (void)device;
    if (page <= 0 || total <= 0 || avail < 0) {
        *free_bytes = 0;
        *total_bytes = 0;
        return -1;
    }
    *free_bytes = (size_t)avail * (size_t)page;
    *total_bytes = (size_t)total * (size_t)page;
    return 0;
}

/* ------------------------------------------------------ block events */
/* An event on `stream` of `device`: for pinned memory the stream's device,
 * which is not the memory's. */
static int block_event(void *ctx, int device, void *stream, void **ev)
{
    int prev;
    cudaEvent_t e = NULL;
    cudaError_t err = (cudaError_t)pygpu_cuda_enter_device(device, &prev);

    (void)ctx;
    if (err == cudaSuccess) {
        err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        if (err == cudaSuccess) {
            err = cudaEventRecord(e, (cudaStream_t)stream);
        }
        if (err != cudaSuccess && e != NULL) {
            (void)cudaEventDestroy(e);
            e = NULL;
        }
        pygpu_cuda_leave_device(device, prev);
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
    }
    *ev = e;
    return (int)err;
}

static int block_event_done(void *ctx, void *ev, int wait)
{
    cudaError_t err = wait ? cudaEventSynchronize((cudaEvent_t)ev)
                           : cudaEventQuery((cudaEvent_t)ev);

    (void)ctx;
    if (err == cudaErrorNotReady) {
        return 0;
    }
    /* done, or failed (a sticky error reports itself elsewhere) */
    (void)cudaGetLastError();
    (void)cudaEventDestroy((cudaEvent_t)ev);
    return 1;
}

/* --------------------------------------------------------------- failures */
/* The calling thread's last failure other than out-of-memory, in either
 * backend: "CUDA error: <string> (<name>) in <call>". */
static int describe_failure(void *ctx, char *buf, size_t n)
{
    (void)ctx;
    if (last_error == cudaSuccess) {
        return 0;
    }
    snprintf(buf, n, "CUDA error: %s (%s) in %s",
             cudaGetErrorString(last_error), cudaGetErrorName(last_error),
             last_call);
    last_error = cudaSuccess;
    return 1;
}

/* -------------------------------------------------------------- interface */
void pygpu_cuda_backend_init(pygpu_alloc_backend *backend, int device,
                             int pinned)
{
    if (pinned) {
        backend->name = "cuda_host";
        backend->raw_alloc = pinned_alloc;
        backend->raw_alloc_private = NULL;
        backend->raw_free = pinned_free;
        backend->mem_info = pinned_info;
        backend->ctx = &pinned_ctx;
    } else {
        backend->name = "cuda";
        backend->raw_alloc = device_alloc;
        backend->raw_alloc_private = device_alloc_private;
        backend->raw_free = device_free;
        backend->mem_info = device_info;
        backend->ctx = &device_ctx;
    }
    backend->record_event = block_event;
    backend->event_done = block_event_done;
    backend->last_error = describe_failure;
}
