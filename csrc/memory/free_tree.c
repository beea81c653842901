/* free_tree.c - the free blocks of a pool, indexed for best fit.
 *
 * A treap ordered by (stream, size, address): the best fit for a request
 * is one descent, insertion and removal are O(log n).  Inserting and
 * removing also keep the allocator's pending inactive-split figures (see
 * allocator.c), since whether a free block counts as an inactive split is
 * decided while it sits in the tree.
 */
#include "memory/allocator_internal.h"

static uint32_t next_prio(pygpu_allocator *a)
{
    /* xorshift32: good enough to keep the treap balanced on average */
    uint32_t x = a->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    a->rng = x;
    return x;
}

/* Order of the free tree: stream, then size, then address. */
static int key_less(const pygpu_block *x, const pygpu_block *y)
{
    uintptr_t sx = (uintptr_t)x->stream, sy = (uintptr_t)y->stream;
    if (sx != sy) {
        return sx < sy;
    }
    if (x->size != y->size) {
        return x->size < y->size;
    }
    return (uintptr_t)x->ptr < (uintptr_t)y->ptr;
}

/* Split tree t into the keys less than k (*lo) and the rest (*hi). */
static void tree_split(pygpu_block *t, const pygpu_block *k,
                       pygpu_block **lo, pygpu_block **hi)
{
    if (t == NULL) {
        *lo = NULL;
        *hi = NULL;
    } else if (key_less(t, k)) {
        tree_split(t->right, k, &t->right, hi);
        *lo = t;
    } else {
        tree_split(t->left, k, lo, &t->left);
        *hi = t;
    }
}

/* Join two trees where every key of lo is less than every key of hi. */
static pygpu_block *tree_join(pygpu_block *lo, pygpu_block *hi)
{
    if (lo == NULL) {
        return hi;
    }
    if (hi == NULL) {
        return lo;
    }
    if (lo->prio > hi->prio) {
        lo->right = tree_join(lo->right, hi);
        return lo;
    }
    hi->left = tree_join(lo, hi->left);
    return hi;
}

/* The tree block b belongs in: its segment's pool kind, in the segment's
 * private pool or in the allocator. */
static pygpu_block **root_of(pygpu_allocator *a, const pygpu_block *b)
{
    const segment *s = b->seg;

    return s->owner != NULL ? &s->owner->trees[s->pool] : &a->pools[s->pool];
}

static int is_split(const pygpu_block *b)
{
    return b->prev != NULL || b->next != NULL;
}

/* Put a free block into its pool's tree.  Its neighbours must be final:
 * whether it counts as an inactive split depends on them, and does not
 * change while it stays in the tree (a neighbour that changes merges with
 * it, which removes it first). */
void pygpu_free_insert(pygpu_allocator *a, pygpu_block *b)
{
    pygpu_block **p = root_of(a, b);

    /* Descend to where b's priority belongs, then b takes that place with
     * the subtree found there split around it. */
    b->prio = next_prio(a);
    while (*p != NULL && (*p)->prio > b->prio) {
        p = key_less(b, *p) ? &(*p)->left : &(*p)->right;
    }
    tree_split(*p, b, &b->left, &b->right);
    *p = b;
    if (is_split(b)) {
        a->pending_split += 1;
        a->pending_split_bytes += (int64_t)b->size;
    }
}

/* Take the free block *link (the tree link that points at it) out of its
 * tree. */
void pygpu_free_unlink(pygpu_allocator *a, pygpu_block **link)
{
    pygpu_block *b = *link;

    *link = tree_join(b->left, b->right);
    if (is_split(b)) {
        a->pending_split -= 1;
        a->pending_split_bytes -= (int64_t)b->size;
    }
}

void pygpu_free_remove(pygpu_allocator *a, pygpu_block *b)
{
    pygpu_block **p = root_of(a, b);

    while (*p != b) {
        p = key_less(b, *p) ? &(*p)->left : &(*p)->right;
    }
    pygpu_free_unlink(a, p);
}

/* The tree link to the smallest free block of the tree at *root on
 * `stream` with at least `size` bytes (lowest address among equals), or
 * NULL.  Returning the link lets the caller unlink the block without a
 * second descent. */
pygpu_block **pygpu_best_fit(pygpu_block **root, void *stream, size_t size)
{
    pygpu_block **link = root, **best = NULL;
    pygpu_block key;

    key.stream = stream;
    key.size = size;
    key.ptr = NULL;
    while (*link != NULL) {
        if (key_less(*link, &key)) {
            link = &(*link)->right;
        } else {
            best = link;
            link = &(*link)->left;
        }
    }
    if (best != NULL && (*best)->stream != stream) {
        return NULL;
    }
    return best;
}
