/* gather.cu - the GATHER kind on the GPU: elements moved between a dense
 * operand and the slots an index tensor picks along one dim of another
 * (index_select, gather, t[idx], t[idx] = v), added into them with
 * atomicAdd (scatter_add, index_add_), or the checked offsets of one of
 * several indices.
 *
 * A negative index counts from the end unless the mode carries
 * PYGPU_GATHER_NO_WRAP (gather, scatter_add, index_select, index_add_),
 * for which it is out of range, as torch's.
 *
 * Elements move as unsigned integers of their size, so every dtype takes
 * the same four kernels (times two index types).  An index out of range
 * does not trap: the first thread to meet one records it in err[] (the
 * caller reads it back after the kernel and raises), and no thread writes
 * through a bad index.
 */
#include "common.cuh"

// -------------------------------------------------------------- kernels

// *slot += v for the ADD modes: float32 in 4 bytes; float64 or int64 in 8
// (int64 wraps as two's complement, as an unsigned add does).
__device__ inline void add_at(uint32_t *slot, uint32_t v, int mode)
{
    atomicAdd((float *)slot, __uint_as_float(v));
}
__device__ inline void add_at(uint64_t *slot, uint64_t v, int mode)
{
    if (mode == PYGPU_GATHER_ADD_INT) {
        atomicAdd((unsigned long long *)slot, (unsigned long long)v);
    } else {
        atomicAdd((double *)slot, __longlong_as_double((long long)v));
    }
}
// Never launched for 1- and 2-byte elements (the front end widens them).
__device__ inline void add_at(uint8_t *slot, uint8_t v, int mode) {}
__device__ inline void add_at(uint16_t *slot, uint16_t v, int mode) {}

template <typename T, typename I>
__global__ void gather_kernel(T *dense, T *indexed, const I *index,
                              const __grid_constant__ pygpu_geom g, int64_t n,
                              int64_t dim_stride, int64_t dim_size,
                              int mode, bool wrap, unsigned long long *err)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += stride) {
        int64_t off[3];
        geom_offsets<3>(g, e, off);
        int64_t i = (int64_t)index[off[2]];
        int64_t w = i < 0 && wrap ? i + dim_size : i;
        if (w < 0 || w >= dim_size) {
            if (atomicCAS(err, 0ull, 1ull) == 0ull) {
                err[1] = (unsigned long long)i;
            }
            continue;
        }
        if (mode == PYGPU_GATHER_OFFSETS) { /* T is 8 bytes here */
            dense[off[0]] = (T)(w * dim_stride);
            continue;
        }
        T *slot = indexed + off[1] + w * dim_stride;
        if (mode == PYGPU_GATHER_ADD || mode == PYGPU_GATHER_ADD_INT) {
            add_at(slot, dense[off[0]], mode);
        } else if (mode == PYGPU_GATHER_SCATTER) {
            *slot = dense[off[0]];
        } else {
            dense[off[0]] = *slot;
        }
    }
}

// ------------------------------------------------------------ launchers

template <typename T, typename I>
static cudaError_t launch_gather(void *dense, void *indexed,
                                 const void *index, const pygpu_geom *g,
                                 int64_t n, int64_t dim_stride,
                                 int64_t dim_size, int mode,
                                 unsigned long long *err,
                                 cudaStream_t stream)
{
    constexpr auto kernel = gather_kernel<T, I>;
    bool wrap = !(mode & PYGPU_GATHER_NO_WRAP);
    kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
        (T *)dense, (T *)indexed, (const I *)index, *g, n, dim_stride,
        dim_size, pygpu_gather_base_mode(mode), wrap, err);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_by_index(int index_esize, void *dense,
                                   void *indexed, const void *index,
                                   const pygpu_geom *g, int64_t n,
                                   int64_t dim_stride, int64_t dim_size,
                                   int mode, unsigned long long *err,
                                   cudaStream_t stream)
{
    if (index_esize == 4) {
        return launch_gather<T, int32_t>(dense, indexed, index, g, n,
                                         dim_stride, dim_size, mode, err,
                                         stream);
    }
    if (index_esize == 8) {
        return launch_gather<T, int64_t>(dense, indexed, index, g, n,
                                         dim_stride, dim_size, mode, err,
                                         stream);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t pygpu_cuda_gather(int esize, void *dense,
                                         void *indexed, const void *index,
                                         int index_esize,
                                         const pygpu_geom *g,
                                         int64_t dim_stride, int64_t dim_size,
                                         int mode, int64_t *err,
                                         cudaStream_t stream)
{
    unsigned long long *flag = (unsigned long long *)err;
    int64_t n = geom_numel(g);
    bool sizes_ok = (esize == 1 || esize == 2 || esize == 4 || esize == 8) &&
                    (index_esize == 4 || index_esize == 8);
    if (n < 0 || !sizes_ok) {
        return cudaErrorInvalidValue;
    }
    cudaError_t e = cudaMemsetAsync(err, 0, 2 * sizeof(int64_t), stream);
    if (e != cudaSuccess || n == 0) {
        return e;
    }
    switch (esize) {
    case 1:
        return launch_by_index<uint8_t>(index_esize, dense, indexed, index,
                                        g, n, dim_stride, dim_size, mode,
                                        flag, stream);
    case 2:
        return launch_by_index<uint16_t>(index_esize, dense, indexed, index,
                                         g, n, dim_stride, dim_size, mode,
                                         flag, stream);
    case 4:
        return launch_by_index<uint32_t>(index_esize, dense, indexed, index,
                                         g, n, dim_stride, dim_size, mode,
                                         flag, stream);
    case 8:
        return launch_by_index<uint64_t>(index_esize, dense, indexed, index,
                                         g, n, dim_stride, dim_size, mode,
                                         flag, stream);
    default:
        return cudaErrorInvalidValue;
    }
}
