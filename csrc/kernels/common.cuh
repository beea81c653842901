/* common.cuh - what the CUDA kernel files share: dtype and operator
 * dispatch, the compute type of each dtype and the conversions between
 * dtypes, element offsets from a pygpu_geom, and launch sizing.
 *
 * float16 is stored as __half and bfloat16 as pygpu_bf16_t, both computed
 * in float; float32, float64 and int64 are computed in their own type,
 * bool, uint8 and int32 in int64.
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
#include "bfloat16.h"
#include "rules.h"

/* Threads per block for every kernel: 8 warps, small enough that a
 * multiprocessor holds several blocks, large enough to hide latency. */
constexpr int BLOCK = 256;
constexpr int WARP = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;

/* ------------------------------------------------------ compute types */

/* bfloat16 as its bit pattern (kernels/bfloat16.h holds the rule, shared
 * with the CPU); a type of its own so that templates tell it apart. */
struct pygpu_bf16_t {
    uint16_t bits;
};

template <typename T> struct acc_of { using type = T; };
template <> struct acc_of<__half> { using type = float; };
template <> struct acc_of<pygpu_bf16_t> { using type = float; };
template <> struct acc_of<bool> { using type = int64_t; };
template <> struct acc_of<uint8_t> { using type = int64_t; };
template <> struct acc_of<int32_t> { using type = int64_t; };
/* The type a dtype is computed (and accumulated) in. */
template <typename T> using acc_t = typename acc_of<T>::type;

/* Conversion between any two storage types goes through the natural value
 * of the source (float for the 16- and 32-bit floats, double, int64 for
 * the integers and bool), then one store rule for the destination: ld()
 * and st<To>() below.  Among float, double and int64 the store is the C++
 * cast except floating -> integers (rules.h: truncation toward zero, out
 * of range INT64_MIN / INT32_MIN, uint8 the low byte of int32); __half goes
 * through the rounding intrinsics, bfloat16 through bfloat16.h (both round
 * to nearest even); bool is x != 0. */
__host__ __device__ __forceinline__ float ld(float x) { return x; }
__host__ __device__ __forceinline__ double ld(double x) { return x; }
__host__ __device__ __forceinline__ float ld(__half x)
{
    return __half2float(x);
}
__host__ __device__ __forceinline__ float ld(pygpu_bf16_t x)
{
    return pygpu_bf16_to_float(x.bits);
}
__host__ __device__ __forceinline__ int64_t ld(int64_t x) { return x; }
__host__ __device__ __forceinline__ int64_t ld(int32_t x) { return x; }
__host__ __device__ __forceinline__ int64_t ld(uint8_t x) { return x; }
__host__ __device__ __forceinline__ int64_t ld(bool x) { return x; }

template <typename To> struct store_rule {
    /* float, double, int64: the casts, floating -> int64 by the rule. */
    static __host__ __device__ __forceinline__ To from(float x)
    {
        if constexpr (std::is_same<To, int64_t>::value) {
            return pygpu_f32_to_i64(x);
        } else {
            return static_cast<To>(x);
        }
    }
    static __host__ __device__ __forceinline__ To from(double x)
    {
        if constexpr (std::is_same<To, int64_t>::value) {
            return pygpu_f64_to_i64(x);
        } else {
            return static_cast<To>(x);
        }
    }
    static __host__ __device__ __forceinline__ To from(int64_t x)
    {
        return static_cast<To>(x);
    }
};
template <> struct store_rule<__half> {
    static __host__ __device__ __forceinline__ __half from(float x)
    {
        return __float2half_rn(x);
    }
    static __host__ __device__ __forceinline__ __half from(double x)
    {
        return __double2half(x);
    }
    static __host__ __device__ __forceinline__ __half from(int64_t x)
    {
        return __ll2half_rn(static_cast<long long>(x));
    }
};
template <> struct store_rule<pygpu_bf16_t> {
    static __host__ __device__ __forceinline__ pygpu_bf16_t from(float x)
    {
        return pygpu_bf16_t{pygpu_float_to_bf16(x)};
    }
    static __host__ __device__ __forceinline__ pygpu_bf16_t from(double x)
    {
        return pygpu_bf16_t{pygpu_double_to_bf16(x)};
    }
    static __host__ __device__ __forceinline__ pygpu_bf16_t from(int64_t x)
    {
        return pygpu_bf16_t{pygpu_double_to_bf16(static_cast<double>(x))};
    }
};
template <> struct store_rule<bool> {
    template <typename V>
    static __host__ __device__ __forceinline__ bool from(V x)
    {
        return x != 0;
    }
};
template <> struct store_rule<int32_t> {
    static __host__ __device__ __forceinline__ int32_t from(float x)
    {
        return pygpu_f64_to_i32(x);
    }
    static __host__ __device__ __forceinline__ int32_t from(double x)
    {
        return pygpu_f64_to_i32(x);
    }
    static __host__ __device__ __forceinline__ int32_t from(int64_t x)
    {
        return pygpu_i64_to_i32(x);
    }
};
template <> struct store_rule<uint8_t> {
    static __host__ __device__ __forceinline__ uint8_t from(float x)
    {
        return pygpu_f64_to_u8(x);
    }
    static __host__ __device__ __forceinline__ uint8_t from(double x)
    {
        return pygpu_f64_to_u8(x);
    }
    static __host__ __device__ __forceinline__ uint8_t from(int64_t x)
    {
        return static_cast<uint8_t>(x);
    }
};

template <typename To, typename From>
__host__ __device__ __forceinline__ To convert(From x)
{
    if constexpr (std::is_same<To, From>::value) {
        return x;
    } else {
        return store_rule<To>::from(ld(x));
    }
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

/* Element i of an input of dtype `dtype` as T, converted as CopyFn would
 * (the dtype is uniform across a launch, so the switch never diverges).
 * Mixed inputs and conversions read through this switch rather than a
 * kernel per pair of dtypes, which keeps the build small. */
template <typename T>
__device__ __forceinline__ T load_as(const void *p, int dtype, int64_t i)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        return convert<T>(static_cast<const float *>(p)[i]);
    case PYGPU_FLOAT16:
        return convert<T>(static_cast<const __half *>(p)[i]);
    case PYGPU_FLOAT64:
        return convert<T>(static_cast<const double *>(p)[i]);
    case PYGPU_BOOL:
        return convert<T>(static_cast<const bool *>(p)[i]);
    case PYGPU_UINT8:
        return convert<T>(static_cast<const uint8_t *>(p)[i]);
    case PYGPU_INT32:
        return convert<T>(static_cast<const int32_t *>(p)[i]);
    case PYGPU_BFLOAT16:
        return convert<T>(static_cast<const pygpu_bf16_t *>(p)[i]);
    default:
        return convert<T>(static_cast<const int64_t *>(p)[i]);
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

#define PYGPU_CUDA_BITWISE_RULE(OP, name)                                    \
    template <> struct binary_rule<PYGPU_##OP> {                            \
        static __device__ __forceinline__ int64_t apply(int64_t x,           \
                                                        int64_t y)           \
        {                                                                    \
            return pygpu_##name##_i(x, y);                                   \
        }                                                                    \
    };
PYGPU_BITWISE_OPS(PYGPU_CUDA_BITWISE_RULE)

/* Whether binary op OP has a kernel for storage type T: the bitwise ops
 * for the integer types and bool only. */
template <int OP, typename T> constexpr bool binary_op_defined()
{
    return OP < PYGPU_NBINOPS_ARITH || std::is_same<acc_t<T>, int64_t>::value;
}

/* relu in its compute type A, from the rule. */
template <typename A> __device__ __forceinline__ A relu(A x)
{
    return unary_rule<PYGPU_RELU>::apply(x);
}

/* ----------------------------------------------------------- dispatch */

/* Calls f with a value of the C++ type of `dtype`, any of the eight; the
 * generic lambda recovers the type with decltype.  An unknown code is
 * invalid. */
template <typename F> cudaError_t dispatch_dtype_all(int dtype, F &&f)
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
    case PYGPU_BOOL:
        return f(bool());
    case PYGPU_UINT8:
        return f(uint8_t());
    case PYGPU_INT32:
        return f(int32_t());
    case PYGPU_BFLOAT16:
        return f(pygpu_bf16_t());
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

/* KERNEL(args..., g, n) over the n elements of geometry g (its grid-stride
 * loop takes g as a __grid_constant__ parameter): cudaErrorInvalidValue
 * for a geometry without a size, no launch for no elements. */
template <auto KERNEL, typename... Args>
cudaError_t launch_over_geom(const pygpu_geom *g, cudaStream_t stream,
                             Args... args)
{
    int64_t n = geom_numel(g);
    if (n < 0) {
        return cudaErrorInvalidValue;
    }
    if (n == 0) {
        return cudaSuccess;
    }
    KERNEL<<<grid_for<KERNEL>(n), BLOCK, 0, stream>>>(args..., *g, n);
    return cudaGetLastError();
}

#endif /* PYGPU_KERNELS_COMMON_CUH */
