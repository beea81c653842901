/* allocator.h - the caching allocator core.
 *
 * Plain C, no Python.h, no CUDA: it is written against a backend of hooks
 * (raw_alloc / raw_free / mem_info) so that the same logic serves
 * cudaMalloc, cudaHostAlloc (pinned host memory) and plain host memory with
 * a settable capacity (what the tests use).
 *
 * Policy (the same figures as PyTorch's CUDA caching allocator):
 *   - requests are rounded up to a multiple of 512 bytes;
 *   - the small pool serves rounded sizes up to 1 MiB out of 2 MiB segments;
 *   - the large pool serves the rest: requests under 10 MiB get a 20 MiB
 *     segment, larger ones a segment rounded up to a multiple of 2 MiB;
 *   - a cached block is reused best-fit (smallest that fits, then lowest
 *     address), only by a request on the stream it was allocated on;
 *   - a reused or new block is split when the remainder is at least 512
 *     bytes (small pool) or more than 1 MiB (large pool);
 *   - freed blocks merge with free neighbours of the same segment;
 *   - empty_cache returns every wholly free segment to the backend.
 * When the backend fails, or a limit set through set_limit would be
 * exceeded, the allocator frees its cached segments and tries once more
 * (num_alloc_retries counts that), then reports PYGPU_ALLOC_OOM (num_ooms).
 *
 * Private pools (CUDA graphs, as PyTorch's): while a route is open,
 * allocations tagged with it are served from one private pool, whose
 * segments and free blocks no other allocation sees.  A block of a private
 * pool freed later goes back to that pool, reserved for it, until every
 * holder of the pool (the capture that opened the route, then the graph)
 * has let go; only then can empty_cache give its wholly free segments back.
 * Several routes may feed one pool (graphs sharing a pool).  While any
 * route is open anywhere in the process, no allocator gives memory back to
 * its backend (cudaFree during a capture would break it): empty_cache and
 * the out-of-memory retry free nothing, and an allocator without caching
 * keeps its freed blocks cached until the next empty_cache.  The figures
 * count private pools' segments and blocks like any others.
 *
 * A size-0 request succeeds with a NULL block and changes no figure.
 * Every function takes the allocator's mutex; all are thread-safe.  The
 * mutex is not held while raw_alloc runs, so a backend's raw_alloc must be
 * thread-safe on its own (raw_free and mem_info run under the mutex or
 * outside it, and must be too).
 */
#ifndef PYGPU_ALLOCATOR_H
#define PYGPU_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYGPU_ALLOC_OK 0
#define PYGPU_ALLOC_OOM 1
#define PYGPU_ALLOC_ERROR 2 /* backend error other than out of memory */

typedef struct pygpu_alloc_backend {
    const char *name;
    /* Obtain `size` bytes on `device`; returns PYGPU_ALLOC_OK, _OOM, or
     * _ERROR (the backend keeps the detail for the caller to report,
     * e.g. in its ctx). */
    int (*raw_alloc)(void *ctx, int device, size_t size, void **ptr);
    void (*raw_free)(void *ctx, int device, void *ptr);
    /* Free and total bytes of the device, for messages and fractions;
     * returns 0 on success. */
    int (*mem_info)(void *ctx, int device, size_t *free_bytes,
                    size_t *total_bytes);
    /* As raw_alloc, for a segment of a private pool, which is made while
     * a capture is underway (the CUDA backend relaxes the capture's
     * checks around cudaMalloc, as PyTorch does).  NULL: raw_alloc. */
    int (*raw_alloc_private)(void *ctx, int device, size_t size, void **ptr);
    /* Events for blocks freed while a stream may still use them
     * (record_stream, non_blocking copies); both NULL when the backend has
     * none (such blocks are then freed at once).  record_event: an event
     * recorded now on `stream` of device `device` into *ev; returns 0 on
     * success.  event_done: 1 when the work before ev is done (ev is then
     * released), 0 when not yet; with `wait`, waits for it first (always
     * 1).  Called by the Python layer, not by the core. */
    int (*record_event)(void *ctx, int device, void *stream, void **ev);
    int (*event_done)(void *ctx, void *ev, int wait);
    /* After raw_alloc returned PYGPU_ALLOC_ERROR in the calling thread:
     * writes what failed into buf (n bytes, e.g. "CUDA error: <string>
     * (<name>) in cudaMalloc") and returns 1, forgetting it; 0 when the
     * backend kept nothing.  NULL for a backend that keeps no detail.
     * Called by the Python layer, not by the core. */
    int (*last_error)(void *ctx, char *buf, size_t n);
    void *ctx;
} pygpu_alloc_backend;

/* One counter in torch's four flavours. */
typedef struct pygpu_stat {
    int64_t current;
    int64_t peak;
    int64_t allocated; /* total ever added */
    int64_t freed;     /* total ever removed */
} pygpu_stat;

typedef struct pygpu_alloc_stats {
    pygpu_stat allocated_bytes; /* bytes in live blocks (rounded sizes) */
    pygpu_stat reserved_bytes;  /* bytes in segments held from the backend */
    pygpu_stat active_bytes;    /* same as allocated: no deferred frees yet */
    pygpu_stat requested_bytes; /* bytes the callers asked for (unrounded) */
    pygpu_stat segment;         /* number of segments */
    pygpu_stat allocation;      /* number of live blocks */
    pygpu_stat active;          /* number of active blocks */
    pygpu_stat inactive_split;  /* free blocks that are parts of a segment */
    pygpu_stat inactive_split_bytes;
    int64_t num_alloc_retries;
    int64_t num_ooms;
    int64_t num_cache_hits;     /* requests served without a raw_alloc */
    int64_t num_raw_allocs;
    int64_t num_raw_frees;
} pygpu_alloc_stats;

typedef struct pygpu_allocator pygpu_allocator;
typedef struct pygpu_block pygpu_block;

/* caching == 0: every malloc is a raw_alloc of the exact rounded size and
 * every free a raw_free (for memory checkers); figures are kept the same
 * way.  Returns NULL when out of host memory. */
pygpu_allocator *pygpu_allocator_new(const pygpu_alloc_backend *backend,
                                     int device, int caching);
/* Frees every segment (live blocks included) and the allocator itself. */
void pygpu_allocator_destroy(pygpu_allocator *a);

int pygpu_allocator_malloc(pygpu_allocator *a, size_t size, void *stream,
                           pygpu_block **out);
/* As pygpu_allocator_malloc, tagged with `route`: served from the
 * private pool of an open route `route`, else (route 0, or no such route
 * open) as pygpu_allocator_malloc. */
int pygpu_allocator_malloc_routed(pygpu_allocator *a, size_t size,
                                  void *stream, uint64_t route,
                                  pygpu_block **out);
/* block may be NULL (a size-0 allocation). */
void pygpu_allocator_free(pygpu_allocator *a, pygpu_block *block);

/* Private pools.  Open route `route` to pool `pool_id` (both nonzero),
 * creating the pool if it does not exist; the pool gains a holder.
 * PYGPU_ALLOC_OK, PYGPU_ALLOC_ERROR when an id is 0 or the route is open
 * already, PYGPU_ALLOC_OOM when out of host memory for the bookkeeping. */
int pygpu_allocator_begin_pool(pygpu_allocator *a, uint64_t pool_id,
                               uint64_t route);
/* Close route `route` (nothing if it is not open); its pool keeps the
 * holder the route gave it. */
void pygpu_allocator_end_pool(pygpu_allocator *a, uint64_t route);
/* One holder of pool `pool_id` lets go: 0, or -1 when there is no such
 * pool or it has no holder left.  With none left, its wholly free
 * segments go back at the next empty_cache (and the pool is forgotten
 * once it owns none). */
int pygpu_allocator_release_pool(pygpu_allocator *a, uint64_t pool_id);
typedef struct pygpu_pool_info {
    int holders;
    int routes;              /* open routes to it */
    size_t segments;
    size_t reserved_bytes;   /* bytes of its segments */
    size_t allocated_bytes;  /* bytes of its live blocks */
} pygpu_pool_info;
/* 1 and *out filled when pool `pool_id` exists, else 0. */
int pygpu_allocator_pool_info(pygpu_allocator *a, uint64_t pool_id,
                              pygpu_pool_info *out);

void *pygpu_block_ptr(const pygpu_block *b);
size_t pygpu_block_size(const pygpu_block *b); /* rounded size */

/* Returns the bytes given back to the backend. */
size_t pygpu_allocator_empty_cache(pygpu_allocator *a);
void pygpu_allocator_get_stats(pygpu_allocator *a, pygpu_alloc_stats *out);
/* Resets the peaks of every stat to their current values. */
void pygpu_allocator_reset_peak(pygpu_allocator *a);
/* Resets the accumulated figures (allocated/freed totals, retries, ooms). */
void pygpu_allocator_reset_accumulated(pygpu_allocator *a);
/* Cap on reserved bytes (0 = none).  A malloc that would take reserved
 * bytes above the cap behaves as if the backend were out of memory. */
void pygpu_allocator_set_limit(pygpu_allocator *a, size_t limit);
size_t pygpu_allocator_get_limit(pygpu_allocator *a);
int pygpu_allocator_device(const pygpu_allocator *a);
const pygpu_alloc_backend *pygpu_allocator_backend(const pygpu_allocator *a);
/* Snapshot of the segments for memory_summary / debugging: fills up to
 * `max` entries and returns the total number of segments. */
typedef struct pygpu_segment_info {
    void *ptr;
    size_t size;
    size_t allocated; /* bytes in live blocks of this segment */
    int is_small;
    int nblocks;
    uint64_t pool_id; /* its private pool, 0 for none */
} pygpu_segment_info;
size_t pygpu_allocator_segments(pygpu_allocator *a, pygpu_segment_info *out,
                                size_t max);

/* The host-memory backend (malloc/free) with a capacity: raw_alloc fails
 * with PYGPU_ALLOC_OOM when the bytes it has handed out would exceed it.
 * mem_info reports (capacity - used, capacity).  Injected faults: calls
 * number fail_first .. fail_first + fail_count - 1 of raw_alloc (counted
 * in `calls` from 1) fail too.  Its events stand in for CUDA's: event
 * number n (counted in events_recorded from 1) is done once
 * events_completed >= n, which pygpu_host_backend_complete_events sets,
 * or once waited for; events_live counts those not yet released. */
typedef struct pygpu_host_backend_ctx {
    size_t capacity;
    /* Only through __atomic builtins: raw_alloc runs unlocked. */
    size_t used;
    long calls, fail_first, fail_count;
    long events_recorded, events_completed, events_live;
    int last_event_device; /* the device of the last event recorded */
} pygpu_host_backend_ctx;
void pygpu_host_backend_init(pygpu_alloc_backend *backend,
                             pygpu_host_backend_ctx *ctx, size_t capacity);
/* Mark every event recorded so far as done; returns how many were live. */
long pygpu_host_backend_complete_events(pygpu_host_backend_ctx *ctx);

/* Human-readable size as PyTorch prints it: "512 bytes", "1.50 KiB",
 * "64.00 MiB", "2.00 GiB".  Writes at most n bytes including the NUL. */
void pygpu_format_size(char *buf, size_t n, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* PYGPU_ALLOCATOR_H */
