/* cpu_norm.h - what the normalisation loops (cpu_norm.c: rows,
 * cpu_norm_channels.c: channels) share: the lanes of their sums and the
 * loads and stores of each dtype (half types compute in float). */
#ifndef PYGPU_CPU_NORM_H
#define PYGPU_CPU_NORM_H

#include "cpu/half.h"
#include "kernels/bfloat16.h"

/* Accumulators of a sum: element j into lane j % LANES (which
 * vectorizes), the lanes added up in double. */
#define LANES 16

#define LD_SAME(v) (v)
#define ST_F32(v) ((float)(v))
#define ST_F64(v) ((double)(v))
#define LD_F16(v) pygpu_half_to_float(v)
#define ST_F16(v) pygpu_float_to_half(v)
#define LD_BF16(v) pygpu_bf16_to_float(v)
#define ST_BF16(v) pygpu_float_to_bf16(v)

#endif /* PYGPU_CPU_NORM_H */
