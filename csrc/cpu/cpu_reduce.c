/* cpu_reduce.c - CPU reductions (sum, mean, max, min; prod in cpu_prod.c)
 * of a contiguous input seen as [outer, n, inner], over the middle dim.
 *
 * Two memory layouts, both read in address order:
 *  - inner == 1 (a full reduction, or over the last dim): each output is
 *    the reduction of one contiguous run of n elements.
 *  - inner > 1: the n rows of a slab are added into a row buffer one after
 *    the other, so memory is streamed row by row instead of walked column
 *    by column with stride inner.  The buffers cover whole rows unless
 *    rows are very long (see row_pool).
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
#include <stdlib.h>

#include "cpu/cpu_reduce.h"
#include "cpu/half.h"
#include "kernels/kernels.h"

/* Contiguous runs of up to SUM_LEAF elements are summed directly. */
#define SUM_LEAF 128
/* Rows summed directly into one row buffer before buffers are paired. */
#define ROW_LEAF 16
/* Row buffers: one per level of the pairing tree (at most 64 levels for a
 * 64-bit count of blocks) plus one being filled. */
#define MAX_ROW_BUFS 66
/* Bytes of row buffers kept on the stack, and the most taken from the
 * heap (see row_pool). */
#define ROW_STACK 16384
#define ROW_HEAP (4 << 20)

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

/* Memory for row buffers of col_bytes bytes per column; *w receives the
 * number of columns they cover.  Whole rows (w == inner) whenever possible:
 * column chunks make the reads skip part of every row, which measured up to
 * 3x slower once the input is larger than the caches.  Small buffers live
 * in the caller's stack array `stack` (ROW_STACK bytes), larger ones on the
 * heap, capped at ROW_HEAP bytes (chunks that wide still stream well).  If
 * malloc fails, the stack array serves in narrow chunks: slower, never
 * wrong.  The caller frees the result when it is not `stack`. */
static void *row_pool(size_t col_bytes, int64_t inner, void *stack,
                      int64_t *w)
{
    int64_t fit = (int64_t)(ROW_STACK / col_bytes);
    if (inner <= fit) {
        *w = inner;
        return stack;
    }
    int64_t cols = (int64_t)(ROW_HEAP / col_bytes);
    cols = cols < inner ? cols & ~(int64_t)7 : inner;
    void *heap = malloc((size_t)cols * col_bytes);
    if (heap != NULL) {
        *w = cols;
        return heap;
    }
    *w = fit & ~(int64_t)7;     /* at least 8 for every caller */
    return stack;
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
 * the buffer holding the result.  Rows are added one at a time into the
 * buffer of the current block of ROW_LEAF rows: a single sequential stream
 * through memory, which the hardware prefetchers follow best (walking
 * several rows at once measured up to 3x slower once the input is larger
 * than the caches; the if/else below also keeps the compiler from
 * interleaving rows on its own).
 *
 * buf[0 .. nbuf-2] are the levels of a binary counter of finished blocks:
 * while bit l of `count` is set, buf[l] holds the sum of 2^l blocks;
 * buf[nbuf-1] is the block being filled.  A finished block merges with the
 * full levels below its place, like a carry, so that sums of equal size are
 * the ones added together.  The pointers are swapped, never the data. */
#define SUM_ROWS(SFX, T, ACC, LD)                                            \
    static ACC *sum_rows_##SFX(ACC **buf, int nbuf, const T *x, int64_t n,   \
                               int64_t inner, int64_t w)                     \
    {                                                                        \
        uint64_t count = 0;                                                  \
        for (int64_t j = 0; j < n; j++) {                                    \
            ACC *restrict acc = buf[nbuf - 1];                               \
            const T *restrict row = x + j * inner;                           \
            if (j % ROW_LEAF == 0) {                                         \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] = LD(row[c]);                                     \
                }                                                            \
            } else {                                                         \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] += LD(row[c]);                                    \
                }                                                            \
            }                                                                \
            if ((j + 1) % ROW_LEAF != 0 && j + 1 != n) {                     \
                continue;                                                    \
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
        ACC stack[ROW_STACK / sizeof(ACC)];                                  \
        ACC *buf[MAX_ROW_BUFS];                                              \
        int nbuf = row_buffers(n);                                           \
        int64_t w;                                                           \
        ACC *pool = row_pool(nbuf * sizeof(ACC), inner, stack, &w);          \
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
        if (pool != stack) {                                                 \
            free(pool);                                                      \
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

/* ------------------------------------------------------------ max, min */

/* Max (and min, with CMP = LT) with NaN propagation: the first maximum
 * wins; the first NaN wins over everything.  BIGGER(v, m) is "v replaces
 * m": larger (CMP), or NaN while m is not (so the first NaN stays).  It
 * is written with | and & rather than || and && so that it stays a
 * branch-free select.
 *
 * Contiguous runs (inner == 1) go in blocks of MAX_BLOCK elements: the
 * block's maximum comes from MAX_LANES independent lanes (vector selects),
 * and only a block that beats the best so far is scanned again, while
 * still in the L1 cache, for the index of its first maximum or first NaN.
 * Blocks are long so that combining the lanes costs little.
 * MAX_LANES is above the trip count gcc unrolls completely (16), so that
 * the loop over the lanes stays a loop and is vectorized. */
#define MAX_BLOCK 4096
#define MAX_LANES 32
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))
#define BIGGER(v, m, ISNAN, CMP) (CMP(v, m) | (ISNAN(v) & !ISNAN(m)))
/* The same for a value alone, where which NaN it is does not matter. */
#define TAKES(v, m, ISNAN, CMP) (CMP(v, m) | ISNAN(v))

#define MAX_CONTIG(SFX, T, ACC, LD, ISNAN, CMP)                              \
    static ACC block_##SFX(const T *restrict x, int64_t m)                   \
    {                                                                        \
        ACC r = LD(x[0]);                                                    \
        int64_t i = 0;                                                       \
        if (m >= MAX_LANES) {                                                \
            ACC lane[MAX_LANES];                                             \
            for (int k = 0; k < MAX_LANES; k++) {                            \
                lane[k] = LD(x[k]);                                          \
            }                                                                \
            for (i = MAX_LANES; i + MAX_LANES <= m; i += MAX_LANES) {        \
                for (int k = 0; k < MAX_LANES; k++) {                        \
                    ACC v = LD(x[i + k]);                                    \
                    lane[k] = TAKES(v, lane[k], ISNAN, CMP) ? v : lane[k];   \
                }                                                            \
            }                                                                \
            for (int k = 0; k < MAX_LANES; k++) {                            \
                r = TAKES(lane[k], r, ISNAN, CMP) ? lane[k] : r;             \
            }                                                                \
        }                                                                    \
        for (; i < m; i++) {                                                 \
            ACC v = LD(x[i]);                                                \
            r = TAKES(v, r, ISNAN, CMP) ? v : r;                             \
        }                                                                    \
        return r;                                                            \
    }                                                                        \
    /* The first index of the maximum of x[0 .. n), n >= 1. */               \
    static int64_t first_##SFX(const T *x, int64_t n)                        \
    {                                                                        \
        ACC best = LD(x[0]);                                                 \
        int64_t at = 0;                                                      \
        for (int64_t b0 = 0; b0 < n && !ISNAN(best); b0 += MAX_BLOCK) {      \
            int64_t m = n - b0 < MAX_BLOCK ? n - b0 : MAX_BLOCK;             \
            ACC bm = block_##SFX(x + b0, m);                                 \
            if (!BIGGER(bm, best, ISNAN, CMP)) {                             \
                continue;                                                    \
            }                                                                \
            /* A NaN block max means the block holds a NaN; otherwise it     \
             * holds none and the maximum compares equal. */                 \
            for (int64_t j = b0; j < b0 + m; j++) {                          \
                ACC v = LD(x[j]);                                            \
                if (ISNAN(v) || v == bm) {                                   \
                    best = v;                                                \
                    at = j;                                                  \
                    break;                                                   \
                }                                                            \
            }                                                                \
        }                                                                    \
        return at;                                                           \
    }

/* Over rows (inner > 1), each column of the row buffer takes a row's value
 * when BIGGER, keeping the first index of its maximum or NaN. */
#define REDUCE_MAX(SFX, T, ACC, LD, ST, ISNAN, CMP)                          \
    MAX_CONTIG(SFX, T, ACC, LD, ISNAN, CMP)                                  \
    static void reduce_##SFX(T *out, int64_t *indices, const T *in,          \
                                 int64_t outer, int64_t n, int64_t inner)    \
    {                                                                        \
        if (inner == 1) {                                                    \
            for (int64_t o = 0; o < outer; o++) {                            \
                int64_t at = first_##SFX(in + o * n, n);                     \
                out[o] = in[o * n + at];                                     \
                if (indices != NULL) {                                       \
                    indices[o] = at;                                         \
                }                                                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        /* Value and index buffers for w columns, in one pool. */            \
        int64_t stack[ROW_STACK / sizeof(int64_t)];                          \
        int64_t w;                                                           \
        int64_t *at = row_pool(sizeof(int64_t) + sizeof(ACC), inner, stack,  \
                               &w);                                          \
        ACC *best = (ACC *)(at + w);                                         \
        for (int64_t o = 0; o < outer; o++) {                                \
            for (int64_t c0 = 0; c0 < inner; c0 += w) {                      \
                int64_t wc = inner - c0 < w ? inner - c0 : w;                \
                const T *row = in + o * n * inner + c0;                      \
                for (int64_t c = 0; c < wc; c++) {                           \
                    best[c] = LD(row[c]);                                    \
                    at[c] = 0;                                               \
                }                                                            \
                for (int64_t j = 1; j < n; j++) {                            \
                    row += inner;                                            \
                    for (int64_t c = 0; c < wc; c++) {                       \
                        ACC v = LD(row[c]);                                  \
                        if (BIGGER(v, best[c], ISNAN, CMP)) {                \
                            best[c] = v;                                     \
                            at[c] = j;                                       \
                        }                                                    \
                    }                                                        \
                }                                                            \
                for (int64_t c = 0; c < wc; c++) {                           \
                    out[o * inner + c0 + c] = ST(best[c]);                   \
                }                                                            \
                if (indices != NULL) {                                       \
                    for (int64_t c = 0; c < wc; c++) {                       \
                        indices[o * inner + c0 + c] = at[c];                 \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
        if (at != stack) {                                                   \
            free(at);                                                        \
        }                                                                    \
    }

REDUCE_MAX(max_f32, float, float, AS_IS, AS_IS, F_ISNAN, GT)
REDUCE_MAX(max_f16, uint16_t, float, pygpu_half_to_float,
           pygpu_float_to_half, F_ISNAN, GT)
REDUCE_MAX(max_f64, double, double, AS_IS, AS_IS, F_ISNAN, GT)
REDUCE_MAX(max_i64, int64_t, int64_t, AS_IS, AS_IS, I_ISNAN, GT)
REDUCE_MAX(min_f32, float, float, AS_IS, AS_IS, F_ISNAN, LT)
REDUCE_MAX(min_f16, uint16_t, float, pygpu_half_to_float,
           pygpu_float_to_half, F_ISNAN, LT)
REDUCE_MAX(min_f64, double, double, AS_IS, AS_IS, F_ISNAN, LT)
REDUCE_MAX(min_i64, int64_t, int64_t, AS_IS, AS_IS, I_ISNAN, LT)

/* ------------------------------------------------------------ dispatch */

void pygpu_cpu_reduce(int op, int dtype, void *out, int64_t *indices,
                      const void *in, int64_t outer, int64_t n,
                      int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n < 0) {
        return;
    }
    if (op == PYGPU_MAX || op == PYGPU_MIN) {
        if (n == 0) {
            return;     /* refused by the caller: nothing to report */
        }
        int mx = op == PYGPU_MAX;
        switch (dtype) {
        case PYGPU_FLOAT32:
            (mx ? reduce_max_f32 : reduce_min_f32)(out, indices, in, outer,
                                                   n, inner);
            break;
        case PYGPU_FLOAT16:
            (mx ? reduce_max_f16 : reduce_min_f16)(out, indices, in, outer,
                                                   n, inner);
            break;
        case PYGPU_FLOAT64:
            (mx ? reduce_max_f64 : reduce_min_f64)(out, indices, in, outer,
                                                   n, inner);
            break;
        case PYGPU_INT64:
            (mx ? reduce_max_i64 : reduce_min_i64)(out, indices, in, outer,
                                                   n, inner);
            break;
        default:
            break;
        }
        return;
    }
    if (op == PYGPU_PROD) {
        pygpu_cpu_reduce_prod(dtype, out, in, outer, n, inner);
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
