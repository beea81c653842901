/* cpu_sample.c - exponential, integer, Poisson and Bernoulli numbers on the CPU, by
 * the element rules of kernels/sample.h (the CUDA kernels of
 * kernels/sample.cu follow the same rules): element e takes word e % 4 of
 * the blocks of counter offset + e / 4.  One block serves four elements,
 * so a part that starts at a multiple of 4 (the thread pool's cut) makes
 * the numbers the whole would.  Exponential and Bernoulli numbers are made
 * 4 * LANES at a time from blocks in a structure of arrays (the float
 * exponential rule vectorizes over a round, with a wide clone); integers
 * and Poisson counts one block or element at a time. */
#include <math.h>
#include <stdint.h>

#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"
#include "kernels/sample.h"

/* Philox blocks per round (4 * LANES elements), their words as a
 * structure of arrays (w[k][l]: word k of block counter + l), as in
 * cpu_random.c, so that the rules over a round vectorize. */
#define LANES 16

static inline void
philox_lanes(uint32_t w[4][LANES], uint64_t counter, uint64_t seed)
{
    for (int l = 0; l < LANES; l++) {
        pygpu_u32x4 v = pygpu_philox(counter + (uint64_t)l, seed);
        for (int k = 0; k < 4; k++) {
            w[k][l] = v.v[k];
        }
    }
}

/* Exponential(lambd) numbers from float (float32, float16, bfloat16):
 * element 4l + k of a round is word k of lane l. */
#define EXPONENTIAL_LOOP(NAME, T, STORE)                                     \
    PYGPU_CLONES_EXACT(static, void, NAME,                                   \
                       (T *out, int64_t n, double lambd,                     \
                        pygpu_philox_state st),                              \
                       (out, n, lambd, st))                                  \
    {                                                                        \
        uint32_t w[4][LANES];                                                \
        float v[4][LANES];                                                   \
        for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {                      \
            philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);        \
            int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;             \
            for (int k = 0; k < 4; k++) {                                    \
                for (int l = 0; l < LANES; l++) {                            \
                    v[k][l] = pygpu_exponential_f32(w[k][l], lambd);         \
                }                                                            \
            }                                                                \
            for (int64_t e = 0; e < m; e++) {                                \
                out[e0 + e] = STORE(v[e % 4][e / 4]);                        \
            }                                                                \
        }                                                                    \
    }

#define AS_IS(x) (x)
EXPONENTIAL_LOOP(exponential_f32, float, AS_IS)
EXPONENTIAL_LOOP(exponential_f16, uint16_t, pygpu_float_to_half)
EXPONENTIAL_LOOP(exponential_bf16, uint16_t, pygpu_float_to_bf16)

static void
exponential_f64(double *out, int64_t n, double lambd, pygpu_philox_state st)
{
    uint32_t w[4][LANES];
    for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {
        philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);
        int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;
        for (int64_t e = 0; e < m; e++) {
            out[e0 + e] = pygpu_exponential_f64(w[e % 4][e / 4], lambd);
        }
    }
}

static void
exponential(int dtype, void *out, int64_t n, double lambd,
            pygpu_philox_state st)
{
    switch (dtype) {
    case PYGPU_FLOAT64:
        exponential_f64(out, n, lambd, st);
        break;
    case PYGPU_FLOAT32:
        exponential_f32(out, n, lambd, st);
        break;
    case PYGPU_FLOAT16:
        exponential_f16(out, n, lambd, st);
        break;
    case PYGPU_BFLOAT16:
        exponential_bf16(out, n, lambd, st);
        break;
    default:
        break;
    }
}

/* Integers: sub-block 0 gives the low words, sub-block 1 (wide ranges
 * only) the high ones. */
static void
integers(int64_t *out, int64_t n, int64_t low, uint64_t range,
         pygpu_philox_state st)
{
    const int wide = pygpu_integer_wide(range);
    for (int64_t c = 0; 4 * c < n; c++) {
        uint64_t counter = st.offset + (uint64_t)c;
        pygpu_u32x4 lo = pygpu_philox(counter, st.seed);
        pygpu_u32x4 hi = {{0, 0, 0, 0}};
        if (wide) {
            hi = pygpu_philox_sub(counter, 1, st.seed);
        }
        for (int k = 0; k < 4 && 4 * c + k < n; k++) {
            out[4 * c + k] = pygpu_random_integer(lo.v[k], hi.v[k], low,
                                                  range);
        }
    }
}

/* rates[e] as a double, of the output's dtype. */
static double
rate_at(int dtype, const void *rates, int64_t e)
{
    switch (dtype) {
    case PYGPU_FLOAT64:
        return ((const double *)rates)[e];
    case PYGPU_FLOAT32:
        return ((const float *)rates)[e];
    case PYGPU_FLOAT16:
        return pygpu_half_to_float(((const uint16_t *)rates)[e]);
    default:
        return pygpu_bf16_to_float(((const uint16_t *)rates)[e]);
    }
}

/* out[e] = v, rounded once to the (floating) dtype. */
static void
store_double(int dtype, void *out, int64_t e, double v)
{
    switch (dtype) {
    case PYGPU_FLOAT64:
        ((double *)out)[e] = v;
        break;
    case PYGPU_FLOAT32:
        ((float *)out)[e] = (float)v;
        break;
    case PYGPU_FLOAT16:
        ((uint16_t *)out)[e] = pygpu_double_to_half(v);
        break;
    default:
        ((uint16_t *)out)[e] = pygpu_double_to_bf16(v);
        break;
    }
}

static void
poisson(int dtype, void *out, int64_t n, const void *rates,
        pygpu_philox_state st)
{
    for (int64_t e = 0; e < n; e++) {
        double v = pygpu_poisson(rate_at(dtype, rates, e),
                                 st.offset + (uint64_t)(e / 4), (int)(e % 4),
                                 st.seed);
        store_double(dtype, out, e, v);
    }
}

/* Bernoulli draws: `one` (value in T) with probability p, or rates[e]
 * read by LOAD, else `zero`.  The words are laid out in element order
 * first, so that the compares and selects run over a round as vectors. */
#define BERNOULLI_LOOP(NAME, T, LOAD)                                        \
    PYGPU_CLONES_EXACT(static, void, NAME,                                   \
                       (T *out, int64_t n, const T *rates, double p, T one,  \
                        T zero, pygpu_philox_state st),                      \
                       (out, n, rates, p, one, zero, st))                    \
    {                                                                        \
        uint32_t w[4][LANES], wf[4 * LANES];                                 \
        for (int64_t e0 = 0; e0 < n; e0 += 4 * LANES) {                      \
            philox_lanes(w, st.offset + (uint64_t)(e0 / 4), st.seed);        \
            int64_t m = n - e0 < 4 * LANES ? n - e0 : 4 * LANES;             \
            for (int l = 0; l < LANES; l++) {                                \
                for (int k = 0; k < 4; k++) {                                \
                    wf[4 * l + k] = w[k][l];                                 \
                }                                                            \
            }                                                                \
            T *o = out + e0;                                                 \
            if (rates == NULL) {                                             \
                for (int64_t e = 0; e < m; e++) {                            \
                    o[e] = pygpu_bernoulli(wf[e], p) ? one : zero;           \
                }                                                            \
            }                                                                \
            else {                                                           \
                const T *r = rates + e0;                                     \
                for (int64_t e = 0; e < m; e++) {                            \
                    o[e] = pygpu_bernoulli(wf[e], (double)LOAD(r[e]))        \
                               ? one                                         \
                               : zero;                                       \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

BERNOULLI_LOOP(bernoulli_f64, double, AS_IS)
BERNOULLI_LOOP(bernoulli_f32, float, AS_IS)
BERNOULLI_LOOP(bernoulli_f16, uint16_t, pygpu_half_to_float)
BERNOULLI_LOOP(bernoulli_bf16, uint16_t, pygpu_bf16_to_float)

static void
bernoulli(int dtype, void *out, int64_t n, const pygpu_random_args *a,
          pygpu_philox_state st)
{
    switch (dtype) {
    case PYGPU_FLOAT64:
        bernoulli_f64(out, n, a->rates, a->p, a->value, 0.0, st);
        break;
    case PYGPU_FLOAT32:
        bernoulli_f32(out, n, a->rates, a->p, (float)a->value, 0.0f, st);
        break;
    case PYGPU_FLOAT16:
        bernoulli_f16(out, n, a->rates, a->p,
                      pygpu_double_to_half(a->value), 0, st);
        break;
    case PYGPU_BFLOAT16:
        bernoulli_bf16(out, n, a->rates, a->p,
                       pygpu_double_to_bf16(a->value), 0, st);
        break;
    default:
        break;
    }
}

void
pygpu_cpu_sample(int dtype, void *out, int64_t n, int dist,
                 const pygpu_random_args *a, pygpu_philox_state st)
{
    if (n <= 0) {
        return;
    }
    switch (dist) {
    case PYGPU_DIST_EXPONENTIAL:
        exponential(dtype, out, n, a->lambd, st);
        break;
    case PYGPU_DIST_INTEGER:
        if (dtype == PYGPU_INT64) {
            integers(out, n, a->low, a->range, st);
        }
        break;
    case PYGPU_DIST_POISSON:
        if (dtype != PYGPU_INT64) {
            poisson(dtype, out, n, a->rates, st);
        }
        break;
    case PYGPU_DIST_BERNOULLI:
        if (dtype != PYGPU_INT64) {
            bernoulli(dtype, out, n, a, st);
        }
        break;
    default:
        break;
    }
}
