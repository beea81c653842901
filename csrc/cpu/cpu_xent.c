/* cpu_xent.c - cross-entropy over class indices on the CPU: the XENT kind
 * (kernels.h states the formula and the arguments).
 *
 * Forward, per sample: the maximum m of its line of logits, then
 * s = sum exp(x - m) (float32 lines: pygpu_cpu_row_sum_exp_f32's chunks
 * of float lanes added in double; otherwise in double), and with label
 * smoothing
 * sw = sum w[c] (x_c - m); then ls = log s (float losses:
 * pygpu_cpu_log_sum, the vector log with its rounding of s taken back
 * below 2; double losses: log1p(s - 1); either keeps the digits of a loss
 * near 0) and
 *   loss = (1 - eps) w[t] (ls - (x_t - m)) + eps / n (W ls - sw),
 * which is the formula with m taken out of every difference (no
 * cancellation for large logits, and a small loss keeps its digits).  A
 * NaN in a line makes its loss NaN (the maximum keeps it), as torch's
 * log_softmax does.
 * Backward, per element, with p = exp((x_c - m) - ls) and g the sample's
 * incoming gradient over the mean's divisor:
 *   g ((1 - eps) w[t] (p - [c == t]) + eps / n (W p - w[c])),
 * 0 for an ignored sample.  float16, bfloat16 and float32 compute in float
 * (exp of x - m <= 0 by pygpu_cpu_expf_neg, kernels/cpu_math.h), float64
 * in double.
 *
 * inner == 1: each line is a contiguous run (float32: the vector row
 * helpers of the softmax loops forward, lines of at most
 * PYGPU_SHORT_LINE a group at a time across the lanes; grad_row_f32
 * backward).
 * inner > 1: XENT_COLS columns of a slab at a time, rows read one after
 * the other, with per-column buffers.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_softmax.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/cpu_math.h"
#include "kernels/kernels.h"
#include "kernels/rules.h"

/* Columns handled at once when inner > 1 (buffers on the stack). */
#define XENT_COLS 256

#define AS_IS(x) (x)
/* Replaces m: larger, or NaN (so that NaN propagates). */
#define MAX_TAKES(v, m) (((v) > (m)) | ((v) != (v)))

/* A sample's target: 0 ignored, 1 counted, -1 out of range. */
static inline int
target_kind(const pygpu_xent_args *a, int64_t t)
{
    if (t == a->ignore_index) {
        return 0;
    }
    return t >= 0 && t < a->n ? 1 : -1;
}

/* n == 0: no sample can be counted; ignored ones give 0 (acc zeros are
 * all-zero bytes in float and double). */
static int
forward_no_classes(const pygpu_xent_args *a, size_t acc_size, int64_t *bad)
{
    int64_t S = a->outer * a->inner;
    for (int64_t s = 0; s < S; s++) {
        if (target_kind(a, a->target[s]) != 0) {
            *bad = a->target[s];
            return 1;
        }
    }
    memset(a->stats, 0, PYGPU_XENT_ROWS * (size_t)S * acc_size);
    return 0;
}

/* One contiguous float32 line of the backward (vectorized): y = cp p - b
 * w[c], p = exp((x - m) - ls), w NULL meaning all 1. */
PYGPU_CLONES(static, void, grad_row_f32,
             (float *restrict y, const float *restrict x,
              const float *restrict w, int64_t n, float m, float ls,
              float cp, float b),
             (y, x, w, n, m, ls, cp, b))
{
    if (w == NULL) {
        for (int64_t c = 0; c < n; c++) {
            y[c] = cp * pygpu_cpu_expf_neg((x[c] - m) - ls) - b;
        }
        return;
    }
    for (int64_t c = 0; c < n; c++) {
        y[c] = cp * pygpu_cpu_expf_neg((x[c] - m) - ls) - b * w[c];
    }
}

#define XENT(SFX, T, ACC, LD, ST, EXP)                                       \
    /* W: the weights' sum (n without weights). */                           \
    static ACC weight_sum_##SFX(const pygpu_xent_args *a)                    \
    {                                                                        \
        const T *w = a->weight;                                              \
        double s = 0;                                                        \
        if (w == NULL) {                                                     \
            return (ACC)a->n;                                                \
        }                                                                    \
        for (int64_t c = 0; c < a->n; c++) {                                 \
            s += LD(w[c]);                                                   \
        }                                                                    \
        return (ACC)s;                                                       \
    }                                                                        \
    /* sum over c of w[c] (x_c - m) along a line, elements `inner` apart. */ \
    static double smooth_sum_##SFX(const pygpu_xent_args *a, const T *x,     \
                                   ACC m)                                    \
    {                                                                        \
        const T *w = a->weight;                                              \
        double sw = 0;                                                       \
        for (int64_t c = 0; c < a->n; c++) {                                 \
            ACC d = LD(x[c * a->inner]) - m;                                 \
            sw += w ? LD(w[c]) * d : d;                                      \
        }                                                                    \
        return sw;                                                           \
    }                                                                        \
    /* log se, se >= 1: pygpu_cpu_log_sum in float, log1p in double (both \
     * keep the digits of a small loss past 1) */                           \
    static inline ACC log_sum_##SFX(double se)                               \
    {                                                                        \
        return sizeof(ACC) == sizeof(float) ? (ACC)pygpu_cpu_log_sum(se)     \
                                            : (ACC)log1p(se - 1);            \
    }                                                                        \
    /* Sample s's row of stats from its line's m, ls = log s and sw. */      \
    static void finish_##SFX(const pygpu_xent_args *a, ACC *st, int64_t s,   \
                             int64_t t, ACC xt, ACC m, ACC ls, double sw,    \
                             ACC W)                                          \
    {                                                                        \
        int64_t S = a->outer * a->inner;                                     \
        ACC wt = a->weight ? LD(((const T *)a->weight)[t]) : (ACC)1;         \
        ACC loss = (ACC)(1 - a->smoothing) * wt * (ls - (xt - m));           \
        if (a->smoothing > 0) {                                              \
            loss += (ACC)(a->smoothing / a->n) * (W * ls - (ACC)sw);         \
        }                                                                    \
        st[s] = loss;                                                        \
        st[S + s] = wt;                                                      \
        st[2 * S + s] = m;                                                   \
        st[3 * S + s] = ls;                                                  \
    }                                                                        \
    static void ignored_##SFX(const pygpu_xent_args *a, ACC *st, int64_t s)  \
    {                                                                        \
        int64_t S = a->outer * a->inner;                                     \
        st[s] = st[S + s] = st[2 * S + s] = st[3 * S + s] = 0;               \
    }                                                                        \
    /* inner == 1: line o is the contiguous run x + o n. */                  \
    static int forward_rows_##SFX(const pygpu_xent_args *a, ACC W,           \
                                  int64_t lo, int64_t hi, int64_t *bad)      \
    {                                                                        \
        ACC *st = a->stats;                                                  \
        int64_t n = a->n;                                                    \
        /* short float32 lines: their m and s a group at a time */          \
        int grouped = sizeof(T) == sizeof(float) &&                          \
                      sizeof(ACC) == sizeof(float) && n <= PYGPU_SHORT_LINE; \
        float gm[PYGPU_SHORT_GROUP], gl[PYGPU_SHORT_GROUP];                  \
        for (int64_t o = lo; o < hi; o++) {                                  \
            const T *x = (const T *)a->x + o * n;                            \
            int64_t gi = (o - lo) % PYGPU_SHORT_GROUP;                       \
            if (grouped && gi == 0) {                                        \
                int64_t g = hi - o < PYGPU_SHORT_GROUP ? hi - o              \
                                                       : PYGPU_SHORT_GROUP;  \
                pygpu_cpu_short_stats_f32((const float *)x, n, g, gm, gl);   \
            }                                                                \
            int64_t t = a->target[o];                                        \
            int kind = target_kind(a, t);                                    \
            if (kind <= 0) {                                                 \
                if (kind < 0) {                                              \
                    *bad = t;                                                \
                    return 1;                                                \
                }                                                            \
                ignored_##SFX(a, st, o);                                     \
                continue;                                                    \
            }                                                                \
            ACC m, ls;                                                       \
            double se = 0;                                                   \
            if (sizeof(T) == sizeof(float) && sizeof(ACC) == sizeof(float)) { \
                if (grouped) {                                               \
                    m = gm[gi];                                              \
                    se = 1; /* unused: ls is the group's */                  \
                }                                                            \
                else {                                                       \
                    m = pygpu_cpu_row_max_f32((const float *)x, n);          \
                    se = pygpu_cpu_row_sum_exp_f32(PYGPU_KEEP_NONE, NULL,    \
                                                   (const float *)x, n, m);  \
                }                                                            \
            }                                                                \
            else {                                                           \
                m = LD(x[0]);                                                \
                for (int64_t j = 1; j < n; j++) {                            \
                    ACC v = LD(x[j]);                                        \
                    m = MAX_TAKES(v, m) ? v : m;                             \
                }                                                            \
                for (int64_t j = 0; j < n; j++) {                            \
                    se += EXP(LD(x[j]) - m);                                 \
                }                                                            \
            }                                                                \
            ls = grouped ? (ACC)gl[gi] : log_sum_##SFX(se);                  \
            double sw = a->smoothing > 0 ? smooth_sum_##SFX(a, x, m) : 0;    \
            finish_##SFX(a, st, o, t, LD(x[t]), m, ls, sw, W);               \
        }                                                                    \
        return 0;                                                            \
    }                                                                        \
    /* inner > 1: wd columns of slab o from column c0. */                    \
    static int forward_cols_##SFX(const pygpu_xent_args *a, ACC W,           \
                                  int64_t o, int64_t c0, int64_t wd,         \
                                  int64_t *bad)                              \
    {                                                                        \
        ACC m[XENT_COLS];                                                    \
        double se[XENT_COLS], sw[XENT_COLS];                                 \
        int64_t n = a->n, inner = a->inner;                                  \
        const T *x = (const T *)a->x + o * n * inner + c0;                   \
        for (int64_t c = 0; c < wd; c++) {                                   \
            m[c] = LD(x[c]);                                                 \
            se[c] = sw[c] = 0;                                               \
        }                                                                    \
        for (int64_t j = 1; j < n; j++) {                                    \
            const T *restrict row = x + j * inner;                           \
            for (int64_t c = 0; c < wd; c++) {                               \
                ACC v = LD(row[c]);                                          \
                m[c] = MAX_TAKES(v, m[c]) ? v : m[c];                        \
            }                                                                \
        }                                                                    \
        for (int64_t j = 0; j < n; j++) {                                    \
            const T *restrict row = x + j * inner;                           \
            ACC wj = a->weight ? LD(((const T *)a->weight)[j]) : (ACC)1;     \
            for (int64_t c = 0; c < wd; c++) {                               \
                ACC d = LD(row[c]) - m[c];                                   \
                se[c] += EXP(d);                                             \
                sw[c] += wj * d;                                             \
            }                                                                \
        }                                                                    \
        for (int64_t c = 0; c < wd; c++) {                                   \
            int64_t s = o * inner + c0 + c, t = a->target[s];                \
            int kind = target_kind(a, t);                                    \
            if (kind < 0) {                                                  \
                *bad = t;                                                    \
                return 1;                                                    \
            }                                                                \
            if (kind == 0) {                                                 \
                ignored_##SFX(a, a->stats, s);                               \
                continue;                                                    \
            }                                                                \
            finish_##SFX(a, a->stats, s, t, LD(x[t * inner + c]), m[c],      \
                         log_sum_##SFX(se[c]), sw[c], W);                    \
        }                                                                    \
        return 0;                                                            \
    }                                                                        \
    static int forward_##SFX(const pygpu_xent_args *a, int64_t lo,           \
                             int64_t hi, int64_t *bad)                       \
    {                                                                        \
        ACC W = weight_sum_##SFX(a);                                         \
        if (a->n == 0) {                                                     \
            return forward_no_classes(a, sizeof(ACC), bad);                  \
        }                                                                    \
        if (lo == 0 && a->weight != NULL && a->smoothing > 0 &&              \
            a->wsum != NULL) {                                               \
            *(ACC *)a->wsum = W;                                             \
        }                                                                    \
        if (a->inner == 1) {                                                 \
            return forward_rows_##SFX(a, W, lo, hi, bad);                    \
        }                                                                    \
        for (int64_t o = lo; o < hi; o++) {                                  \
            for (int64_t c0 = 0; c0 < a->inner; c0 += XENT_COLS) {           \
                int64_t wd = a->inner - c0 < XENT_COLS ? a->inner - c0       \
                                                       : XENT_COLS;          \
                if (forward_cols_##SFX(a, W, o, c0, wd, bad)) {              \
                    return 1;                                                \
                }                                                            \
            }                                                                \
        }                                                                    \
        return 0;                                                            \
    }                                                                        \
    /* Backward: sample s's coefficients: grad = cp p - b w[c] - a1 [c ==   \
     * t], p = exp((x - m) - ls); 0 when it is not counted. */               \
    static int coeffs_##SFX(const pygpu_xent_args *a, int64_t s, ACC W,      \
                            ACC den, ACC *cp, ACC *b, ACC *a1, ACC *m,       \
                            ACC *ls)                                         \
    {                                                                        \
        int64_t t = a->target[s], S = a->outer * a->inner;                   \
        if (target_kind(a, t) <= 0) {                                        \
            return 0;                                                        \
        }                                                                    \
        ACC g = LD(((const T *)a->grad)[s * a->grad_stride]) / den;          \
        ACC wt = a->weight ? LD(((const T *)a->weight)[t]) : (ACC)1;         \
        *a1 = g * (ACC)(1 - a->smoothing) * wt;                              \
        *b = g * (ACC)(a->smoothing / a->n);                                 \
        *cp = *a1 + *b * W;                                                  \
        *m = ((const ACC *)a->stats)[2 * S + s];                             \
        *ls = ((const ACC *)a->stats)[3 * S + s];                            \
        return 1;                                                            \
    }                                                                        \
    static void backward_##SFX(const pygpu_xent_args *a, int64_t lo,         \
                               int64_t hi)                                   \
    {                                                                        \
        const T *w = a->smoothing > 0 ? a->weight : NULL;                    \
        ACC W = w ? *(const ACC *)a->wsum : (ACC)a->n;                       \
        ACC den = a->denom ? *(const ACC *)a->denom : (ACC)1;                \
        int64_t n = a->n, inner = a->inner;                                  \
        for (int64_t o = lo; o < hi; o++) {                                  \
            const T *x = (const T *)a->x + o * n * inner;                    \
            T *y = (T *)a->grad_x + o * n * inner;                           \
            if (inner == 1) {                                                \
                ACC cp, b, a1, m, ls;                                        \
                if (!coeffs_##SFX(a, o, W, den, &cp, &b, &a1, &m, &ls)) {    \
                    memset(y, 0, (size_t)n * sizeof(T));                     \
                    continue;                                                \
                }                                                            \
                if (sizeof(T) == sizeof(float) &&                            \
                    sizeof(ACC) == sizeof(float)) {                          \
                    grad_row_f32((float *)y, (const float *)x,               \
                                 (const float *)w, n, m, ls, cp, b);         \
                }                                                            \
                else if (w == NULL) {                                        \
                    for (int64_t c = 0; c < n; c++) {                        \
                        y[c] = ST(cp * EXP((LD(x[c]) - m) - ls) - b);        \
                    }                                                        \
                }                                                            \
                else {                                                       \
                    for (int64_t c = 0; c < n; c++) {                        \
                        y[c] = ST(cp * EXP((LD(x[c]) - m) - ls) -            \
                                  b * LD(w[c]));                             \
                    }                                                        \
                }                                                            \
                int64_t t = a->target[o];                                    \
                ACC wt = w ? LD(w[t]) : (ACC)1;                              \
                y[t] = ST(cp * EXP((LD(x[t]) - m) - ls) - b * wt - a1);      \
                continue;                                                    \
            }                                                                \
            for (int64_t c0 = 0; c0 < inner; c0 += XENT_COLS) {              \
                ACC cp[XENT_COLS], b[XENT_COLS], a1[XENT_COLS];              \
                ACC m[XENT_COLS], ls[XENT_COLS];                             \
                int64_t t[XENT_COLS];                                        \
                int64_t wd = inner - c0 < XENT_COLS ? inner - c0             \
                                                    : XENT_COLS;             \
                for (int64_t c = 0; c < wd; c++) {                           \
                    int64_t s = o * inner + c0 + c;                          \
                    t[c] = coeffs_##SFX(a, s, W, den, &cp[c], &b[c],         \
                                        &a1[c], &m[c], &ls[c])               \
                               ? a->target[s]                                \
                               : -1;                                         \
                }                                                            \
                for (int64_t j = 0; j < n; j++) {                            \
                    const T *restrict row = x + j * inner + c0;              \
                    T *restrict dst = y + j * inner + c0;                    \
                    ACC wj = w ? LD(w[j]) : (ACC)1;                          \
                    for (int64_t c = 0; c < wd; c++) {                       \
                        ACC v = cp[c] * EXP((LD(row[c]) - m[c]) - ls[c]) -   \
                                b[c] * wj - (t[c] == j ? a1[c] : (ACC)0);    \
                        dst[c] = ST(t[c] < 0 ? (ACC)0 : v);                  \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

XENT(f32, float, float, AS_IS, AS_IS, pygpu_cpu_expf_neg)
XENT(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half,
     pygpu_cpu_expf_neg)
XENT(bf16, uint16_t, float, pygpu_bf16_to_float, pygpu_float_to_bf16,
     pygpu_cpu_expf_neg)
XENT(f64, double, double, AS_IS, AS_IS, exp)

int
pygpu_cpu_xent_lines(int op, int dtype, const pygpu_xent_args *a,
                     int64_t lo, int64_t hi, int64_t *bad)
{
    if (a->outer <= 0 || a->inner <= 0 || a->n < 0) {
        return 0;
    }
    int fwd = op == PYGPU_XENT_FORWARD;
    if (!fwd && a->n == 0) {
        return 0;
    }
    switch (dtype) {
    case PYGPU_FLOAT32:
        return fwd ? forward_f32(a, lo, hi, bad) : (backward_f32(a, lo, hi), 0);
    case PYGPU_FLOAT16:
        return fwd ? forward_f16(a, lo, hi, bad) : (backward_f16(a, lo, hi), 0);
    case PYGPU_BFLOAT16:
        return fwd ? forward_bf16(a, lo, hi, bad)
                   : (backward_bf16(a, lo, hi), 0);
    case PYGPU_FLOAT64:
        return fwd ? forward_f64(a, lo, hi, bad) : (backward_f64(a, lo, hi), 0);
    default:
        return 0; /* the front end takes floating inputs only */
    }
}

int
pygpu_cpu_xent(int op, int dtype, const pygpu_xent_args *a, int64_t *bad)
{
    return pygpu_cpu_xent_lines(op, dtype, a, 0, a->outer, bad);
}
