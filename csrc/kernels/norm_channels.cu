/* norm_channels.cu - batch norm's training step over the channels of a
 * contiguous [outer, C, inner] input on the GPU: the NORM kind's CHANNELS
 * ops (kernels/norm.h), as the CPU loops do them (cpu_norm_channels.c).
 *
 * A block per channel strides over its outer * inner elements (element j
 * is run j / inner, offset j % inner); the sums are block reductions
 * (rows.cuh) in an order fixed by the sizes.  Forward reads the channel
 * three times (sum, squared deviations, output), backward twice (the sums
 * of dy and dy * xhat, then dx). */
#include "common.cuh"
#include "rows.cuh"
#include "norm.h"

// ------------------------------------------------------------ kernels

/* The offset of element j of channel c. */
__device__ __forceinline__ int64_t channel_at(const pygpu_norm_args &a,
                                              int64_t c, int64_t j)
{
    const int64_t o = j / a.inner;
    return (o * a.rows + c) * a.inner + (j - o * a.inner);
}

template <typename T>
__global__ void channels_forward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x;
    T *y = (T *)a.y;
    for (int64_t c = blockIdx.x; c < a.rows; c += gridDim.x) {
        A s = A(0);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            s += convert<A>(x[channel_at(a, c, j)]);
        }
        const A m = block_all<false>(s) / A(a.n);
        A q = A(0);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            const A d = convert<A>(x[channel_at(a, c, j)]) - m;
            q += d * d;
        }
        const double var = (double)block_all<false>(q) / (double)a.n;
        const A rs = A(1.0 / sqrt(var + a.eps));
        if (threadIdx.x == 0) {
            ((A *)a.mean)[c] = m;
            ((A *)a.rstd)[c] = rs;
            if (a.var != nullptr) {
                ((A *)a.var)[c] = A(var);
            }
        }
        const A sc = a.w != nullptr ? rs * ((const A *)a.w)[c] : rs;
        const A sh = a.b != nullptr ? ((const A *)a.b)[c] : A(0);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            const int64_t at = channel_at(a, c, j);
            y[at] = convert<T>((convert<A>(x[at]) - m) * sc + sh);
        }
    }
}

template <typename T>
__global__ void channels_backward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    for (int64_t c = blockIdx.x; c < a.rows; c += gridDim.x) {
        const A m = ((const A *)a.mean)[c], rs = ((const A *)a.rstd)[c];
        A s1 = A(0), s2 = A(0);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            const int64_t at = channel_at(a, c, j);
            const A d = convert<A>(dy[at]);
            s1 += d;
            s2 += d * ((convert<A>(x[at]) - m) * rs);
        }
        s1 = block_all<false>(s1);
        s2 = block_all<false>(s2);
        if (threadIdx.x == 0) {
            if (a.dw != nullptr) {
                ((A *)a.dw)[c] = s2;
            }
            if (a.db != nullptr) {
                ((A *)a.db)[c] = s1;
            }
        }
        if (a.dx == nullptr) {
            continue;
        }
        const A k = a.w != nullptr ? rs * ((const A *)a.w)[c] : rs;
        const A c1 = s1 / A(a.n), c2 = s2 / A(a.n);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            const int64_t at = channel_at(a, c, j);
            const A xh = (convert<A>(x[at]) - m) * rs;
            ((T *)a.dx)[at] = convert<T>(k * (convert<A>(dy[at]) - c1 - xh * c2));
        }
    }
}

// ------------------------------------------------------------ launchers

extern "C" cudaError_t pygpu_cuda_norm_channels(int op, int dtype,
                                                const pygpu_norm_args *a,
                                                cudaStream_t stream)
{
    if (a->rows < 0 || a->n < 0 || a->inner < 1) {
        return cudaErrorInvalidValue;
    }
    if (a->rows == 0 || a->n == 0) {
        return cudaSuccess;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* refused by the front end */
        } else {
            if (op == PYGPU_NORM_CHANNELS_FORWARD) {
                constexpr auto kernel = channels_forward_kernel<T>;
                kernel<<<grid_for<kernel>(a->rows * BLOCK), BLOCK, 0,
                         stream>>>(*a);
            } else {
                constexpr auto kernel = channels_backward_kernel<T>;
                kernel<<<grid_for<kernel>(a->rows * BLOCK), BLOCK, 0,
                         stream>>>(*a);
            }
            return cudaGetLastError();
        }
    });
}
