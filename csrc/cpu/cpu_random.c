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
 *
 * Numbers are made LANES blocks at a time.  A pair
 * of normal numbers shares one radius (log, sqrt) and one angle, whose
 * sine and cosine come from one sincosf: the same numbers as computing
 * each element on its own (the C library's sincosf gives its sinf and
 * cosf), at about half the cost.  The transcendental functions stay the C
 * library's scalar ones, so the numbers stay what they were.
 */
#define _GNU_SOURCE     /* sincosf */
#include <math.h>
#include <stdint.h>

#include "cpu/half.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"

/* Philox blocks per round of generation (4 * LANES numbers). */
#define LANES 16

/* Words w[k][l] of blocks counter + l, l < LANES.  One block at a time:
 * Philox's 32x32->64-bit products do not vectorize well on baseline
 * x86-64 (SSE2 multiplies two lanes per instruction), and measured slower
 * over arrays of counters than the scalar rounds, whose two independent
 * multiplies per round already keep the CPU busy. */
static void
philox_lanes(uint32_t w[4][LANES], uint64_t counter, uint64_t seed)
{
    for (int l = 0; l < LANES; l++) {
        pygpu_u32x4 v = pygpu_philox(counter + (uint64_t)l, seed);
        for (int k = 0; k < 4; k++) {
            w[k][l] = v.v[k];
        }
    }
}

/* Uniform numbers: element 4l + k of a round is word k of lane l. */
#define UNIFORM_LOOP(NAME, T, VALUE)                                         \
    static void NAME(T *out, int64_t n, pygpu_philox_state st)               \
    {                                                                        \
        uint32_t w[4][LANES];                                                \
        for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {                      \
            philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);        \
            int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;             \
            T *o = out + e0;                                                 \
            if (m == 4 * LANES) {                                            \
                for (int l = 0; l < LANES; l++) {                            \
                    for (int k = 0; k < 4; k++) {                            \
                        o[4 * l + k] = VALUE(w[k][l]);                       \
                    }                                                        \
                }                                                            \
            }                                                                \
            else {                                                           \
                for (int64_t e = 0; e < m; e++) {                            \
                    o[e] = VALUE(w[e % 4][e / 4]);                           \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#define U_F16(x) pygpu_float_to_half(pygpu_u01_f16(x))
UNIFORM_LOOP(uniform_f32, float, pygpu_u01_f32)
UNIFORM_LOOP(uniform_f16, uint16_t, U_F16)
UNIFORM_LOOP(uniform_f64, double, pygpu_u01_f64)
#define U_BF16(x) pygpu_float_to_bf16(pygpu_u01_bf16(x))
UNIFORM_LOOP(uniform_bf16, uint16_t, U_BF16)

/* Normal numbers: the pair (4l + 2p, 4l + 2p + 1) from words (2p, 2p+1)
 * of lane l, as r * cos(t), r * sin(t).  The whole round is computed and
 * its first m numbers stored. */
#define NORMAL_LOOP(NAME, T, ACC, RADIUS, ANGLE, SINCOS, STORE)              \
    static void NAME(T *out, int64_t n, pygpu_philox_state st)               \
    {                                                                        \
        uint32_t w[4][LANES];                                                \
        ACC v[4 * LANES];                                                    \
        for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {                      \
            philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);        \
            int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;             \
            for (int l = 0; l < LANES; l++) {                                \
                for (int p = 0; p < 2 && 4 * l + 2 * p < m; p++) {           \
                    ACC r = RADIUS(w[2 * p][l]);                             \
                    ACC t = ANGLE(w[2 * p + 1][l]);                          \
                    ACC s, c;                                                \
                    SINCOS(t, &s, &c);                                       \
                    v[4 * l + 2 * p] = r * c;                                \
                    v[4 * l + 2 * p + 1] = r * s;                            \
                }                                                            \
            }                                                                \
            for (int64_t e = 0; e < m; e++) {                                \
                out[e0 + e] = STORE(v[e]);                                   \
            }                                                                \
        }                                                                    \
    }

/* double: sin and cos apart (each input is one of 2^32, too many to check
 * that sincos gives the same bits, as float's 2^24 were). */
static void
sin_cos(double t, double *s, double *c)
{
    *s = sin(t);
    *c = cos(t);
}

#define AS_IS(x) (x)
NORMAL_LOOP(normal_f32, float, float, pygpu_normal_radius_f32,
            pygpu_normal_angle_f32, sincosf, AS_IS)
NORMAL_LOOP(normal_f16, uint16_t, float, pygpu_normal_radius_f32,
            pygpu_normal_angle_f32, sincosf, pygpu_float_to_half)
NORMAL_LOOP(normal_f64, double, double, pygpu_normal_radius_f64,
            pygpu_normal_angle_f64, sin_cos, AS_IS)
NORMAL_LOOP(normal_bf16, uint16_t, float, pygpu_normal_radius_f32,
            pygpu_normal_angle_f32, sincosf, pygpu_float_to_bf16)

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
