/* cuda_backend.c - the cudaMalloc and cudaHostAlloc backends of the caching
 * allocator (see cuda_backend.h).  Compiled only in a CUDA build.
 *
 * The core calls these hooks with its mutex held, so a context's
 * remembered error is written under that lock; the Python layer reads it
 * right after the failing call returned, while holding the GIL.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_AVPHYS_PAGES) */

#include "cuda_backend.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>

typedef struct cuda_ctx {
    int pinned;
    cudaError_t last_error; /* cudaSuccess: nothing to report */
    const char *last_call;
} cuda_ctx;

static cuda_ctx device_ctx[PYGPU_CUDA_MAX_DEVICES];
static cuda_ctx pinned_ctx = {1, cudaSuccess, NULL};

/* Classify a failed call; every failure also clears the runtime's last
 * error so that it does not surface later in an unrelated check. */
static int failure(cuda_ctx *c, cudaError_t err, const char *call)
{
    (void)cudaGetLastError();
    if (err == cudaErrorMemoryAllocation) {
        return PYGPU_ALLOC_OOM;
    }
    c->last_error = err;
    c->last_call = call;
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
    cuda_ctx *c = ctx;
    int prev;
    cudaError_t err = (cudaError_t)pygpu_cuda_enter_device(device, &prev);

    if (err != cudaSuccess) {
        return failure(c, err, "cudaSetDevice");
    }
    err = cudaMalloc(ptr, size);
    pygpu_cuda_leave_device(device, prev);
    if (err != cudaSuccess) {
        return failure(c, err, "cudaMalloc");
    }
    return PYGPU_ALLOC_OK;
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

    (void)device;
    /* Portable: pinned for every device's context, not only the current. */
    err = cudaHostAlloc(ptr, size, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        return failure(ctx, err, "cudaHostAlloc");
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

/* -------------------------------------------------------------- interface */
void pygpu_cuda_backend_init(pygpu_alloc_backend *backend, int device,
                             int pinned)
{
    if (pinned) {
        backend->name = "cuda_host";
        backend->raw_alloc = pinned_alloc;
        backend->raw_free = pinned_free;
        backend->mem_info = pinned_info;
        backend->ctx = &pinned_ctx;
    } else {
        backend->name = "cuda";
        backend->raw_alloc = device_alloc;
        backend->raw_free = device_free;
        backend->mem_info = device_info;
        backend->ctx = &device_ctx[device];
    }
}

int pygpu_cuda_backend_device_count(const char **why)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);

    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        *why = cudaGetErrorString(err);
        return 0;
    }
    if (n == 0) {
        *why = "no CUDA-capable device is detected";
    }
    return n;
}

int pygpu_cuda_backend_describe(const pygpu_alloc_backend *backend, char *buf,
                                size_t n)
{
    cuda_ctx *c;

    if (backend->raw_alloc != device_alloc &&
        backend->raw_alloc != pinned_alloc) {
        return 0;
    }
    c = backend->ctx;
    if (c->last_error == cudaSuccess) {
        return 0;
    }
    snprintf(buf, n, "CUDA error: %s (%s) in %s",
             cudaGetErrorString(c->last_error),
             cudaGetErrorName(c->last_error), c->last_call);
    c->last_error = cudaSuccess;
    return 1;
}
