/* cpu_loops.h - the inner loops of cpu_elementwise.c and the driver that
 * walks a pygpu_geom with them, for the CPU files that build on them
 * (cpu_mixed.c).  Plain C, no Python.h.
 */
#ifndef PYGPU_CPU_LOOPS_H
#define PYGPU_CPU_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* An inner loop: n elements, operand k at p[k] advancing s[k] elements per
 * step (k = 0 is the output).  ctx carries a scalar operand if any. */
typedef void (*inner_loop)(char *const *p, const int64_t *s, int64_t n,
                           const void *ctx);

/* A scalar operand in the type a dtype computes in (float16 in float, so
 * the scalar is not rounded to float16 first). */
typedef union pygpu_cpu_scalar {
    float f;
    double d;
    int64_t i;
} pygpu_cpu_scalar;

extern const size_t pygpu_cpu_dtype_size[PYGPU_NDTYPES];

/* Calls fn once per innermost row of g, for operands 0 .. nops-1 of
 * element sizes esize[k]. */
void pygpu_cpu_for_each_row(const pygpu_geom *g, int nops,
                            char *const base[3], const size_t esize[3],
                            inner_loop fn, const void *ctx);
pygpu_cpu_scalar pygpu_cpu_scalar_in(int dtype, pygpu_scalar_value s);
/* The loops by op and dtype (all arguments valid). */
inner_loop pygpu_cpu_binary_loop(int op, int dtype);
inner_loop pygpu_cpu_scalar_loop(int scalar_first, int op, int dtype);
inner_loop pygpu_cpu_copy_loop(int out_dtype, int in_dtype);
/* bool out, two inputs of dtype (cpu_compare.c). */
inner_loop pygpu_cpu_compare_loop(int op, int dtype);

#endif /* PYGPU_CPU_LOOPS_H */
