/* cpu_reduce.h - the loops of the reduction family that pygpu_cpu_reduce
 * (cpu_reduce.c) hands on to files of their own.  Plain C, no Python.h.
 * Like every CPU loop they take [outer, n, inner] with outer counted from
 * the pointers given, so a caller may split outer into sub-ranges. */
#ifndef PYGPU_CPU_REDUCE_H
#define PYGPU_CPU_REDUCE_H

#include <stdint.h>

/* out[o * inner + i] = product over j of in[(o * n + j) * inner + i];
 * n == 0 gives 1.  float16 and float32 multiply in float, float64 in
 * double, int64 wraps modulo 2^64 (cpu_prod.c). */
void pygpu_cpu_reduce_prod(int dtype, void *out, const void *in,
                           int64_t outer, int64_t n, int64_t inner);

#endif /* PYGPU_CPU_REDUCE_H */
