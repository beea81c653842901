/* cpu_split_reduce.c - reductions split into tasks for the thread pool,
 * with the results of the unsplit loop, bit for bit, whatever the number
 * of threads.
 *
 *  - outer >= 2: ranges of the outer index, each output computed by the
 *    loop exactly as before.
 *  - outer == 1, inner == 1 (a full reduction): the run of n elements is
 *    cut into pieces, the loop reduces each piece, and the pieces'
 *    results are combined here so as to give the loop's own answer:
 *      sums with a float / double accumulator (every floating input)
 *      follow the pairwise tree of cpu_reduce.c (sum_contig halves a run
 *      at a multiple of TREE_LEAF elements) down to pieces of at most PIECE
 *      elements, which are that tree's subtrees; the pieces leave their
 *      sums unrounded, in the accumulator's dtype (PYGPU_REDUCE_TO_ACC),
 *      and they are added here up the same tree in the same type, then
 *      rounded once to the output's dtype;
 *      int64 sums (bool and integer inputs) wrap around exactly, in any
 *      order;
 *      max takes the first piece's maximum that no later piece beats, or
 *      the first NaN, as the loop does within a run.
 *    Ops this file does not know are not split.
 *  - otherwise (one outer slab over several columns) not split.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"
#include "cpu/cpu_parallel.h"
#include "cpu/cpu_reduce.h"
#include "cpu/cpu_split.h"
#include "cpu/half.h"

/* cpu_reduce.c's pairwise sum halves a run of n elements at
 * (n / TREE_LEAF + 1) / 2 * TREE_LEAF. */
#define TREE_LEAF PYGPU_SUM_LEAF
/* Pieces of a full reduction: at most this many elements (by size alone,
 * so the pieces never depend on the thread count). */
#define PIECE (1 << 16)

typedef struct {
    pygpu_kernel_fn fn;
    const pygpu_kargs *k;
    size_t es_in, es_out;  /* element sizes of the input and the output */
    int out_dtype;
    int64_t parts;         /* outer ranges */
    /* Full reductions: piece i covers [start[i], start[i] + len[i]) and
     * leaves its result at part + i * es_part, of part_dtype (and its
     * index at at[i]). */
    int op, flag, part_dtype;
    size_t es_part;
    int64_t *start, *len, *at;
    char *part;
} reduce_job;

static void
outer_task(void *ctx, int64_t t)
{
    const reduce_job *j = ctx;
    const pygpu_kargs *k = j->k;
    int64_t lo = k->outer * t / j->parts, hi = k->outer * (t + 1) / j->parts;
    pygpu_kargs local = *k;
    local.out = (char *)k->out + lo * k->inner * (int64_t)j->es_out;
    local.indices = k->indices ? k->indices + lo * k->inner : NULL;
    local.in[0] = (const char *)k->in[0] + lo * k->n * k->inner *
                  (int64_t)j->es_in;
    local.outer = hi - lo;
    if (local.outer > 0) {
        j->fn(&local);
    }
}

static void
piece_task(void *ctx, int64_t t)
{
    const reduce_job *j = ctx;
    pygpu_kargs local = *j->k;
    local.op = j->op;
    local.flag = j->flag;
    local.out = j->part + t * (int64_t)j->es_part;
    local.indices = j->at ? j->at + t : NULL;
    local.in[0] = (const char *)j->k->in[0] + j->start[t] * (int64_t)j->es_in;
    local.outer = 1;
    local.n = j->len[t];
    local.inner = 1;
    j->fn(&local);
}

/* The pieces of the pairwise tree over [lo, lo + n), in order. */
static void
tree_pieces(int64_t lo, int64_t n, reduce_job *j, int64_t *count)
{
    if (n <= PIECE) {
        j->start[*count] = lo;
        j->len[*count] = n;
        (*count)++;
        return;
    }
    int64_t half = (n / TREE_LEAF + 1) / 2 * TREE_LEAF;
    tree_pieces(lo, half, j, count);
    tree_pieces(lo + half, n - half, j, count);
}

/* The tree above the pieces, as cpu_reduce.c's sum_contig adds it. */
#define TREE_SUM(SFX, T)                                                     \
    static T tree_sum_##SFX(const T *part, int64_t n, int64_t *i)            \
    {                                                                        \
        if (n <= PIECE) {                                                    \
            return part[(*i)++];                                             \
        }                                                                    \
        int64_t half = (n / TREE_LEAF + 1) / 2 * TREE_LEAF;                  \
        T a = tree_sum_##SFX(part, half, i);                                 \
        T b = tree_sum_##SFX(part, n - half, i);                             \
        return a + b;                                                        \
    }

TREE_SUM(f32, float)
TREE_SUM(f64, double)

/* The value of floating piece i as a double (exact). */
static double
piece_value(const reduce_job *j, int64_t i)
{
    const char *p = j->part + i * (int64_t)j->es_part;
    switch (j->part_dtype) {
    case PYGPU_FLOAT32:
        return *(const float *)p;
    case PYGPU_FLOAT16:
        return pygpu_half_to_float(*(const uint16_t *)p);
    case PYGPU_BFLOAT16:
        return pygpu_bf16_to_float(*(const uint16_t *)p);
    default:
        return *(const double *)p;
    }
}

/* The value of bool or integer piece i as an int64 (exact). */
static int64_t
piece_int(const reduce_job *j, int64_t i)
{
    const char *p = j->part + i * (int64_t)j->es_part;
    switch (j->part_dtype) {
    case PYGPU_BOOL:
    case PYGPU_UINT8:
        return *(const uint8_t *)p;
    case PYGPU_INT32:
        return *(const int32_t *)p;
    default:
        return *(const int64_t *)p;
    }
}

/* "Piece i replaces the best piece b": larger, or NaN while b is not. */
static int
bigger(const reduce_job *j, int64_t i, int64_t b)
{
    if (!pygpu_dtype_table[j->part_dtype].is_floating_point) {
        return piece_int(j, i) > piece_int(j, b);
    }
    double v = piece_value(j, i), m = piece_value(j, b);
    return v > m || (isnan(v) && !isnan(m));
}

/* A float sum s stored in the output's dtype. */
static void
store_float(const reduce_job *j, float s)
{
    switch (j->out_dtype) {
    case PYGPU_FLOAT16:
        *(uint16_t *)j->k->out = pygpu_float_to_half(s);
        break;
    case PYGPU_BFLOAT16:
        *(uint16_t *)j->k->out = pygpu_float_to_bf16(s);
        break;
    default:
        *(float *)j->k->out = s;
        break;
    }
}

/* Combines the pieces' results into k's single output. */
static void
combine(const reduce_job *j, int64_t count)
{
    const pygpu_kargs *k = j->k;
    int64_t i = 0;
    if (j->op == PYGPU_MAX) {
        int64_t best = 0;
        for (i = 1; i < count; i++) {
            if (bigger(j, i, best)) {
                best = i;
            }
        }
        memcpy(k->out, j->part + best * (int64_t)j->es_part, j->es_part);
        if (k->indices != NULL) {
            k->indices[0] = j->start[best] + j->at[best];
        }
        return;
    }
    int mean = k->op == PYGPU_MEAN;
    if (j->part_dtype == PYGPU_FLOAT32) {
        float s = tree_sum_f32((const float *)j->part, k->n, &i);
        store_float(j, mean ? s / (float)k->n : s);
    }
    else if (j->part_dtype == PYGPU_FLOAT64) {
        double s = tree_sum_f64((const double *)j->part, k->n, &i);
        *(double *)k->out = mean ? s / (double)k->n : s;
    }
    else {
        uint64_t s = 0;
        for (i = 0; i < count; i++) {
            s += (uint64_t)((const int64_t *)j->part)[i];
        }
        *(int64_t *)k->out = mean ? (int64_t)s / k->n : (int64_t)s;
    }
}

/* Whether a full reduction of op is split here (any input dtype). */
static int
splits_full(int op)
{
    return op == PYGPU_MAX || op == PYGPU_SUM || op == PYGPU_MEAN;
}

static int
split_full(reduce_job *j)
{
    const pygpu_kargs *k = j->k;
    int64_t n = k->n;
    /* Tree pieces hold more than PIECE / 2 - TREE_LEAF elements each
     * (both halves of a run are at least half of it less half a leaf). */
    int64_t most = n / (PIECE / 2 - TREE_LEAF) + 2;
    int max = k->op == PYGPU_MAX;
    j->op = max ? PYGPU_MAX : PYGPU_SUM;
    /* A max piece gives the output's dtype, a sum piece the accumulator. */
    j->flag = max ? k->flag : PYGPU_REDUCE_TO_ACC;
    j->part_dtype = pygpu_reduce_out_dtype(j->op, k->dtype, j->flag);
    j->es_part = (size_t)pygpu_dtype_table[j->part_dtype].itemsize;
    j->start = malloc((size_t)most * sizeof(int64_t));
    j->len = malloc((size_t)most * sizeof(int64_t));
    j->at = max ? malloc((size_t)most * sizeof(int64_t)) : NULL;
    j->part = malloc((size_t)most * j->es_part);
    int rc = -1;
    if (j->start == NULL || j->len == NULL || j->part == NULL ||
        (max && j->at == NULL)) {
        goto fail;
    }
    int64_t count = 0;
    if (j->part_dtype == PYGPU_FLOAT32 || j->part_dtype == PYGPU_FLOAT64) {
        tree_pieces(0, n, j, &count);
    }
    else {
        for (int64_t lo = 0; lo < n; lo += PIECE) {
            j->start[count] = lo;
            j->len[count] = n - lo < PIECE ? n - lo : PIECE;
            count++;
        }
    }
    pygpu_parallel_run(count, piece_task, j);
    combine(j, count);
    rc = 0;
fail:
    free(j->start);
    free(j->len);
    free(j->at);
    free(j->part);
    return rc;
}

int
pygpu_cpu_split_reduce(pygpu_kernel_fn fn, pygpu_kargs *k, int64_t parts)
{
    int out_dtype = pygpu_reduce_out_dtype(k->op, k->dtype, k->flag);
    reduce_job j = {
        .fn = fn, .k = k, .out_dtype = out_dtype,
        .es_in = (size_t)pygpu_dtype_table[k->dtype].itemsize,
        .es_out = (size_t)pygpu_dtype_table[out_dtype].itemsize};
    if (k->outer >= 2) {
        j.parts = parts < k->outer ? parts : k->outer;
        pygpu_parallel_run(j.parts, outer_task, &j);
        return 0;
    }
    if (k->outer == 1 && k->inner == 1 && k->n > PIECE &&
        splits_full(k->op)) {
        return split_full(&j);
    }
    return -1;
}
