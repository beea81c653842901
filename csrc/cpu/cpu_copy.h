/* cpu_copy.h - the strided copy's geometry in output order (cpu_copy.c),
 * for the split over the pool (cpu_split.c).  Plain C, no Python.h.
 */
#ifndef PYGPU_CPU_COPY_H
#define PYGPU_CPU_COPY_H

#include "kernels/kernels.h"

/* Reorders the dims of a copy's geometry (operand 0 the output, 1 the
 * input) so that the output's strides decrease, drops size-1 dims and
 * merges dims that are contiguous with each other in both operands.  The
 * same elements go to the same places; walking the result in order walks
 * the output's memory in order. */
void pygpu_cpu_copy_order(pygpu_geom *g);

/* dst[c * ldd + r] = src[r * lds + c] for a rows x cols matrix of
 * elements of `size` bytes (1, 2, 4 or 8): the transpose-like copy's
 * tiles (8 x 8 blocks through registers), for callers with plain
 * pointers (cpu_gemm.c's transposed products). */
void pygpu_cpu_transpose(char *dst, int64_t ldd, const char *src,
                         int64_t lds, int64_t rows, int64_t cols,
                         size_t size);

#endif /* PYGPU_CPU_COPY_H */
