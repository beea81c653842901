/* random.cu - uniform [0, 1) and standard normal numbers from Philox4x32-10.
 *
 * The numbering is philox.h's, so the CPU loops make the same numbers:
 * element e takes word e % 4 of philox(offset + e / 4, seed).  One thread
 * per counter computes one Philox block and writes its (up to) 4 elements;
 * for normals, elements 4c+0 and 4c+1 are the cosine and sine of Box-Muller
 * on words (0, 1), elements 4c+2 and 4c+3 the same on words (2, 3), each
 * pair computed once.  float32 / float16 / bfloat16 normals come from
 * normal.h's own logarithm and sine / cosine (pygpu_normal_pair_f32, no
 * contraction), so they are the CPU's bit for bit.
 */
#include "common.cuh"
#include "philox.h"

/* Element k (0..3) of a block of 4 as type T. */
template <typename T>
__device__ __forceinline__ T uniform_elem(const pygpu_u32x4 &w, int k)
{
    if constexpr (std::is_same<T, double>::value) {
        return pygpu_u01_f64(w.v[k]);
    } else if constexpr (std::is_same<T, __half>::value) {
        return convert<__half>(pygpu_u01_f16(w.v[k])); /* exact */
    } else if constexpr (std::is_same<T, pygpu_bf16_t>::value) {
        return convert<pygpu_bf16_t>(pygpu_u01_bf16(w.v[k])); /* exact */
    } else {
        return pygpu_u01_f32(w.v[k]);
    }
}

/* Elements 2p and 2p + 1 of a block: the pair of words (2p, 2p + 1). */
template <typename T>
__device__ __forceinline__ void normal_pair(const pygpu_u32x4 &w, int p,
                                            T *z0, T *z1)
{
    const uint32_t w0 = w.v[2 * p], w1 = w.v[2 * p + 1];
    if constexpr (std::is_same<T, double>::value) {
        *z0 = pygpu_normal_f64(w0, w1, 0);
        *z1 = pygpu_normal_f64(w0, w1, 1);
    } else {
        float f0, f1;
        pygpu_normal_pair_f32(w0, w1, &f0, &f1);
        *z0 = convert<T>(f0);
        *z1 = convert<T>(f1);
    }
}

// -------------------------------------------------------------- kernels

template <typename T, bool NORMAL>
__global__ void random_kernel(T *out, int64_t n, pygpu_philox_state st)
{
    const int64_t blocks = (n + 3) / 4;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         c < blocks; c += stride) {
        const pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)c, st.seed);
        T v[4];
        if constexpr (NORMAL) {
            normal_pair<T>(w, 0, &v[0], &v[1]);
            normal_pair<T>(w, 1, &v[2], &v[3]);
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                v[k] = uniform_elem<T>(w, k);
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (4 * c + k < n) {
                out[4 * c + k] = v[k];
            }
        }
    }
}

// ------------------------------------------------------------ launchers

extern "C" cudaError_t pygpu_cuda_random(int dtype, void *out, int64_t n,
                                         int normal, pygpu_philox_state st,
                                         cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same<acc_t<T>, int64_t>::value) {
            return cudaErrorInvalidValue; /* random numbers are floating */
        } else {
            if (n <= 0) {
                return cudaSuccess;
            }
            const int64_t counters = (n + 3) / 4;
            if (normal) {
                constexpr auto kernel = random_kernel<T, true>;
                kernel<<<grid_for<kernel>(counters), BLOCK, 0, stream>>>(
                    (T *)out, n, st);
            } else {
                constexpr auto kernel = random_kernel<T, false>;
                kernel<<<grid_for<kernel>(counters), BLOCK, 0, stream>>>(
                    (T *)out, n, st);
            }
            return cudaGetLastError();
        }
    });
}
