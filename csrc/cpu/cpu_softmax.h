/* cpu_softmax.h - the float32 row helpers of the softmax loops
 * (cpu_softmax.c) that cross-entropy's loops (cpu_xent.c) share.  Plain C,
 * no Python.h. */
#ifndef PYGPU_CPU_SOFTMAX_H
#define PYGPU_CPU_SOFTMAX_H

#include <stdint.h>

/* The maximum of x[0 .. n), n >= 1, in vector lanes; NaN when x holds
 * one. */
float pygpu_cpu_row_max_f32(const float *x, int64_t n);
/* sum over j of exp(x[j] - m) for x[j] - m <= 0 (pygpu_cpu_expf_neg):
 * chunks of 256 elements summed in float lanes, their sums added in
 * double (cpu_softmax.c); the exponentials also go to y when y is not
 * NULL.  Cloned for the CPU's vectors (cpu/simd.h). */
double pygpu_cpu_row_sum_exp_f32(float *restrict y, const float *restrict x,
                                 int64_t n, float m);

#endif /* PYGPU_CPU_SOFTMAX_H */
