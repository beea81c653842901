/* softmax.cu - softmax, log_softmax and logsumexp along the middle dim of a
 * contiguous input seen as [outer, n, inner], n >= 1.
 *
 * Each line is read three times: its maximum m, then s = sum exp(x - m),
 * then the outputs (exp(x - m) / s, x - m - log s, or m + log s once), as
 * the CPU loops do (cpu_softmax.c, which states the NaN and infinity rules
 * both follow).  float16 computes in float.
 *   rows    (inner == 1, the last dim), by n (rows.cuh):
 *           n <= SMALL_ROW_MAX: a group of G lanes per row (G the least
 *           power of two >= n), one element per lane in registers (read
 *           once), ROW_BATCH rows per group at a time, several rows per
 *           warp; m and s by shuffles within the group.
 *           n <= WARP_ROW_MAX: a warp per row, striding along it.
 *           longer: a block per row; m and s are block reductions (warp
 *           shuffles, then shared memory).
 *   columns (inner > 1): one thread per (o, i) line, sequential along n
 *           (its sum of exponentials in double); neighbouring threads read
 *           neighbouring columns (coalesced).
 * Each sum is combined in an order fixed by n, so a call gives the same
 * bits every time.
 */
#include "rows.cuh"

/* What the last pass writes for element v of a line, given m and the
 * line's r (1 / s for softmax, m + log s for log_softmax). */
template <int OP, typename A>
__device__ __forceinline__ A softmax_out(A v, A m, A r)
{
    return OP == PYGPU_LOG_SOFTMAX ? v - r : exp_of(v - m) * r;
}

// -------------------------------------------------------------- kernels

/* inner == 1, n <= G <= WARP: lane l of a group holds element l of its
 * rows.  A warp takes WARP / G * ROW_BATCH consecutive rows per trip, the
 * same trip count for every lane (rows past the last have no elements),
 * so all reach the shuffles.  A lane without an element holds -inf for
 * the maximum (which changes no maximum, NaN included) and adds 0. */
template <int OP, int G, typename T>
__global__ void softmax_small_kernel(T *out, const T *in, int64_t rows,
                                     int64_t n)
{
    using A = acc_t<T>;
    constexpr int PER_WARP = WARP / G, WARPS = BLOCK / WARP;
    constexpr int ROWS = PER_WARP * ROW_BATCH;
    const int lane = threadIdx.x % G, grp = threadIdx.x % WARP / G;
    const int64_t step = (int64_t)gridDim.x * WARPS * ROWS;
    for (int64_t base = ((int64_t)blockIdx.x * WARPS + threadIdx.x / WARP) *
                        ROWS;
         base < rows; base += step) {
        A v[ROW_BATCH], m[ROW_BATCH], s[ROW_BATCH];
        bool has[ROW_BATCH];
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            const int64_t row = base + b * PER_WARP + grp;
            has[b] = row < rows && lane < n;
            v[b] = has[b] ? convert<A>(in[row * n + lane]) : A(-INFINITY);
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            m[b] = group_all<true, G>(v[b]);
            if (OP == PYGPU_LOGSUMEXP && isinf(m[b])) {
                m[b] = A(0);
            }
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            s[b] = group_all<false, G>(has[b] ? exp_of(v[b] - m[b]) : A(0));
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            const int64_t row = base + b * PER_WARP + grp;
            if constexpr (OP == PYGPU_LOGSUMEXP) {
                if (row < rows && lane == 0) {
                    out[row] = convert<T>(m[b] + log_of(s[b]));
                }
            } else if (has[b]) {
                const A r = OP == PYGPU_LOG_SOFTMAX ? m[b] + log_of(s[b])
                                                    : A(1) / s[b];
                out[row * n + lane] =
                    convert<T>(softmax_out<OP>(v[b], m[b], r));
            }
        }
    }
}

/* inner == 1, longer rows: LANES threads (a warp, or the block) per row,
 * striding along it. */
template <int OP, int LANES, typename T>
__global__ void softmax_rows_kernel(T *out, const T *in, int64_t rows,
                                    int64_t n)
{
    using A = acc_t<T>;
    constexpr int PER_BLOCK = BLOCK / LANES;
    const int lane = threadIdx.x % LANES;
    for (int64_t row = (int64_t)blockIdx.x * PER_BLOCK + threadIdx.x / LANES;
         row < rows; row += (int64_t)gridDim.x * PER_BLOCK) {
        const T *x = in + row * n;
        A m = convert<A>(x[0]);
        for (int64_t j = lane; j < n; j += LANES) {
            m = max_nan(m, convert<A>(x[j]));
        }
        m = lanes_all<true, LANES>(m);
        if (OP == PYGPU_LOGSUMEXP && isinf(m)) {
            m = A(0);
        }
        A s = A(0);
        for (int64_t j = lane; j < n; j += LANES) {
            s += exp_of(convert<A>(x[j]) - m);
        }
        s = lanes_all<false, LANES>(s);
        if constexpr (OP == PYGPU_LOGSUMEXP) {
            if (lane == 0) {
                out[row] = convert<T>(m + log_of(s));
            }
        } else {
            const A r = OP == PYGPU_LOG_SOFTMAX ? m + log_of(s) : A(1) / s;
            T *y = out + row * n;
            for (int64_t j = lane; j < n; j += LANES) {
                y[j] = convert<T>(softmax_out<OP>(convert<A>(x[j]), m, r));
            }
        }
    }
}

template <int OP, typename T>
__global__ void softmax_cols_kernel(T *out, const T *in, int64_t outer,
                                    int64_t n, int64_t inner)
{
    using A = acc_t<T>;
    const int64_t lines = outer * inner;
    const int64_t out_n = OP == PYGPU_LOGSUMEXP ? 1 : n;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         u < lines; u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = u / inner, i = u % inner;
        const T *x = in + o * n * inner + i;
        T *y = out + o * out_n * inner + i;
        A m = convert<A>(x[0]);
        for (int64_t j = 1; j < n; j++) {
            m = max_nan(m, convert<A>(x[j * inner]));
        }
        if (OP == PYGPU_LOGSUMEXP && isinf(m)) {
            m = A(0);
        }
        double s = 0; /* a long sequential sum: in double */
        for (int64_t j = 0; j < n; j++) {
            s += exp_of(convert<A>(x[j * inner]) - m);
        }
        if constexpr (OP == PYGPU_LOGSUMEXP) {
            y[0] = convert<T>(m + log_of(A(s)));
        } else {
            const A r = OP == PYGPU_LOG_SOFTMAX ? m + log_of(A(s)) : A(1 / s);
            for (int64_t j = 0; j < n; j++) {
                y[j * inner] = convert<T>(
                    softmax_out<OP>(convert<A>(x[j * inner]), m, r));
            }
        }
    }
}

// ------------------------------------------------------------ launchers

template <int OP, typename T>
static cudaError_t softmax_launch(T *out, const T *in, int64_t outer,
                                  int64_t n, int64_t inner,
                                  cudaStream_t stream)
{
    if (inner == 1 && n <= SMALL_ROW_MAX) {
        return dispatch_group(n, [&](auto g) {
            constexpr int G = decltype(g)::value;
            constexpr auto kernel = softmax_small_kernel<OP, G, T>;
            const int64_t warps = ceil_div(outer, WARP / G * ROW_BATCH);
            kernel<<<grid_for<kernel>(warps * WARP), BLOCK, 0, stream>>>(
                out, in, outer, n);
            return cudaGetLastError();
        });
    }
    if (inner == 1 && n <= WARP_ROW_MAX) {
        constexpr auto kernel = softmax_rows_kernel<OP, WARP, T>;
        kernel<<<grid_for<kernel>(outer * WARP), BLOCK, 0, stream>>>(
            out, in, outer, n);
    } else if (inner == 1) {
        constexpr auto kernel = softmax_rows_kernel<OP, BLOCK, T>;
        kernel<<<grid_for<kernel>(outer * BLOCK), BLOCK, 0, stream>>>(
            out, in, outer, n);
    } else {
        constexpr auto kernel = softmax_cols_kernel<OP, T>;
        kernel<<<grid_for<kernel>(outer * inner), BLOCK, 0, stream>>>(
            out, in, outer, n, inner);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_softmax(int op, int dtype, void *out,
                                          const void *in, int64_t outer,
                                          int64_t n, int64_t inner,
                                          cudaStream_t stream)
{
    if (op < 0 || op >= PYGPU_NSOFTOPS || outer < 0 || n < 1 || inner < 0) {
        return cudaErrorInvalidValue;
    }
    if (outer == 0 || inner == 0) {
        return cudaSuccess;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* refused by the front end */
        } else {
            return dispatch_op<PYGPU_NSOFTOPS>(op, [&](auto code) {
                constexpr int OP = decltype(code)::value;
                return softmax_launch<OP>((T *)out, (const T *)in, outer, n,
                                          inner, stream);
            });
        }
    });
}
