/* elementwise_unary.cu - out = op(a), a of out's dtype: the dedicated
 * kernels for contiguous operands, and the generic kernel
 * (elementwise.cuh) for strided ones and the other dtypes.
 *
 * bool, uint8 and int32 inputs of the floating functions promote to
 * float32 before they get here (they are refused); int64 ones too, so an
 * int64 floating function (the op in double, rules.h) takes the generic
 * kernel. */
#include "elementwise.cuh"

/* The generic kernel: any dtype, any geometry. */
static cudaError_t unary_generic(int op, int dtype, void *out, const void *a,
                                 const pygpu_geom *g, cudaStream_t stream)
{
    return dispatch_acc(dtype, [&](auto tag) {
        using A = decltype(tag);
        UnaryAnyFn<A> f{out, a, op, dtype};
        return launch_strided<2>(f, g, stream);
    });
}

extern "C" cudaError_t pygpu_cuda_unary(int op, int dtype, void *out,
                                        const void *a, const pygpu_geom *g,
                                        cudaStream_t stream)
{
    if (op < 0 || op >= PYGPU_NUNOPS || !valid_dtype(dtype) ||
        (pygpu_reduce_acc_dtype(dtype) == PYGPU_INT64 &&
         dtype != PYGPU_INT64 && op >= PYGPU_NUNOPS_INT)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (own_kernels<T>()) {
            if (geom_is_contiguous(g, 2)) {
                return dispatch_op<PYGPU_NUNOPS>(op, [&](auto code) {
                    constexpr int OP = decltype(code)::value;
                    if constexpr (std::is_same<T, int64_t>::value &&
                                  OP >= PYGPU_NUNOPS_INT) {
                        return unary_generic(op, dtype, out, a, g, stream);
                    } else {
                        UnaryFn<T, OP> f{(T *)out, (const T *)a};
                        return launch_contig(f, g->shape[0], stream);
                    }
                });
            }
        }
        return unary_generic(op, dtype, out, a, g, stream);
    });
}
