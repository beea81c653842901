/* cpu_random.c - uniform [0, 1) and standard normal numbers on the CPU.
 *
 * The numbers come from Philox4x32-10 (philox.h) with exactly the mapping
 * its header specifies, so that the CUDA generator, which follows the same
 * header, makes the same numbers for the same state:
 *   element e = 4 * c + k is made from block c = philox(offset + c, seed);
 *   uniform: word k through the u01 function of the output type;
 *   normal:  elements 4c+0, 4c+1 are Box-Muller of words (0, 1) with
 *            second = 0, 1; elements 4c+2, 4c+3 the same of words (2, 3).
 * float16 and bfloat16 are computed as float (pygpu_u01_f16 / _bf16,
 * pygpu_normal_f32) and rounded once.  Counters wrap modulo 2^64, as the uint64 arithmetic does.
 */
#include <stdint.h>

#include "cpu/half.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"

/* Element k (0..3) of block w, per output type. */
#define UNIFORM_F32(w, k) pygpu_u01_f32((w).v[k])
#define UNIFORM_F16(w, k) pygpu_float_to_half(pygpu_u01_f16((w).v[k]))
#define UNIFORM_F64(w, k) pygpu_u01_f64((w).v[k])
#define NORMAL_F32(w, k)                                                     \
    pygpu_normal_f32((w).v[(k) & 2], (w).v[((k) & 2) + 1], (k) & 1)
#define NORMAL_F16(w, k) pygpu_float_to_half(NORMAL_F32(w, k))
#define UNIFORM_BF16(w, k) pygpu_float_to_bf16(pygpu_u01_bf16((w).v[k]))
#define NORMAL_BF16(w, k) pygpu_float_to_bf16(NORMAL_F32(w, k))
#define NORMAL_F64(w, k)                                                     \
    pygpu_normal_f64((w).v[(k) & 2], (w).v[((k) & 2) + 1], (k) & 1)

/* Whole blocks first, then the 1 to 3 elements of a last partial block
 * (which still uses the first words of its block). */
#define RANDOM_LOOP(NAME, T, VALUE)                                          \
    static void NAME(T *out, int64_t n, pygpu_philox_state st)               \
    {                                                                        \
        int64_t blocks = n / 4;                                              \
        for (int64_t c = 0; c < blocks; c++) {                               \
            pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);  \
            for (int k = 0; k < 4; k++) {                                    \
                out[4 * c + k] = VALUE(w, k);                                \
            }                                                                \
        }                                                                    \
        int rest = (int)(n % 4);                                             \
        if (rest > 0) {                                                      \
            pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)blocks,       \
                                         st.seed);                           \
            for (int k = 0; k < rest; k++) {                                 \
                out[4 * blocks + k] = VALUE(w, k);                           \
            }                                                                \
        }                                                                    \
    }

RANDOM_LOOP(uniform_f32, float, UNIFORM_F32)
RANDOM_LOOP(uniform_f16, uint16_t, UNIFORM_F16)
RANDOM_LOOP(uniform_f64, double, UNIFORM_F64)
RANDOM_LOOP(normal_f32, float, NORMAL_F32)
RANDOM_LOOP(normal_f16, uint16_t, NORMAL_F16)
RANDOM_LOOP(normal_f64, double, NORMAL_F64)
RANDOM_LOOP(uniform_bf16, uint16_t, UNIFORM_BF16)
RANDOM_LOOP(normal_bf16, uint16_t, NORMAL_BF16)

void pygpu_cpu_random(int dtype, void *out, int64_t n, int normal,
                      pygpu_philox_state st)
{
    if (n <= 0) {
        return;
    }
    switch (dtype) {
    case PYGPU_FLOAT32:
        if (normal) {
            normal_f32(out, n, st);
        } else {
            uniform_f32(out, n, st);
        }
        break;
    case PYGPU_FLOAT16:
        if (normal) {
            normal_f16(out, n, st);
        } else {
            uniform_f16(out, n, st);
        }
        break;
    case PYGPU_FLOAT64:
        if (normal) {
            normal_f64(out, n, st);
        } else {
            uniform_f64(out, n, st);
        }
        break;
    case PYGPU_BFLOAT16:
        if (normal) {
            normal_bf16(out, n, st);
        } else {
            uniform_bf16(out, n, st);
        }
        break;
    default:
        /* int64 has no random fill; the caller refuses it. */
        break;
    }
}
