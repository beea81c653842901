/* cpu_half.h - float16 and bfloat16 runs widened to float and narrowed
 * back, through the CPU's conversion instructions where it has them
 * (F16C), and the elementwise loops of half types run as float32 loops
 * on such runs.  Plain C, no Python.h. */
#ifndef PYGPU_CPU_HALF_H
#define PYGPU_CPU_HALF_H

#include <stdint.h>

#include "cpu/cpu_loops.h"

/* y[i] = x[i] as float (exact), i < n; contiguous runs. */
void pygpu_cpu_widen_f16(float *y, const uint16_t *x, int64_t n);
void pygpu_cpu_widen_bf16(float *y, const uint16_t *x, int64_t n);
/* y[i] = x[i] rounded to nearest even, i < n; contiguous runs. */
void pygpu_cpu_narrow_f16(uint16_t *y, const float *x, int64_t n);
void pygpu_cpu_narrow_bf16(uint16_t *y, const float *x, int64_t n);

/* Runs f32, an inner loop of float32 with nin inputs (1 or 2), on
 * float16 (bf16 = 0) or bfloat16 (bf16 = 1) operands p / s of one row:
 * a chunk at a time, each input widened into a float buffer (a stride-0
 * input once), the float32 loop into a float buffer, then narrowed into
 * the output.  The float32 loop computes in float, so the result is the
 * half loop's: every value rounded once, at the end. */
void pygpu_cpu_half_via_float(inner_loop f32, int nin, int bf16,
                              char *const *p, const int64_t *s, int64_t n,
                              const void *ctx);

#endif /* PYGPU_CPU_HALF_H */
