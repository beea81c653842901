/* allocator_internal.h - the data structures of the caching allocator
 * core, shared by allocator.c (the policy) and allocator_stats.c (the
 * figures and snapshots), and free_tree.c (the free blocks' index).
 * Nothing else includes this file.
 */
#ifndef PYGPU_ALLOCATOR_INTERNAL_H
#define PYGPU_ALLOCATOR_INTERNAL_H

#include <pthread.h>

#include "memory/allocator.h"

enum { POOL_SMALL = 0, POOL_LARGE = 1 };

typedef struct segment {
    char *ptr;
    size_t size;
    int pool;
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
    segment *segments;
    pygpu_block *spare;           /* recycled block structs, via next */
    uint32_t rng;
    /* net inactive-split change of the operation in progress */
    int64_t pending_split, pending_split_bytes;
    pygpu_alloc_stats stats;
};

/* The free tree of each pool (free_tree.c); callers hold a->lock. */
/* Put free block b into its pool's tree; its neighbours must be final. */
void pygpu_free_insert(pygpu_allocator *a, pygpu_block *b);
/* Take the free block *link (the tree link that points at it) out. */
void pygpu_free_unlink(pygpu_allocator *a, pygpu_block **link);
/* Take free block b out of its pool's tree. */
void pygpu_free_remove(pygpu_allocator *a, pygpu_block *b);
/* The tree link to the smallest free block of `pool` on `stream` with at
 * least `size` bytes (lowest address among equals), or NULL. */
pygpu_block **pygpu_best_fit(pygpu_allocator *a, int pool, void *stream,
                             size_t size);

#endif /* PYGPU_ALLOCATOR_INTERNAL_H */
