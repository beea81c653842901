/* cpu_sample.c - exponential, integer, Poisson and Bernoulli numbers on the CPU, by
 * the element rules of kernels/sample.h (the CUDA kernels of
 * kernels/sample.cu follow the same rules): element e takes word e % 4 of
 * the blocks of counter offset + e / 4.  One block serves four elements,
 * so a part that starts at a multiple of 4 (the thread pool's cut) makes
 * the numbers the whole would. */
#include <math.h>
#include <stdint.h>

#include "cpu/half.h"
#include "kernels/kernels.h"
#include "kernels/sample.h"

/* Exponential(lambd) numbers: float64 in double, the others from
 * float. */
static void
exponential(int dtype, void *out, int64_t n, double lambd,
            pygpu_philox_state st)
{
    for (int64_t c = 0; 4 * c < n; c++) {
        pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);
        for (int k = 0; k < 4 && 4 * c + k < n; k++) {
            int64_t e = 4 * c + k;
            switch (dtype) {
            case PYGPU_FLOAT64:
                ((double *)out)[e] = pygpu_exponential_f64(w.v[k], lambd);
                break;
            case PYGPU_FLOAT32:
                ((float *)out)[e] = pygpu_exponential_f32(w.v[k], lambd);
                break;
            case PYGPU_FLOAT16:
                ((uint16_t *)out)[e] =
                    pygpu_float_to_half(pygpu_exponential_f32(w.v[k], lambd));
                break;
            case PYGPU_BFLOAT16:
                ((uint16_t *)out)[e] =
                    pygpu_float_to_bf16(pygpu_exponential_f32(w.v[k], lambd));
                break;
            default:
                return;
            }
        }
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

/* value with probability p (or rates[e]), else 0. */
static void
bernoulli(int dtype, void *out, int64_t n, const pygpu_random_args *a,
          pygpu_philox_state st)
{
    for (int64_t c = 0; 4 * c < n; c++) {
        pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);
        for (int k = 0; k < 4 && 4 * c + k < n; k++) {
            int64_t e = 4 * c + k;
            double p = a->rates ? rate_at(dtype, a->rates, e) : a->p;
            store_double(dtype, out, e,
                         pygpu_bernoulli(w.v[k], p) ? a->value : 0.0);
        }
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
