/* xent.cu - cross-entropy over class indices on the GPU: the XENT kind
 * (kernels.h states the formula and arguments; the CPU loops, cpu_xent.c,
 * state the order of the computation, which these kernels follow).
 *   W        (weights and label smoothing): one block sums the weights
 *            into a->wsum first; the forward kernels read it there.
 *   forward rows    (inner == 1): one block per sample; m, s and sw are
 *            block reductions.
 *   forward columns (inner > 1): one thread per sample, sequential along
 *            n (its sums in double); neighbouring threads read
 *            neighbouring columns (coalesced).
 *   backward: one thread per element, whatever inner: p =
 *            exp((x - m) - ls) from the forward's m and ls.
 * A target out of range does not trap: err[0] is set and err[1] keeps the
 * smallest such sample index (atomicMin), which a one-thread kernel then
 * replaces by that sample's target, so the caller reads back (after the
 * kernels) the first target out of range in sample order, as the CPU
 * reports it; the sample is written as if ignored.  Simple and correct,
 * not tuned.
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

/* inner == 1.  The branches on a sample's target are uniform over the
 * block (every thread reads the same target), so every thread reaches
 * block_all's barriers. */
template <typename T>
__global__ void xent_forward_rows(const pygpu_xent_args a,
                                  unsigned long long *err)
{
    using A = acc_t<T>;
    const T *w = (const T *)a.weight;
    const A W = weight_total<A>(a);
    const bool smooth = a.smoothing > 0;
    for (int64_t row = blockIdx.x; row < a.outer; row += gridDim.x) {
        const int64_t t = a.target[row];
        const int kind = target_kind(a, t);
        if (kind <= 0) {
            if (threadIdx.x == 0) {
                if (kind < 0) {
                    report_bad(err, row);
                }
                skip<A>(a, row);
            }
            continue;
        }
        const T *x = (const T *)a.x + row * a.n;
        A m = convert<A>(x[0]);
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            m = max_nan(m, convert<A>(x[j]));
        }
        m = block_all<true>(m);
        double se = 0, sw = 0; /* in double, as the CPU */
        for (int64_t j = threadIdx.x; j < a.n; j += BLOCK) {
            A d = convert<A>(x[j]) - m;
            se += (double)exp_of(d);
            sw += (double)((w ? convert<A>(w[j]) : A(1)) * d);
        }
        se = block_all<false>(se);
        if (smooth) {
            sw = block_all<false>(sw);
        }
        if (threadIdx.x == 0) {
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

/* Element e = (o, j, i) of grad_x, j the class. */
template <typename T>
__global__ void xent_backward(const pygpu_xent_args a)
{
    using A = acc_t<T>;
    const int64_t S = a.outer * a.inner, N = S * a.n, inner = a.inner;
    const T *w = a.smoothing > 0 ? (const T *)a.weight : nullptr;
    const A W = weight_total<A>(a);
    const A den = a.denom ? *(const A *)a.denom : A(1);
    const A *m = (const A *)a.stats + 2 * S, *ls = (const A *)a.stats + 3 * S;
    T *gx = (T *)a.grad_x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < N;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e % inner, q = e / inner;
        const int64_t j = q % a.n, s = (q / a.n) * inner + i;
        const int64_t t = a.target[s];
        if (target_kind(a, t) != 1) {
            gx[e] = convert<T>(A(0));
            continue;
        }
        A g = convert<A>(((const T *)a.grad)[s * a.grad_stride]) / den;
        A wt = a.weight ? convert<A>(((const T *)a.weight)[t]) : A(1);
        A a1 = g * A(1 - a.smoothing) * wt;
        A b = g * A(a.smoothing / a.n);
        A wj = w ? convert<A>(w[j]) : A(1);
        A p = exp_of((convert<A>(((const T *)a.x)[e]) - m[s]) - ls[s]);
        A v = (a1 + b * W) * p - b * wj - (j == t ? a1 : A(0));
        gx[e] = convert<T>(v);
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
    if (a->inner == 1) {
        constexpr auto kernel = xent_forward_rows<T>;
        kernel<<<grid_for<kernel>(S * BLOCK), BLOCK, 0, stream>>>(*a, err);
    } else {
        constexpr auto kernel = xent_forward_cols<T>;
        kernel<<<grid_for<kernel>(S), BLOCK, 0, stream>>>(*a, err);
    }
    e = cudaGetLastError();
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
