/* xent.cu - cross-entropy over class indices on the GPU: the XENT kind
 * (kernels.h states the formula and arguments; the CPU loops, cpu_xent.c,
 * state the order of the computation, which these kernels follow).
 *   W        (weights and label smoothing): one block sums the weights
 *            into a->wsum first; the forward kernels read it there.
 *   forward rows    (inner == 1), by n as softmax.cu (rows.cuh): a
 *            group of G lanes per sample for n <= SMALL_ROW_MAX (one
 *            element per lane, ROW_BATCH samples per group at a time), a
 *            warp per sample for n <= WARP_ROW_MAX, else a block; m, s and
 *            sw are reductions over the group, warp or block.
 *   forward columns (inner > 1): one thread per sample, sequential along
 *            n (its sums in double); neighbouring threads read
 *            neighbouring columns (coalesced).
 *   backward: p = exp((x - m) - ls) from the forward's m and ls; for
 *            inner == 1 and n <= WARP_ROW_MAX a group of G lanes per
 *            sample (G as above, at most a warp) striding along it, else
 *            one thread per element.
 * A target out of range does not trap: err[0] is set and err[1] keeps the
 * smallest such sample index (atomicMin), which a one-thread kernel then
 * replaces by that sample's target, so the caller reads back (after the
 * kernels) the first target out of range in sample order, as the CPU
 * reports it; the sample is written as if ignored.  Every sum is
 * combined in an order fixed by the shape, so a call gives the same bits
 * every time.
 */
#include "rows.cuh"

/* A sample's target: 0 ignored, 1 counted, -1 out of range. */
__device__ __forceinline__ int target_kind(const pygpu_xent_args &a,
                                           int64_t t)
{
    if (t == a.ignore_index) {
        return 0;
    }
    return t >= 0 && t < a.n ? 1 : -1;
}

/* Sample s has a target out of range (err[1] starts at all ones). */
__device__ __forceinline__ void report_bad(unsigned long long *err,
                                           int64_t s)
{
    err[0] = 1ull;
    atomicMin(&err[1], (unsigned long long)s);
}

/* After the forward kernel: the first bad sample's target, in err[1]. */
__global__ void bad_target_kernel(const int64_t *target,
                                  unsigned long long *err)
{
    if (err[0] != 0ull) {
        err[1] = (unsigned long long)target[err[1]];
    }
}

/* W as the forward and backward read it: the weights' sum (when they
 * are used: label smoothing), else n. */
template <typename A>
__device__ __forceinline__ A weight_total(const pygpu_xent_args &a)
{
    bool summed = a.weight != nullptr && a.smoothing > 0 && a.n > 0;
    return summed ? *(const A *)a.wsum : A(a.n);
}

/* Sample s's loss, w[t], m and ls = log sum exp(x - m) into the stats
 * rows. */
template <typename T, typename A>
__device__ void finish(const pygpu_xent_args &a, int64_t s, int64_t t, A xt,
                       A m, A ls, A sw, A W)
{
    const int64_t S = a.outer * a.inner;
    A *st = (A *)a.stats;
    A wt = a.weight ? convert<A>(((const T *)a.weight)[t]) : A(1);
    A loss = A(1 - a.smoothing) * wt * (ls - (xt - m));
    if (a.smoothing > 0) {
        loss += A(a.smoothing / a.n) * (W * ls - sw);
    }
    st[s] = loss;
    st[S + s] = wt;
    st[2 * S + s] = m;
    st[3 * S + s] = ls;
}

/* An ignored (or out of range) sample's stats: zeros. */
template <typename A>
__device__ __forceinline__ void skip(const pygpu_xent_args &a, int64_t s)
{
    const int64_t S = a.outer * a.inner;
    A *st = (A *)a.stats;
    st[s] = st[S + s] = st[2 * S + s] = st[3 * S + s] = A(0);
}

// -------------------------------------------------------------- kernels

template <typename T>
__global__ void weight_sum_kernel(const T *w, int64_t n, acc_t<T> *out)
{
    using A = acc_t<T>;
    double s = 0; /* as the CPU: in double, rounded once */
    for (int64_t j = threadIdx.x; j < n; j += BLOCK) {
        s += (double)convert<A>(w[j]);
    }
    s = block_all<false>(s);
    if (threadIdx.x == 0) {
        *out = A(s);
    }
}

/* inner == 1, n <= G <= WARP: lane l of a group holds class l of its
 * samples, ROW_BATCH samples per group at a time (as softmax.cu's small
 * kernel).  Every lane of a warp makes the same trips and reaches every
 * shuffle, whatever its samples' targets; a sample not counted (ignored,
 * out of range, past the last) reads nothing, and a lane without a class
 * holds -inf for the maximum and adds 0. */
template <int G, typename T>
__global__ void xent_forward_small(const pygpu_xent_args a,
                                   unsigned long long *err)
{
    using A = acc_t<T>;
    constexpr int PER_WARP = WARP / G, WARPS = BLOCK / WARP;
    constexpr int ROWS = PER_WARP * ROW_BATCH;
    const T *x = (const T *)a.x, *w = (const T *)a.weight;
    const A W = weight_total<A>(a);
    const bool smooth = a.smoothing > 0;
    const int64_t n = a.n;
    const int lane = threadIdx.x % G, grp = threadIdx.x % WARP / G;
    const int64_t step = (int64_t)gridDim.x * WARPS * ROWS;
    for (int64_t base = ((int64_t)blockIdx.x * WARPS + threadIdx.x / WARP) *
                        ROWS;
         base < a.outer; base += step) {
        A v[ROW_BATCH], m[ROW_BATCH];
        int kind[ROW_BATCH];
        double se[ROW_BATCH], sw[ROW_BATCH];
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            const int64_t row = base + b * PER_WARP + grp;
            kind[b] = row < a.outer ? target_kind(a, a.target[row]) : 0;
            const bool has = kind[b] == 1 && lane < n;
            v[b] = has ? convert<A>(x[row * n + lane]) : A(-INFINITY);
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            m[b] = group_all<true, G>(v[b]);
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            const bool has = kind[b] == 1 && lane < n;
            const A d = v[b] - m[b];
            /* in double, as the CPU */
            se[b] = has ? (double)exp_of(d) : 0.0;
            sw[b] = has ? (double)((w ? convert<A>(w[lane]) : A(1)) * d)
                        : 0.0;
            se[b] = group_all<false, G>(se[b]);
            if (smooth) {
                sw[b] = group_all<false, G>(sw[b]);
            }
        }
#pragma unroll
        for (int b = 0; b < ROW_BATCH; b++) {
            const int64_t row = base + b * PER_WARP + grp;
            if (lane != 0 || row >= a.outer) {
                continue;
            }
            if (kind[b] <= 0) {
                if (kind[b] < 0) {
                    report_bad(err, row);
                }
                skip<A>(a, row);
                continue;
            }
            const int64_t t = a.target[row];
            /* s >= 1: log1p keeps its digits past 1, as the CPU does */
            finish<T, A>(a, row, t, convert<A>(x[row * n + t]), m[b],
                         A(log1p(se[b] - 1)), A(sw[b]), W);
        }
    }
}

/* inner == 1, longer rows: LANES threads (a warp, or the block) per
 * sample.  The branches on a sample's target are uniform over those
 * threads (they read the same target), so all of them reach the
 * reductions. */
template <int LANES, typename T>
__global__ void xent_forward_rows(const pygpu_xent_args a,
                                  unsigned long long *err)
{
    using A = acc_t<T>;
    constexpr int PER_BLOCK = BLOCK / LANES;
    const T *w = (const T *)a.weight;
    const A W = weight_total<A>(a);
    const bool smooth = a.smoothing > 0;
    const int lane = threadIdx.x % LANES;
    for (int64_t row = (int64_t)blockIdx.x * PER_BLOCK + threadIdx.x / LANES;
         row < a.outer; row += (int64_t)gridDim.x * PER_BLOCK) {
        const int64_t t = a.target[row];
        const int kind = target_kind(a, t);
        if (kind <= 0) {
            if (lane == 0) {
                if (kind < 0) {
                    report_bad(err, row);
                }
                skip<A>(a, row);
            }
            continue;
        }
        const T *x = (const T *)a.x + row * a.n;
        A m = convert<A>(x[0]);
        for (int64_t j = lane; j < a.n; j += LANES) {
            m = max_nan(m, convert<A>(x[j]));
        }
        m = lanes_all<true, LANES>(m);
        double se = 0, sw = 0; /* in double, as the CPU */
        for (int64_t j = lane; j < a.n; j += LANES) {
            A d = convert<A>(x[j]) - m;
            se += (double)exp_of(d);
            sw += (double)((w ? convert<A>(w[j]) : A(1)) * d);
        }
        se = lanes_all<false, LANES>(se);
        if (smooth) {
            sw = lanes_all<false, LANES>(sw);
        }
        if (lane == 0) {
            /* s >= 1: log1p keeps its digits past 1, as the CPU does */
            finish<T, A>(a, row, t, convert<A>(x[t]), m, A(log1p(se - 1)),
                         A(sw), W);
        }
    }
}

/* inner > 1: thread per sample s = o * inner + i. */
template <typename T>
__global__ void xent_forward_cols(const pygpu_xent_args a,
                                  unsigned long long *err)
{
    using A = acc_t<T>;
    const T *w = (const T *)a.weight;
    const A W = weight_total<A>(a);
    const int64_t S = a.outer * a.inner, inner = a.inner;
    for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < S;
         s += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = a.target[s];
        const int kind = target_kind(a, t);
        if (kind <= 0) {
            if (kind < 0) {
                report_bad(err, s);
            }
            skip<A>(a, s);
            continue;
        }
        const int64_t o = s / inner, i = s % inner;
        const T *x = (const T *)a.x + o * a.n * inner + i;
        A m = convert<A>(x[0]);
        for (int64_t j = 1; j < a.n; j++) {
            m = max_nan(m, convert<A>(x[j * inner]));
        }
        double se = 0, sw = 0; /* long sequential sums: in double */
        for (int64_t j = 0; j < a.n; j++) {
            A d = convert<A>(x[j * inner]) - m;
            se += exp_of(d);
            sw += (w ? convert<A>(w[j]) : A(1)) * d;
        }
        /* s >= 1: log1p keeps its digits past 1, as the CPU does */
        finish<T, A>(a, s, t, convert<A>(x[t * inner]), m, A(log1p(se - 1)),
                     A(sw), W);
    }
}

/* What the backward kernels share for sample s: its target, whether it
 * counts, and the factors of grad_x = (a1 + b W) p - b w[j] - (j == t) a1. */
template <typename A> struct xent_grad_row {
    int64_t t;
    bool counted;
    A a1, b, m, ls;
};

template <typename T, typename A>
__device__ __forceinline__ xent_grad_row<A>
grad_row(const pygpu_xent_args &a, int64_t s)
{
    const int64_t S = a.outer * a.inner;
    const A den = a.denom ? *(const A *)a.denom : A(1);
    xent_grad_row<A> r;
    r.t = a.target[s];
    r.counted = target_kind(a, r.t) == 1;
    r.a1 = r.b = r.m = r.ls = A(0);
    if (r.counted) {
        A g = convert<A>(((const T *)a.grad)[s * a.grad_stride]) / den;
        A wt = a.weight ? convert<A>(((const T *)a.weight)[r.t]) : A(1);
        r.a1 = g * A(1 - a.smoothing) * wt;
        r.b = g * A(a.smoothing / a.n);
        r.m = ((const A *)a.stats)[2 * S + s];
        r.ls = ((const A *)a.stats)[3 * S + s];
    }
    return r;
}

/* grad_x of class j with logit v, for a counted sample. */
template <typename T, typename A>
__device__ __forceinline__ A grad_of(const pygpu_xent_args &a,
                                     const xent_grad_row<A> &r, int64_t j,
                                     A v, A W)
{
    const T *w = a.smoothing > 0 ? (const T *)a.weight : nullptr;
    A wj = w ? convert<A>(w[j]) : A(1);
    A p = exp_of((v - r.m) - r.ls);
    return (r.a1 + r.b * W) * p - r.b * wj - (j == r.t ? r.a1 : A(0));
}

/* inner == 1, n <= WARP_ROW_MAX: a group of G lanes per sample striding
 * along its n classes (no shuffles, so no trip needs to be shared). */
template <int G, typename T>
__global__ void xent_backward_rows(const pygpu_xent_args a)
{
    using A = acc_t<T>;
    const A W = weight_total<A>(a);
    const int lane = threadIdx.x % G;
    const int64_t groups = (int64_t)gridDim.x * (BLOCK / G);
    for (int64_t s = ((int64_t)blockIdx.x * BLOCK + threadIdx.x) / G;
         s < a.outer; s += groups) {
        const xent_grad_row<A> r = grad_row<T, A>(a, s);
        const T *x = (const T *)a.x + s * a.n;
        T *gx = (T *)a.grad_x + s * a.n;
        for (int64_t j = lane; j < a.n; j += G) {
            gx[j] = convert<T>(r.counted
                                   ? grad_of<T>(a, r, j, convert<A>(x[j]), W)
                                   : A(0));
        }
    }
}

/* Element e = (o, j, i) of grad_x, j the class. */
template <typename T>
__global__ void xent_backward(const pygpu_xent_args a)
{
    using A = acc_t<T>;
    const int64_t S = a.outer * a.inner, N = S * a.n, inner = a.inner;
    const A W = weight_total<A>(a);
    T *gx = (T *)a.grad_x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < N;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e % inner, q = e / inner;
        const int64_t j = q % a.n, s = (q / a.n) * inner + i;
        const xent_grad_row<A> r = grad_row<T, A>(a, s);
        gx[e] = convert<T>(
            r.counted ? grad_of<T>(a, r, j, convert<A>(((const T *)a.x)[e]), W)
                      : A(0));
    }
}

// ------------------------------------------------------------ launchers

template <typename T>
static cudaError_t xent_launch(int op, const pygpu_xent_args *a,
                               unsigned long long *err, cudaStream_t stream)
{
    using A = acc_t<T>;
    const int64_t S = a->outer * a->inner;
    if (op == PYGPU_XENT_BACKWARD) {
        const int64_t N = S * a->n;
        if (N == 0) {
            return cudaSuccess;
        }
        if (a->inner == 1 && a->n <= WARP_ROW_MAX) {
            return dispatch_group(a->n, [&](auto g) {
                constexpr int G = decltype(g)::value;
                constexpr auto kernel = xent_backward_rows<G, T>;
                kernel<<<grid_for<kernel>(S * G), BLOCK, 0, stream>>>(*a);
                return cudaGetLastError();
            });
        }
        constexpr auto kernel = xent_backward<T>;
        kernel<<<grid_for<kernel>(N), BLOCK, 0, stream>>>(*a);
        return cudaGetLastError();
    }
    /* err[0] = 0 (no target out of range), err[1] = all ones (no sample) */
    cudaError_t e = cudaMemsetAsync(err, 0, sizeof(int64_t), stream);
    if (e == cudaSuccess) {
        e = cudaMemsetAsync(err + 1, 0xff, sizeof(int64_t), stream);
    }
    if (e != cudaSuccess || S == 0) {
        return e;
    }
    if (a->weight != nullptr && a->smoothing > 0 && a->n > 0) {
        weight_sum_kernel<T><<<1, BLOCK, 0, stream>>>(
            (const T *)a->weight, a->n, (A *)a->wsum);
        e = cudaGetLastError();
        if (e != cudaSuccess) {
            return e;
        }
    }
    if (a->inner == 1 && a->n <= SMALL_ROW_MAX) {
        /* n == 0 comes here too (targets are still checked): every
         * target is then ignored or out of range, and no class is read */
        e = dispatch_group(a->n, [&](auto g) {
            constexpr int G = decltype(g)::value;
            constexpr auto kernel = xent_forward_small<G, T>;
            const int64_t warps = ceil_div(S, WARP / G * ROW_BATCH);
            kernel<<<grid_for<kernel>(warps * WARP), BLOCK, 0, stream>>>(
                *a, err);
            return cudaGetLastError();
        });
    } else if (a->inner == 1 && a->n <= WARP_ROW_MAX) {
        constexpr auto kernel = xent_forward_rows<WARP, T>;
        kernel<<<grid_for<kernel>(S * WARP), BLOCK, 0, stream>>>(*a, err);
        e = cudaGetLastError();
    } else if (a->inner == 1) {
        constexpr auto kernel = xent_forward_rows<BLOCK, T>;
        kernel<<<grid_for<kernel>(S * BLOCK), BLOCK, 0, stream>>>(*a, err);
        e = cudaGetLastError();
    } else {
        constexpr auto kernel = xent_forward_cols<T>;
        kernel<<<grid_for<kernel>(S), BLOCK, 0, stream>>>(*a, err);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess) {
        return e;
    }
    bad_target_kernel<<<1, 1, 0, stream>>>(a->target, err);
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_xent(int op, int dtype,
                                       const pygpu_xent_args *a,
                                       int64_t *err, cudaStream_t stream)
{
    if (op < 0 || op >= PYGPU_NXENTOPS || a->outer < 0 || a->n < 0 ||
        a->inner < 0 || (op == PYGPU_XENT_FORWARD && err == nullptr)) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* refused by the front end */
        } else {
            return xent_launch<T>(op, a, (unsigned long long *)err, stream);
        }
    });
}
