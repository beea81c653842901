/* cpu_softmax.c - softmax, log_softmax and logsumexp along the middle dim
 * of a contiguous input seen as [outer, n, inner], n >= 1.
 *
 * Each line is read three times: its maximum m, then s = sum exp(x - m),
 * then the outputs (exp(x - m) / s, (x - m) - log s, or m + log s once).
 * Subtracting m keeps exp from overflowing.  A NaN anywhere in a line
 * makes that line NaN, as in torch; for logsumexp an infinite m is the
 * result (a line of -inf gives -inf, one holding +inf gives +inf), as
 * torch's.
 *
 * float32, float16 and bfloat16 compute in float, through one path: the
 * sums go through pygpu_cpu_row_sum_exp_f32 (cloned for the CPU's vectors,
 * cpu/simd.h), which cuts a line into chunks of EXP_CHUNK elements, sums
 * each chunk's exponentials (pygpu_cpu_expf_neg) in LANES float lanes
 * (element i of a chunk into lane i % LANES, in order), adds the lanes up
 * in a fixed tree (the last levels in double) and the chunks' sums in
 * double.  A chunk's sum of positive terms is within 16 float roundings
 * of exact (15 rounded adds per lane, one level of the tree; about 4 as a
 * random walk), so a line of any length is too: its relative error is at
 * most its worst chunk's.
 * Contiguous float32 lines (inner == 1) are read in place.  Every other
 * line (inner > 1: up to TILE_COLS columns of a slab at a time; float16
 * and bfloat16) is read a chunk at a time into a float tile, one chunk of
 * each line in a row, and each such run goes through the same function:
 * the same chunks, lanes and roundings, so that a line's result has the
 * same bits whatever its layout and dtype (float16 and bfloat16 get the
 * float32 result rounded once).  The second pass also writes what the
 * third needs, exp(x - m) for softmax and x - m for log_softmax (in y for
 * float32, finished in place, so that y's lines are fetched while the
 * exponentials are computed; float16 and bfloat16 compute them again
 * rather than round them early).
 * float64 computes in double (exp, log of the C library), sums in double.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_reduce.h"
#include "cpu/cpu_softmax.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"
#include "kernels/rules.h"

/* Replaces m: larger, or NaN (so that NaN propagates). */
#define MAX_TAKES(v, m) (((v) > (m)) | ((v) != (v)))

/* Elements per chunk of a line's sum, and float lanes per chunk (two
 * AVX2 vectors, four SSE ones: enough independent adds beside the exp's
 * work, few enough to stay in registers; 32 lanes ran 10% slower). */
#define EXP_CHUNK 256
#define LANES PYGPU_SUM_LANES
/* Columns of a slab handled at once when a line is not read in place. */
#define TILE_COLS 16

/* ------------------------------------------------ the float32 row helpers */

/* The maximum of x[0 .. n), n >= 1, NaN winning, as MAX_TAKES picks it
 * element by element. */
static float line_max_f32(const float *x, int64_t n)
{
    float m = x[0];
    for (int64_t j = 1; j < n; j++) {
        m = MAX_TAKES(x[j], m) ? x[j] : m;
    }
    return m;
}

/* The same maximum in vector lanes (pygpu_cpu_max_f32, shared with max
 * and min); a line holding a NaN is read again by line_max_f32, for the
 * NaN it returns (cpu_softmax.h). */
float pygpu_cpu_row_max_f32(const float *x, int64_t n)
{
    int nan;
    float m = pygpu_cpu_max_f32(x, n, &nan);
    return nan ? line_max_f32(x, n) : m;
}

/* One chunk, w <= EXP_CHUNK: the sum of exp(x[i] - m) as the file's head
 * says; y[i] = exp(x[i] - m) (keep PYGPU_KEEP_EXP) or x[i] - m
 * (PYGPU_KEEP_DIFF). */
static inline __attribute__((always_inline)) double
chunk_sum_exp(int keep, float *restrict y, const float *restrict x,
              int64_t w, float m)
{
    float lane[LANES] = {0};
    int64_t i = 0;
    if (keep == PYGPU_KEEP_EXP) {
        for (; i + LANES <= w; i += LANES) {
            for (int k = 0; k < LANES; k++) {
                float e = pygpu_cpu_expf_neg(x[i + k] - m);
                y[i + k] = e;
                lane[k] += e;
            }
        }
        for (int k = 0; i < w; i++, k++) {
            float e = pygpu_cpu_expf_neg(x[i] - m);
            y[i] = e;
            lane[k] += e;
        }
    }
    else if (keep == PYGPU_KEEP_DIFF) {
        for (; i + LANES <= w; i += LANES) {
            for (int k = 0; k < LANES; k++) {
                float d = x[i + k] - m;
                y[i + k] = d;
                lane[k] += pygpu_cpu_expf_neg(d);
            }
        }
        for (int k = 0; i < w; i++, k++) {
            float d = x[i] - m;
            y[i] = d;
            lane[k] += pygpu_cpu_expf_neg(d);
        }
    }
    else {
        for (; i + LANES <= w; i += LANES) {
            for (int k = 0; k < LANES; k++) {
                lane[k] += pygpu_cpu_expf_neg(x[i + k] - m);
            }
        }
        for (int k = 0; i < w; i++, k++) {
            lane[k] += pygpu_cpu_expf_neg(x[i] - m);
        }
    }
    float h[LANES / 2];
    double d[LANES / 4];
    for (int k = 0; k < LANES / 2; k++) {
        h[k] = lane[k] + lane[k + LANES / 2];
    }
    for (int k = 0; k < LANES / 4; k++) {
        d[k] = (double)h[k] + (double)h[k + LANES / 4];
    }
    return (d[0] + d[2]) + (d[1] + d[3]);
}

/* sum over j of exp(x[j] - m), chunk by chunk; y as keep says
 * (cpu_softmax.h). */
PYGPU_CLONES(, double, pygpu_cpu_row_sum_exp_f32,
             (int keep, float *restrict y, const float *restrict x,
              int64_t n, float m),
             (keep, y, x, n, m))
{
    double s = 0;
    for (int64_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
        int64_t w = n - j0 < EXP_CHUNK ? n - j0 : EXP_CHUNK;
        s += chunk_sum_exp(keep, keep ? y + j0 : NULL, x + j0, w, m);
    }
    return s;
}

/* The last pass over one contiguous float32 line, in place: y *= a
 * (softmax: y holds the exponentials) or y -= a (log_softmax: y holds
 * x - m). */
PYGPU_CLONES(static, void, finish_row_f32,
             (int op, float *restrict y, int64_t n, float a), (op, y, n, a))
{
    if (op == PYGPU_SOFTMAX) {
        for (int64_t j = 0; j < n; j++) {
            y[j] *= a;
        }
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        y[j] -= a;
    }
}

/* The same over w columns of a slab (rows `inner` apart), a[c] per
 * column: the same single rounding per element. */
PYGPU_CLONES(static, void, finish_cols_f32,
             (int op, float *y, int64_t n, int64_t inner, int64_t w,
              const float *a),
             (op, y, n, inner, w, a))
{
    for (int64_t j = 0; j < n; j++) {
        float *restrict dst = y + j * inner;
        if (op == PYGPU_SOFTMAX) {
            for (int64_t c = 0; c < w; c++) {
                dst[c] *= a[c];
            }
        }
        else {
            for (int64_t c = 0; c < w; c++) {
                dst[c] -= a[c];
            }
        }
    }
}

/* One contiguous float32 line (inner == 1), read in place. */
static void row_f32(int op, float *y, const float *x, int64_t n)
{
    float m = pygpu_cpu_row_max_f32(x, n);
    int lse_inf = op == PYGPU_LOGSUMEXP && isinf(m);
    double s = lse_inf ? 0
                       : pygpu_cpu_row_sum_exp_f32(pygpu_cpu_softmax_keeps(op), y, x, n,
                                                   m);
    float a = pygpu_cpu_line_const(op, m, s);
    if (op == PYGPU_LOGSUMEXP) {
        y[0] = a;
        return;
    }
    finish_row_f32(op, y, n, a);
}

/* --------------------------------------------- lines read through a tile */

/* Loads and stores of the float path's dtypes. */
#define AS_IS(x) (x)
#define BY_DTYPE(dtype, DO)                                                  \
    switch (dtype) {                                                         \
    case PYGPU_FLOAT32:                                                      \
        DO(float, AS_IS, AS_IS);                                             \
        break;                                                               \
    case PYGPU_FLOAT16:                                                      \
        DO(uint16_t, pygpu_half_to_float, pygpu_float_to_half);              \
        break;                                                               \
    default:                                                                 \
        DO(uint16_t, pygpu_bf16_to_float, pygpu_float_to_bf16);              \
        break;                                                               \
    }

/* m[c] = the maximum of column c < w, NaN winning. */
static void cols_max(int dtype, float *m, const void *x, int64_t n,
                     int64_t inner, int64_t w)
{
#define COLS_MAX(T, LD, ST)                                                  \
    for (int64_t c = 0; c < w; c++) {                                        \
        m[c] = LD(((const T *)x)[c]);                                        \
    }                                                                        \
    for (int64_t j = 1; j < n; j++) {                                        \
        const T *row = (const T *)x + j * inner;                             \
        for (int64_t c = 0; c < w; c++) {                                    \
            float v = LD(row[c]);                                            \
            m[c] = MAX_TAKES(v, m[c]) ? v : m[c];                            \
        }                                                                    \
    }
    BY_DTYPE(dtype, COLS_MAX)
#undef COLS_MAX
}

/* t[c * EXP_CHUNK + i] = row j0 + i of column c, as float, i < h, c < w. */
static void tile_load(int dtype, float *restrict t, const void *x,
                      int64_t j0, int64_t h, int64_t inner, int64_t w)
{
#define TILE_LOAD(T, LD, ST)                                                 \
    for (int64_t i = 0; i < h; i++) {                                        \
        const T *row = (const T *)x + (j0 + i) * inner;                      \
        for (int64_t c = 0; c < w; c++) {                                    \
            t[c * EXP_CHUNK + i] = LD(row[c]);                               \
        }                                                                    \
    }
    BY_DTYPE(dtype, TILE_LOAD)
#undef TILE_LOAD
}

/* The reverse for float32, into y. */
static void tile_store_f32(float *y, const float *restrict t, int64_t j0,
                           int64_t h, int64_t inner, int64_t w)
{
    for (int64_t i = 0; i < h; i++) {
        float *row = y + (j0 + i) * inner;
        for (int64_t c = 0; c < w; c++) {
            row[c] = t[c * EXP_CHUNK + i];
        }
    }
}

/* The last pass of a float16 / bfloat16 block: (x - m[c]) - a[c], or
 * the exponentials computed again, chunk by chunk as the sums were, times
 * a[c]; rounded once. */
static void finish_cols_half(int op, int dtype, void *y, const void *x,
                             int64_t n, int64_t inner, int64_t w,
                             const float *m, const float *a, float *t,
                             float *e)
{
#define LOG_ROWS(T, LD, ST)                                                  \
    for (int64_t j = 0; j < n; j++) {                                        \
        const T *row = (const T *)x + j * inner;                             \
        T *dst = (T *)y + j * inner;                                         \
        for (int64_t c = 0; c < w; c++) {                                    \
            float d = LD(row[c]) - m[c];                                     \
            dst[c] = ST(d - a[c]);                                           \
        }                                                                    \
    }
#define SCALED_ROWS(T, LD, ST)                                               \
    for (int64_t i = 0; i < h; i++) {                                        \
        T *dst = (T *)y + (j0 + i) * inner;                                  \
        for (int64_t c = 0; c < w; c++) {                                    \
            dst[c] = ST(e[c * EXP_CHUNK + i] * a[c]);                        \
        }                                                                    \
    }
    if (op == PYGPU_LOG_SOFTMAX) {
        BY_DTYPE(dtype, LOG_ROWS)
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
        int64_t h = n - j0 < EXP_CHUNK ? n - j0 : EXP_CHUNK;
        tile_load(dtype, t, x, j0, h, inner, w);
        for (int64_t c = 0; c < w; c++) {
            pygpu_cpu_row_sum_exp_f32(PYGPU_KEEP_EXP, e + c * EXP_CHUNK,
                                      t + c * EXP_CHUNK, h, m[c]);
        }
        BY_DTYPE(dtype, SCALED_ROWS)
    }
#undef LOG_ROWS
#undef SCALED_ROWS
}

/* w <= TILE_COLS lines of a slab in float (any of the three dtypes), line
 * c's elements at x + c + j * inner, j < n; logsumexp writes y[c]. */
static void block_float(int op, int dtype, void *y, const void *x,
                        int64_t n, int64_t inner, int64_t w)
{
    float t[TILE_COLS * EXP_CHUNK], e[TILE_COLS * EXP_CHUNK];
    float m[TILE_COLS], a[TILE_COLS];
    double s[TILE_COLS] = {0};
    /* Every dtype sums through the variant that its op keeps, so that the
     * sums have float32's bits; float32 stores what was kept in y. */
    int keep = pygpu_cpu_softmax_keeps(op);
    int f32 = dtype == PYGPU_FLOAT32;
    cols_max(dtype, m, x, n, inner, w);
    for (int64_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
        int64_t h = n - j0 < EXP_CHUNK ? n - j0 : EXP_CHUNK;
        tile_load(dtype, t, x, j0, h, inner, w);
        for (int64_t c = 0; c < w; c++) {
            s[c] += pygpu_cpu_row_sum_exp_f32(keep, e + c * EXP_CHUNK,
                                              t + c * EXP_CHUNK, h, m[c]);
        }
        if (keep && f32) {
            tile_store_f32(y, e, j0, h, inner, w);
        }
    }
    for (int64_t c = 0; c < w; c++) {
        a[c] = pygpu_cpu_line_const(op, m[c], s[c]);
    }
#define LSE_OUT(T, LD, ST)                                                   \
    for (int64_t c = 0; c < w; c++) {                                        \
        ((T *)y)[c] = ST(a[c]);                                              \
    }
    if (op == PYGPU_LOGSUMEXP) {
        BY_DTYPE(dtype, LSE_OUT)
        return;
    }
#undef LSE_OUT
    if (f32) {
        finish_cols_f32(op, y, n, inner, w, a);
    }
    else {
        finish_cols_half(op, dtype, y, x, n, inner, w, m, a, t, e);
    }
}

static void softmax_float(int op, int dtype, void *out, const void *in,
                          int64_t outer, int64_t n, int64_t inner)
{
    size_t es = dtype == PYGPU_FLOAT32 ? sizeof(float) : sizeof(uint16_t);
    int lse = op == PYGPU_LOGSUMEXP;
    if (inner == 1 && dtype == PYGPU_FLOAT32 && n <= PYGPU_SHORT_LINE) {
        pygpu_cpu_short_rows_f32(op, out, in, outer, n);
        return;
    }
    for (int64_t o = 0; o < outer; o++) {
        const char *x = (const char *)in + (size_t)(o * n * inner) * es;
        char *y = (char *)out + (size_t)(o * (lse ? 1 : n) * inner) * es;
        if (inner == 1 && dtype == PYGPU_FLOAT32) {
            row_f32(op, (float *)y, (const float *)x, n);
            continue;
        }
        for (int64_t c0 = 0; c0 < inner; c0 += TILE_COLS) {
            int64_t w = inner - c0 < TILE_COLS ? inner - c0 : TILE_COLS;
            block_float(op, dtype, y + (size_t)c0 * es,
                        x + (size_t)c0 * es, n, inner, w);
        }
    }
}

/* ------------------------------------------------------------- float64 */

/* w columns of a slab in double (w == 1, inner == 1: a contiguous line);
 * softmax keeps exp(x - m) in y, then scales it. */
static void cols_f64(int op, double *y, const double *x, int64_t n,
                     int64_t inner, int64_t w)
{
    double m[TILE_COLS], s[TILE_COLS];
    for (int64_t c = 0; c < w; c++) {
        m[c] = x[c];
        s[c] = 0;
    }
    for (int64_t j = 1; j < n; j++) {
        const double *row = x + j * inner;
        for (int64_t c = 0; c < w; c++) {
            m[c] = MAX_TAKES(row[c], m[c]) ? row[c] : m[c];
        }
    }
    for (int64_t j = 0; j < n; j++) {
        const double *row = x + j * inner;
        double *dst = y + j * inner;
        for (int64_t c = 0; c < w; c++) {
            double e = exp(row[c] - m[c]);
            s[c] += e;
            if (op == PYGPU_SOFTMAX) {
                dst[c] = e;
            }
        }
    }
    for (int64_t c = 0; c < w; c++) {
        s[c] = op == PYGPU_SOFTMAX                 ? 1 / s[c]
             : op == PYGPU_LOGSUMEXP && isinf(m[c]) ? m[c]
                                                     : m[c] + log(s[c]);
    }
    if (op == PYGPU_LOGSUMEXP) {
        memcpy(y, s, (size_t)w * sizeof(double));
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        const double *row = x + j * inner;
        double *dst = y + j * inner;
        for (int64_t c = 0; c < w; c++) {
            dst[c] = op == PYGPU_LOG_SOFTMAX ? row[c] - s[c] : dst[c] * s[c];
        }
    }
}

static void softmax_f64(int op, double *out, const double *in,
                        int64_t outer, int64_t n, int64_t inner)
{
    int lse = op == PYGPU_LOGSUMEXP;
    for (int64_t o = 0; o < outer; o++) {
        const double *x = in + o * n * inner;
        double *y = out + o * (lse ? 1 : n) * inner;
        for (int64_t c0 = 0; c0 < inner; c0 += TILE_COLS) {
            int64_t w = inner - c0 < TILE_COLS ? inner - c0 : TILE_COLS;
            cols_f64(op, y + c0, x + c0, n, inner, w);
        }
    }
}

void pygpu_cpu_softmax(int op, int dtype, void *out, const void *in,
                       int64_t outer, int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n <= 0 || op < 0 ||
        op >= PYGPU_NSOFTOPS) {
        return;
    }
    switch (dtype) {
    case PYGPU_FLOAT32:
    case PYGPU_FLOAT16:
    case PYGPU_BFLOAT16:
        softmax_float(op, dtype, out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT64:
        softmax_f64(op, out, in, outer, n, inner);
        break;
    default:
        break; /* integers are converted by the caller */
    }
}
