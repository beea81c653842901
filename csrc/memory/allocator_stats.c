/* allocator_stats.c - the caching allocator core's read side: block
 * accessors, the figures and their resets, the limit, and the segment
 * snapshot.  Every function that reads shared state takes the mutex.
 */
#define _POSIX_C_SOURCE 200809L

#include "memory/allocator_internal.h"

void *pygpu_block_ptr(const pygpu_block *b)
{
    return b != NULL ? b->ptr : NULL;
}

size_t pygpu_block_size(const pygpu_block *b)
{
    return b != NULL ? b->size : 0;
}

void pygpu_allocator_get_stats(pygpu_allocator *a, pygpu_alloc_stats *out)
{
    pthread_mutex_lock(&a->lock);
    *out = a->stats;
    pthread_mutex_unlock(&a->lock);
}

/* The stat counters of a pygpu_alloc_stats, for the resets. */
static pygpu_stat *stat_at(pygpu_alloc_stats *s, int i)
{
    pygpu_stat *all[] = {
        &s->allocated_bytes, &s->reserved_bytes, &s->active_bytes,
        &s->requested_bytes, &s->segment, &s->allocation, &s->active,
        &s->inactive_split, &s->inactive_split_bytes};
    return i < (int)(sizeof(all) / sizeof(all[0])) ? all[i] : NULL;
}

void pygpu_allocator_reset_peak(pygpu_allocator *a)
{
    pygpu_stat *s;
    int i;

    pthread_mutex_lock(&a->lock);
    for (i = 0; (s = stat_at(&a->stats, i)) != NULL; i++) {
        s->peak = s->current;
    }
    pthread_mutex_unlock(&a->lock);
}

void pygpu_allocator_reset_accumulated(pygpu_allocator *a)
{
    pygpu_stat *s;
    int i;

    pthread_mutex_lock(&a->lock);
    for (i = 0; (s = stat_at(&a->stats, i)) != NULL; i++) {
        s->allocated = 0;
        s->freed = 0;
    }
    a->stats.num_alloc_retries = 0;
    a->stats.num_ooms = 0;
    a->stats.num_cache_hits = 0;
    a->stats.num_raw_allocs = 0;
    a->stats.num_raw_frees = 0;
    pthread_mutex_unlock(&a->lock);
}

void pygpu_allocator_set_limit(pygpu_allocator *a, size_t limit)
{
    pthread_mutex_lock(&a->lock);
    a->limit = limit;
    pthread_mutex_unlock(&a->lock);
}

size_t pygpu_allocator_get_limit(pygpu_allocator *a)
{
    size_t limit;

    pthread_mutex_lock(&a->lock);
    limit = a->limit;
    pthread_mutex_unlock(&a->lock);
    return limit;
}

int pygpu_allocator_device(const pygpu_allocator *a)
{
    return a->device;
}

const pygpu_alloc_backend *pygpu_allocator_backend(const pygpu_allocator *a)
{
    return &a->backend;
}

size_t pygpu_allocator_segments(pygpu_allocator *a, pygpu_segment_info *out,
                                size_t max)
{
    const segment *s;
    const pygpu_block *b;
    size_t n = 0;

    pthread_mutex_lock(&a->lock);
    for (s = a->segments; s != NULL; s = s->next, n++) {
        if (n >= max) {
            continue; /* still counted */
        }
        out[n].ptr = s->ptr;
        out[n].size = s->size;
        out[n].allocated = 0;
        out[n].is_small = s->pool == POOL_SMALL;
        out[n].nblocks = 0;
        out[n].pool_id = s->owner != NULL ? s->owner->id : 0;
        for (b = s->head; b != NULL; b = b->next) {
            out[n].nblocks++;
            if (b->allocated) {
                out[n].allocated += b->size;
            }
        }
    }
    pthread_mutex_unlock(&a->lock);
    return n;
}
