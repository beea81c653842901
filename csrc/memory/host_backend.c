/* host_backend.c - an allocator backend over host memory with a capacity,
 * so that the caching logic runs (and is tested) without a GPU; and the
 * size formatting shared by the out-of-memory messages.
 */
#define _POSIX_C_SOURCE 200809L

#include "memory/allocator.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Each raw allocation carries a header in front of the address handed out,
 * holding its size so that raw_free can give the bytes back to `used`.
 * The header keeps the address 256-byte aligned, as cudaMalloc's are. */
#define HEADER 256

/* The core calls raw_alloc without its lock, so `used` is reserved with a
 * compare-and-swap before the memory is taken, and given back on failure. */
static int host_raw_alloc(void *ctx, int device, size_t size, void **ptr)
{
    pygpu_host_backend_ctx *c = ctx;
    size_t used = __atomic_load_n(&c->used, __ATOMIC_RELAXED);
    void *base = NULL;

    long call = __atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
    long first = __atomic_load_n(&c->fail_first, __ATOMIC_RELAXED);
    long count = __atomic_load_n(&c->fail_count, __ATOMIC_RELAXED);

    (void)device;
    if (call >= first && call - first < count) {
        return PYGPU_ALLOC_OOM; /* an injected fault */
    }
    if (size > SIZE_MAX - HEADER) {
        return PYGPU_ALLOC_OOM;
    }
    do {
        if (size > c->capacity - used) {
            return PYGPU_ALLOC_OOM;
        }
    } while (!__atomic_compare_exchange_n(&c->used, &used, used + size, 1,
                                          __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    if (posix_memalign(&base, HEADER, size + HEADER) != 0) {
        __atomic_fetch_sub(&c->used, size, __ATOMIC_RELAXED);
        return PYGPU_ALLOC_OOM;
    }
    *(size_t *)base = size;
    *ptr = (char *)base + HEADER;
    return PYGPU_ALLOC_OK;
}

static void host_raw_free(void *ctx, int device, void *ptr)
{
    pygpu_host_backend_ctx *c = ctx;
    char *base;

    (void)device;
    if (ptr == NULL) {
        return;
    }
    base = (char *)ptr - HEADER;
    __atomic_fetch_sub(&c->used, *(size_t *)base, __ATOMIC_RELAXED);
    free(base);
}

static int host_mem_info(void *ctx, int device, size_t *free_bytes,
                         size_t *total_bytes)
{
    pygpu_host_backend_ctx *c = ctx;

    (void)device;
    *free_bytes = c->capacity - __atomic_load_n(&c->used, __ATOMIC_RELAXED);
    *total_bytes = c->capacity;
    return 0;
}

/* Events: numbers from 1, handed out as pointers (never NULL). */
static int host_record_event(void *ctx, int device, void *stream, void **ev)
{
    pygpu_host_backend_ctx *c = ctx;
    long n = __atomic_add_fetch(&c->events_recorded, 1, __ATOMIC_RELAXED);

    (void)stream;
    __atomic_add_fetch(&c->events_live, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->last_event_device, device, __ATOMIC_RELAXED);
    *ev = (void *)(uintptr_t)n;
    return 0;
}

static int host_event_done(void *ctx, void *ev, int wait)
{
    pygpu_host_backend_ctx *c = ctx;
    long n = (long)(uintptr_t)ev;

    if (!wait &&
        n > __atomic_load_n(&c->events_completed, __ATOMIC_RELAXED)) {
        return 0;
    }
    __atomic_sub_fetch(&c->events_live, 1, __ATOMIC_RELAXED);
    return 1;
}

long pygpu_host_backend_complete_events(pygpu_host_backend_ctx *ctx)
{
    __atomic_store_n(&ctx->events_completed,
                     __atomic_load_n(&ctx->events_recorded, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    return __atomic_load_n(&ctx->events_live, __ATOMIC_RELAXED);
}

void pygpu_host_backend_init(pygpu_alloc_backend *backend,
                             pygpu_host_backend_ctx *ctx, size_t capacity)
{
    ctx->capacity = capacity;
    ctx->used = 0;
    ctx->calls = 0;
    ctx->fail_first = 0;
    ctx->fail_count = 0;
    ctx->events_recorded = 0;
    ctx->events_completed = 0;
    ctx->events_live = 0;
    ctx->last_event_device = -1;
    backend->name = "host";
    backend->raw_alloc = host_raw_alloc;
    backend->raw_alloc_private = NULL;
    backend->raw_free = host_raw_free;
    backend->mem_info = host_mem_info;
    backend->record_event = host_record_event;
    backend->event_done = host_event_done;
    backend->last_error = NULL; /* its failures are out-of-memory ones */
    backend->ctx = ctx;
}

/* PyTorch's thresholds are inclusive: 1024 bytes prints as "1024 bytes"
 * and 1 MiB as "1024.00 KiB". */
void pygpu_format_size(char *buf, size_t n, uint64_t bytes)
{
    const uint64_t kib = 1024, mib = kib * 1024, gib = mib * 1024;

    if (bytes <= kib) {
        snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
    } else if (bytes <= mib) {
        snprintf(buf, n, "%.2f KiB", (double)bytes / (double)kib);
    } else if (bytes <= gib) {
        snprintf(buf, n, "%.2f MiB", (double)bytes / (double)mib);
    } else {
        snprintf(buf, n, "%.2f GiB", (double)bytes / (double)gib);
    }
}
