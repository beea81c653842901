/* cpu_softmax.h - the float32 row helpers of the softmax loops
 * (cpu_softmax.c) that cross-entropy's loops (cpu_xent.c) share.  Plain C,
 * no Python.h. */
#ifndef PYGPU_CPU_SOFTMAX_H
#define PYGPU_CPU_SOFTMAX_H

#include <stdint.h>

/* The maximum of x[0 .. n), n >= 1, in vector lanes; NaN when x holds
 * one. */
float pygpu_cpu_row_max_f32(const float *x, int64_t n);
/* sum over j of exp(x[j] - m) (pygpu_exp_f), summed in double lanes; the
 * exponentials also go to y when y is not NULL. */
double pygpu_cpu_row_sum_exp_f32(float *restrict y, const float *restrict x,
                                 int64_t n, float m);

#endif /* PYGPU_CPU_SOFTMAX_H */
