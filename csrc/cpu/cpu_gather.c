/* cpu_gather.c - the CPU loop of the GATHER kind: elements moved between
 * a dense operand and the slots an index tensor picks along one dim of
 * another (index_select, gather, t[idx], t[idx] = v), or added into them
 * (scatter_add, index_add_).  Plain C, no Python.h.
 *
 * Elements are moved as bytes, by their size, so that every dtype takes
 * the same loop; the index is read as int32 or int64.  A negative index
 * counts from the end unless the mode says PYGPU_GATHER_NO_WRAP.  The rows
 * of the geometry are walked in order and the walk stops at the first
 * index out of range, so that the error names it, as torch's CPU loops
 * do.
 */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_loops.h"
#include "kernels/kernels.h"

typedef struct gather_ctx {
    int esize, index_esize, mode, wrap;
    int64_t dim_stride, dim_size;
    int *failed;
    int64_t *bad;
} gather_ctx;

/* The index of element j of a row, checked: 0 and *w set, or 1 after
 * recording it as the first bad one. */
static inline int
index_at(const char *p, int64_t j, int64_t step, const gather_ctx *c,
         int64_t *w)
{
    int64_t i = c->index_esize == 4 ? ((const int32_t *)p)[j * step]
                                    : ((const int64_t *)p)[j * step];
    *w = i < 0 && c->wrap ? i + c->dim_size : i;
    if (*w < 0 || *w >= c->dim_size) {
        *c->failed = 1;
        *c->bad = i;
        return 1;
    }
    return 0;
}

/* One row for elements of type T: p[0] dense, p[1] indexed, p[2] index,
 * steps s[k] in elements of each.  A row along which the index does not
 * change (index_select's rows) reads it once and copies a plain run. */
#define GATHER_ROW(NAME, T)                                                  \
    static void NAME(char *const *p, const int64_t *s, int64_t n,            \
                     const gather_ctx *c)                                    \
    {                                                                        \
        T *dense = (T *)p[0];                                                \
        T *indexed = (T *)p[1];                                              \
        int64_t w;                                                           \
        if (s[2] == 0) {                                                     \
            if (index_at(p[2], 0, 0, c, &w)) {                               \
                return;                                                      \
            }                                                                \
            T *slots = indexed + w * c->dim_stride;                          \
            if (s[0] == 1 && s[1] == 1) {                                    \
                int sc = c->mode == PYGPU_GATHER_SCATTER;                    \
                memcpy(sc ? (void *)slots : (void *)dense,                   \
                       sc ? (void *)dense : (void *)slots,                   \
                       (size_t)n * sizeof(T));                               \
                return;                                                      \
            }                                                                \
            for (int64_t j = 0; j < n; j++) {                                \
                if (c->mode == PYGPU_GATHER_SCATTER) {                       \
                    slots[j * s[1]] = dense[j * s[0]];                       \
                }                                                            \
                else {                                                       \
                    dense[j * s[0]] = slots[j * s[1]];                       \
                }                                                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        for (int64_t j = 0; j < n; j++) {                                    \
            if (index_at(p[2], j, s[2], c, &w)) {                            \
                return;                                                      \
            }                                                                \
            T *slot = indexed + j * s[1] + w * c->dim_stride;                \
            if (c->mode == PYGPU_GATHER_SCATTER) {                           \
                *slot = dense[j * s[0]];                                     \
            }                                                                \
            else {                                                           \
                dense[j * s[0]] = *slot;                                     \
            }                                                                \
        }                                                                    \
    }

GATHER_ROW(row_1, uint8_t)
GATHER_ROW(row_2, uint16_t)
GATHER_ROW(row_4, uint32_t)
GATHER_ROW(row_8, uint64_t)

/* PYGPU_GATHER_OFFSETS: dense (int64) = the checked index * dim_stride. */
static void
offsets_row(char *const *p, const int64_t *s, int64_t n, const gather_ctx *c)
{
    int64_t *dense = (int64_t *)p[0], w;
    for (int64_t j = 0; j < n; j++) {
        if (index_at(p[2], j, s[2], c, &w)) {
            return;
        }
        dense[j * s[0]] = w * c->dim_stride;
    }
}

/* PYGPU_GATHER_ADD(_INT): indexed slot += dense, in the walk's order (the
 * loop is not split over threads, so the sums are deterministic). */
#define ADD_ROW(NAME, T)                                                     \
    static void NAME(char *const *p, const int64_t *s, int64_t n,            \
                     const gather_ctx *c)                                    \
    {                                                                        \
        const T *dense = (const T *)p[0];                                    \
        T *indexed = (T *)p[1];                                              \
        int64_t w;                                                           \
        for (int64_t j = 0; j < n; j++) {                                    \
            if (index_at(p[2], j, s[2], c, &w)) {                            \
                return;                                                      \
            }                                                                \
            indexed[j * s[1] + w * c->dim_stride] += dense[j * s[0]];        \
        }                                                                    \
    }

ADD_ROW(add_row_f, float)
ADD_ROW(add_row_d, double)
ADD_ROW(add_row_i, int64_t)

static void
gather_row(char *const *p, const int64_t *s, int64_t n, const void *ctx)
{
    const gather_ctx *c = ctx;
    if (*c->failed) {
        return; /* the rest of the walk after an error */
    }
    if (c->mode == PYGPU_GATHER_OFFSETS) {
        offsets_row(p, s, n, c);
        return;
    }
    if (c->mode == PYGPU_GATHER_ADD_INT) {
        add_row_i(p, s, n, c);
        return;
    }
    if (c->mode == PYGPU_GATHER_ADD) {
        if (c->esize == 4) {
            add_row_f(p, s, n, c);
        }
        else {
            add_row_d(p, s, n, c);
        }
        return;
    }
    switch (c->esize) {
    case 1:
        row_1(p, s, n, c);
        break;
    case 2:
        row_2(p, s, n, c);
        break;
    case 4:
        row_4(p, s, n, c);
        break;
    default:
        row_8(p, s, n, c);
        break;
    }
}

int
pygpu_cpu_gather(int esize, void *dense, void *indexed, const void *index,
                 int index_esize, const pygpu_geom *g, int64_t dim_stride,
                 int64_t dim_size, int mode, int64_t *bad)
{
    int failed = 0;
    gather_ctx c = {esize, index_esize, pygpu_gather_base_mode(mode),
                    !(mode & PYGPU_GATHER_NO_WRAP), dim_stride, dim_size,
                    &failed, bad};
    char *const base[3] = {(char *)dense, (char *)indexed, (char *)index};
    const size_t sizes[3] = {(size_t)esize, (size_t)esize,
                             (size_t)index_esize};
    pygpu_cpu_for_each_row(g, 3, base, sizes, gather_row, &c);
    return failed;
}
