/* mask.cu - the masked copy of where, masked_fill and mask assignment:
 * out[i] = cond[i] ? a[i] : out[i], a read in its own dtype and converted
 * to out's (load_as, as a copy would), one kernel per output dtype; and
 * the row gather / scatter of boolean-mask indexing, by element size. */
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
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        return launch_over_geom<masked_copy_kernel<T>>(
            g, stream, (T *)out, (const bool *)cond, a, a_dtype);
    });
}

/* One thread per element of the n selected rows of `row` elements. */
template <typename T>
__global__ void index_rows_kernel(T *out, const T *in, const int64_t *idx,
                                  int64_t n, int64_t row, int scatter)
{
    const int64_t total = n * row;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         i < total; i += stride) {
        const int64_t j = i / row, c = i - j * row;
        const int64_t r = idx[j];
        if (scatter) {
            out[r * row + c] = in[i];
        } else {
            out[i] = in[r * row + c];
        }
    }
}

template <typename T>
static cudaError_t launch_index_rows(void *out, const void *in,
                                     const int64_t *idx, int64_t n,
                                     int64_t row, int scatter,
                                     cudaStream_t stream)
{
    constexpr auto kernel = index_rows_kernel<T>;
    kernel<<<grid_for<kernel>(n * row), BLOCK, 0, stream>>>(
        (T *)out, (const T *)in, idx, n, row, scatter);
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_index_rows(int dtype, void *out,
                                             const void *in,
                                             const int64_t *idx, int64_t n,
                                             int64_t row, int scatter,
                                             cudaStream_t stream)
{
    if (n < 0 || row < 0) {
        return cudaErrorInvalidValue;
    }
    size_t size = 0;
    cudaError_t err = dispatch_dtype_all(dtype, [&](auto tag) {
        size = sizeof(tag);
        return cudaSuccess;
    });
    if (err != cudaSuccess) {
        return err;
    }
    if (n == 0 || row == 0) {
        return cudaSuccess;
    }
    switch (size) {
    case 1:
        return launch_index_rows<uint8_t>(out, in, idx, n, row, scatter,
                                          stream);
    case 2:
        return launch_index_rows<uint16_t>(out, in, idx, n, row, scatter,
                                           stream);
    case 4:
        return launch_index_rows<uint32_t>(out, in, idx, n, row, scatter,
                                           stream);
    default:
        return launch_index_rows<uint64_t>(out, in, idx, n, row, scatter,
                                           stream);
    }
}
