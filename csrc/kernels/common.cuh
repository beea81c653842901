/* common.cuh - what the CUDA kernel files share: dtype and operator
 * dispatch, the compute type of each dtype and the conversions between
 * dtypes, element offsets from a pygpu_geom, and launch sizing.
 *
 * float16 is stored as __half and computed in float; float32, float64 and
 * int64 are computed in their own type.
 */
#ifndef PYGPU_KERNELS_COMMON_CUH
#define PYGPU_KERNELS_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <atomic>
#include <type_traits>

#include "kernels.h"
#include "rules.h"

/* Threads per block for every kernel: 8 warps, small enough that a
 * multiprocessor holds several blocks, large enough to hide latency. */
constexpr int BLOCK = 256;
constexpr int WARP = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;

/* ------------------------------------------------------ compute types */

template <typename T> struct acc_of { using type = T; };
template <> struct acc_of<__half> { using type = float; };
/* The type a dtype is computed (and accumulated) in. */
template <typename T> using acc_t = typename acc_of<T>::type;

/* Conversion between any two of float, double, int64 and __half.  Among the
 * first three it is the C++ cast (float to int64 truncates toward zero);
 * __half goes through the rounding intrinsics (round to nearest even). */
template <typename To, typename From>
__host__ __device__ __forceinline__ To convert(From x)
{
    return static_cast<To>(x);
}
template <> __host__ __device__ __forceinline__ __half convert(__half x)
{
    return x;
}
template <> __host__ __device__ __forceinline__ __half convert(float x)
{
    return __float2half_rn(x);
}
template <> __host__ __device__ __forceinline__ __half convert(double x)
{
    return __double2half(x);
}
template <> __host__ __device__ __forceinline__ __half convert(int64_t x)
{
    return __ll2half_rn(static_cast<long long>(x));
}
template <> __host__ __device__ __forceinline__ float convert(__half x)
{
    return __half2float(x);
}
template <> __host__ __device__ __forceinline__ double convert(__half x)
{
    return static_cast<double>(__half2float(x));
}
/* Floating to int64 by the rule of rules.h (a bare cast saturates on
 * the GPU instead). */
template <> __host__ __device__ __forceinline__ int64_t convert(float x)
{
    return pygpu_f32_to_i64(x);
}
template <> __host__ __device__ __forceinline__ int64_t convert(double x)
{
    return pygpu_f64_to_i64(x);
}
template <> __host__ __device__ __forceinline__ int64_t convert(__half x)
{
    return pygpu_f32_to_i64(__half2float(x));
}

/* A scalar as type T: int64 takes the exact integer, the floating types
 * the double, rounded once to T. */
template <typename T>
__host__ __device__ __forceinline__ T scalar_as(pygpu_scalar_value s)
{
    if constexpr (std::is_integral<T>::value) {
        return static_cast<T>(s.i);
    } else {
        return convert<T>(s.f);
    }
}

/* The rules of rules.h by op code, for the compute types float, double
 * and int64: unary_rule<OP>::apply(x), binary_rule<OP>::apply(x, y).
 * Generated from the op lists in kernels.h, so a new row there is all the
 * kernels need. */
template <int OP> struct unary_rule;
template <int OP> struct binary_rule;

#define PYGPU_CUDA_UNARY_RULE(OP, name)                                      \
    template <> struct unary_rule<PYGPU_##OP> {                             \
        static __device__ __forceinline__ float apply(float x)               \
        {                                                                    \
            return pygpu_##name##_f(x);                                      \
        }                                                                    \
        static __device__ __forceinline__ double apply(double x)             \
        {                                                                    \
            return pygpu_##name##_d(x);                                      \
        }                                                                    \
        static __device__ __forceinline__ int64_t apply(int64_t x)           \
        {                                                                    \
            return pygpu_##name##_i(x);                                      \
        }                                                                    \
    };
PYGPU_UNARY_OPS(PYGPU_CUDA_UNARY_RULE)

#define PYGPU_CUDA_BINARY_RULE(OP, name)                                     \
    template <> struct binary_rule<PYGPU_##OP> {                            \
        static __device__ __forceinline__ float apply(float x, float y)      \
        {                                                                    \
            return pygpu_##name##_f(x, y);                                   \
        }                                                                    \
        static __device__ __forceinline__ double apply(double x, double y)   \
        {                                                                    \
            return pygpu_##name##_d(x, y);                                   \
        }                                                                    \
        static __device__ __forceinline__ int64_t apply(int64_t x,           \
                                                        int64_t y)           \
        {                                                                    \
            return pygpu_##name##_i(x, y);                                   \
        }                                                                    \
    };
PYGPU_BINARY_OPS(PYGPU_CUDA_BINARY_RULE)

/* relu in its compute type A, from the rule. */
template <typename A> __device__ __forceinline__ A relu(A x)
{
    return unary_rule<PYGPU_RELU>::apply(x);
}

/* ----------------------------------------------------------- dispatch */

/* Calls f with a value of the C++ type of `dtype`; the generic lambda
 * recovers the type with decltype.  An unknown code is invalid. */
template <typename F> cudaError_t dispatch_dtype(int dtype, F &&f)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        return f(float());
    case PYGPU_FLOAT16:
        return f(__half());
    case PYGPU_FLOAT64:
        return f(double());
    case PYGPU_INT64:
        return f(int64_t());
    default:
        return cudaErrorInvalidValue;
    }
}

/* Calls f with std::integral_constant<int, code> for an operator code in
 * [0, count), so the operator is a compile-time constant in the kernel. */
template <int COUNT, int CODE = 0, typename F>
cudaError_t dispatch_op(int code, F &&f)
{
    if constexpr (CODE < COUNT) {
        if (code == CODE) {
            return f(std::integral_constant<int, CODE>());
        }
        return dispatch_op<COUNT, CODE + 1>(code, f);
    } else {
        return cudaErrorInvalidValue;
    }
}

/* ----------------------------------------------------------- geometry */

/* Number of output elements; -1 when ndim is out of range. */
inline int64_t geom_numel(const pygpu_geom *g)
{
    if (g->ndim < 0 || g->ndim > PYGPU_MAX_DIMS) {
        return -1;
    }
    int64_t n = 1;
    for (int d = 0; d < g->ndim; d++) {
        n *= g->shape[d];
    }
    return n;
}

/* One dim with unit strides for the first `nops` operands: offsets are i. */
inline bool geom_is_contiguous(const pygpu_geom *g, int nops)
{
    if (g->ndim != 1) {
        return false;
    }
    for (int k = 0; k < nops; k++) {
        if (g->stride[k][0] != 1) {
            return false;
        }
    }
    return true;
}

/* Offsets of flat output element i in the first NOPS operands: peel the
 * indices off from the last dim; the first dim takes what is left, so
 * ndim == 1 needs no division.  (ndim == 0 has the single element 0.) */
template <int NOPS>
__device__ __forceinline__ void geom_offsets(const pygpu_geom &g, int64_t i,
                                             int64_t off[3])
{
    for (int k = 0; k < 3; k++) {
        off[k] = 0;
    }
    if (g.ndim == 0) {
        return;
    }
    for (int d = g.ndim - 1; d > 0; d--) {
        int64_t size = g.shape[d];
        int64_t idx = i % size;
        i /= size;
        for (int k = 0; k < NOPS; k++) {
            off[k] += idx * g.stride[k][d];
        }
    }
    for (int k = 0; k < NOPS; k++) {
        off[k] += i * g.stride[k][0];
    }
}

/* ------------------------------------------------------ launch sizing */

inline int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Blocks of KERNEL the current device runs at once (one full wave, from
 * its SM count and the kernel's occupancy at BLOCK threads): the grid of a
 * grid-stride kernel, so that every block stays resident to the end.  Asked
 * once per device and kernel and kept in a static table; each entry starts
 * at 0, and threads that race to fill it all write the same value, through
 * relaxed atomics so that the race is well defined. */
template <auto KERNEL> int resident_blocks()
{
    constexpr int MAX_DEVICES = PYGPU_MAX_DEVICES;
    constexpr int FALLBACK = 1024;
    static std::atomic<int> cache[MAX_DEVICES];

    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= MAX_DEVICES) {
        (void)cudaGetLastError(); /* the launcher's check must not see it */
        return FALLBACK;
    }
    int blocks = cache[dev].load(std::memory_order_relaxed);
    if (blocks == 0) {
        int sms = 0, per_sm = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                   dev) != cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KERNEL,
                                                          BLOCK, 0) !=
                cudaSuccess ||
            sms <= 0 || per_sm <= 0) {
            (void)cudaGetLastError();
            return FALLBACK;
        }
        blocks = sms * per_sm;
        cache[dev].store(blocks, std::memory_order_relaxed);
    }
    return blocks;
}

/* Grid for KERNEL over `work` items, BLOCK per block: ceil-division, capped
 * at one full wave (the kernel's grid-stride loop does the rest); at least
 * one block. */
template <auto KERNEL> unsigned grid_for(int64_t work)
{
    int64_t blocks = ceil_div(work, BLOCK);
    int64_t cap = resident_blocks<KERNEL>();
    if (blocks > cap) {
        blocks = cap;
    }
    return blocks < 1 ? 1u : (unsigned)blocks;
}

#endif /* PYGPU_KERNELS_COMMON_CUH */
