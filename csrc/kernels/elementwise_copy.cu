/* elementwise_copy.cu - copy (with dtype conversion) and fill.  A copy
 * reads its input through load_as (a switch on the input's dtype, which
 * never diverges), so there is a kernel per output dtype, not per pair:
 * the contiguous kernel (elementwise.cuh) for the five dtypes of
 * own_kernels, the general one for the rest. */
#include "elementwise.cuh"

template <typename To> struct CopyFn {
    To *out;
    const void *a;
    int da;
    __device__ void operator()(int64_t o, int64_t ia, int64_t) const
    {
        out[o] = load_as<To>(a, da, ia);
    }
};

template <typename T> __global__ void fill_kernel(T *out, T v, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = v;
    }
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
        if constexpr (own_kernels<To>()) {
            if (geom_is_contiguous(g, 2)) {
                return launch_contig(f, g->shape[0], stream);
            }
        }
        return launch_strided<2>(f, g, stream);
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
