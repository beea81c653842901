/* cpu_softmax.h - the float32 row helpers of the softmax loops
 * (cpu_softmax.c) that cross-entropy's loops (cpu_xent.c) share.  Plain C,
 * no Python.h. */
#ifndef PYGPU_CPU_SOFTMAX_H
#define PYGPU_CPU_SOFTMAX_H

#include <math.h>
#include <stdint.h>

#include "kernels/cpu_math.h"
#include "kernels/kernels.h"

/* The maximum of x[0 .. n), n >= 1, in vector lanes; NaN when x holds
 * one. */
float pygpu_cpu_row_max_f32(const float *x, int64_t n);
/* What pygpu_cpu_row_sum_exp_f32 writes to y[j]: nothing (y unused),
 * exp(x[j] - m), or x[j] - m. */
#define PYGPU_KEEP_NONE 0
#define PYGPU_KEEP_EXP 1
#define PYGPU_KEEP_DIFF 2

/* sum over j of exp(x[j] - m) for x[j] - m <= 0 (pygpu_cpu_expf_neg):
 * chunks of 256 elements summed in float lanes, their sums added in
 * double (cpu_softmax.c); y as keep says.  Cloned for the CPU's vectors
 * (cpu/simd.h). */
double pygpu_cpu_row_sum_exp_f32(int keep, float *restrict y,
                                 const float *restrict x, int64_t n, float m);
/* Float lanes of a chunk's sum: element i of a chunk goes into lane
 * i % PYGPU_SUM_LANES. */
#define PYGPU_SUM_LANES 16

/* What a pass over a line keeps for op (softmax / log_softmax /
 * logsumexp). */
static inline int pygpu_cpu_softmax_keeps(int op)
{
    return op == PYGPU_SOFTMAX       ? PYGPU_KEEP_EXP
         : op == PYGPU_LOG_SOFTMAX ? PYGPU_KEEP_DIFF
                                   : PYGPU_KEEP_NONE;
}

/* log s of a line's sum s >= 1 (its largest term is exp(0)), in float:
 * the vector log (kernels/cpu_math.h, within 2 ulp), far cheaper than
 * the C library's.  Below 2, s rounded to float as w loses the digits of
 * s - 1 that a small result is made of: log(1 + u) = log(w) u / (w - 1)
 * takes them back (w - 1 is exact), within a few ulp of log1p(u). */
static inline float pygpu_cpu_log_sum(double s)
{
    float w = (float)s;
    if (w >= 2) {
        return pygpu_cpu_logf(w);
    }
    double u = s - 1;
    float wm1 = w - 1.0f;
    return wm1 == 0 ? (float)u : pygpu_cpu_logf(w) * (float)(u / wm1);
}

/* What a line's outputs need from m and s: 1 / s for softmax, log s for
 * log_softmax, m + log s for logsumexp (m itself when m is infinite). */
static inline float pygpu_cpu_line_const(int op, float m, double s)
{
    if (op == PYGPU_SOFTMAX) {
        return (float)(1 / s);
    }
    if (op == PYGPU_LOG_SOFTMAX) {
        return pygpu_cpu_log_sum(s);
    }
    return isinf(m) ? m : m + pygpu_cpu_log_sum(s);
}

/* Lines this short go PYGPU_SHORT_GROUP at a time, one per vector lane
 * (cpu_softmax_short.c), with the same bits as read along their length. */
#define PYGPU_SHORT_LINE 64
#define PYGPU_SHORT_GROUP 16
/* softmax / log_softmax / logsumexp (op) of `lines` contiguous lines of
 * n <= PYGPU_SHORT_LINE elements. */
void pygpu_cpu_short_rows_f32(int op, float *y, const float *x,
                              int64_t lines, int64_t n);
/* Of lines x + i n, i < g <= PYGPU_SHORT_GROUP, n <= PYGPU_SHORT_LINE:
 * the maximum m[i] (element by element) and the log ls[i] of the sum of
 * exp(x - m), as pygpu_cpu_row_max_f32, pygpu_cpu_row_sum_exp_f32 and
 * pygpu_cpu_log_sum give them. */
void pygpu_cpu_short_stats_f32(const float *x, int64_t n, int64_t g,
                               float *m, float *ls);

#endif /* PYGPU_CPU_SOFTMAX_H */
