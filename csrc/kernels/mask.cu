/* mask.cu - the masked copy of where, masked_fill and mask assignment:
 * out[i] = cond[i] ? a[i] : out[i], a read in its own dtype and converted
 * to out's (load_as, as a copy would).  One kernel per output dtype. */
#include "common.cuh"

template <typename T>
__global__ void masked_copy_kernel(T *out, const bool *cond, const void *a,
                                   int da,
                                   const __grid_constant__ pygpu_geom g,
                                   int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        int64_t off[3];
        geom_offsets<3>(g, i, off);
        if (cond[off[1]]) {
            out[off[0]] = load_as<T>(a, da, off[2]);
        }
    }
}

extern "C" cudaError_t pygpu_cuda_masked_copy(int dtype, void *out,
                                              const void *cond, int a_dtype,
                                              const void *a,
                                              const pygpu_geom *g,
                                              cudaStream_t stream)
{
    if (a_dtype < 0 || a_dtype >= PYGPU_NDTYPES) {
        return cudaErrorInvalidValue;
    }
    int64_t n = geom_numel(g);
    if (n < 0) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) {
            return cudaSuccess;
        }
        constexpr auto kernel = masked_copy_kernel<T>;
        kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
            (T *)out, (const bool *)cond, a, a_dtype, *g, n);
        return cudaGetLastError();
    });
}
