/* cpu_reduce.h - the loops of the reduction family that pygpu_cpu_reduce
 * (cpu_reduce.c) hands on to files of their own.  Plain C, no Python.h.
 * Like every CPU loop they take [outer, n, inner] with outer counted from
 * the pointers given, so a caller may split outer into sub-ranges.  Each
 * reads its input in its own dtype and accumulates in
 * pygpu_reduce_acc_dtype (kernels.h). */
#ifndef PYGPU_CPU_REDUCE_H
#define PYGPU_CPU_REDUCE_H

#include <stddef.h>
#include <stdint.h>

/* The float sums of a contiguous run are pairwise: a run of n elements
 * longer than PYGPU_SUM_LEAF is halved at
 * (n / PYGPU_SUM_LEAF + 1) / 2 * PYGPU_SUM_LEAF and the halves' sums
 * added (cpu_reduce.c; the split over threads, cpu_split_reduce.c,
 * follows the same tree). */
#define PYGPU_SUM_LEAF 512

/* Bytes of row buffers a loop keeps on its stack (see
 * pygpu_cpu_row_pool). */
#define PYGPU_ROW_STACK 16384

/* Memory for row buffers of col_bytes bytes per column; *w receives the
 * number of columns they cover: `stack` (PYGPU_ROW_STACK bytes) when
 * whole rows fit there, else heap memory the caller frees (cpu_reduce.c). */
void *pygpu_cpu_row_pool(size_t col_bytes, int64_t inner, void *stack,
                         int64_t *w);

/* out[o * inner + i] = product over j of in[(o * n + j) * inner + i];
 * n == 0 gives 1.  Floats multiply in float (double for float64),
 * integers in int64 modulo 2^64; out as pygpu_reduce_out_dtype(PROD,
 * dtype, to_acc) (cpu_prod.c). */
void pygpu_cpu_reduce_prod(int dtype, int to_acc, void *out, const void *in,
                           int64_t outer, int64_t n, int64_t inner);

/* MAX or MIN (op) over n >= 1, out in dtype, the first index of the
 * result in indices when not NULL (cpu_reduce_max.c). */
void pygpu_cpu_reduce_max(int op, int dtype, void *out, int64_t *indices,
                          const void *in, int64_t outer, int64_t n,
                          int64_t inner);

/* The maximum of x[0 .. n), n >= 1, by > in vector lanes (which of
 * equal values, +0.0 or -0.0, comes out is the lanes' choice); *nan is
 * set nonzero when x holds a NaN, and the value is then meaningless: the
 * caller reads the line again in order for the NaN it wants
 * (cpu_reduce_max.c; softmax's row maximum). */
float pygpu_cpu_max_f32(const float *x, int64_t n, int *nan);

#endif /* PYGPU_CPU_REDUCE_H */
