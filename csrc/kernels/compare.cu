/* compare.cu - == != < <= > >= into a bool output.
 *
 * Both inputs are read in their own dtypes and converted to the promoted
 * dtype T (load_as, as a copy would), then compared in T's compute type
 * by the rules of rules.h.  The operator is a launch-wide value, so its
 * switch never diverges: one kernel per dtype, not per (op, dtype).
 */
#include "common.cuh"

template <typename A>
__device__ __forceinline__ bool compare(int op, A x, A y)
{
    switch (op) {
#define PYGPU_CUDA_COMPARE_CASE(OP, name)                                    \
    case PYGPU_##OP:                                                         \
        if constexpr (std::is_same<A, float>::value) {                       \
            return pygpu_##name##_f(x, y);                                   \
        } else if constexpr (std::is_same<A, double>::value) {               \
            return pygpu_##name##_d(x, y);                                   \
        } else {                                                             \
            return pygpu_##name##_i(x, y);                                   \
        }
        PYGPU_COMPARE_OPS(PYGPU_CUDA_COMPARE_CASE)
    default:
        return false;
    }
}

template <typename T>
__global__ void compare_kernel(bool *out, const void *a, int da,
                               const void *b, int db, int op,
                               const __grid_constant__ pygpu_geom g,
                               int64_t n)
{
    using A = acc_t<T>;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        int64_t off[3];
        geom_offsets<3>(g, i, off);
        A x = convert<A>(load_as<T>(a, da, off[1]));
        A y = convert<A>(load_as<T>(b, db, off[2]));
        out[off[0]] = compare(op, x, y);
    }
}

extern "C" cudaError_t pygpu_cuda_compare(int op, int dtype, void *out,
                                          int a_dtype, const void *a,
                                          int b_dtype, const void *b,
                                          const pygpu_geom *g,
                                          cudaStream_t stream)
{
    if (op < 0 || op >= PYGPU_NCMPOPS || a_dtype < 0 ||
        a_dtype >= PYGPU_NDTYPES || b_dtype < 0 || b_dtype >= PYGPU_NDTYPES) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        return launch_over_geom<compare_kernel<T>>(
            g, stream, (bool *)out, a, a_dtype, b, b_dtype, op);
    });
}
