/* cpu_reduce_max.c - max and min (with the index of the first maximum)
 * of a contiguous input seen as [outer, n, inner], over the middle dim,
 * for every dtype, read in its own.  Memory is read in address order: a
 * run at a time (inner == 1), else row by row into a buffer of the best
 * values so far (see cpu_reduce.c for why).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/cpu_reduce.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"

#define AS_IS(x) (x)
#define F_ISNAN(x) ((x) != (x))
#define I_ISNAN(x) 0

/* Max (and min, with CMP = LT) with NaN propagation: the first maximum
 * wins; the first NaN wins over everything.  BIGGER(v, m) is "v replaces
 * m": larger (CMP), or NaN while m is not (so the first NaN stays).  It
 * is written with | and & rather than || and && so that it stays a
 * branch-free select.
 *
 * Contiguous runs (inner == 1) go in blocks of MAX_BLOCK elements: the
 * block's maximum (any NaN when it holds one) comes from independent
 * lanes, and only a block that beats the best so far is scanned again,
 * while still in the L1 cache, for the index of its first maximum or
 * first NaN.  Which of equal values (+0.0, -0.0) a block's lanes return
 * does not matter: the scan takes the first element comparing equal.
 * Blocks are long so that combining the lanes costs little.  Floats use
 * the vector lanes below; integers MAX_LANES plain lanes, above the trip
 * count gcc unrolls completely (16), so that the loop over the lanes
 * stays a loop and is vectorized. */
#define MAX_BLOCK 4096
#define MAX_LANES 32
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))
#define BIGGER(v, m, ISNAN, CMP) (CMP(v, m) | (ISNAN(v) & !ISNAN(m)))
/* The same for a value alone, where which NaN it is does not matter. */
#define TAKES(v, m, ISNAN, CMP) (CMP(v, m) | ISNAN(v))

/* lanes_<SFX>: the maximum of x[0 .. n), n >= 1, by CMP; *nan set when x
 * holds a NaN (the value is then meaningless).  Two vectors of W lanes
 * each take v where CMP(v, lane) (compare and select: a NaN never
 * enters), and a mask notes the NaNs; then the lanes and the tail in
 * order.  Inlined into the cloned callers (cpu/simd.h). */
#if defined(PYGPU_HAVE_VEC8)
#define LANES(SFX, T, VT, VI, W, CMP)                                        \
    static inline T lanes_##SFX(const T *restrict x, int64_t n, int *nan)   \
    {                                                                        \
        T m = x[0];                                                          \
        int bad = x[0] != x[0];                                              \
        int64_t j = 1;                                                       \
        if (n >= 2 * W) {                                                    \
            VT m0, m1, a, b;                                                 \
            VI ka, kb, vbad;                                                 \
            memcpy(&m0, x, sizeof m0);                                       \
            memcpy(&m1, x + W, sizeof m1);                                   \
            vbad = (m0 != m0) | (m1 != m1);                                  \
            for (j = 2 * W; j + 2 * W <= n; j += 2 * W) {                    \
                memcpy(&a, x + j, sizeof a);                                 \
                memcpy(&b, x + j + W, sizeof b);                             \
                ka = CMP(a, m0);                                             \
                kb = CMP(b, m1);                                             \
                m0 = (VT)(((VI)a & ka) | ((VI)m0 & ~ka));                    \
                m1 = (VT)(((VI)b & kb) | ((VI)m1 & ~kb));                    \
                vbad |= (a != a) | (b != b);                                 \
            }                                                                \
            m = m0[0];                                                       \
            for (int k = 0; k < W; k++) {                                    \
                m = CMP(m0[k], m) ? m0[k] : m;                               \
                m = CMP(m1[k], m) ? m1[k] : m;                               \
                bad |= vbad[k] != 0;                                         \
            }                                                                \
        }                                                                    \
        for (; j < n; j++) {                                                 \
            m = CMP(x[j], m) ? x[j] : m;                                     \
            bad |= x[j] != x[j];                                             \
        }                                                                    \
        *nan = bad;                                                          \
        return m;                                                            \
    }
#else
#define LANES(SFX, T, VT, VI, W, CMP)                                        \
    static inline T lanes_##SFX(const T *restrict x, int64_t n, int *nan)   \
    {                                                                        \
        T m = x[0];                                                          \
        int bad = 0;                                                         \
        for (int64_t j = 0; j < n; j++) {                                    \
            m = CMP(x[j], m) ? x[j] : m;                                     \
            bad |= x[j] != x[j];                                             \
        }                                                                    \
        *nan = bad;                                                          \
        return m;                                                            \
    }
#endif

LANES(max_f32, float, vec8f, vec8i, 8, GT)
LANES(min_f32, float, vec8f, vec8i, 8, LT)
LANES(max_f64, double, vec4d, vec4l, 4, GT)
LANES(min_f64, double, vec4d, vec4l, 4, LT)

PYGPU_CLONES(, float, pygpu_cpu_max_f32, (const float *x, int64_t n, int *nan),
             (x, n, nan))
{
    return lanes_max_f32(x, n, nan);
}

/* scan_<T>: the first j in [0, m) where x[j] is v or NaN (one exists):
 * floats test two vectors at a time, then go element by element from
 * the pair that holds it; integers go element by element. */
#if defined(PYGPU_HAVE_VEC8)
#define SCAN_VEC(SFX, T, VT, VI, W)                                          \
    static inline int64_t scan_##SFX(const T *restrict x, int64_t m, T v)   \
    {                                                                        \
        VT vv = (VT){0} + v;                                                 \
        int64_t j = 0;                                                       \
        for (; j + 2 * W <= m; j += 2 * W) {                                 \
            VT a, b;                                                         \
            uint64_t q[4];                                                   \
            memcpy(&a, x + j, sizeof a);                                     \
            memcpy(&b, x + j + W, sizeof b);                                 \
            VI hit = (a == vv) | (a != a) | (b == vv) | (b != b);            \
            memcpy(q, &hit, sizeof q);                                       \
            if ((q[0] | q[1]) | (q[2] | q[3])) {                             \
                break;                                                       \
            }                                                                \
        }                                                                    \
        while (j < m && !((x[j] == v) | (x[j] != x[j]))) {                   \
            j++;                                                             \
        }                                                                    \
        return j;                                                            \
    }
#else
#define SCAN_VEC(SFX, T, VT, VI, W) SCAN_PLAIN(SFX, T)
#endif
#define SCAN_PLAIN(SFX, T)                                                   \
    static inline int64_t scan_##SFX(const T *restrict x, int64_t m, T v)   \
    {                                                                        \
        int64_t j = 0;                                                       \
        while (j < m && !((x[j] == v) | (x[j] != x[j]))) {                   \
            j++;                                                             \
        }                                                                    \
        return j;                                                            \
    }

SCAN_VEC(f32, float, vec8f, vec8i, 8)
SCAN_VEC(f64, double, vec4d, vec4l, 4)
SCAN_PLAIN(i64, int64_t)
SCAN_PLAIN(u8, uint8_t)
SCAN_PLAIN(i32, int32_t)

/* Elements a float16 or bfloat16 block is widened by while scanned. */
#define SCAN 256

/* block_<SFX>: a block's maximum, NaN when it holds one. */
/* find_<SFX>: where in a block its maximum bm (or its first NaN) is. */
/* float and double: the lanes on the input. */
#define BLOCK_LANES(SFX, T, TSFX)                                            \
    PYGPU_CLONES(static, T, block_##SFX, (const T *restrict x, int64_t m),  \
                 (x, m))                                                     \
    {                                                                        \
        int nan;                                                             \
        T r = lanes_##SFX(x, m, &nan);                                       \
        return nan ? (T)NAN : r;                                             \
    }                                                                        \
    PYGPU_CLONES(static, int64_t, find_##SFX,                                \
                 (const T *restrict x, int64_t m, T bm), (x, m, bm))         \
    {                                                                        \
        return scan_##TSFX(x, m, bm);                                        \
    }

/* float16 and bfloat16: the block widened to float first (a vectorized
 * loop), then the float lanes. */
#define BLOCK_WIDEN(SFX, LSFX, WIDEN)                                         \
    PYGPU_CLONES(static, float, block_##SFX,                                 \
                 (const uint16_t *restrict x, int64_t m), (x, m))            \
    {                                                                        \
        float buf[MAX_BLOCK];                                                \
        int nan;                                                             \
        WIDEN(buf, x, m);                                                    \
        float r = lanes_##LSFX(buf, m, &nan);                                \
        return nan ? NAN : r;                                                \
    }                                                                        \
    PYGPU_CLONES(static, int64_t, find_##SFX,                                \
                 (const uint16_t *restrict x, int64_t m, float bm),          \
                 (x, m, bm))                                                 \
    {                                                                        \
        float buf[SCAN];                                                     \
        int64_t c0 = 0;                                                      \
        for (; c0 < m; c0 += SCAN) {                                         \
            int64_t w = m - c0 < SCAN ? m - c0 : SCAN;                       \
            WIDEN(buf, x + c0, w);                                           \
            int64_t j = scan_f32(buf, w, bm);                                \
            if (j < w) {                                                     \
                return c0 + j;                                               \
            }                                                                \
        }                                                                    \
        return m;                                                            \
    }

/* Integers: MAX_LANES plain lanes. */
#define BLOCK_INT(SFX, T, TSFX, CMP)                                         \
    static T block_##SFX(const T *restrict x, int64_t m)                     \
    {                                                                        \
        T r = x[0];                                                          \
        int64_t i = 0;                                                       \
        if (m >= MAX_LANES) {                                                \
            T lane[MAX_LANES];                                               \
            for (int k = 0; k < MAX_LANES; k++) {                            \
                lane[k] = x[k];                                              \
            }                                                                \
            for (i = MAX_LANES; i + MAX_LANES <= m; i += MAX_LANES) {        \
                for (int k = 0; k < MAX_LANES; k++) {                        \
                    T v = x[i + k];                                          \
                    lane[k] = CMP(v, lane[k]) ? v : lane[k];                 \
                }                                                            \
            }                                                                \
            for (int k = 0; k < MAX_LANES; k++) {                            \
                r = CMP(lane[k], r) ? lane[k] : r;                           \
            }                                                                \
        }                                                                    \
        for (; i < m; i++) {                                                 \
            r = CMP(x[i], r) ? x[i] : r;                                     \
        }                                                                    \
        return r;                                                            \
    }                                                                        \
    static int64_t find_##SFX(const T *restrict x, int64_t m, T bm)          \
    {                                                                        \
        return scan_##TSFX(x, m, bm);                                        \
    }

#define MAX_CONTIG(SFX, T, ACC, LD, ISNAN, CMP)                              \
    /* The first index of the maximum of x[0 .. n), n >= 1, its value in  \
     * *val.  Without want_at, a block maximum that is a number other     \
     * than zero is taken as it is (its bits are those of its first       \
     * occurrence), and the index may be left at -1. */                   \
    static int64_t first_##SFX(const T *x, int64_t n, int want_at,          \
                               ACC *val)                                     \
    {                                                                        \
        ACC best = LD(x[0]);                                                 \
        int64_t at = 0;                                                      \
        for (int64_t b0 = 0; b0 < n && !ISNAN(best); b0 += MAX_BLOCK) {      \
            int64_t m = n - b0 < MAX_BLOCK ? n - b0 : MAX_BLOCK;             \
            ACC bm = block_##SFX(x + b0, m);                                 \
            if (!BIGGER(bm, best, ISNAN, CMP)) {                             \
                continue;                                                    \
            }                                                                \
            if (!want_at && !ISNAN(bm) && bm != 0) {                         \
                best = bm;                                                   \
                at = -1;                                                     \
                continue;                                                    \
            }                                                                \
            /* A NaN block max means the block holds a NaN; otherwise it     \
             * holds none and the maximum compares equal. */                 \
            at = b0 + find_##SFX(x + b0, m, bm);                             \
            best = LD(x[at]);                                                \
        }                                                                    \
        *val = best;                                                         \
        return at;                                                           \
    }

/* Over rows (inner > 1), each column of the row buffer takes a row's value
 * when BIGGER, keeping the first index of its maximum or NaN. */
#define REDUCE_MAX(SFX, T, ACC, LD, ST, MV, ISNAN, CMP)                      \
    MAX_CONTIG(SFX, T, ACC, LD, ISNAN, CMP)                                  \
    /* Row j into the buffers, as branch-free selects (at NULL: values      \
     * only). */                                                             \
    PYGPU_CLONES(static, void, rows_##SFX,                                   \
                 (ACC *restrict best, int64_t *restrict at,                  \
                  const T *restrict row, int64_t wc, int64_t j),             \
                 (best, at, row, wc, j))                                     \
    {                                                                        \
        if (at == NULL) {                                                    \
            for (int64_t c = 0; c < wc; c++) {                               \
                ACC v = LD(row[c]);                                          \
                best[c] = BIGGER(v, best[c], ISNAN, CMP) ? v : best[c];      \
            }                                                                \
            return;                                                          \
        }                                                                    \
        for (int64_t c = 0; c < wc; c++) {                                   \
            ACC v = LD(row[c]);                                              \
            int take = BIGGER(v, best[c], ISNAN, CMP);                       \
            best[c] = take ? v : best[c];                                    \
            at[c] = take ? j : at[c];                                        \
        }                                                                    \
    }                                                                        \
    static void reduce_##SFX(void *outv, int64_t *indices, const void *inv,  \
                             int64_t outer, int64_t n, int64_t inner)        \
    {                                                                        \
        T *out = outv;                                                       \
        const T *in = inv;                                                   \
        if (inner == 1) {                                                    \
            for (int64_t o = 0; o < outer; o++) {                            \
                ACC v;                                                       \
                int64_t at = first_##SFX(in + o * n, n, indices != NULL,     \
                                         &v);                                \
                out[o] = at >= 0 ? MV(in[o * n + at]) : ST(v);               \
                if (indices != NULL) {                                       \
                    indices[o] = at;                                         \
                }                                                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        /* Value and index buffers for w columns, in one pool. */            \
        int64_t stack[PYGPU_ROW_STACK / sizeof(int64_t)];                    \
        int64_t w;                                                           \
        int64_t *at = pygpu_cpu_row_pool(sizeof(int64_t) + sizeof(ACC),     \
                                         inner, stack, &w);                  \
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
                    rows_##SFX(best, indices != NULL ? at : NULL, row, wc,   \
                               j);                                           \
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

/* bfloat16 moves through float, as a float32 result converted back
 * would (a signalling NaN comes out quiet); the others as they are. */
#define BF16_MV(x) pygpu_float_to_bf16(pygpu_bf16_to_float(x))

/* MAX and MIN rows by dtype.  Integers and bool compare in their own
 * type (exact, as in int64). */
#define MAX_MIN(SFX, T, ACC, LD, ST, MV, ISNAN)                              \
    REDUCE_MAX(max_##SFX, T, ACC, LD, ST, MV, ISNAN, GT)                     \
    REDUCE_MAX(min_##SFX, T, ACC, LD, ST, MV, ISNAN, LT)

BLOCK_LANES(max_f32, float, f32)
BLOCK_LANES(min_f32, float, f32)
BLOCK_LANES(max_f64, double, f64)
BLOCK_LANES(min_f64, double, f64)
BLOCK_WIDEN(max_f16, max_f32, pygpu_cpu_widen_f16)
BLOCK_WIDEN(min_f16, min_f32, pygpu_cpu_widen_f16)
BLOCK_WIDEN(max_bf16, max_f32, pygpu_cpu_widen_bf16)
BLOCK_WIDEN(min_bf16, min_f32, pygpu_cpu_widen_bf16)
#define BLOCK_INTS(SFX, T, TSFX)                                             \
    BLOCK_INT(max_##SFX, T, TSFX, GT)                                        \
    BLOCK_INT(min_##SFX, T, TSFX, LT)
BLOCK_INTS(i64, int64_t, i64)
BLOCK_INTS(b8, uint8_t, u8)
BLOCK_INTS(u8, uint8_t, u8)
BLOCK_INTS(i32, int32_t, i32)

MAX_MIN(f32, float, float, AS_IS, AS_IS, AS_IS, F_ISNAN)
MAX_MIN(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half,
        AS_IS, F_ISNAN)
MAX_MIN(f64, double, double, AS_IS, AS_IS, AS_IS, F_ISNAN)
MAX_MIN(i64, int64_t, int64_t, AS_IS, AS_IS, AS_IS, I_ISNAN)
MAX_MIN(b8, uint8_t, uint8_t, AS_IS, AS_IS, AS_IS, I_ISNAN)
MAX_MIN(u8, uint8_t, uint8_t, AS_IS, AS_IS, AS_IS, I_ISNAN)
MAX_MIN(i32, int32_t, int32_t, AS_IS, AS_IS, AS_IS, I_ISNAN)
MAX_MIN(bf16, uint16_t, float, pygpu_bf16_to_float, pygpu_float_to_bf16,
        BF16_MV, F_ISNAN)

typedef void (*max_loop)(void *out, int64_t *indices, const void *in,
                         int64_t outer, int64_t n, int64_t inner);

#define MAX_ROW(SFX) {reduce_max_##SFX, reduce_min_##SFX}
/* [dtype][max, min] */
static const max_loop max_loops[PYGPU_NDTYPES][2] = {
    [PYGPU_FLOAT32] = MAX_ROW(f32), [PYGPU_FLOAT16] = MAX_ROW(f16),
    [PYGPU_FLOAT64] = MAX_ROW(f64), [PYGPU_INT64] = MAX_ROW(i64),
    [PYGPU_BOOL] = MAX_ROW(b8),     [PYGPU_UINT8] = MAX_ROW(u8),
    [PYGPU_INT32] = MAX_ROW(i32),   [PYGPU_BFLOAT16] = MAX_ROW(bf16),
};

void pygpu_cpu_reduce_max(int op, int dtype, void *out, int64_t *indices,
                          const void *in, int64_t outer, int64_t n,
                          int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n <= 0 || dtype < 0 ||
        dtype >= PYGPU_NDTYPES || (op != PYGPU_MAX && op != PYGPU_MIN)) {
        return;     /* n == 0 is refused by the caller */
    }
    max_loops[dtype][op == PYGPU_MIN](out, indices, in, outer, n, inner);
}
