/* norm.cu - layer norm and RMS norm over contiguous rows on the GPU: the
 * NORM kind (kernels/norm.h states the math and the buffers).
 *
 *   forward:  a warp per row (n <= WARP_ROW_MAX) or a block per row,
 *             striding along it: the sum (layer norm), then the sum of
 *             squared deviations (the row read again, from the cache),
 *             then the output.
 *   backward: dx the same way (the sums of g and g * xhat in one pass,
 *             then dx); the parameter gradients by part: a thread per
 *             (column, part) sums its part's rows in the compute type
 *             (neighbouring threads read neighbouring columns), then a
 *             thread per column adds the parts in double, in part order.
 * Every sum is combined in an order fixed by the sizes, so a call gives
 * the same bits every time. */
#include "common.cuh"
#include "rows.cuh"
#include "norm.h"

// ------------------------------------------------------------ kernels

template <int LANES, typename T>
__global__ void norm_forward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    constexpr int PER_BLOCK = BLOCK / LANES;
    const int lane = threadIdx.x % LANES;
    const A *w = (const A *)a.w, *b = (const A *)a.b;
    const int64_t n = a.n;
    for (int64_t row = (int64_t)blockIdx.x * PER_BLOCK + threadIdx.x / LANES;
         row < a.rows; row += (int64_t)gridDim.x * PER_BLOCK) {
        const T *x = (const T *)a.x + row * n;
        T *y = (T *)a.y + row * n;
        A m = A(0);
        if (!a.rms) {
            A s = A(0);
            for (int64_t j = lane; j < n; j += LANES) {
                s += convert<A>(x[j]);
            }
            m = lanes_all<false, LANES>(s) / A(n);
        }
        A q = A(0);
        for (int64_t j = lane; j < n; j += LANES) {
            const A d = convert<A>(x[j]) - m;
            q += d * d;
        }
        q = lanes_all<false, LANES>(q);
        const A rs = A(1.0 / sqrt((double)q / (double)n + a.eps));
        if (lane == 0) {
            if (!a.rms) {
                ((A *)a.mean)[row] = m;
            }
            ((A *)a.rstd)[row] = rs;
        }
        for (int64_t j = lane; j < n; j += LANES) {
            A v = (convert<A>(x[j]) - m) * rs;
            if (w != nullptr) {
                v *= w[j];
            }
            if (b != nullptr) {
                v += b[j];
            }
            y[j] = convert<T>(v);
        }
    }
}

template <int LANES, typename T>
__global__ void norm_backward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    constexpr int PER_BLOCK = BLOCK / LANES;
    const int lane = threadIdx.x % LANES;
    const A *w = (const A *)a.w;
    const int64_t n = a.n;
    for (int64_t row = (int64_t)blockIdx.x * PER_BLOCK + threadIdx.x / LANES;
         row < a.rows; row += (int64_t)gridDim.x * PER_BLOCK) {
        const T *x = (const T *)a.x + row * n;
        const T *dy = (const T *)a.dy + row * n;
        T *dx = (T *)a.dx + row * n;
        const A m = a.rms ? A(0) : ((const A *)a.mean)[row];
        const A rs = ((const A *)a.rstd)[row];
        A s1 = A(0), s2 = A(0);
        for (int64_t j = lane; j < n; j += LANES) {
            const A g = convert<A>(dy[j]) * (w != nullptr ? w[j] : A(1));
            s1 += g;
            s2 += g * ((convert<A>(x[j]) - m) * rs);
        }
        s1 = lanes_all<false, LANES>(s1);
        s2 = lanes_all<false, LANES>(s2);
        const A c1 = a.rms ? A(0) : s1 / A(n), c2 = s2 / A(n);
        for (int64_t j = lane; j < n; j += LANES) {
            const A g = convert<A>(dy[j]) * (w != nullptr ? w[j] : A(1));
            const A xh = (convert<A>(x[j]) - m) * rs;
            dx[j] = convert<T>(rs * (g - c1 - xh * c2));
        }
    }
}

/* Part p's sums of dy * xhat and dy for column j, into part_sums. */
template <typename T>
__global__ void norm_part_sums_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const int64_t n = a.n;
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) {
        return;
    }
    for (int64_t p = blockIdx.y; p < a.parts; p += gridDim.y) {
        const int64_t r0 = p * a.rows_per_part;
        const int64_t r1 = r0 + a.rows_per_part < a.rows
                               ? r0 + a.rows_per_part
                               : a.rows;
        A sw = A(0), sb = A(0);
        for (int64_t r = r0; r < r1; r++) {
            const A m = a.rms ? A(0) : ((const A *)a.mean)[r];
            const A rs = ((const A *)a.rstd)[r];
            const A d = convert<A>(((const T *)a.dy)[r * n + j]);
            sw += d * ((convert<A>(((const T *)a.x)[r * n + j]) - m) * rs);
            sb += d;
        }
        A *ps = (A *)a.part_sums + p * 2 * n;
        ps[j] = sw;
        ps[n + j] = sb;
    }
}

/* dw and db of column j: the parts' sums added in double, in order. */
template <typename A>
__global__ void norm_param_sums_kernel(const pygpu_norm_args a)
{
    const int64_t n = a.n;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         j < 2 * n; j += (int64_t)gridDim.x * blockDim.x) {
        A *dst = j < n ? (A *)a.dw : (A *)a.db;
        if (dst == nullptr) {
            continue;
        }
        const A *ps = (const A *)a.part_sums;
        double s = 0;
        for (int64_t p = 0; p < a.parts; p++) {
            s += (double)ps[p * 2 * n + j];
        }
        dst[j < n ? j : j - n] = A(s);
    }
}

// ------------------------------------------------------------ launchers

template <typename T>
static cudaError_t norm_rows_launch(int op, const pygpu_norm_args &a,
                                    cudaStream_t stream)
{
    if (a.n <= WARP_ROW_MAX) {
        if (op == PYGPU_NORM_FORWARD) {
            constexpr auto kernel = norm_forward_kernel<WARP, T>;
            kernel<<<grid_for<kernel>(a.rows * WARP), BLOCK, 0, stream>>>(a);
        } else {
            constexpr auto kernel = norm_backward_kernel<WARP, T>;
            kernel<<<grid_for<kernel>(a.rows * WARP), BLOCK, 0, stream>>>(a);
        }
    } else if (op == PYGPU_NORM_FORWARD) {
        constexpr auto kernel = norm_forward_kernel<BLOCK, T>;
        kernel<<<grid_for<kernel>(a.rows * BLOCK), BLOCK, 0, stream>>>(a);
    } else {
        constexpr auto kernel = norm_backward_kernel<BLOCK, T>;
        kernel<<<grid_for<kernel>(a.rows * BLOCK), BLOCK, 0, stream>>>(a);
    }
    return cudaGetLastError();
}

template <typename T>
static cudaError_t norm_launch(int op, const pygpu_norm_args &a,
                               cudaStream_t stream)
{
    using A = acc_t<T>;
    cudaError_t e;
    if (a.rows > 0 && (op == PYGPU_NORM_FORWARD || a.dx != nullptr)) {
        e = norm_rows_launch<T>(op, a, stream);
        if (e != cudaSuccess) {
            return e;
        }
    }
    if (op != PYGPU_NORM_BACKWARD || a.part_sums == nullptr) {
        return cudaSuccess;
    }
    if (a.parts > 0) {
        const int64_t ys = a.parts < 65535 ? a.parts : 65535;
        dim3 grid((unsigned)ceil_div(a.n, BLOCK), (unsigned)ys);
        norm_part_sums_kernel<T><<<grid, BLOCK, 0, stream>>>(a);
        if ((e = cudaGetLastError()) != cudaSuccess) {
            return e;
        }
    }
    constexpr auto kernel = norm_param_sums_kernel<A>;
    kernel<<<grid_for<kernel>(2 * a.n), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_norm(int op, int dtype,
                                       const pygpu_norm_args *a,
                                       cudaStream_t stream)
{
    if (op < 0 || op > PYGPU_NORM_BACKWARD || a->n < 1 || a->rows < 0) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* refused by the front end */
        } else {
            return norm_launch<T>(op, *a, stream);
        }
    });
}
