/* norm_channels.cu - batch norm's training step over the channels of a
 * contiguous [outer, C, inner] input on the GPU: the NORM kind's CHANNELS
 * ops (kernels/norm.h), as the CPU loops do them (cpu_norm_channels.c).
 *
 * Each channel's n = outer * inner elements are cut into a.parts =
 * pygpu_norm_slices(n) slices of a.rows_per_part elements (the last may be
 * shorter or empty), a block per (channel, slice), so that a few channels
 * still fill the GPU.  Three launches each way:
 *   slices   a block sums its slice: forward its mean and the squared
 *            deviations from it (two passes over the slice), backward the
 *            sums of dy and dy * xhat; into a.part_sums [C, parts, 2], the
 *            runner's workspace;
 *   merge    a thread per channel merges its slices in slice order
 *            (forward: Chan's pairwise update of count, mean and M2 in
 *            double), so the bits depend on the sizes alone;
 *   apply    an elementwise pass writes y (or dx).
 * Element j of channel c is at ((j / inner) * C + c) * inner + j % inner;
 * the loops step through it with a walker that adds instead of dividing. */
#include "common.cuh"
#include "rows.cuh"
#include "norm.h"

// ------------------------------------------------------------ walkers

/* A thread's position in channel c's elements, stepped by BLOCK. */
struct channel_walk {
    int64_t at, i;       /* offset in the tensor, offset in its run */
    int64_t jump, wrap;  /* added per step; added again when i wraps */
    int64_t r, inner;    /* BLOCK % inner */

    __device__ channel_walk(const pygpu_norm_args &a, int64_t c, int64_t j)
    {
        inner = a.inner;
        const int64_t o = j / inner, q = BLOCK / inner;
        i = j - o * inner;
        at = (o * a.rows + c) * inner + i;
        r = BLOCK - q * inner;
        jump = q * a.rows * inner + r;
        wrap = (a.rows - 1) * inner;
    }
    __device__ __forceinline__ void step()
    {
        at += jump;
        i += r;
        if (i >= inner) {
            i -= inner;
            at += wrap;
        }
    }
};

/* A thread's element of the whole tensor and its channel, stepped by the
 * grid's width. */
struct flat_walk {
    int64_t at, i, c;
    int64_t stride, r, qc, inner, C;

    __device__ flat_walk(const pygpu_norm_args &a)
    {
        inner = a.inner;
        C = a.rows;
        at = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
        stride = (int64_t)gridDim.x * BLOCK;
        const int64_t run = at / inner, q = stride / inner;
        i = at - run * inner;
        c = run % C;
        r = stride - q * inner;
        qc = q % C;
    }
    __device__ __forceinline__ void step()
    {
        at += stride;
        i += r;
        c += qc;
        if (i >= inner) {
            i -= inner;
            c++;
        }
        if (c >= C) {
            c -= C;
        }
    }
};

/* The first element and the end of slice s of a channel. */
__device__ __forceinline__ void slice_of(const pygpu_norm_args &a,
                                         int64_t s, int64_t *j0, int64_t *j1)
{
    *j0 = s * a.rows_per_part;
    *j1 = *j0 + a.rows_per_part < a.n ? *j0 + a.rows_per_part : a.n;
}

// ------------------------------------------------------------ forward

/* part_sums[c, s] = (mean, sum of squared deviations) of slice s. */
template <typename T>
__global__ void slices_forward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x;
    A *part = (A *)a.part_sums;
    for (int64_t b = blockIdx.x; b < a.rows * a.parts; b += gridDim.x) {
        const int64_t c = b / a.parts, s = b - c * a.parts;
        int64_t j0, j1;
        slice_of(a, s, &j0, &j1);
        A sum = A(0);
        channel_walk w(a, c, j0 + threadIdx.x);
        for (int64_t j = j0 + threadIdx.x; j < j1; j += BLOCK, w.step()) {
            sum += convert<A>(x[w.at]);
        }
        const A m = block_all<false>(sum) / A(j1 - j0);
        A q = A(0);
        channel_walk v(a, c, j0 + threadIdx.x);
        for (int64_t j = j0 + threadIdx.x; j < j1; j += BLOCK, v.step()) {
            const A d = convert<A>(x[v.at]) - m;
            q += d * d;
        }
        q = block_all<false>(q);
        if (threadIdx.x == 0) {
            part[2 * b] = m;
            part[2 * b + 1] = q;
        }
    }
}

/* mean, rstd and var of each channel from its slices, in slice order. */
template <typename T>
__global__ void merge_forward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const A *part = (const A *)a.part_sums;
    for (int64_t c = (int64_t)blockIdx.x * BLOCK + threadIdx.x; c < a.rows;
         c += (int64_t)gridDim.x * BLOCK) {
        double count = 0.0, mean = 0.0, m2 = 0.0;
        for (int64_t s = 0; s < a.parts; s++) {
            int64_t j0, j1;
            slice_of(a, s, &j0, &j1);
            if (j1 <= j0) {
                continue;
            }
            const double nb = (double)(j1 - j0);
            const double mb = (double)part[2 * (c * a.parts + s)];
            const double qb = (double)part[2 * (c * a.parts + s) + 1];
            const double total = count + nb, d = mb - mean;
            mean += d * (nb / total);
            m2 += qb + d * d * (count * nb / total);
            count = total;
        }
        const double var = m2 / (double)a.n;
        ((A *)a.mean)[c] = A(mean);
        ((A *)a.rstd)[c] = A(1.0 / sqrt(var + a.eps));
        if (a.var != nullptr) {
            ((A *)a.var)[c] = A(var);
        }
    }
}

template <typename T>
__global__ void apply_forward_kernel(const pygpu_norm_args a, int64_t numel)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x;
    T *y = (T *)a.y;
    const A *mean = (const A *)a.mean, *rstd = (const A *)a.rstd;
    const A *w = (const A *)a.w, *bias = (const A *)a.b;
    for (flat_walk f(a); f.at < numel; f.step()) {
        const A sc = w != nullptr ? rstd[f.c] * w[f.c] : rstd[f.c];
        const A sh = bias != nullptr ? bias[f.c] : A(0);
        y[f.at] = convert<T>((convert<A>(x[f.at]) - mean[f.c]) * sc + sh);
    }
}

// ------------------------------------------------------------ backward

/* part_sums[c, s] = (sum of dy, sum of dy * xhat) over slice s. */
template <typename T>
__global__ void slices_backward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    A *part = (A *)a.part_sums;
    for (int64_t b = blockIdx.x; b < a.rows * a.parts; b += gridDim.x) {
        const int64_t c = b / a.parts, s = b - c * a.parts;
        const A m = ((const A *)a.mean)[c], rs = ((const A *)a.rstd)[c];
        int64_t j0, j1;
        slice_of(a, s, &j0, &j1);
        A s1 = A(0), s2 = A(0);
        channel_walk w(a, c, j0 + threadIdx.x);
        for (int64_t j = j0 + threadIdx.x; j < j1; j += BLOCK, w.step()) {
            const A d = convert<A>(dy[w.at]);
            s1 += d;
            s2 += d * ((convert<A>(x[w.at]) - m) * rs);
        }
        s1 = block_all<false>(s1);
        s2 = block_all<false>(s2);
        if (threadIdx.x == 0) {
            part[2 * b] = s1;
            part[2 * b + 1] = s2;
        }
    }
}

/* Each channel's sums, in slice order: db and dw, and the means of dy and
 * dy * xhat that dx needs, left in the channel's first slice. */
template <typename T>
__global__ void merge_backward_kernel(const pygpu_norm_args a)
{
    using A = acc_t<T>;
    A *part = (A *)a.part_sums;
    for (int64_t c = (int64_t)blockIdx.x * BLOCK + threadIdx.x; c < a.rows;
         c += (int64_t)gridDim.x * BLOCK) {
        A s1 = A(0), s2 = A(0);
        for (int64_t s = 0; s < a.parts; s++) {
            s1 += part[2 * (c * a.parts + s)];
            s2 += part[2 * (c * a.parts + s) + 1];
        }
        if (a.db != nullptr) {
            ((A *)a.db)[c] = s1;
        }
        if (a.dw != nullptr) {
            ((A *)a.dw)[c] = s2;
        }
        part[2 * c * a.parts] = s1 / A(a.n);
        part[2 * c * a.parts + 1] = s2 / A(a.n);
    }
}

template <typename T>
__global__ void apply_backward_kernel(const pygpu_norm_args a, int64_t numel)
{
    using A = acc_t<T>;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    T *dx = (T *)a.dx;
    const A *mean = (const A *)a.mean, *rstd = (const A *)a.rstd;
    const A *w = (const A *)a.w, *part = (const A *)a.part_sums;
    for (flat_walk f(a); f.at < numel; f.step()) {
        const A rs = rstd[f.c];
        const A k = w != nullptr ? rs * w[f.c] : rs;
        const A c1 = part[2 * f.c * a.parts], c2 = part[2 * f.c * a.parts + 1];
        const A xh = (convert<A>(x[f.at]) - mean[f.c]) * rs;
        dx[f.at] = convert<T>(k * (convert<A>(dy[f.at]) - c1 - xh * c2));
    }
}

// ------------------------------------------------------------ launchers

template <typename T>
static cudaError_t channels(int op, const pygpu_norm_args *a,
                            cudaStream_t stream)
{
    const int64_t numel = a->rows * a->n, blocks = a->rows * a->parts;
    if (op == PYGPU_NORM_CHANNELS_FORWARD) {
        constexpr auto slices = slices_forward_kernel<T>;
        constexpr auto merge = merge_forward_kernel<T>;
        constexpr auto apply = apply_forward_kernel<T>;
        slices<<<grid_for<slices>(blocks * BLOCK), BLOCK, 0, stream>>>(*a);
        merge<<<grid_for<merge>(a->rows), BLOCK, 0, stream>>>(*a);
        apply<<<grid_for<apply>(numel), BLOCK, 0, stream>>>(*a, numel);
    } else {
        constexpr auto slices = slices_backward_kernel<T>;
        constexpr auto merge = merge_backward_kernel<T>;
        constexpr auto apply = apply_backward_kernel<T>;
        slices<<<grid_for<slices>(blocks * BLOCK), BLOCK, 0, stream>>>(*a);
        merge<<<grid_for<merge>(a->rows), BLOCK, 0, stream>>>(*a);
        if (a->dx != nullptr) {
            apply<<<grid_for<apply>(numel), BLOCK, 0, stream>>>(*a, numel);
        }
    }
    return cudaGetLastError();
}

extern "C" size_t pygpu_cuda_norm_workspace(int op, int dtype,
                                            const pygpu_norm_args *a)
{
    if (op < PYGPU_NORM_CHANNELS_FORWARD || a->rows <= 0 || a->n <= 0) {
        return 0;
    }
    const size_t acc = dtype == PYGPU_FLOAT64 ? sizeof(double)
                                              : sizeof(float);
    return (size_t)a->rows * (size_t)pygpu_norm_slices(a->n) * 2 * acc;
}

extern "C" cudaError_t pygpu_cuda_norm_channels(int op, int dtype,
                                                const pygpu_norm_args *a,
                                                void *workspace,
                                                cudaStream_t stream)
{
    if (a->rows < 0 || a->n < 0 || a->inner < 1) {
        return cudaErrorInvalidValue;
    }
    if (a->rows == 0 || a->n == 0) {
        return cudaSuccess;
    }
    if (workspace == nullptr) {
        return cudaErrorInvalidValue;
    }
    pygpu_norm_args s = *a;
    s.parts = pygpu_norm_slices(a->n);
    s.rows_per_part = (a->n + s.parts - 1) / s.parts;
    s.part_sums = workspace;
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* refused by the front end */
        } else {
            return channels<T>(op, &s, stream);
        }
    });
}
