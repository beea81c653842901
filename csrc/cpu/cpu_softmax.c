/* cpu_softmax.c - softmax, log_softmax and logsumexp along the middle dim
 * of a contiguous input seen as [outer, n, inner], n >= 1.
 *
 * Each line is read three times: its maximum m, then s = sum exp(x - m),
 * then the outputs (exp(x - m) / s, x - m - log s, or m + log s once).
 * Subtracting m keeps exp from overflowing.  float16, bfloat16 and
 * float32 compute in float, float64 in double.  A NaN anywhere in a line
 * makes that line NaN, as in torch; for logsumexp an infinite m is taken
 * as 0, so a line of -inf gives -inf and one holding +inf gives +inf, as
 * torch's does.
 *
 * inner == 1: each line is a contiguous run.  inner > 1: the lines of a
 * slab are handled SOFTMAX_COLS columns at a time, rows read one after the
 * other, with the maxima and sums in buffers.  Where the output has the
 * compute type, the second pass stores exp(x - m) and the third scales it
 * in place; float16 and bfloat16 compute exp twice instead of rounding it
 * early.
 * The sums of exponentials are kept in double (SUM), so that long lines
 * lose nothing to a single float accumulator.  Contiguous float32 lines,
 * the common case, take a vectorized path (row_f32, with pygpu_exp_f).
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

/* Columns handled at once when inner > 1 (buffers on the stack). */
#define SOFTMAX_COLS 256

#define AS_IS(x) (x)
/* Replaces m: larger, or NaN (so that NaN propagates). */
#define MAX_TAKES(v, m) (((v) > (m)) | ((v) != (v)))

/* Elements per chunk of the float32 row path (a stack buffer of
 * exponentials), and lanes of its max and sum. */
#define EXP_CHUNK 256
#define LANES 16

#define SOFTMAX(SFX, T, ACC, SUM, LD, ST, EXP, LOG)                          \
    static void line_##SFX(int op, T *y, const T *restrict x, int64_t n)    \
    {                                                                        \
        ACC m = LD(x[0]);                                                    \
        for (int64_t j = 1; j < n; j++) {                                    \
            ACC v = LD(x[j]);                                                \
            m = MAX_TAKES(v, m) ? v : m;                                     \
        }                                                                    \
        if (op == PYGPU_LOGSUMEXP && isinf(m)) {                             \
            m = 0;                                                           \
        }                                                                    \
        int keep = op == PYGPU_SOFTMAX && sizeof(T) == sizeof(ACC);          \
        SUM s = 0;                                                           \
        for (int64_t j = 0; j < n; j++) {                                    \
            ACC e = EXP(LD(x[j]) - m);                                       \
            s += e;                                                          \
            if (keep) {                                                      \
                y[j] = ST(e);                                                \
            }                                                                \
        }                                                                    \
        if (op == PYGPU_LOGSUMEXP) {                                         \
            y[0] = ST(m + LOG((ACC)s));                                      \
        }                                                                    \
        else if (op == PYGPU_LOG_SOFTMAX) {                                  \
            ACC ls = m + LOG((ACC)s);                                        \
            for (int64_t j = 0; j < n; j++) {                                \
                y[j] = ST(LD(x[j]) - ls);                                    \
            }                                                                \
        }                                                                    \
        else {                                                               \
            ACC r = (ACC)(1 / s);                                            \
            for (int64_t j = 0; j < n; j++) {                                \
                ACC e = keep ? LD(y[j])                                      \
                             : EXP(LD(x[j]) - m);                            \
                y[j] = ST(e * r);                                            \
            }                                                                \
        }                                                                    \
    }                                                                        \
    /* w columns of a slab: x at column 0, rows `inner` apart. */            \
    static void cols_##SFX(int op, T *y, const T *x, int64_t n,              \
                           int64_t inner, int64_t w)                         \
    {                                                                        \
        ACC m[SOFTMAX_COLS];                                                 \
        SUM s[SOFTMAX_COLS];                                                 \
        for (int64_t c = 0; c < w; c++) {                                    \
            m[c] = LD(x[c]);                                                 \
            s[c] = 0;                                                        \
        }                                                                    \
        for (int64_t j = 1; j < n; j++) {                                    \
            const T *restrict row = x + j * inner;                           \
            for (int64_t c = 0; c < w; c++) {                                \
                ACC v = LD(row[c]);                                          \
                m[c] = MAX_TAKES(v, m[c]) ? v : m[c];                        \
            }                                                                \
        }                                                                    \
        if (op == PYGPU_LOGSUMEXP) {                                         \
            for (int64_t c = 0; c < w; c++) {                                \
                m[c] = isinf(m[c]) ? 0 : m[c];                               \
            }                                                                \
        }                                                                    \
        for (int64_t j = 0; j < n; j++) {                                    \
            const T *restrict row = x + j * inner;                           \
            for (int64_t c = 0; c < w; c++) {                                \
                s[c] += EXP(LD(row[c]) - m[c]);                              \
            }                                                                \
        }                                                                    \
        if (op == PYGPU_LOGSUMEXP) {                                         \
            for (int64_t c = 0; c < w; c++) {                                \
                y[c] = ST(m[c] + LOG((ACC)s[c]));                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        for (int64_t c = 0; c < w; c++) {                                    \
            s[c] = op == PYGPU_LOG_SOFTMAX ? m[c] + LOG((ACC)s[c])           \
                                           : 1 / s[c];                       \
        }                                                                    \
        for (int64_t j = 0; j < n; j++) {                                    \
            const T *restrict row = x + j * inner;                           \
            T *restrict dst = y + j * inner;                                 \
            for (int64_t c = 0; c < w; c++) {                                \
                ACC v = LD(row[c]);                                          \
                dst[c] = ST(op == PYGPU_LOG_SOFTMAX                          \
                                ? v - (ACC)s[c]                              \
                                : EXP(v - m[c]) * (ACC)s[c]);                \
            }                                                                \
        }                                                                    \
    }                                                                        \
    static void softmax_##SFX(int op, T *out, const T *in, int64_t outer,    \
                              int64_t n, int64_t inner)                      \
    {                                                                        \
        int lse = op == PYGPU_LOGSUMEXP;                                     \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = in + o * n * inner;                                 \
            T *y = out + o * (lse ? 1 : n) * inner;                          \
            if (inner == 1) {                                                \
                line_##SFX(op, y, x, n);                                     \
                continue;                                                    \
            }                                                                \
            for (int64_t c0 = 0; c0 < inner; c0 += SOFTMAX_COLS) {           \
                int64_t w = inner - c0 < SOFTMAX_COLS ? inner - c0           \
                                                      : SOFTMAX_COLS;        \
                cols_##SFX(op, y + c0, x + c0, n, inner, w);                 \
            }                                                                \
        }                                                                    \
    }

SOFTMAX(f32, float, float, double, AS_IS, AS_IS, pygpu_exp_f, logf)
SOFTMAX(f16, uint16_t, float, double, pygpu_half_to_float,
        pygpu_float_to_half, pygpu_exp_f, logf)
SOFTMAX(bf16, uint16_t, float, double, pygpu_bf16_to_float,
        pygpu_float_to_bf16, pygpu_exp_f, logf)
SOFTMAX(f64, double, double, double, AS_IS, AS_IS, exp, log)

/* ------------------------------------------- float32 rows, vectorized */

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

/* sum over j of exp(x[j] - m), in double lanes; the exponentials also go
 * to y when y is not NULL (cpu_softmax.h). */
PYGPU_CLONES(, double, pygpu_cpu_row_sum_exp_f32,
             (float *restrict y, const float *restrict x, int64_t n,
              float m),
             (y, x, n, m))
{
    float e[EXP_CHUNK];
    double lane[LANES] = {0}, s = 0;
    for (int64_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
        int64_t w = n - j0 < EXP_CHUNK ? n - j0 : EXP_CHUNK, c = 0;
        for (int64_t i = 0; i < w; i++) {
            e[i] = pygpu_exp_f(x[j0 + i] - m);
        }
        if (y != NULL) {
            for (int64_t i = 0; i < w; i++) {
                y[j0 + i] = e[i];
            }
        }
        for (; c + LANES <= w; c += LANES) {
            for (int k = 0; k < LANES; k++) {
                lane[k] += e[c + k];
            }
        }
        for (; c < w; c++) {
            s += e[c];
        }
    }
    for (int k = 0; k < LANES; k++) {
        s += lane[k];
    }
    return s;
}

/* One contiguous float32 line (inner == 1), as line_f32 computes it. */
static void row_f32(int op, float *restrict y, const float *restrict x,
                    int64_t n)
{
    float m = pygpu_cpu_row_max_f32(x, n);
    if (op == PYGPU_LOGSUMEXP && isinf(m)) {
        m = 0;
    }
    double s = pygpu_cpu_row_sum_exp_f32(op == PYGPU_SOFTMAX ? y : NULL, x,
                                         n, m);
    if (op == PYGPU_LOGSUMEXP) {
        y[0] = m + logf((float)s);
    }
    else if (op == PYGPU_LOG_SOFTMAX) {
        float ls = m + logf((float)s);
        for (int64_t j = 0; j < n; j++) {
            y[j] = x[j] - ls;
        }
    }
    else {
        float r = (float)(1 / s);
        for (int64_t j = 0; j < n; j++) {
            y[j] *= r;
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
        if (inner > 1) {
            softmax_f32(op, out, in, outer, n, inner);
            break;
        }
        for (int64_t o = 0; o < outer; o++) {
            row_f32(op, (float *)out + o * (op == PYGPU_LOGSUMEXP ? 1 : n),
                    (const float *)in + o * n, n);
        }
        break;
    case PYGPU_FLOAT16:
        softmax_f16(op, out, in, outer, n, inner);
        break;
    case PYGPU_BFLOAT16:
        softmax_bf16(op, out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT64:
        softmax_f64(op, out, in, outer, n, inner);
        break;
    default:
        break; /* integers are converted by the caller */
    }
}
