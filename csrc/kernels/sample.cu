/* sample.cu - exponential, integer, Poisson and Bernoulli numbers on the
 * GPU, by the element rules of sample.h (cpu/cpu_sample.c follows the
 * same rules, so both make the same numbers for the same state): one
 * thread per Philox counter for exponential, integer and Bernoulli
 * numbers (its up to 4 elements), one thread per element for Poisson (a
 * varying number of sub-blocks each).
 */
#include "common.cuh"
#include "sample.h"

// -------------------------------------------------------------- kernels

template <typename T>
__global__ void exponential_kernel(T *out, int64_t n, double lambd,
                                   pygpu_philox_state st)
{
    const int64_t blocks = (n + 3) / 4;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         c < blocks; c += stride) {
        const pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (4 * c + k < n) {
                if constexpr (std::is_same<T, double>::value) {
                    out[4 * c + k] = pygpu_exponential_f64(w.v[k], lambd);
                } else {
                    out[4 * c + k] =
                        convert<T>(pygpu_exponential_f32(w.v[k], lambd));
                }
            }
        }
    }
}

__global__ void integer_kernel(int64_t *out, int64_t n, int64_t low,
                               uint64_t range, pygpu_philox_state st)
{
    const int64_t blocks = (n + 3) / 4;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const bool wide = pygpu_integer_wide(range);
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         c < blocks; c += stride) {
        const uint64_t counter = st.offset + (uint64_t)c;
        const pygpu_u32x4 lo = pygpu_philox(counter, st.seed);
        pygpu_u32x4 hi = {{0, 0, 0, 0}};
        if (wide) {
            hi = pygpu_philox_sub(counter, 1, st.seed);
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (4 * c + k < n) {
                out[4 * c + k] =
                    pygpu_random_integer(lo.v[k], hi.v[k], low, range);
            }
        }
    }
}

template <typename T>
__global__ void poisson_kernel(T *out, const T *rates, int64_t n,
                               pygpu_philox_state st)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += stride) {
        const double rate = (double)ld(rates[e]);
        out[e] = convert<T>(pygpu_poisson(
            rate, st.offset + (uint64_t)(e / 4), (int)(e % 4), st.seed));
    }
}

template <typename T>
__global__ void bernoulli_kernel(T *out, const T *probs, double p,
                                 double value, int64_t n,
                                 pygpu_philox_state st)
{
    const int64_t blocks = (n + 3) / 4;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const T one = convert<T>(value), zero = convert<T>(0.0);
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         c < blocks; c += stride) {
        const pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int64_t e = 4 * c + k;
            if (e < n) {
                const double pe = probs ? (double)ld(probs[e]) : p;
                out[e] = pygpu_bernoulli(w.v[k], pe) ? one : zero;
            }
        }
    }
}

// ------------------------------------------------------------ launchers

extern "C" cudaError_t pygpu_cuda_sample(int dtype, void *out, int64_t n,
                                         int dist,
                                         const pygpu_random_args *a,
                                         pygpu_philox_state st,
                                         cudaStream_t stream)
{
    if (n <= 0) {
        return cudaSuccess;
    }
    const int64_t counters = (n + 3) / 4;
    if (dist == PYGPU_DIST_INTEGER) {
        if (dtype != PYGPU_INT64) {
            return cudaErrorInvalidValue;
        }
        constexpr auto kernel = integer_kernel;
        kernel<<<grid_for<kernel>(counters), BLOCK, 0, stream>>>(
            (int64_t *)out, n, a->low, a->range, st);
        return cudaGetLastError();
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same<acc_t<T>, int64_t>::value) {
            return cudaErrorInvalidValue; /* these draws are floating */
        } else {
            if (dist == PYGPU_DIST_EXPONENTIAL) {
                constexpr auto kernel = exponential_kernel<T>;
                kernel<<<grid_for<kernel>(counters), BLOCK, 0, stream>>>(
                    (T *)out, n, a->lambd, st);
            } else if (dist == PYGPU_DIST_BERNOULLI) {
                constexpr auto kernel = bernoulli_kernel<T>;
                kernel<<<grid_for<kernel>(counters), BLOCK, 0, stream>>>(
                    (T *)out, (const T *)a->rates, a->p, a->value, n, st);
            } else if (dist == PYGPU_DIST_POISSON) {
                constexpr auto kernel = poisson_kernel<T>;
                kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
                    (T *)out, (const T *)a->rates, n, st);
            } else {
                return cudaErrorInvalidValue;
            }
            return cudaGetLastError();
        }
    });
}
