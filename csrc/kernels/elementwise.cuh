/* elementwise.cuh - what the elementwise files share (elementwise_binary.cu,
 * elementwise_unary.cu, elementwise_copy.cu): the functors, the two kernels
 * that walk the elements, and their launchers.
 *
 * Each op is a small functor called with the offsets of its operands for
 * one element.  Two kernels walk the elements: a contiguous one (one dim
 * with unit strides: every offset is the flat index) and a general one that
 * turns the flat output index into per-operand offsets through the geometry
 * (broadcast dims have stride 0, so they cost nothing special; one dim with
 * unit strides costs it no division).
 *
 * Two kinds of functor (see README.md, "What is compiled"):
 *   dedicated  the storage type T and the op are template parameters: the
 *              contiguous kernel over same-dtype operands of the five
 *              dtypes of own_kernels (float32, float16, bfloat16, float64,
 *              int64), the cases that matter for speed;
 *   generic    the compute type A (float, double or int64) is the only
 *              template parameter; the op and the operands' dtypes are
 *              launch-wide values that the kernel switches on (they never
 *              diverge), read through load_in / load_acc and written
 *              through store_acc.  The general kernel with these serves
 *              every other case: strided and broadcast operands, mixed
 *              dtypes, bool, uint8 and int32.
 * Both compute every element the same way: the inputs converted to the
 * output's dtype as a copy would, then to its compute type, the rule of
 * rules.h, one rounding to the output's dtype.
 */
#ifndef PYGPU_KERNELS_ELEMENTWISE_CUH
#define PYGPU_KERNELS_ELEMENTWISE_CUH

#include "dtype_switch.cuh"

/* The dtypes with dedicated kernels for same-dtype contiguous operands. */
template <typename T> constexpr bool own_kernels()
{
    return std::is_same<T, float>::value || std::is_same<T, __half>::value ||
           std::is_same<T, pygpu_bf16_t>::value ||
           std::is_same<T, double>::value || std::is_same<T, int64_t>::value;
}

static inline bool valid_dtype(int dtype)
{
    return dtype >= 0 && dtype < PYGPU_NDTYPES;
}

/* Binary op `op` exists for dtype: the bitwise ops for bool and the
 * integers only (binary_op_defined at run time). */
static inline bool binary_op_valid(int op, int dtype)
{
    return op >= 0 && op < PYGPU_NBINOPS && valid_dtype(dtype) &&
           (op < PYGPU_NBINOPS_ARITH ||
            pygpu_reduce_acc_dtype(dtype) == PYGPU_INT64);
}

// ------------------------------------------------------- op by its code

/* The rule of binary op `op` (a launch-wide value) in compute type A. */
template <typename A>
__device__ __forceinline__ A binary_any(int op, A x, A y)
{
#define PYGPU_CUDA_BINARY_CASE(OP, name)                                     \
    case PYGPU_##OP:                                                         \
        return binary_rule<PYGPU_##OP>::apply(x, y);
    switch (op) {
        PYGPU_BINARY_OPS(PYGPU_CUDA_BINARY_CASE)
    default:
        break;
    }
    if constexpr (std::is_same<A, int64_t>::value) {
        switch (op) {
            PYGPU_BITWISE_OPS(PYGPU_CUDA_BINARY_CASE)
        default:
            break;
        }
    }
#undef PYGPU_CUDA_BINARY_CASE
    return x; /* not reached: the launchers check the code */
}

/* The rule of unary op `op` (a launch-wide value) in compute type A. */
template <typename A> __device__ __forceinline__ A unary_any(int op, A x)
{
#define PYGPU_CUDA_UNARY_CASE(OP, name)                                      \
    case PYGPU_##OP:                                                         \
        return unary_rule<PYGPU_##OP>::apply(x);
    switch (op) {
        PYGPU_UNARY_OPS(PYGPU_CUDA_UNARY_CASE)
    default:
        break;
    }
#undef PYGPU_CUDA_UNARY_CASE
    return x; /* not reached: the launchers check the code */
}

// ------------------------------------------------------------ functors

template <int OP, typename A> __device__ __forceinline__ A binop(A a, A b)
{
    return binary_rule<OP>::apply(a, b);
}

/* Dedicated: out, a and b all of storage type T, op OP. */
template <typename T, int OP> struct BinaryFn {
    T *out;
    const T *a;
    const T *b;
    __device__ void operator()(int64_t o, int64_t ia, int64_t ib) const
    {
        using A = acc_t<T>;
        out[o] = convert<T>(binop<OP>(convert<A>(a[ia]), convert<A>(b[ib])));
    }
};

template <typename T, int OP> struct ScalarFn {
    T *out;
    const T *a;
    acc_t<T> s;
    int scalar_first;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        acc_t<T> x = convert<acc_t<T>>(a[ia]);
        out[o] = convert<T>(scalar_first ? binop<OP>(s, x) : binop<OP>(x, s));
    }
};

template <typename T, int OP> struct UnaryFn {
    T *out;
    const T *a;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        acc_t<T> x = convert<acc_t<T>>(a[ia]);
        out[o] = convert<T>(unary_rule<OP>::apply(x));
    }
};

/* Generic: out of dtype `dtype` (compute type A), a and b of dtypes da
 * and db, converted to dtype first as if they had been copied to it. */
template <typename A> struct BinaryAnyFn {
    void *out;
    const void *a;
    const void *b;
    int op, dtype, da, db;
    __device__ void operator()(int64_t o, int64_t ia, int64_t ib) const
    {
        A x = load_in<A>(a, da, dtype, ia);
        A y = load_in<A>(b, db, dtype, ib);
        store_acc<A>(out, dtype, o, binary_any(op, x, y));
    }
};

template <typename A> struct ScalarAnyFn {
    void *out;
    const void *a;
    int op, dtype, da;
    A s;
    int scalar_first;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        A x = load_in<A>(a, da, dtype, ia);
        store_acc<A>(out, dtype, o,
                     scalar_first ? binary_any(op, s, x)
                                  : binary_any(op, x, s));
    }
};

template <typename A> struct UnaryAnyFn {
    void *out;
    const void *a;
    int op, dtype;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        store_acc<A>(out, dtype, o, unary_any(op, load_acc<A>(a, dtype, ia)));
    }
};

// -------------------------------------------------------------- kernels

template <typename F> __global__ void ew_contig_kernel(F f, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        f(i, i, i);
    }
}

/* The geometry is a __grid_constant__ parameter: the dims loop indexes it
 * at run time straight from the constant bank, with no local copy. */
template <int NOPS, typename F>
__global__ void ew_strided_kernel(F f, const __grid_constant__ pygpu_geom g,
                                  int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        int64_t off[3];
        geom_offsets<NOPS>(g, i, off);
        f(off[0], off[1], off[2]);
    }
}

// ------------------------------------------------------------ launchers

/* f over the n elements of contiguous operands (geom_is_contiguous). */
template <typename F>
static cudaError_t launch_contig(const F &f, int64_t n, cudaStream_t stream)
{
    if (n <= 0) {
        return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
    }
    constexpr auto kernel = ew_contig_kernel<F>;
    kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(f, n);
    return cudaGetLastError();
}

/* f over the geometry g of its NOPS operands. */
template <int NOPS, typename F>
static cudaError_t launch_strided(const F &f, const pygpu_geom *g,
                                  cudaStream_t stream)
{
    return launch_over_geom<ew_strided_kernel<NOPS, F>>(g, stream, f);
}

#endif /* PYGPU_KERNELS_ELEMENTWISE_CUH */
