/* cpu_softmax.h - the float32 row helpers of the softmax loops
 * (cpu_softmax.c) that cross-entropy's loops (cpu_xent.c) share.  Plain C,
 * no Python.h. */
#ifndef PYGPU_CPU_SOFTMAX_H
#define PYGPU_CPU_SOFTMAX_H

#include <stdint.h>

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
/* Lines this short go many to a call (softmax) or take
 * pygpu_cpu_short_line_f32 (cross-entropy). */
#define PYGPU_SHORT_LINE 64
/* Lines of at most PYGPU_SHORT_LINE elements: the maximum (*m, element
 * by element) and the sum of exp(x - m), as the two calls above give them, in one. */
double pygpu_cpu_short_line_f32(const float *x, int64_t n, float *m);

#endif /* PYGPU_CPU_SOFTMAX_H */
