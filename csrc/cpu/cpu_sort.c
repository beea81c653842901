/* cpu_sort.c - the CPU row of PYGPU_K_SORT: the indices that sort each
 * line of a contiguous input seen as [outer, n, inner] along n.
 *
 * A line is read into (key, index) pairs (kernels/sort_key.h: NaN the
 * largest, descending by flipped keys, ties by index) and sorted by a
 * bottom-up merge sort: O(n log n), stable, no recursion.  Lines go to
 * the thread pool in groups of about PYGPU_SORT_TASK elements, each task
 * with its own scratch, so the result does not depend on the threads.
 */
#include <stdlib.h>

#include "cpu/cpu_parallel.h"
#include "kernels/sort_key.h"

/* Elements a task sorts at least (whole lines). */
#define PYGPU_SORT_TASK (1 << 15)
/* Lines shorter than this are sorted by insertion first, in runs. */
#define RUN 16

typedef struct {
    uint64_t key;
    int64_t ix;
} pair;

static inline int
before(const pair *a, const pair *b)
{
    return pygpu_sort_before(a->key, a->ix, b->key, b->ix);
}

/* Sorts v[0..n) with tmp (n pairs) as scratch; the result is in v. */
static void
merge_sort(pair *v, pair *tmp, int64_t n)
{
    for (int64_t lo = 0; lo < n; lo += RUN) {
        int64_t hi = lo + RUN < n ? lo + RUN : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            pair x = v[i];
            int64_t j = i;
            while (j > lo && before(&x, &v[j - 1])) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
    }
    pair *src = v, *dst = tmp;
    for (int64_t w = RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n;
            int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                dst[o++] = before(&src[b], &src[a]) ? src[b++] : src[a++];
            }
            while (a < mid) {
                dst[o++] = src[a++];
            }
            while (b < hi) {
                dst[o++] = src[b++];
            }
        }
        pair *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) {
        for (int64_t i = 0; i < n; i++) {
            v[i] = src[i];
        }
    }
}

typedef struct {
    int dtype;
    int descending;
    int64_t *out;
    const void *in;
    int64_t lines, n, inner, per_task;
} sort_job;

/* Line l: o = l / inner, c = l % inner; its elements are o * n * inner +
 * j * inner + c. */
static void
sort_lines(void *ctx, int64_t task)
{
    const sort_job *j = ctx;
    int64_t first = task * j->per_task;
    int64_t last = first + j->per_task < j->lines ? first + j->per_task
                                                 : j->lines;
    pair *buf = malloc((size_t)(2 * j->n) * sizeof(pair));
    if (buf == NULL) {
        /* no scratch: an insertion sort in the output itself, never a
         * wrong answer (only slow, and only when memory ran out) */
        for (int64_t l = first; l < last; l++) {
            int64_t base = (l / j->inner) * j->n * j->inner + l % j->inner;
            for (int64_t i = 0; i < j->n; i++) {
                int64_t ix = i, p = i;
                uint64_t k = pygpu_sort_key(j->in, j->dtype,
                                            base + i * j->inner,
                                            j->descending);
                while (p > 0) {
                    int64_t prev = j->out[base + (p - 1) * j->inner];
                    uint64_t pk = pygpu_sort_key(j->in, j->dtype,
                                                 base + prev * j->inner,
                                                 j->descending);
                    if (!pygpu_sort_before(k, ix, pk, prev)) {
                        break;
                    }
                    j->out[base + p * j->inner] = prev;
                    p--;
                }
                j->out[base + p * j->inner] = ix;
            }
        }
        return;
    }
    for (int64_t l = first; l < last; l++) {
        int64_t base = (l / j->inner) * j->n * j->inner + l % j->inner;
        for (int64_t i = 0; i < j->n; i++) {
            buf[i].key = pygpu_sort_key(j->in, j->dtype, base + i * j->inner,
                                        j->descending);
            buf[i].ix = i;
        }
        merge_sort(buf, buf + j->n, j->n);
        for (int64_t i = 0; i < j->n; i++) {
            j->out[base + i * j->inner] = buf[i].ix;
        }
    }
    free(buf);
}

void
pygpu_cpu_sort(int dtype, int64_t *out, const void *in, int64_t outer,
               int64_t n, int64_t inner, int descending)
{
    sort_job j = {.dtype = dtype, .descending = descending, .out = out,
                  .in = in, .lines = outer * inner, .n = n, .inner = inner};
    if (j.lines == 0 || n == 0) {
        return;
    }
    j.per_task = n >= PYGPU_SORT_TASK ? 1 : PYGPU_SORT_TASK / n;
    int64_t tasks = (j.lines + j.per_task - 1) / j.per_task;
    if (tasks == 1) {
        sort_lines(&j, 0);
    }
    else {
        pygpu_parallel_run(tasks, sort_lines, &j);
    }
}
