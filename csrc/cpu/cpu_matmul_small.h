/* cpu_matmul_small.h - small float32/float64 matrix products computed by a
 * loop of their own (cpu_matmul_small.c) instead of through NumPy, whose
 * per-call cost dominates at these sizes. */
#ifndef PYGPU_CPU_MATMUL_SMALL_H
#define PYGPU_CPU_MATMUL_SMALL_H

#include "core/pygpu.h"

/* out (m x n, rows out_stride elements apart, unit column stride) =
 * a (m x k) @ b (k x n) for 2-D tensors a, b of out's dtype, when the
 * product is small and the loop handles the layout: returns 1 when done,
 * 0 when the caller should compute it. */
int pygpu_cpu_matmul_small(char *out, int64_t out_stride,
                           const TensorObject *a, const TensorObject *b);

#endif /* PYGPU_CPU_MATMUL_SMALL_H */
