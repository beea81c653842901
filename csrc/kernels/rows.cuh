/* rows.cuh - what the kernels over lines of logits share (softmax.cu,
 * xent.cu): exp and log by compute type, and the block-wide maximum and
 * sum of a row (warp shuffles, then one value per warp in shared
 * memory). */
#ifndef PYGPU_KERNELS_ROWS_CUH
#define PYGPU_KERNELS_ROWS_CUH

#include "common.cuh"

__device__ __forceinline__ float exp_of(float x)
{
    return expf(x);
}
__device__ __forceinline__ double exp_of(double x)
{
    return exp(x);
}
__device__ __forceinline__ float log_of(float x)
{
    return logf(x);
}
__device__ __forceinline__ double log_of(double x)
{
    return log(x);
}

/* The larger of two, NaN winning, so that NaN propagates. */
template <typename A> __device__ __forceinline__ A max_nan(A x, A y)
{
    return (y > x || isnan(y)) ? y : x;
}

/* Every thread of the block gets the block's maximum (IS_MAX) or sum.
 * Every thread must call it. */
template <bool IS_MAX, typename A> __device__ A block_all(A x)
{
    constexpr int WARPS = BLOCK / WARP;
    __shared__ A part[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    for (int off = WARP / 2; off > 0; off /= 2) {
        A y = __shfl_xor_sync(FULL_MASK, x, off);
        x = IS_MAX ? max_nan(x, y) : x + y;
    }
    if (lane == 0) {
        part[warp] = x;
    }
    __syncthreads();
    x = part[0];
    for (int w = 1; w < WARPS; w++) {
        x = IS_MAX ? max_nan(x, part[w]) : x + part[w];
    }
    __syncthreads(); /* part is reused by the next call */
    return x;
}

#endif /* PYGPU_KERNELS_ROWS_CUH */
