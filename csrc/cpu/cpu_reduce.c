/* cpu_reduce.c - CPU reductions (sum and mean here; max and min in
 * cpu_reduce_max.c, prod in cpu_prod.c) of a contiguous input seen as
 * [outer, n, inner], over the middle dim.  The input is read in its own
 * dtype and accumulated in pygpu_reduce_acc_dtype (kernels.h): there is a
 * loop for each input dtype, so no converted copy is ever made.
 *
 * Two memory layouts, both read in address order:
 *  - inner == 1 (a full reduction, or over the last dim): each output is
 *    the reduction of one contiguous run of n elements.
 *  - inner > 1: the n rows of a slab are added into a row buffer one after
 *    the other, so memory is streamed row by row instead of walked column
 *    by column with stride inner.  The buffers cover whole rows unless
 *    rows are very long (see pygpu_cpu_row_pool).
 *
 * Floating-point sums are pairwise: short blocks are summed directly (fast,
 * vectorized) and the block sums are then added in a balanced tree, so the
 * rounding error grows like log(n) rather than n (a single float
 * accumulator stops growing at 2^24 when adding ones).  float16, bfloat16
 * and float32 accumulate in float, float64 in double, in the same order
 * whatever the input dtype; bool and integer sums are int64 and wrap
 * around exactly.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/cpu_half.h"
#include "cpu/cpu_reduce.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"

/* Contiguous runs of up to SUM_LEAF elements are summed directly
 * (cpu_reduce.h). */
#define SUM_LEAF PYGPU_SUM_LEAF
/* Rows summed directly into one row buffer before buffers are paired. */
#define ROW_LEAF 16
/* Row buffers: one per level of the pairing tree (at most 64 levels for a
 * 64-bit count of blocks) plus one being filled. */
#define MAX_ROW_BUFS 66
/* The most bytes of row buffers taken from the heap (see
 * pygpu_cpu_row_pool; PYGPU_ROW_STACK are kept on the stack). */
#define ROW_STACK PYGPU_ROW_STACK
#define ROW_HEAP (4 << 20)

#define AS_IS(x) (x)

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
 * wrong.  The caller frees the result when it is not `stack`.  Shared
 * with cpu_reduce_max.c. */
void *pygpu_cpu_row_pool(size_t col_bytes, int64_t inner, void *stack,
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

/* A leaf of up to SUM_LEAF elements is summed in 32 lanes (16 for
 * float64): lane j adds x[j], x[j + 32], ... in order, over the whole
 * 32-element (16-element) blocks, the lanes are added in a fixed tree,
 * and the elements past the last whole block are added to that one by
 * one.  sum_contig splits a longer run into halves on leaf boundaries and
 * adds them.  Both leaf loops read memory in address order, a block of 2
 * lines per step into independent vector accumulators; the AVX2 one
 * (leaf_*_wide, picked at run time where the CPU has AVX2) holds the
 * lanes in 4 wide vectors instead of 8 narrow ones, and the same lanes
 * see the same additions, so both give the same bits.  Only the sign of
 * a NaN could differ (which operand of an addition comes first is the
 * compiler's choice in each), so a leaf that sums to NaN returns the
 * positive quiet NaN.  Against 128-element leaves of 8 lanes, in one
 * run on the 2-core test machine: 2^20 float32 on two threads 49 us
 * against 81, 2^24 (from memory) 1.49 ms against 1.58. */

/* One leaf loop: NACC accumulators of vector type V, W lanes each, over
 * the whole blocks of NACC * W elements; then COMBINE(a, s) adds the
 * lanes into s in the fixed tree, and the elements left are added one by
 * one.  The four loops below differ in these only. */
#define LEAF_LOOP(NAME, ATTR, T, TIN, V, NACC, W, COMBINE, LOAD, CVT)       \
    ATTR static T NAME(const TIN *x, int64_t m)                              \
    {                                                                        \
        V a[NACC];                                                           \
        T s;                                                                 \
        int64_t i = 0;                                                       \
        memset(a, 0, sizeof(a));                                             \
        _Pragma("GCC unroll 1")                                              \
        for (; i + NACC * W <= m; i += NACC * W) {                           \
            _Pragma("GCC unroll 8")                                          \
            for (int k = 0; k < NACC; k++) {                                 \
                V v;                                                         \
                LOAD(v, x + i + W * k);                                      \
                a[k] += v;                                                   \
            }                                                                \
        }                                                                    \
        COMBINE(a, s);                                                       \
        for (; i < m; i++) {                                                 \
            s += CVT(x[i]);                                                  \
        }                                                                    \
        return s == s ? s : (T)NAN;                                          \
    }
#define LOAD_MEM(v, p) memcpy(&(v), (p), sizeof(v))

/* The lane trees.  float32, narrow: lane 4k + j in a[k][j]; lanes j,
 * j + 8, j + 16, j + 24 are added as ((a + b) + (c + d)) into 8 lanes,
 * which are added as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)).  Wide:
 * b[k] holds what a[2k] and a[2k + 1] hold, so the first step is
 * (b0 + b1) + (b2 + b3) on whole vectors.  float64 the same with 16
 * lanes: 2 per narrow vector, 4 per wide one, 4 after the first step. */
#define TREE8(lo, hi)                                                        \
    ((((lo)[0] + (lo)[1]) + ((lo)[2] + (lo)[3])) +                           \
     (((hi)[0] + (hi)[1]) + ((hi)[2] + (hi)[3])))
#define COMBINE_F32(a, s)                                                    \
    do {                                                                     \
        vec4f lo = (a[0] + a[2]) + (a[4] + a[6]);                            \
        vec4f hi = (a[1] + a[3]) + (a[5] + a[7]);                            \
        s = TREE8(lo, hi);                                                   \
    } while (0)
#define COMBINE_F64(a, s)                                                    \
    do {                                                                     \
        vec2d lo = (a[0] + a[2]) + (a[4] + a[6]);                            \
        vec2d hi = (a[1] + a[3]) + (a[5] + a[7]);                            \
        s = (lo[0] + lo[1]) + (hi[0] + hi[1]);                               \
    } while (0)
#define COMBINE_F32_WIDE(b, s)                                               \
    do {                                                                     \
        vec8f t = (b[0] + b[1]) + (b[2] + b[3]);                             \
        s = ((t[0] + t[1]) + (t[2] + t[3])) +                                \
            ((t[4] + t[5]) + (t[6] + t[7]));                                 \
    } while (0)
#define COMBINE_F64_WIDE(b, s)                                               \
    do {                                                                     \
        vec4d t = (b[0] + b[1]) + (b[2] + b[3]);                             \
        s = (t[0] + t[1]) + (t[2] + t[3]);                                   \
    } while (0)

LEAF_LOOP(leaf_f32, , float, float, vec4f, 8, 4, COMBINE_F32, LOAD_MEM,
          AS_IS)
LEAF_LOOP(leaf_f64, , double, double, vec2d, 8, 2, COMBINE_F64, LOAD_MEM,
          AS_IS)
#if PYGPU_HAVE_AVX2_FN
LEAF_LOOP(leaf_f32_wide, PYGPU_AVX2_FN, float, float, vec8f, 4, 8,
          COMBINE_F32_WIDE, LOAD_MEM, AS_IS)
LEAF_LOOP(leaf_f64_wide, PYGPU_AVX2_FN, double, double, vec4d, 4, 4,
          COMBINE_F64_WIDE, LOAD_MEM, AS_IS)
/* float16 and bfloat16 leaves that widen as they load (F16C for float16,
 * a shift for bfloat16): the float32 wide leaf's lanes and tree on the
 * widened values, so the bits of widening first and summing after. */
#define LOAD_F16C(v, p)                                                      \
    do {                                                                     \
        __m256 t_ = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p))); \
        memcpy(&(v), &t_, sizeof(v));                                        \
    } while (0)
#define LOAD_BF16(v, p)                                                      \
    do {                                                                     \
        __m256i t_ = _mm256_slli_epi32(                                      \
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))),    \
            16);                                                             \
        memcpy(&(v), &t_, sizeof(v));                                        \
    } while (0)
LEAF_LOOP(leaf_f16_wide, __attribute__((target("avx2,f16c"))), float,
          uint16_t, vec8f, 4, 8, COMBINE_F32_WIDE, LOAD_F16C,
          pygpu_half_to_float)
LEAF_LOOP(leaf_bf16_wide, PYGPU_AVX2_FN, float, uint16_t, vec8f, 4, 8,
          COMBINE_F32_WIDE, LOAD_BF16, pygpu_bf16_to_float)
#define LEAF(SFX, x, m)                                                      \
    (PYGPU_CPU_HAS_AVX2() ? leaf_##SFX##_wide(x, m) : leaf_##SFX(x, m))
#else
#define LEAF(SFX, x, m) leaf_##SFX(x, m)
#define leaf_f16_wide(x, m) 0.0f  /* never called: no AVX2 version */
#define leaf_bf16_wide(x, m) 0.0f
#endif

#define SUM_CONTIG(SFX, T)                                                   \
    static T sum_contig_##SFX(const T *x, int64_t n)                         \
    {                                                                        \
        if (n <= SUM_LEAF) {                                                 \
            return LEAF(SFX, x, n);                                          \
        }                                                                    \
        int64_t half = (n / SUM_LEAF + 1) / 2 * SUM_LEAF;                    \
        return sum_contig_##SFX(x, half) + sum_contig_##SFX(x + half,        \
                                                            n - half);       \
    }

/* float16 and bfloat16 are widened to float WIDEN elements at a time (a
 * loop of its own, which vectorizes where the lanes reading them did not)
 * and then summed as float32: the splits depend on n alone, so the same
 * values are added in the same order. */
#define WIDEN 2048
#define widen_f16 pygpu_cpu_widen_f16
#define widen_bf16 pygpu_cpu_widen_bf16
#define SUM_CONTIG_WIDEN(SFX)                                                \
    static float sum_contig_##SFX(const uint16_t *x, int64_t n)              \
    {                                                                        \
        if (n <= (PYGPU_CPU_HAS_AVX2() ? SUM_LEAF : WIDEN)) {                \
            if (PYGPU_CPU_HAS_AVX2()) {                                      \
                return leaf_##SFX##_wide(x, n);                              \
            }                                                                \
            float buf[WIDEN];                                                \
            widen_##SFX(buf, x, n);                                          \
            return sum_contig_f32(buf, n);                                   \
        }                                                                    \
        int64_t half = (n / SUM_LEAF + 1) / 2 * SUM_LEAF;                    \
        return sum_contig_##SFX(x, half) + sum_contig_##SFX(x + half,        \
                                                            n - half);       \
    }

/* A row into a row buffer, assigned (first) or added: in place, read by
 * LD, except float16, which goes through WIDEN-element float buffers
 * (row_in_<SFX>). */
#define ROW_DIRECT(SFX, LD, acc, row, w, first)                              \
    if (first) {                                                             \
        for (int64_t c = 0; c < w; c++) {                                    \
            acc[c] = LD(row[c]);                                             \
        }                                                                    \
    } else {                                                                 \
        for (int64_t c = 0; c < w; c++) {                                    \
            acc[c] += LD(row[c]);                                            \
        }                                                                    \
    }
#define ROW_WIDEN(SFX, LD, acc, row, w, first)                               \
    row_in_##SFX(acc, row, w, first);
#define ROW_IN_WIDEN(SFX)                                                    \
    static void row_in_##SFX(float *restrict acc,                            \
                             const uint16_t *restrict row, int64_t w,        \
                             int first)                                      \
    {                                                                        \
        float buf[WIDEN];                                                    \
        for (int64_t c0 = 0; c0 < w; c0 += WIDEN) {                          \
            int64_t cw = w - c0 < WIDEN ? w - c0 : WIDEN;                    \
            float *restrict dst = acc + c0;                                  \
            widen_##SFX(buf, row + c0, cw);                                  \
            ROW_DIRECT(f32, AS_IS, dst, buf, cw, first)                      \
        }                                                                    \
    }

SUM_CONTIG(f32, float)
SUM_CONTIG(f64, double)
SUM_CONTIG_WIDEN(f16)
SUM_CONTIG_WIDEN(bf16)
ROW_IN_WIDEN(f16)

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
#define SUM_ROWS(SFX, T, ACC, ROW, LD)                                       \
    static ACC *sum_rows_##SFX(ACC **buf, int nbuf, const T *x, int64_t n,   \
                               int64_t inner, int64_t w)                     \
    {                                                                        \
        uint64_t count = 0;                                                  \
        for (int64_t j = 0; j < n; j++) {                                    \
            ACC *restrict acc = buf[nbuf - 1];                               \
            const T *restrict row = x + j * inner;                           \
            ROW(SFX, LD, acc, row, w, j % ROW_LEAF == 0)                     \
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


/* reduce_sum_<OSFX>: the sum (or mean) of the core SFX stored as OUT by
 * ST.  The mean of nothing is NaN, as in PyTorch. */
#define REDUCE_SUM(SFX, OSFX, T, ACC, OUT, ST)                               \
    static void reduce_sum_##OSFX(int mean, void *outv, const void *inv,     \
                                  int64_t outer, int64_t n, int64_t inner)   \
    {                                                                        \
        OUT *out = outv;                                                     \
        const T *in = inv;                                                   \
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
        ACC *pool = pygpu_cpu_row_pool(nbuf * sizeof(ACC), inner, stack,     \
                                       &w);                                  \
        for (int b = 0; b < nbuf; b++) {                                     \
            buf[b] = pool + b * w;                                           \
        }                                                                    \
        for (int64_t o = 0; o < outer; o++) {                                \
            for (int64_t c0 = 0; c0 < inner; c0 += w) {                      \
                int64_t wc = inner - c0 < w ? inner - c0 : w;                \
                const ACC *s = sum_rows_##SFX(buf, nbuf,                     \
                                              in + o * n * inner + c0, n,    \
                                              inner, wc);                    \
                OUT *dst = out + o * inner + c0;                             \
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

SUM_ROWS(f32, float, float, ROW_DIRECT, AS_IS)
SUM_ROWS(f16, uint16_t, float, ROW_WIDEN, AS_IS)
SUM_ROWS(bf16, uint16_t, float, ROW_DIRECT, pygpu_bf16_to_float)
SUM_ROWS(f64, double, double, ROW_DIRECT, AS_IS)
REDUCE_SUM(f32, f32, float, float, float, AS_IS)
REDUCE_SUM(f16, f16, uint16_t, float, uint16_t, pygpu_float_to_half)
REDUCE_SUM(f16, f16_acc, uint16_t, float, float, AS_IS)
REDUCE_SUM(bf16, bf16, uint16_t, float, uint16_t, pygpu_float_to_bf16)
REDUCE_SUM(bf16, bf16_acc, uint16_t, float, float, AS_IS)
REDUCE_SUM(f64, f64, double, double, double, AS_IS)

/* bool and integers: int64, exact modulo 2^64 in any order, so plain loops
 * (through uint64, whose overflow is defined).  The mean truncates; of
 * nothing it is 0. */
#define REDUCE_ISUM(SFX, T)                                                  \
    static void reduce_sum_##SFX(int mean, void *outv, const void *inv,      \
                                 int64_t outer, int64_t n, int64_t inner)    \
    {                                                                        \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *restrict x = (const T *)inv + o * n * inner;            \
            int64_t *restrict dst = (int64_t *)outv + o * inner;             \
            if (inner == 1) {                                                \
                uint64_t s = 0;                                              \
                for (int64_t j = 0; j < n; j++) {                            \
                    s += (uint64_t)(int64_t)x[j];                            \
                }                                                            \
                dst[0] = (int64_t)s;                                         \
            } else {                                                         \
                for (int64_t c = 0; c < inner; c++) {                        \
                    dst[c] = 0;                                              \
                }                                                            \
                for (int64_t j = 0; j < n; j++) {                            \
                    const T *restrict row = x + j * inner;                   \
                    for (int64_t c = 0; c < inner; c++) {                    \
                        dst[c] = (int64_t)((uint64_t)dst[c] +                \
                                           (uint64_t)(int64_t)row[c]);       \
                    }                                                        \
                }                                                            \
            }                                                                \
            if (mean) {                                                      \
                for (int64_t c = 0; c < inner; c++) {                        \
                    dst[c] = n > 0 ? dst[c] / n : 0;                         \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

REDUCE_ISUM(i64, int64_t)
REDUCE_ISUM(b8, uint8_t)
REDUCE_ISUM(u8, uint8_t)
REDUCE_ISUM(i32, int32_t)

typedef void (*sum_loop)(int mean, void *out, const void *in, int64_t outer,
                         int64_t n, int64_t inner);

/* [input dtype][to_acc] */
static const sum_loop sum_loops[PYGPU_NDTYPES][2] = {
    [PYGPU_FLOAT32] = {reduce_sum_f32, reduce_sum_f32},
    [PYGPU_FLOAT16] = {reduce_sum_f16, reduce_sum_f16_acc},
    [PYGPU_FLOAT64] = {reduce_sum_f64, reduce_sum_f64},
    [PYGPU_INT64] = {reduce_sum_i64, reduce_sum_i64},
    [PYGPU_BOOL] = {reduce_sum_b8, reduce_sum_b8},
    [PYGPU_UINT8] = {reduce_sum_u8, reduce_sum_u8},
    [PYGPU_INT32] = {reduce_sum_i32, reduce_sum_i32},
    [PYGPU_BFLOAT16] = {reduce_sum_bf16, reduce_sum_bf16_acc},
};

/* ------------------------------------------------------------ dispatch */

void pygpu_cpu_reduce(int op, int dtype, int to_acc, void *out,
                      int64_t *indices, const void *in, int64_t outer,
                      int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n < 0 || dtype < 0 ||
        dtype >= PYGPU_NDTYPES) {
        return;
    }
    if (op == PYGPU_MAX || op == PYGPU_MIN) {
        pygpu_cpu_reduce_max(op, dtype, out, indices, in, outer, n, inner);
    }
    else if (op == PYGPU_PROD) {
        pygpu_cpu_reduce_prod(dtype, to_acc, out, in, outer, n, inner);
    }
    else if (op == PYGPU_SUM || op == PYGPU_MEAN) {
        sum_loops[dtype][to_acc != 0](op == PYGPU_MEAN, out, in, outer, n,
                                      inner);
    }
}
