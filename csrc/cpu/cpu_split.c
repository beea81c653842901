/* cpu_split.c - elementwise, fill, random, softmax, cross-entropy and
 * optimizer-step rows split into tasks for the thread pool.
 *
 * An elementwise geometry is cut into boxes: the leading dims 0 .. d-1 are
 * taken one index at a time and dim d is cut into `cuts` ranges, d being
 * the first dim at which there are enough pieces.  Each task runs the row
 * on its box through a copy of the row's arguments whose geometry holds
 * dims d .. ndim-1 and whose pointers start at the box.  Every element is
 * computed by the same loop as before, so the results do not depend on the
 * cut.  Random numbers are cut at multiples of 4 elements, each part
 * starting its Philox counter where the whole would be (cpu_random.c), so
 * they are the same numbers as well.
 */
#include <stdlib.h>

#include "memory/memory.h"
#include "cpu/cpu_copy.h"
#include "cpu/cpu_parallel.h"
#include "cpu/cpu_split.h"
#include "kernels/optim.h"

typedef struct {
    pygpu_kernel_fn fn;
    const pygpu_kargs *k;
    int nops;              /* operands of the geometry, output first */
    size_t esize[3];       /* their element sizes */
    int d;                 /* the dim that is cut */
    int64_t cuts;          /* ranges of dim d */
} box_job;

static void
box_task(void *ctx, int64_t t)
{
    const box_job *j = ctx;
    const pygpu_geom *g = j->k->g;
    int64_t lead = t / j->cuts, r = t % j->cuts;
    int64_t len = g->shape[j->d];
    int64_t lo = len * r / j->cuts, hi = len * (r + 1) / j->cuts;
    int64_t off[3] = {0, 0, 0};
    for (int d = j->d - 1; d >= 0; d--) {
        int64_t i = lead % g->shape[d];
        lead /= g->shape[d];
        for (int op = 0; op < j->nops; op++) {
            off[op] += i * g->stride[op][d];
        }
    }
    pygpu_geom sub;
    sub.ndim = g->ndim - j->d;
    for (int d = 0; d < sub.ndim; d++) {
        sub.shape[d] = g->shape[j->d + d];
        for (int op = 0; op < 3; op++) {
            sub.stride[op][d] = g->stride[op][j->d + d];
        }
    }
    sub.shape[0] = hi - lo;
    for (int op = 0; op < j->nops; op++) {
        off[op] += lo * g->stride[op][j->d];
    }
    pygpu_kargs local = *j->k; /* numel stays the whole's */
    local.g = &sub;
    local.out = (char *)j->k->out + off[0] * (int64_t)j->esize[0];
    for (int op = 1; op < j->nops; op++) {
        local.in[op - 1] =
            (const char *)j->k->in[op - 1] + off[op] * (int64_t)j->esize[op];
    }
    j->fn(&local);
}

static size_t
esize(int dtype)
{
    return (size_t)pygpu_dtype_table[dtype].itemsize;
}

static int
split_geom(int kind, pygpu_kernel_fn fn, pygpu_kargs *k, int64_t parts)
{
    const pygpu_geom *g = k->g;
    box_job j = {.fn = fn, .k = k, .esize = {esize(k->dtype)}};
    /* Only the kinds over one geometry split here; the others (scans,
     * gathers, masks: no g, or rows that must stay whole) run unsplit, as
     * the caller does on -1. */
    switch (kind) {
    case PYGPU_K_BINARY:
        j.nops = 3;
        j.esize[1] = esize(k->in_dtypes[0]);
        j.esize[2] = esize(k->in_dtypes[1]);
        break;
    case PYGPU_K_BINARY_SCALAR:
    case PYGPU_K_COPY:
        j.nops = 2;
        j.esize[1] = esize(k->in_dtypes[0]);
        break;
    case PYGPU_K_UNARY:
        j.nops = 2;
        j.esize[1] = j.esize[0];
        break;
    default:
        return -1;
    }
    if (g == NULL || g->ndim == 0) {
        return -1;
    }
    /* A copy is cut in the output's memory order (cpu_copy.c), so that
     * each task writes whole stretches of the output. */
    pygpu_geom ordered;
    pygpu_kargs local;
    if (kind == PYGPU_K_COPY) {
        ordered = *g;
        pygpu_cpu_copy_order(&ordered);
        if (ordered.ndim == 0) {
            return -1;
        }
        local = *k;
        local.g = &ordered;
        g = &ordered;
        j.k = &local;
    }
    /* The first dim d with lead * shape[d] >= parts, lead being the
     * product of the dims before it. */
    int64_t lead = 1;
    int d = 0;
    while (d < g->ndim - 1 && lead * g->shape[d] < parts) {
        lead *= g->shape[d];
        d++;
    }
    int64_t cuts = (parts + lead - 1) / lead;
    j.d = d;
    j.cuts = cuts < g->shape[d] ? cuts : g->shape[d];
    pygpu_parallel_run(lead * j.cuts, box_task, &j);
    return 0;
}

/* FILL and RANDOM: contiguous ranges, multiples of 4 elements. */
typedef struct {
    pygpu_kernel_fn fn;
    const pygpu_kargs *k;
    int kind;
    int64_t parts;
} range_job;

static void
range_task(void *ctx, int64_t t)
{
    const range_job *j = ctx;
    int64_t quads = (j->k->numel + 3) / 4;
    int64_t lo = quads * t / j->parts * 4;
    int64_t hi = quads * (t + 1) / j->parts * 4;
    if (hi > j->k->numel) {
        hi = j->k->numel;
    }
    pygpu_kargs local = *j->k;
    local.out = (char *)j->k->out + lo * (int64_t)esize(j->k->dtype);
    local.numel = hi - lo;
    if (j->kind == PYGPU_K_RANDOM) {
        local.philox.offset += (uint64_t)(lo / 4);
        if (local.rnd.rates != NULL && (local.flag == PYGPU_DIST_POISSON ||
                                        local.flag == PYGPU_DIST_BERNOULLI)) {
            local.rnd.rates = (const char *)local.rnd.rates +
                              lo * (int64_t)esize(j->k->dtype);
        }
    }
    if (local.numel > 0) {
        j->fn(&local);
    }
}

/* SOFTMAX: ranges of the outer index, each line computed as before. */
typedef struct {
    pygpu_kernel_fn fn;
    const pygpu_kargs *k;
    int64_t parts;
} outer_job;

static void
outer_task(void *ctx, int64_t t)
{
    const outer_job *j = ctx;
    const pygpu_kargs *k = j->k;
    int64_t lo = k->outer * t / j->parts, hi = k->outer * (t + 1) / j->parts;
    int64_t es = (int64_t)esize(k->dtype);
    int64_t out_line = k->op == PYGPU_LOGSUMEXP ? k->inner : k->n * k->inner;
    pygpu_kargs local = *k;
    local.in[0] = (const char *)k->in[0] + lo * k->n * k->inner * es;
    local.out = (char *)k->out + lo * out_line * es;
    local.outer = hi - lo;
    if (local.outer > 0) {
        j->fn(&local);
    }
}

/* XENT: ranges of the outer index through pygpu_cpu_xent_lines; a part
 * that meets a target out of range leaves it in its slot, and the first
 * such part's (in sample order) is the row's answer. */
typedef struct {
    const pygpu_kargs *k;
    int64_t parts;
    int *failed;
    int64_t *bad;
} xent_job;

static void
xent_task(void *ctx, int64_t t)
{
    const xent_job *j = ctx;
    const pygpu_xent_args *a = j->k->xent;
    int64_t lo = a->outer * t / j->parts, hi = a->outer * (t + 1) / j->parts;
    j->failed[t] = pygpu_cpu_xent_lines(j->k->op, j->k->dtype, a, lo, hi,
                                        &j->bad[t]);
}

static int
split_xent(pygpu_kargs *k, int64_t parts)
{
    const pygpu_xent_args *a = k->xent;
    if (a->outer < 2 || a->n <= 0 || a->inner <= 0) {
        return -1;
    }
    xent_job j = {.k = k, .parts = parts < a->outer ? parts : a->outer};
    int rc = -1;
    j.failed = calloc((size_t)j.parts, sizeof(int));
    j.bad = calloc((size_t)j.parts, sizeof(int64_t));
    if (j.failed == NULL || j.bad == NULL) {
        goto fail;
    }
    pygpu_parallel_run(j.parts, xent_task, &j);
    k->ix.failed = 0;
    for (int64_t t = 0; t < j.parts; t++) {
        if (j.failed[t]) {
            k->ix.failed = 1;
            k->ix.bad = j.bad[t];
            break;
        }
    }
    rc = 0;
fail:
    free(j.failed);
    free(j.bad);
    return rc;
}

/* OPTIM: the chunks of PYGPU_OPTIM_CHUNK elements the CUDA launch uses,
 * one task each, through a one-tensor step whose pointers start at the
 * chunk (every element is updated on its own, so the bits are the same). */
typedef struct {
    pygpu_kernel_fn fn;
    const pygpu_kargs *k;
    int64_t *tensor, *start; /* chunk c: tensor[c] from element start[c] */
} optim_job;

static void
optim_task(void *ctx, int64_t c)
{
    const optim_job *j = ctx;
    const pygpu_optim_step *s = j->k->optim;
    int64_t i = j->tensor[c], lo = j->start[c];
    int64_t len = s->numel[i] - lo < PYGPU_OPTIM_CHUNK ? s->numel[i] - lo
                                                      : PYGPU_OPTIM_CHUNK;
    int64_t es = (int64_t)esize(j->k->dtype);
    void *ptr[PYGPU_OPT_NLISTS];
    pygpu_optim_step sub = *s;
    sub.n = 1;
    sub.numel = &len;
    for (int l = 0; l < PYGPU_OPT_NLISTS; l++) {
        if (s->lists[l] != NULL) {
            ptr[l] = s->lists[l][i] == NULL
                         ? NULL
                         : (char *)s->lists[l][i] + lo * es;
            sub.lists[l] = &ptr[l];
        }
    }
    pygpu_kargs local = *j->k;
    local.optim = &sub;
    j->fn(&local);
}

static int
split_optim(pygpu_kernel_fn fn, pygpu_kargs *k)
{
    const pygpu_optim_step *s = k->optim;
    int64_t count = pygpu_optim_chunks(s);
    optim_job j = {.fn = fn, .k = k};
    int rc = -1;
    j.tensor = malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    j.start = malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (j.tensor == NULL || j.start == NULL) {
        goto fail;
    }
    int64_t c = 0;
    for (int64_t i = 0; i < s->n; i++) {
        for (int64_t lo = 0; lo < s->numel[i]; lo += PYGPU_OPTIM_CHUNK) {
            j.tensor[c] = i;
            j.start[c++] = lo;
        }
    }
    pygpu_parallel_run(count, optim_task, &j);
    rc = 0;
fail:
    free(j.tensor);
    free(j.start);
    return rc;
}

int
pygpu_cpu_split_rows(int kind, pygpu_kernel_fn fn, pygpu_kargs *k,
                     int64_t parts)
{
    if (kind == PYGPU_K_OPTIM) {
        return split_optim(fn, k);
    }
    if (kind == PYGPU_K_XENT) {
        return split_xent(k, parts);
    }
    if (kind == PYGPU_K_SOFTMAX) {
        if (k->outer < 2) {
            return -1;
        }
        outer_job j = {.fn = fn, .k = k,
                       .parts = parts < k->outer ? parts : k->outer};
        pygpu_parallel_run(j.parts, outer_task, &j);
        return 0;
    }
    if (kind == PYGPU_K_FILL || kind == PYGPU_K_RANDOM) {
        range_job j = {.fn = fn, .k = k, .kind = kind, .parts = parts};
        pygpu_parallel_run(parts, range_task, &j);
        return 0;
    }
    return split_geom(kind, fn, k, parts);
}
