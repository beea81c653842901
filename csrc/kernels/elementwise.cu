/* elementwise.cu - binary, binary with a scalar, unary, copy (with dtype
 * conversion) and fill.
 *
 * Each op is a small functor called with the offsets of its operands for
 * one element.  Two kernels walk the elements: a contiguous one (one dim
 * with unit strides: every offset is the flat index) and a general one that
 * turns the flat output index into per-operand offsets through the geometry
 * (broadcast dims have stride 0, so they cost nothing special).
 */
#include "common.cuh"

// ------------------------------------------------------------------ ops

template <int OP, typename A> __device__ __forceinline__ A binop(A a, A b)
{
    return binary_rule<OP>::apply(a, b);
}

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

/* The first four dtypes have kernels of their own for every case; the
 * four added after them (bool, uint8, int32, bfloat16) run their
 * same-dtype binary ops through the mixed functors and take the strided
 * kernel alone (one dim with unit strides costs it no division), which
 * keeps the build's time and size in check. */
template <typename T> constexpr bool own_binary_kernels()
{
    return std::is_same<T, float>::value || std::is_same<T, __half>::value ||
           std::is_same<T, double>::value || std::is_same<T, int64_t>::value;
}

/* BinaryFn and ScalarFn with inputs of other dtypes, converted to T
 * first, as if they had been copied to T. */
template <typename T, int OP> struct BinaryMixedFn {
    T *out;
    const void *a;
    const void *b;
    int da, db;
    __device__ void operator()(int64_t o, int64_t ia, int64_t ib) const
    {
        using A = acc_t<T>;
        out[o] = convert<T>(binop<OP>(convert<A>(load_as<T>(a, da, ia)),
                                      convert<A>(load_as<T>(b, db, ib))));
    }
};

template <typename T, int OP> struct ScalarMixedFn {
    T *out;
    const void *a;
    int da;
    acc_t<T> s;
    int scalar_first;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        acc_t<T> x = convert<acc_t<T>>(load_as<T>(a, da, ia));
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

template <typename To> struct CopyFn {
    To *out;
    const void *a;
    int da;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        out[o] = load_as<To>(a, da, ia);
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

template <typename T> __global__ void fill_kernel(T *out, T v, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = v;
    }
}

// ------------------------------------------------------------ launchers

/* Runs functor f over the geometry g of its NOPS operands; T is the
 * output's type (see own_binary_kernels). */
template <int NOPS, typename F>
static cudaError_t launch_elementwise(const F &f, const pygpu_geom *g,
                                      cudaStream_t stream)
{
    using T = std::remove_pointer_t<decltype(f.out)>;
    int64_t n = geom_numel(g);
    if (n < 0) {
        return cudaErrorInvalidValue;
    }
    if (n == 0) {
        return cudaSuccess;
    }
    if constexpr (own_binary_kernels<T>()) {
        if (geom_is_contiguous(g, NOPS)) {
            constexpr auto kernel = ew_contig_kernel<F>;
            kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(f, n);
            return cudaGetLastError();
        }
    }
    constexpr auto kernel = ew_strided_kernel<NOPS, F>;
    kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(f, *g, n);
    return cudaGetLastError();
}

static bool valid_dtype(int dtype)
{
    return dtype >= 0 && dtype < PYGPU_NDTYPES;
}

/* f(code) for binary op `op` (code holds it as a compile-time value)
 * where the op is defined for T; cudaErrorInvalidValue where it is not. */
template <typename T, typename F>
static cudaError_t dispatch_binary_op(int op, F &&f)
{
    return dispatch_op<PYGPU_NBINOPS>(op, [&](auto code) {
        constexpr int OP = decltype(code)::value;
        if constexpr (!binary_op_defined<OP, T>()) {
            return cudaErrorInvalidValue;
        } else {
            return f(code);
        }
    });
}

extern "C" cudaError_t pygpu_cuda_binary_mixed(int op, int dtype, void *out,
                                               int a_dtype, const void *a,
                                               int b_dtype, const void *b,
                                               const pygpu_geom *g,
                                               cudaStream_t stream)
{
    if (!valid_dtype(a_dtype) || !valid_dtype(b_dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        return dispatch_binary_op<T>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            BinaryMixedFn<T, OP> f{(T *)out, a, b, a_dtype, b_dtype};
            return launch_elementwise<3>(f, g, stream);
        });
    });
}

extern "C" cudaError_t pygpu_cuda_binary_scalar_mixed(
    int op, int dtype, void *out, int a_dtype, const void *a,
    pygpu_scalar_value s, int scalar_first, const pygpu_geom *g,
    cudaStream_t stream)
{
    if (!valid_dtype(a_dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        return dispatch_binary_op<T>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            ScalarMixedFn<T, OP> f{(T *)out, a, a_dtype,
                                   scalar_as<acc_t<T>>(s), scalar_first};
            return launch_elementwise<2>(f, g, stream);
        });
    });
}

extern "C" cudaError_t pygpu_cuda_binary(int op, int dtype, void *out,
                                         const void *a, const void *b,
                                         const pygpu_geom *g,
                                         cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (!own_binary_kernels<T>()) {
            return pygpu_cuda_binary_mixed(op, dtype, out, dtype, a, dtype, b,
                                           g, stream);
        } else {
            return dispatch_binary_op<T>(op, [&](auto code) {
                constexpr int OP = decltype(code)::value;
                BinaryFn<T, OP> f{(T *)out, (const T *)a, (const T *)b};
                return launch_elementwise<3>(f, g, stream);
            });
        }
    });
}

extern "C" cudaError_t pygpu_cuda_binary_scalar(int op, int dtype, void *out,
                                                const void *a,
                                                pygpu_scalar_value s,
                                                int scalar_first,
                                                const pygpu_geom *g,
                                                cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (!own_binary_kernels<T>()) {
            return pygpu_cuda_binary_scalar_mixed(op, dtype, out, dtype, a, s,
                                                  scalar_first, g, stream);
        } else {
            return dispatch_binary_op<T>(op, [&](auto code) {
                constexpr int OP = decltype(code)::value;
                ScalarFn<T, OP> f{(T *)out, (const T *)a,
                                  scalar_as<acc_t<T>>(s), scalar_first};
                return launch_elementwise<2>(f, g, stream);
            });
        }
    });
}

/* bool, uint8 and int32 inputs of the floating functions promote to
 * float32 before they get here: no kernels for them. */
extern "C" cudaError_t pygpu_cuda_unary(int op, int dtype, void *out,
                                        const void *a, const pygpu_geom *g,
                                        cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        return dispatch_op<PYGPU_NUNOPS>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            if constexpr (std::is_same<acc_t<T>, int64_t>::value &&
                          !std::is_same<T, int64_t>::value &&
                          OP >= PYGPU_NUNOPS_INT) {
                return cudaErrorInvalidValue;
            } else {
                UnaryFn<T, OP> f{(T *)out, (const T *)a};
                return launch_elementwise<2>(f, g, stream);
            }
        });
    });
}

extern "C" cudaError_t pygpu_cuda_copy(int out_dtype, void *out, int in_dtype,
                                       const void *a, const pygpu_geom *g,
                                       cudaStream_t stream)
{
    if (!valid_dtype(in_dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(out_dtype, [&](auto to_tag) {
        using To = decltype(to_tag);
        /* A dense copy without conversion is a plain memcpy, at the copy
         * engine's full bandwidth. */
        int dense = g->ndim == 0 || (g->ndim == 1 && g->stride[0][0] == 1 &&
                                     g->stride[1][0] == 1);
        if (in_dtype == out_dtype && dense) {
            size_t n = g->ndim == 0 ? 1 : (size_t)g->shape[0];
            return cudaMemcpyAsync(out, a, n * sizeof(To),
                                   cudaMemcpyDeviceToDevice, stream);
        }
        CopyFn<To> f{(To *)out, a, in_dtype};
        return launch_elementwise<2>(f, g, stream);
    });
}

extern "C" cudaError_t pygpu_cuda_fill(int dtype, void *out,
                                       pygpu_scalar_value value, int64_t n,
                                       cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n <= 0) {
            return cudaSuccess;
        }
        constexpr auto kernel = fill_kernel<T>;
        kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
            (T *)out, scalar_as<T>(value), n);
        return cudaGetLastError();
    });
}
