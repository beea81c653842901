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
 * pygpu_normal_pair_f32) and rounded once.  Counters wrap modulo 2^64,
 * as the uint64 arithmetic does.
 *
 * Numbers are made LANES blocks at a time, the words as a structure of
 * arrays (w[k][l]: word k of block l).  A pair of float normal numbers
 * shares one radius and one angle, normal.h's branch-free log and sine /
 * cosine, which gcc vectorizes over the pairs of a round (with a wide
 * clone for x86-64-v3); every clone makes CUDA's bits (C11 mode fuses
 * no multiply-adds).  float64 normals keep the C
 * library's double log, sin and cos, one pair at a time.
 */
#include <math.h>
#include <stdint.h>

#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"

/* Philox blocks per round of generation (4 * LANES numbers). */
#define LANES 16

/* Words w[k][l] of blocks counter + l, l < LANES.  One block at a time:
 * the same rounds over arrays of counters (32x32->64-bit products with
 * vpmuludq in the x86-64-v3 clone) measured two to three times slower
 * than these scalar rounds, whose two independent multiplies per round
 * already keep the CPU busy. */
static inline void philox_lanes(uint32_t w[4][LANES], uint64_t counter,
                                uint64_t seed)
{
    for (int l = 0; l < LANES; l++) {
        pygpu_u32x4 v = pygpu_philox(counter + (uint64_t)l, seed);
        for (int k = 0; k < 4; k++) {
            w[k][l] = v.v[k];
        }
    }
}

/* x[j] = sqrt(x[j]), j < 2 * LANES, correctly rounded (a vector square
 * root: the build does not keep errno). */
static inline void sqrt_lanes(float *x)
{
    for (int j = 0; j < 2 * LANES; j++) {
        x[j] = sqrtf(x[j]);
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

/* float normal numbers: element 4l + 2p (+ 1) is the cosine (sine) of
 * the pair from words (2p, 2p+1) of lane l.  The steps of
 * pygpu_normal_pair_f32, each over the whole round: the squared radius
 * and cos / sin, the square roots, the products (stored as the first m
 * numbers). */
#define NORMAL_LOOP_F32(NAME, T, STORE)                                      \
    PYGPU_CLONES_EXACT(static, void, NAME,                                   \
                       (T *out, int64_t n, pygpu_philox_state st),           \
                       (out, n, st))                                         \
    {                                                                        \
        uint32_t w[4][LANES];                                                \
        float r[2][LANES], c[2][LANES], s[2][LANES];                         \
        for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {                      \
            philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);        \
            int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;             \
            for (int p = 0; p < 2; p++) {                                    \
                for (int l = 0; l < LANES; l++) {                            \
                    r[p][l] = pygpu_normal_radius2_f32(w[2 * p][l]);         \
                    pygpu_normal_cossin_f32(w[2 * p + 1][l], &c[p][l],       \
                                            &s[p][l]);                       \
                }                                                            \
            }                                                                \
            sqrt_lanes(&r[0][0]);                                            \
            T *o = out + e0;                                                 \
            if (m == 4 * LANES) {                                            \
                for (int l = 0; l < LANES; l++) {                            \
                    o[4 * l] = STORE(r[0][l] * c[0][l]);                     \
                    o[4 * l + 1] = STORE(r[0][l] * s[0][l]);                 \
                    o[4 * l + 2] = STORE(r[1][l] * c[1][l]);                 \
                    o[4 * l + 3] = STORE(r[1][l] * s[1][l]);                 \
                }                                                            \
            }                                                                \
            else {                                                           \
                for (int64_t e = 0; e < m; e++) {                            \
                    int l = (int)(e / 4), p = (int)(e % 4) / 2;              \
                    float t = e % 2 ? s[p][l] : c[p][l];                     \
                    o[e] = STORE(r[p][l] * t);                               \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#define AS_IS(x) (x)
NORMAL_LOOP_F32(normal_f32, float, AS_IS)
NORMAL_LOOP_F32(normal_f16, uint16_t, pygpu_float_to_half)
NORMAL_LOOP_F32(normal_bf16, uint16_t, pygpu_float_to_bf16)

/* double normal numbers, a pair at a time: sin and cos apart (each input
 * is one of 2^32, too many to check that sincos gives the same bits). */
static void normal_f64(double *out, int64_t n, pygpu_philox_state st)
{
    uint32_t w[4][LANES];
    double v[4 * LANES];
    for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {
        philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);
        int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;
        for (int l = 0; l < LANES; l++) {
            for (int p = 0; p < 2 && 4 * l + 2 * p < m; p++) {
                double r = pygpu_normal_radius_f64(w[2 * p][l]);
                double t = pygpu_normal_angle_f64(w[2 * p + 1][l]);
                v[4 * l + 2 * p] = r * cos(t);
                v[4 * l + 2 * p + 1] = r * sin(t);
            }
        }
        for (int64_t e = 0; e < m; e++) {
            out[e0 + e] = v[e];
        }
    }
}

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
