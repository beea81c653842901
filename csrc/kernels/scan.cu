/* scan.cu - inclusive scans (cumsum, cumprod) along the middle dim of a
 * contiguous input seen as [outer, n, inner].
 *
 * Two kernels, by where a line's elements lie:
 *   rows    (inner == 1): one block per row walks it in tiles of BLOCK
 *           elements: a scan of the tile (warp shuffles, then the warps'
 *           totals through shared memory), plus the carry of the tiles
 *           before it.
 *   columns (inner > 1):  one thread per (o, i) line, sequential along n;
 *           neighbouring threads read neighbouring columns (coalesced).
 * The input is read in its own dtype (every dtype has its launch):
 * float16 and bfloat16 run in float, bool and the integers in int64 (the
 * output's dtype, pygpu_scan_out_dtype), wrapping modulo 2^64, as the CPU
 * loops.  Simple and correct, not tuned.
 */
#include "common.cuh"

template <int OP, typename A> __device__ __forceinline__ A scan_identity()
{
    return OP == PYGPU_CUMSUM ? A(0) : A(1);
}

template <int OP, typename A> __device__ __forceinline__ A scan_op(A x, A y)
{
    if constexpr (std::is_same<A, int64_t>::value) {
        return OP == PYGPU_CUMSUM
                   ? (int64_t)((uint64_t)x + (uint64_t)y)
                   : (int64_t)((uint64_t)x * (uint64_t)y);
    } else {
        return OP == PYGPU_CUMSUM ? x + y : x * y;
    }
}

/* Inclusive scan over the 32 lanes of a warp. */
template <int OP, typename A> __device__ __forceinline__ A warp_scan(A x)
{
    const int lane = threadIdx.x % WARP;
    for (int off = 1; off < WARP; off *= 2) {
        A y = __shfl_up_sync(FULL_MASK, x, off);
        if (lane >= off) {
            x = scan_op<OP>(y, x);
        }
    }
    return x;
}

// -------------------------------------------------------------- kernels

template <int OP, typename Out, typename T>
__global__ void scan_rows_kernel(Out *out, const T *in, int64_t rows,
                                 int64_t n)
{
    using A = acc_t<T>;
    constexpr int WARPS = BLOCK / WARP;
    __shared__ A warp_total[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *src = in + r * n;
        Out *dst = out + r * n;
        A carry = scan_identity<OP, A>();
        for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
            const int64_t j = j0 + threadIdx.x;
            A x = j < n ? convert<A>(src[j]) : scan_identity<OP, A>();
            x = warp_scan<OP>(x);
            if (lane == WARP - 1) {
                warp_total[warp] = x;
            }
            __syncthreads();
            if (warp == 0) {
                A t = lane < WARPS ? warp_total[lane] : scan_identity<OP, A>();
                t = warp_scan<OP>(t);
                if (lane < WARPS) {
                    warp_total[lane] = t; /* through warp `lane` */
                }
            }
            __syncthreads();
            if (warp > 0) {
                x = scan_op<OP>(warp_total[warp - 1], x);
            }
            x = scan_op<OP>(carry, x);
            if (j < n) {
                dst[j] = convert<Out>(x);
            }
            carry = scan_op<OP>(carry, warp_total[WARPS - 1]);
            __syncthreads(); /* warp_total is written again next tile */
        }
    }
}

template <int OP, typename Out, typename T>
__global__ void scan_cols_kernel(Out *out, const T *in, int64_t outer,
                                 int64_t n, int64_t inner)
{
    using A = acc_t<T>;
    const int64_t lines = outer * inner;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         u < lines; u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = u / inner, i = u % inner;
        const T *src = in + o * n * inner + i;
        Out *dst = out + o * n * inner + i;
        A acc = scan_identity<OP, A>();
        for (int64_t j = 0; j < n; j++) {
            acc = scan_op<OP>(acc, convert<A>(src[j * inner]));
            dst[j * inner] = convert<Out>(acc);
        }
    }
}

// ------------------------------------------------------------ launchers

template <int OP, typename Out, typename T>
static cudaError_t scan_launch(Out *out, const T *in, int64_t outer,
                               int64_t n, int64_t inner, cudaStream_t stream)
{
    if (inner == 1) {
        constexpr auto kernel = scan_rows_kernel<OP, Out, T>;
        kernel<<<grid_for<kernel>(outer * BLOCK), BLOCK, 0, stream>>>(
            out, in, outer, n);
    } else {
        constexpr auto kernel = scan_cols_kernel<OP, Out, T>;
        kernel<<<grid_for<kernel>(outer * inner), BLOCK, 0, stream>>>(
            out, in, outer, n, inner);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_scan(int op, int dtype, void *out,
                                       const void *in, int64_t outer,
                                       int64_t n, int64_t inner,
                                       cudaStream_t stream)
{
    if (op < 0 || op >= PYGPU_NSCANOPS || outer < 0 || n < 0 || inner < 0) {
        return cudaErrorInvalidValue;
    }
    if (outer == 0 || n == 0 || inner == 0) {
        return cudaSuccess;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        /* bool and the integers give int64, the others their own dtype */
        using Out = typename std::conditional<
            std::is_integral<acc_t<T>>::value, int64_t, T>::type;
        return dispatch_op<PYGPU_NSCANOPS>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            return scan_launch<OP>((Out *)out, (const T *)in, outer, n, inner,
                                   stream);
        });
    });
}
