/* allocator_pool.c - the caching allocator core's private pools (the
 * memory of CUDA graphs; semantics in allocator.h) and the routes that
 * send a capture's allocations to them.
 *
 * A pool is created when the first route to it opens and gains a holder
 * per route opened; pygpu_allocator_release_pool takes one away.  A pool
 * nobody holds stays until release_cached (empty_cache) has given back its
 * last segment; then pygpu_pool_reap forgets it.  A pool that is held
 * again before that (a new capture into a shared pool whose graphs were
 * all reset) is simply used again.
 *
 * routes_open counts the routes open in every allocator of the process:
 * while a capture is underway no allocator may call its backend's free.
 */
#define _POSIX_C_SOURCE 200809L

#include "memory/allocator_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_int routes_open;

int pygpu_pool_routes_open(void)
{
    return atomic_load_explicit(&routes_open, memory_order_relaxed) > 0;
}

static private_pool *find_pool(pygpu_allocator *a, uint64_t id)
{
    private_pool *p;

    for (p = a->private_pools; p != NULL; p = p->next) {
        if (p->id == id) {
            return p;
        }
    }
    return NULL;
}

private_pool *pygpu_pool_for_route(pygpu_allocator *a, uint64_t route)
{
    pool_route *r;

    if (route == 0) {
        return NULL;
    }
    for (r = a->routes; r != NULL; r = r->next) {
        if (r->route == route) {
            return r->pool;
        }
    }
    return NULL;
}

void pygpu_pool_reap(pygpu_allocator *a)
{
    private_pool **link = &a->private_pools, *p;

    while ((p = *link) != NULL) {
        if (p->holders == 0 && p->nsegments == 0) {
            *link = p->next;
            free(p);
        } else {
            link = &p->next;
        }
    }
}

void pygpu_pool_destroy_all(pygpu_allocator *a)
{
    private_pool *p, *pnext;
    pool_route *r, *rnext;

    for (r = a->routes; r != NULL; r = rnext) {
        rnext = r->next;
        atomic_fetch_sub(&routes_open, 1);
        free(r);
    }
    a->routes = NULL;
    for (p = a->private_pools; p != NULL; p = pnext) {
        pnext = p->next;
        free(p);
    }
    a->private_pools = NULL;
}

int pygpu_allocator_begin_pool(pygpu_allocator *a, uint64_t pool_id,
                               uint64_t route)
{
    private_pool *p = NULL, *made = NULL;
    pool_route *r = NULL;
    int rc = PYGPU_ALLOC_ERROR;

    pthread_mutex_lock(&a->lock);
    if (pool_id == 0 || route == 0 || pygpu_pool_for_route(a, route)) {
        goto fail;
    }
    r = malloc(sizeof(*r));
    p = find_pool(a, pool_id);
    if (p == NULL) {
        p = made = calloc(1, sizeof(*p));
    }
    if (r == NULL || p == NULL) {
        rc = PYGPU_ALLOC_OOM;
        goto fail;
    }
    if (made != NULL) {
        made->id = pool_id;
        made->next = a->private_pools;
        a->private_pools = made;
    }
    p->holders++;
    r->route = route;
    r->pool = p;
    r->next = a->routes;
    a->routes = r;
    atomic_fetch_add(&routes_open, 1);
    pthread_mutex_unlock(&a->lock);
    return PYGPU_ALLOC_OK;

fail:
    pthread_mutex_unlock(&a->lock);
    free(r);
    free(made);
    return rc;
}

void pygpu_allocator_end_pool(pygpu_allocator *a, uint64_t route)
{
    pool_route **link, *r;

    pthread_mutex_lock(&a->lock);
    for (link = &a->routes; (r = *link) != NULL; link = &r->next) {
        if (r->route == route) {
            *link = r->next;
            free(r);
            atomic_fetch_sub(&routes_open, 1);
            break;
        }
    }
    pthread_mutex_unlock(&a->lock);
}

int pygpu_allocator_release_pool(pygpu_allocator *a, uint64_t pool_id)
{
    private_pool *p;
    int rc = -1;

    pthread_mutex_lock(&a->lock);
    p = find_pool(a, pool_id);
    if (p != NULL && p->holders > 0) {
        p->holders--;
        pygpu_pool_reap(a); /* a pool that never got a segment */
        rc = 0;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int pygpu_allocator_pool_info(pygpu_allocator *a, uint64_t pool_id,
                              pygpu_pool_info *out)
{
    const private_pool *p;
    const pool_route *r;
    const segment *s;
    const pygpu_block *b;
    int found = 0;

    pthread_mutex_lock(&a->lock);
    p = find_pool(a, pool_id);
    if (p != NULL) {
        found = 1;
        out->holders = p->holders;
        out->routes = 0;
        for (r = a->routes; r != NULL; r = r->next) {
            out->routes += r->pool == p;
        }
        out->segments = 0;
        out->reserved_bytes = 0;
        out->allocated_bytes = 0;
        for (s = a->segments; s != NULL; s = s->next) {
            if (s->owner != p) {
                continue;
            }
            out->segments++;
            out->reserved_bytes += s->size;
            for (b = s->head; b != NULL; b = b->next) {
                out->allocated_bytes += b->allocated ? b->size : 0;
            }
        }
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}
