/* rows.cuh - what the kernels over lines of logits share (softmax.cu,
 * xent.cu): exp and log by compute type, how many lanes a row gets, and
 * the maximum and sum of a row over a group of lanes (warp shuffles in a
 * fixed butterfly) or over a block (then one value per warp in shared
 * memory, combined in warp order). */
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

/* Rows up to SMALL_ROW_MAX long get a group of G lanes (the least power
 * of two >= n), one element per lane held in registers, ROW_BATCH rows
 * per group at a time (their loads in flight together); rows up to
 * WARP_ROW_MAX a warp each, longer ones a block. */
constexpr int64_t SMALL_ROW_MAX = WARP;
constexpr int64_t WARP_ROW_MAX = 1024;
constexpr int ROW_BATCH = 4;

/* Calls f with std::integral_constant<int, G>, G the least power of two
 * >= n, at most WARP. */
template <typename F> cudaError_t dispatch_group(int64_t n, F &&f)
{
    if (n <= 1) {
        return f(std::integral_constant<int, 1>());
    }
    if (n <= 2) {
        return f(std::integral_constant<int, 2>());
    }
    if (n <= 4) {
        return f(std::integral_constant<int, 4>());
    }
    if (n <= 8) {
        return f(std::integral_constant<int, 8>());
    }
    if (n <= 16) {
        return f(std::integral_constant<int, 16>());
    }
    return f(std::integral_constant<int, WARP>());
}

/* Every lane of each group of G gets the group's maximum (IS_MAX) or sum
 * by a butterfly: each step combines the same two values in either order,
 * so a sum has the same bits in every lane (a maximum may differ in the
 * sign of a zero or a NaN's payload).  Every lane of the warp must call
 * it. */
template <bool IS_MAX, int G, typename A>
__device__ __forceinline__ A group_all(A x)
{
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) {
        A y = __shfl_xor_sync(FULL_MASK, x, off);
        x = IS_MAX ? max_nan(x, y) : x + y;
    }
    return x;
}

/* Every thread of the block gets the block's maximum (IS_MAX) or sum.
 * Every thread must call it. */
template <bool IS_MAX, typename A> __device__ A block_all(A x)
{
    constexpr int WARPS = BLOCK / WARP;
    __shared__ A part[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    x = group_all<IS_MAX, WARP>(x);
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

/* The maximum or sum over the LANES threads (a warp, or the block) that
 * share a row: every one of them must call it. */
template <bool IS_MAX, int LANES, typename A>
__device__ __forceinline__ A lanes_all(A x)
{
    if constexpr (LANES == BLOCK) {
        return block_all<IS_MAX>(x);
    } else {
        return group_all<IS_MAX, LANES>(x);
    }
}

#endif /* PYGPU_KERNELS_ROWS_CUH */
