/* allocator.c - the caching allocator core (policy in allocator.h).
 *
 * Data structures:
 *   - a segment is one piece of memory obtained from the backend; its blocks
 *     tile it without gaps and form a doubly linked list in address order
 *     (prev/next), so a freed block finds its neighbours in O(1);
 *   - every free block sits in the free tree of its pool (small or large):
 *     a treap ordered by (stream, size, address), so the best fit for a
 *     request is one descent, and insertion and removal are O(log n);
 *   - block structs are recycled through a spare list, so a cached
 *     malloc/free pair calls neither the backend nor the C library.
 *
 * The structures are in allocator_internal.h; the free tree is in
 * free_tree.c; private pools and their routes are in allocator_pool.c; the
 * read side (figures, resets, snapshots) is in allocator_stats.c.
 *
 * Statistics follow PyTorch's definitions.  The inactive-split figures move
 * by the net change of each operation (as PyTorch applies them), so their
 * accumulated "allocated"/"freed" totals match too.
 */
#define _POSIX_C_SOURCE 200809L

#include "memory/allocator_internal.h"

#include <stdlib.h>
#include <string.h>

#define ROUND 512                      /* every block is a multiple */
#define SMALL_SIZE ((size_t)1 << 20)   /* largest small-pool request */
#define SMALL_SEGMENT ((size_t)2 << 20) /* segment size of the small pool */
#define LARGE_SEGMENT ((size_t)20 << 20) /* segment for requests < 10 MiB */
#define MIN_LARGE_ALLOC ((size_t)10 << 20)
#define ROUND_LARGE ((size_t)2 << 20)  /* larger segments: multiple of 2 MiB */
/* Requests above this cannot be satisfied anywhere; they are clamped (to a
 * size no backend grants) so the rounding arithmetic never overflows. */
#define MAX_REQUEST ((SIZE_MAX / 4) & ~(size_t)(ROUND - 1))

/* ------------------------------------------------------------ statistics */
static void stat_add(pygpu_stat *s, int64_t delta)
{
    s->current += delta;
    if (delta > 0) {
        s->allocated += delta;
    } else {
        s->freed -= delta;
    }
    if (s->current > s->peak) {
        s->peak = s->current;
    }
}

static void apply_pending(pygpu_allocator *a)
{
    if (a->pending_split != 0) {
        stat_add(&a->stats.inactive_split, a->pending_split);
    }
    if (a->pending_split_bytes != 0) {
        stat_add(&a->stats.inactive_split_bytes, a->pending_split_bytes);
    }
    a->pending_split = 0;
    a->pending_split_bytes = 0;
}

/* ---------------------------------------------------- block structs, segs */
static pygpu_block *block_get(pygpu_allocator *a)
{
    pygpu_block *b = a->spare;

    if (b != NULL) {
        a->spare = b->next;
    } else {
        b = malloc(sizeof(*b));
        if (b == NULL) {
            return NULL;
        }
    }
    memset(b, 0, sizeof(*b));
    return b;
}

static void block_put(pygpu_allocator *a, pygpu_block *b)
{
    b->next = a->spare;
    a->spare = b;
}

static size_t segment_size(size_t rounded)
{
    if (rounded <= SMALL_SIZE) {
        return SMALL_SEGMENT;
    }
    if (rounded < MIN_LARGE_ALLOC) {
        return LARGE_SEGMENT;
    }
    return (rounded + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

/* One attempt at `size` bytes from the backend (its private-pool hook
 * for a segment of a private pool), honouring the limit (bytes in flight
 * count against it).  Called with the lock held and no inactive-split
 * change pending; the lock is dropped while the backend works, which can
 * take seconds. */
static int raw_alloc(pygpu_allocator *a, size_t size, int private,
                     void **ptr)
{
    int (*hook)(void *, int, size_t, void **) = a->backend.raw_alloc;
    int rc;

    if (a->limit != 0 && (uint64_t)a->stats.reserved_bytes.current +
                                 a->inflight + size > a->limit) {
        return PYGPU_ALLOC_OOM;
    }
    if (private && a->backend.raw_alloc_private != NULL) {
        hook = a->backend.raw_alloc_private;
    }
    a->inflight += size;
    pthread_mutex_unlock(&a->lock);
    rc = hook(a->backend.ctx, a->device, size, ptr);
    pthread_mutex_lock(&a->lock);
    a->inflight -= size;
    return rc;
}

static void release_segment(pygpu_allocator *a, segment *s)
{
    pygpu_block *b = s->head, *next;

    a->backend.raw_free(a->backend.ctx, a->device, s->ptr);
    a->stats.num_raw_frees++;
    stat_add(&a->stats.reserved_bytes, -(int64_t)s->size);
    stat_add(&a->stats.segment, -1);
    if (s->owner != NULL) {
        s->owner->nsegments--;
    }
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        a->segments = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    }
    while (b != NULL) {
        next = b->next;
        block_put(a, b);
        b = next;
    }
    free(s);
}

/* Return every wholly free segment to the backend, but those of private
 * pools someone holds; the bytes returned.  Nothing while a route is open
 * anywhere (a capture is underway). */
static size_t release_cached(pygpu_allocator *a)
{
    segment *s = a->segments, *next;
    size_t released = 0;

    if (pygpu_pool_routes_open()) {
        return 0;
    }
    while (s != NULL) {
        next = s->next;
        if (!s->head->allocated && s->head->next == NULL &&
            (s->owner == NULL || s->owner->holders == 0)) {
            released += s->size;
            pygpu_free_remove(a, s->head);
            release_segment(a, s);
        }
        s = next;
    }
    pygpu_pool_reap(a);
    return released;
}

/* A new segment of `size` bytes on `stream` for `owner` (a private pool,
 * or NULL), as one block (not in the free tree).  Empties the cache and
 * retries once when the backend is out of memory or the limit is reached.
 * The lock is dropped around each backend call (see raw_alloc); the
 * segment joins the lists, and the figures move, only once it is obtained,
 * so they stay exact.  (The owner cannot go away meanwhile: its route
 * holds it.) */
static int new_segment(pygpu_allocator *a, size_t size, int pool,
                       private_pool *owner, void *stream, pygpu_block **out)
{
    segment *s = malloc(sizeof(*s));
    pygpu_block *b = block_get(a);
    void *ptr = NULL;
    int rc;

    if (s == NULL || b == NULL) {
        rc = PYGPU_ALLOC_OOM; /* out of host memory for the bookkeeping */
        goto fail;
    }
    rc = raw_alloc(a, size, owner != NULL, &ptr);
    if (rc == PYGPU_ALLOC_OOM) {
        release_cached(a);
        a->stats.num_alloc_retries++;
        rc = raw_alloc(a, size, owner != NULL, &ptr);
    }
    if (rc != PYGPU_ALLOC_OK) {
        goto fail;
    }
    a->stats.num_raw_allocs++;
    stat_add(&a->stats.reserved_bytes, (int64_t)size);
    stat_add(&a->stats.segment, 1);
    s->ptr = ptr;
    s->size = size;
    s->pool = pool;
    s->owner = owner;
    if (owner != NULL) {
        owner->nsegments++;
    }
    s->head = b;
    s->prev = NULL;
    s->next = a->segments;
    if (a->segments != NULL) {
        a->segments->prev = s;
    }
    a->segments = s;
    b->ptr = ptr;
    b->size = size;
    b->stream = stream;
    b->seg = s;
    *out = b;
    return PYGPU_ALLOC_OK;

fail:
    if (rc == PYGPU_ALLOC_OOM) {
        a->stats.num_ooms++;
    }
    free(s);
    if (b != NULL) {
        block_put(a, b);
    }
    return rc;
}

/* ------------------------------------------------------------- interface */
pygpu_allocator *pygpu_allocator_new(const pygpu_alloc_backend *backend,
                                     int device, int caching)
{
    pygpu_allocator *a = calloc(1, sizeof(*a));

    if (a == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a);
        return NULL;
    }
    a->backend = *backend;
    a->device = device;
    a->caching = caching != 0;
    a->rng = 0x9e3779b9u;
    return a;
}

void pygpu_allocator_destroy(pygpu_allocator *a)
{
    pygpu_block *b, *next;

    if (a == NULL) {
        return;
    }
    while (a->segments != NULL) {
        release_segment(a, a->segments);
    }
    pygpu_pool_destroy_all(a);
    for (b = a->spare; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int pygpu_allocator_malloc(pygpu_allocator *a, size_t size, void *stream,
                           pygpu_block **out)
{
    return pygpu_allocator_malloc_routed(a, size, stream, 0, out);
}

int pygpu_allocator_malloc_routed(pygpu_allocator *a, size_t size,
                                  void *stream, uint64_t route,
                                  pygpu_block **out)
{
    size_t rounded, rest;
    pygpu_block *b, *r;
    private_pool *owner;
    int pool, rc;

    *out = NULL;
    if (size == 0) {
        return PYGPU_ALLOC_OK;
    }
    pthread_mutex_lock(&a->lock);
    if (size > MAX_REQUEST) { /* no backend has that much: fail at once */
        a->stats.num_ooms++;
        rc = PYGPU_ALLOC_OOM;
        goto done;
    }
    rounded = (size + ROUND - 1) / ROUND * ROUND;
    pool = rounded <= SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
    owner = pygpu_pool_for_route(a, route);
    if (!a->caching && owner == NULL) {
        rc = new_segment(a, rounded, pool, NULL, stream, &b);
        if (rc != PYGPU_ALLOC_OK) {
            goto done;
        }
    } else { /* a private pool always caches: its blocks stay reserved */
        pygpu_block **root = owner != NULL ? &owner->trees[pool]
                                           : &a->pools[pool];
        pygpu_block **link = pygpu_best_fit(root, stream, rounded);

        if (link != NULL) {
            b = *link;
            pygpu_free_unlink(a, link);
            a->stats.num_cache_hits++;
        } else {
            rc = new_segment(a, segment_size(rounded), pool, owner, stream,
                             &b);
            if (rc != PYGPU_ALLOC_OK) {
                goto done;
            }
        }
        /* Split off the tail when it is worth keeping as its own block. */
        rest = b->size - rounded;
        if (pool == POOL_SMALL ? rest >= ROUND : rest > SMALL_SIZE) {
            r = block_get(a);
            if (r != NULL) { /* else: hand out the whole block */
                r->ptr = b->ptr + rounded;
                r->size = rest;
                r->stream = b->stream;
                r->seg = b->seg;
                r->prev = b;
                r->next = b->next;
                if (b->next != NULL) {
                    b->next->prev = r;
                }
                b->next = r;
                b->size = rounded;
                pygpu_free_insert(a, r);
            }
        }
    }
    b->allocated = 1;
    b->requested = size;
    stat_add(&a->stats.allocated_bytes, (int64_t)b->size);
    stat_add(&a->stats.active_bytes, (int64_t)b->size);
    stat_add(&a->stats.requested_bytes, (int64_t)size);
    stat_add(&a->stats.allocation, 1);
    stat_add(&a->stats.active, 1);
    *out = b;
    rc = PYGPU_ALLOC_OK;

done:
    apply_pending(a);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* Absorb free neighbour n (prev or next of b) into b. */
static void merge(pygpu_allocator *a, pygpu_block *b, pygpu_block *n)
{
    pygpu_free_remove(a, n);
    if (n == b->prev) {
        b->ptr = n->ptr;
        b->prev = n->prev;
        if (n->prev != NULL) {
            n->prev->next = b;
        } else {
            b->seg->head = b;
        }
    } else {
        b->next = n->next;
        if (n->next != NULL) {
            n->next->prev = b;
        }
    }
    b->size += n->size;
    block_put(a, n);
}

void pygpu_allocator_free(pygpu_allocator *a, pygpu_block *b)
{
    if (b == NULL) {
        return;
    }
    pthread_mutex_lock(&a->lock);
    stat_add(&a->stats.allocated_bytes, -(int64_t)b->size);
    stat_add(&a->stats.active_bytes, -(int64_t)b->size);
    stat_add(&a->stats.requested_bytes, -(int64_t)b->requested);
    stat_add(&a->stats.allocation, -1);
    stat_add(&a->stats.active, -1);
    b->allocated = 0;
    b->requested = 0;
    if (!a->caching && b->seg->owner == NULL && !pygpu_pool_routes_open()) {
        release_segment(a, b->seg);
    } else {
        if (b->prev != NULL && !b->prev->allocated) {
            merge(a, b, b->prev);
        }
        if (b->next != NULL && !b->next->allocated) {
            merge(a, b, b->next);
        }
        pygpu_free_insert(a, b);
        apply_pending(a);
    }
    pthread_mutex_unlock(&a->lock);
}

size_t pygpu_allocator_empty_cache(pygpu_allocator *a)
{
    size_t released;

    pthread_mutex_lock(&a->lock);
    released = release_cached(a);
    apply_pending(a);
    pthread_mutex_unlock(&a->lock);
    return released;
}
