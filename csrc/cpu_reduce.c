/* cpu_reduce.c - CPU reductions (sum, mean, max) of a contiguous input seen
 * as [outer, n, inner], over the middle dim.
 *
 * Two memory layouts, both read in address order:
 *  - inner == 1 (a full reduction, or over the last dim): each output is
 *    the reduction of one contiguous run of n elements.
 *  - inner > 1: the n rows of a slab are added into a row buffer one after
 *    the other, so memory is streamed row by row instead of walked column
 *    by column with stride inner.  Columns are taken in chunks so that the
 *    buffers stay small and on the stack.
 *
 * Floating-point sums are pairwise: short blocks are summed directly (fast,
 * vectorized) and the block sums are then added in a balanced tree, so the
 * rounding error grows like log(n) rather than n (a single float
 * accumulator stops growing at 2^24 when adding ones).  float16 and float32
 * accumulate in float, float64 in double; int64 sums wrap around exactly.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "half.h"
#include "kernels/kernels.h"

/* Contiguous runs of up to SUM_LEAF elements are summed directly. */
#define SUM_LEAF 128
/* Rows summed directly into one row buffer before buffers are paired. */
#define ROW_LEAF 16
/* Bytes of stack for the row buffers of the pairwise row sum. */
#define ROW_BUDGET 32768
/* Row buffers: one per level of the pairing tree (at most 64 levels for a
 * 64-bit count of blocks) plus one being filled. */
#define MAX_ROW_BUFS 66
/* Columns per chunk for max over rows (value and index buffers). */
#define MAX_CHUNK 512

#define AS_IS(x) (x)
#define F_ISNAN(x) ((x) != (x))
#define I_ISNAN(x) 0

/* Number of row buffers the pairwise row sum needs for n rows: the binary
 * counter of blocks has floor(log2(blocks)) + 1 digits, plus the buffer
 * being filled. */
static int row_buffers(int64_t n)
{
    uint64_t blocks = (uint64_t)(n + ROW_LEAF - 1) / ROW_LEAF;
    int digits = 0;
    while (blocks != 0) {
        digits++;
        blocks >>= 1;
    }
    return digits + 1;
}

/* Columns per chunk when nbuf buffers of elem_size bytes share the budget:
 * a multiple of 8 (whole vectors), at most inner. */
static int64_t row_chunk(int nbuf, size_t elem_size, int64_t inner)
{
    int64_t w = (int64_t)(ROW_BUDGET / elem_size) / nbuf;
    w &= ~(int64_t)7;
    return w < inner ? w : inner;
}

/* ------------------------------------------------------ contiguous sum */

/* sum_leaf: up to SUM_LEAF elements into 8 independent lanes, which gcc
 * turns into vector adds (a single accumulator would have to stay in
 * order).  sum_contig: split into halves on leaf boundaries and add. */
#define SUM_CONTIG(SFX, T, ACC, LD)                                          \
    static ACC sum_leaf_##SFX(const T *restrict x, int64_t m)                \
    {                                                                        \
        ACC lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};                              \
        int64_t i = 0;                                                       \
        for (; i + 8 <= m; i += 8) {                                         \
            for (int k = 0; k < 8; k++) {                                    \
                lane[k] += LD(x[i + k]);                                     \
            }                                                                \
        }                                                                    \
        ACC s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +                \
                ((lane[4] + lane[5]) + (lane[6] + lane[7]));                 \
        for (; i < m; i++) {                                                 \
            s += LD(x[i]);                                                   \
        }                                                                    \
        return s;                                                            \
    }                                                                        \
    static ACC sum_contig_##SFX(const T *x, int64_t n)                       \
    {                                                                        \
        if (n <= SUM_LEAF) {                                                 \
            return sum_leaf_##SFX(x, n);                                     \
        }                                                                    \
        int64_t half = (n / SUM_LEAF + 1) / 2 * SUM_LEAF;                    \
        return sum_contig_##SFX(x, half) + sum_contig_##SFX(x + half,        \
                                                            n - half);       \
    }

/* ------------------------------------------------------ sum over rows */

/* Sums n rows of w columns (row j at x + j * inner) pairwise and returns
 * the buffer holding the result.  buf[0 .. nbuf-2] are the levels of a
 * binary counter: while bit l of `count` is set, buf[l] holds the sum of
 * 2^l blocks of ROW_LEAF rows; buf[nbuf-1] is free.  A new block sum merges
 * with the full levels below its place, like a carry, so equal-sized sums
 * are always the ones added together.  The pointers are swapped, never the
 * data. */
#define SUM_ROWS(SFX, T, ACC, LD)                                            \
    static ACC *sum_rows_##SFX(ACC **buf, int nbuf, const T *x, int64_t n,   \
                               int64_t inner, int64_t w)                     \
    {                                                                        \
        uint64_t count = 0;                                                  \
        for (int64_t j0 = 0; j0 < n; j0 += ROW_LEAF) {                       \
            int64_t m = n - j0 < ROW_LEAF ? n - j0 : ROW_LEAF;               \
            ACC *restrict acc = buf[nbuf - 1];                               \
            const T *restrict row = x + j0 * inner;                          \
            for (int64_t c = 0; c < w; c++) {                                \
                acc[c] = LD(row[c]);                                         \
            }                                                                \
            for (int64_t j = 1; j < m; j++) {                                \
                row += inner;                                                \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] += LD(row[c]);                                    \
                }                                                            \
            }                                                                \
            int l = 0;                                                       \
            for (uint64_t bits = count; bits & 1u; bits >>= 1, l++) {        \
                const ACC *restrict part = buf[l];                           \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] = part[c] + acc[c];                               \
                }                                                            \
            }                                                                \
            buf[nbuf - 1] = buf[l];                                          \
            buf[l] = acc;                                                    \
            count++;                                                         \
        }                                                                    \
        /* What is left: the full levels, smallest first. */                 \
        ACC *restrict acc = buf[nbuf - 1];                                   \
        for (int64_t c = 0; c < w; c++) {                                    \
            acc[c] = 0;                                                      \
        }                                                                    \
        for (int l = 0; l < nbuf - 1; l++) {                                 \
            if ((count >> l) & 1u) {                                         \
                const ACC *restrict part = buf[l];                           \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] += part[c];                                       \
                }                                                            \
            }                                                                \
        }                                                                    \
        return acc;                                                          \
    }

/* ------------------------------------------------------- sum and mean */

/* The mean of nothing is NaN, as in PyTorch. */
#define REDUCE_SUM(SFX, T, ACC, LD, ST)                                      \
    SUM_CONTIG(SFX, T, ACC, LD)                                              \
    SUM_ROWS(SFX, T, ACC, LD)                                                \
    static void reduce_sum_##SFX(int mean, T *out, const T *in,              \
                                 int64_t outer, int64_t n, int64_t inner)    \
    {                                                                        \
        if (inner == 1) {                                                    \
            for (int64_t o = 0; o < outer; o++) {                            \
                ACC s = sum_contig_##SFX(in + o * n, n);                     \
                if (mean) {                                                  \
                    s = n > 0 ? s / (ACC)n : (ACC)NAN;                       \
                }                                                            \
                out[o] = ST(s);                                              \
            }                                                                \
            return;                                                          \
        }                                                                    \
        ACC pool[ROW_BUDGET / sizeof(ACC)];                                  \
        ACC *buf[MAX_ROW_BUFS];                                              \
        int nbuf = row_buffers(n);                                           \
        int64_t w = row_chunk(nbuf, sizeof(ACC), inner);                     \
        for (int b = 0; b < nbuf; b++) {                                     \
            buf[b] = pool + b * w;                                           \
        }                                                                    \
        for (int64_t o = 0; o < outer; o++) {                                \
            for (int64_t c0 = 0; c0 < inner; c0 += w) {                      \
                int64_t wc = inner - c0 < w ? inner - c0 : w;                \
                const ACC *s = sum_rows_##SFX(buf, nbuf,                     \
                                              in + o * n * inner + c0, n,    \
                                              inner, wc);                    \
                T *dst = out + o * inner + c0;                               \
                for (int64_t c = 0; c < wc; c++) {                           \
                    ACC v = s[c];                                            \
                    if (mean) {                                              \
                        v = n > 0 ? v / (ACC)n : (ACC)NAN;                   \
                    }                                                        \
                    dst[c] = ST(v);                                          \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

REDUCE_SUM(f32, float, float, AS_IS, AS_IS)
REDUCE_SUM(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half)
REDUCE_SUM(f64, double, double, AS_IS, AS_IS)

/* int64: exact modulo 2^64 in any order, so plain loops (through uint64,
 * whose overflow is defined).  The mean truncates; of nothing it is 0. */
static void reduce_sum_i64(int mean, int64_t *out, const int64_t *in,
                           int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++) {
        const int64_t *restrict x = in + o * n * inner;
        int64_t *restrict dst = out + o * inner;
        if (inner == 1) {
            uint64_t s = 0;
            for (int64_t j = 0; j < n; j++) {
                s += (uint64_t)x[j];
            }
            dst[0] = (int64_t)s;
        } else {
            for (int64_t c = 0; c < inner; c++) {
                dst[c] = 0;
            }
            for (int64_t j = 0; j < n; j++) {
                const int64_t *restrict row = x + j * inner;
                for (int64_t c = 0; c < inner; c++) {
                    dst[c] = (int64_t)((uint64_t)dst[c] + (uint64_t)row[c]);
                }
            }
        }
        if (mean) {
            for (int64_t c = 0; c < inner; c++) {
                dst[c] = n > 0 ? dst[c] / n : 0;
            }
        }
    }
}

/* ---------------------------------------------------------------- max */

/* The first maximum wins; the first NaN wins over everything and ends the
 * search.  !(v <= best) is the one test per element: true for a larger v
 * or a NaN.  Over rows, a column takes a new value when it is larger, or
 * NaN while the column is not NaN yet. */
#define REDUCE_MAX(SFX, T, ACC, LD, ST, ISNAN)                               \
    static void reduce_max_##SFX(T *out, int64_t *indices, const T *in,      \
                                 int64_t outer, int64_t n, int64_t inner)    \
    {                                                                        \
        if (inner == 1) {                                                    \
            for (int64_t o = 0; o < outer; o++) {                            \
                const T *x = in + o * n;                                     \
                ACC best = LD(x[0]);                                         \
                int64_t at = 0;                                              \
                for (int64_t j = 1; j < n && !ISNAN(best); j++) {            \
                    ACC v = LD(x[j]);                                        \
                    if (!(v <= best)) {                                      \
                        best = v;                                            \
                        at = j;                                              \
                    }                                                        \
                }                                                            \
                out[o] = ST(best);                                           \
                if (indices != NULL) {                                       \
                    indices[o] = at;                                         \
                }                                                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        ACC best[MAX_CHUNK];                                                 \
        int64_t at[MAX_CHUNK];                                               \
        for (int64_t o = 0; o < outer; o++) {                                \
            for (int64_t c0 = 0; c0 < inner; c0 += MAX_CHUNK) {              \
                int64_t w = inner - c0 < MAX_CHUNK ? inner - c0 : MAX_CHUNK; \
                const T *row = in + o * n * inner + c0;                      \
                for (int64_t c = 0; c < w; c++) {                            \
                    best[c] = LD(row[c]);                                    \
                    at[c] = 0;                                               \
                }                                                            \
                for (int64_t j = 1; j < n; j++) {                            \
                    row += inner;                                            \
                    for (int64_t c = 0; c < w; c++) {                        \
                        ACC v = LD(row[c]);                                  \
                        if (v > best[c] || (ISNAN(v) && !ISNAN(best[c]))) {  \
                            best[c] = v;                                     \
                            at[c] = j;                                       \
                        }                                                    \
                    }                                                        \
                }                                                            \
                for (int64_t c = 0; c < w; c++) {                            \
                    out[o * inner + c0 + c] = ST(best[c]);                   \
                }                                                            \
                if (indices != NULL) {                                       \
                    for (int64_t c = 0; c < w; c++) {                        \
                        indices[o * inner + c0 + c] = at[c];                 \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

REDUCE_MAX(f32, float, float, AS_IS, AS_IS, F_ISNAN)
REDUCE_MAX(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half,
           F_ISNAN)
REDUCE_MAX(f64, double, double, AS_IS, AS_IS, F_ISNAN)
REDUCE_MAX(i64, int64_t, int64_t, AS_IS, AS_IS, I_ISNAN)

/* ------------------------------------------------------------ dispatch */

void pygpu_cpu_reduce(int op, int dtype, void *out, int64_t *indices,
                      const void *in, int64_t outer, int64_t n,
                      int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n < 0) {
        return;
    }
    if (op == PYGPU_MAX) {
        if (n == 0) {
            return;     /* refused by the caller: nothing to report */
        }
        switch (dtype) {
        case PYGPU_FLOAT32:
            reduce_max_f32(out, indices, in, outer, n, inner);
            break;
        case PYGPU_FLOAT16:
            reduce_max_f16(out, indices, in, outer, n, inner);
            break;
        case PYGPU_FLOAT64:
            reduce_max_f64(out, indices, in, outer, n, inner);
            break;
        case PYGPU_INT64:
            reduce_max_i64(out, indices, in, outer, n, inner);
            break;
        default:
            break;
        }
        return;
    }
    if (op != PYGPU_SUM && op != PYGPU_MEAN) {
        return;
    }
    int mean = op == PYGPU_MEAN;
    switch (dtype) {
    case PYGPU_FLOAT32:
        reduce_sum_f32(mean, out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT16:
        reduce_sum_f16(mean, out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT64:
        reduce_sum_f64(mean, out, in, outer, n, inner);
        break;
    case PYGPU_INT64:
        reduce_sum_i64(mean, out, in, outer, n, inner);
        break;
    default:
        break;
    }
}
