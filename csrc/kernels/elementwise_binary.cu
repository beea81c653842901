/* elementwise_binary.cu - out = a <op> b, and out = a <op> s or s <op> a
 * with s a scalar: the dedicated kernels for contiguous inputs of the
 * output's dtype, and the generic kernel (elementwise.cuh) for strided,
 * broadcast and mixed-dtype ones and the other dtypes. */
#include "elementwise.cuh"

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
    if (!binary_op_valid(op, dtype) || !valid_dtype(a_dtype) ||
        !valid_dtype(b_dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_acc(dtype, [&](auto tag) {
        using A = decltype(tag);
        BinaryAnyFn<A> f{out, a, b, op, dtype, a_dtype, b_dtype};
        return launch_strided<3>(f, g, stream);
    });
}

extern "C" cudaError_t pygpu_cuda_binary(int op, int dtype, void *out,
                                         const void *a, const void *b,
                                         const pygpu_geom *g,
                                         cudaStream_t stream)
{
    if (!binary_op_valid(op, dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (own_kernels<T>()) {
            if (geom_is_contiguous(g, 3)) {
                return dispatch_binary_op<T>(op, [&](auto code) {
                    constexpr int OP = decltype(code)::value;
                    BinaryFn<T, OP> f{(T *)out, (const T *)a, (const T *)b};
                    return launch_contig(f, g->shape[0], stream);
                });
            }
        }
        return pygpu_cuda_binary_mixed(op, dtype, out, dtype, a, dtype, b, g,
                                       stream);
    });
}

extern "C" cudaError_t pygpu_cuda_binary_scalar_mixed(
    int op, int dtype, void *out, int a_dtype, const void *a,
    pygpu_scalar_value s, int scalar_first, const pygpu_geom *g,
    cudaStream_t stream)
{
    if (!binary_op_valid(op, dtype) || !valid_dtype(a_dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_acc(dtype, [&](auto tag) {
        using A = decltype(tag);
        ScalarAnyFn<A> f{out, a, op, dtype, a_dtype, scalar_as<A>(s),
                         scalar_first};
        return launch_strided<2>(f, g, stream);
    });
}

extern "C" cudaError_t pygpu_cuda_binary_scalar(int op, int dtype, void *out,
                                                const void *a,
                                                pygpu_scalar_value s,
                                                int scalar_first,
                                                const pygpu_geom *g,
                                                cudaStream_t stream)
{
    if (!binary_op_valid(op, dtype)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (own_kernels<T>()) {
            if (geom_is_contiguous(g, 2)) {
                return dispatch_binary_op<T>(op, [&](auto code) {
                    constexpr int OP = decltype(code)::value;
                    ScalarFn<T, OP> f{(T *)out, (const T *)a,
                                      scalar_as<acc_t<T>>(s), scalar_first};
                    return launch_contig(f, g->shape[0], stream);
                });
            }
        }
        return pygpu_cuda_binary_scalar_mixed(op, dtype, out, dtype, a, s,
                                              scalar_first, g, stream);
    });
}
