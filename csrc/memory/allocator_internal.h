/* allocator_internal.h - the data structures of the caching allocator
 * core, shared by allocator.c (the policy), allocator_pool.c (private
 * pools), allocator_stats.c (the figures and snapshots) and free_tree.c
 * (the free blocks' index).  Nothing else includes this file.
 */
#ifndef PYGPU_ALLOCATOR_INTERNAL_H
#define PYGPU_ALLOCATOR_INTERNAL_H

#include <pthread.h>

#include "memory/allocator.h"

enum { POOL_SMALL = 0, POOL_LARGE = 1 };

/* A private pool (see allocator.h): its own free trees, so that its
 * blocks serve only allocations routed to it. */
typedef struct private_pool {
    uint64_t id;
    int holders;                  /* captures and graphs holding it */
    size_t nsegments;             /* segments it owns */
    pygpu_block *trees[2];        /* free-tree roots, small and large */
    struct private_pool *next;
} private_pool;

/* Allocations tagged with `route` go to `pool` (a capture underway). */
typedef struct pool_route {
    uint64_t route;
    private_pool *pool;
    struct pool_route *next;
} pool_route;

typedef struct segment {
    char *ptr;
    size_t size;
    int pool;                     /* POOL_SMALL or POOL_LARGE */
    private_pool *owner;          /* NULL: the allocator's own pools */
    pygpu_block *head;            /* block at the segment's start */
    struct segment *prev, *next;  /* the allocator's list of segments */
} segment;

struct pygpu_block {
    char *ptr;
    size_t size;                  /* a multiple of 512 */
    size_t requested;             /* caller's size while allocated */
    void *stream;
    segment *seg;
    int allocated;
    pygpu_block *prev, *next;     /* address neighbours in seg (or spare) */
    pygpu_block *left, *right;    /* free-tree children */
    uint32_t prio;                /* free-tree heap priority */
};

struct pygpu_allocator {
    pthread_mutex_t lock;
    pygpu_alloc_backend backend;
    int device;
    int caching;
    size_t limit;                 /* 0: none */
    size_t inflight;              /* bytes being obtained from the backend */
    pygpu_block *pools[2];        /* free-tree roots */
    private_pool *private_pools;
    pool_route *routes;
    segment *segments;
    pygpu_block *spare;           /* recycled block structs, via next */
    uint32_t rng;
    /* net inactive-split change of the operation in progress */
    int64_t pending_split, pending_split_bytes;
    pygpu_alloc_stats stats;
};

/* The free tree of each pool (free_tree.c); callers hold a->lock.  A
 * block's tree is that of its segment's pool kind in its segment's owner
 * (a private pool) or in the allocator. */
/* Put free block b into its pool's tree; its neighbours must be final. */
void pygpu_free_insert(pygpu_allocator *a, pygpu_block *b);
/* Take the free block *link (the tree link that points at it) out. */
void pygpu_free_unlink(pygpu_allocator *a, pygpu_block **link);
/* Take free block b out of its pool's tree. */
void pygpu_free_remove(pygpu_allocator *a, pygpu_block *b);
/* The tree link to the smallest free block of the tree at *root on
 * `stream` with at least `size` bytes (lowest address among equals), or
 * NULL. */
pygpu_block **pygpu_best_fit(pygpu_block **root, void *stream, size_t size);

/* Private pools (allocator_pool.c); callers hold a->lock. */
/* The pool allocations tagged `route` go to, or NULL (route 0: none). */
private_pool *pygpu_pool_for_route(pygpu_allocator *a, uint64_t route);
/* Whether any route is open in the process: no segment may then go back
 * to a backend (cudaFree would break a capture). */
int pygpu_pool_routes_open(void);
/* Forget the pools nobody holds that own no segment any more. */
void pygpu_pool_reap(pygpu_allocator *a);
/* Free every pool and route struct (the allocator is being destroyed). */
void pygpu_pool_destroy_all(pygpu_allocator *a);

#endif /* PYGPU_ALLOCATOR_INTERNAL_H */
