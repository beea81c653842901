/* reduce.cu - sum, mean, prod, max and min (with the index of the max or
 * min) over the middle dim of a contiguous input seen as [outer, n, inner].
 * The kernels read the input in its own dtype and accumulate in acc_t
 * (int64 for bool and the integers, float for float16 and bfloat16):
 * float32, float16, bfloat16, float64 and int64 have kernels of their own,
 * bool, uint8 and int32 share one (int_any: the dtype switched on at each
 * read, common.cuh).  The output, pygpu_reduce_out_dtype's, is written
 * once per result through store_acc (a switch on its dtype), so its dtype
 * is no template parameter; a mean runs the sum's kernels.
 *
 * Two kernels, by where the reduced elements lie:
 *   rows    (inner == 1): a row is contiguous; a group of threads (a warp
 *           for short rows, a block for long ones) strides along it with
 *           coalesced reads, then combines through warp shuffles (and, for
 *           a block, shared memory).
 *   columns (inner > 1):  one thread per output; neighbouring threads read
 *           neighbouring columns, so every read of a warp is coalesced.
 * When there are too few outputs to fill the GPU and n is long (the full
 * reduction of a big tensor, say), n is cut into `chunks`.  Pass 1 writes one
 * partial (value in the compute type and, for max, index) per output and
 * chunk into the workspace, laid out [outer * inner, chunks]; pass 2 is the
 * rows kernel over those partials.  The cut depends on the shape alone, so
 * pygpu_cuda_reduce_workspace and the launcher always agree.
 */
#include "dtype_switch.cuh"

/* Work units to aim for when cutting: block units for rows, thread units
 * for columns.  Fixed numbers rather than the current device's, because
 * the workspace size must not depend on which device is current; about
 * eight times what an H100 runs at once, so that the last round of units
 * leaves the GPU idle for a small share of the time on any device. */
constexpr int64_t TARGET_ROW_UNITS = 8192;
constexpr int64_t TARGET_COL_UNITS = (int64_t)1 << 20;
/* Least elements per thread in a cut unit, so that a cut pays for pass 2. */
constexpr int64_t MIN_ROW_CHUNK = 16 * BLOCK;
constexpr int64_t MIN_COL_CHUNK = 32;
/* Rows up to this long get a warp, longer ones a block. */
constexpr int64_t WARP_ROW_MAX = 1024;

template <typename A> __device__ __forceinline__ bool is_nan(A x)
{
    if constexpr (std::is_integral<A>::value) {
        return false;
    } else {
        return isnan(x);
    }
}

/* A running result: value and, for max and min, the index j it came
 * from. */
template <typename A> struct Acc {
    A v;
    int64_t i;
};

/* The ops that carry an index. */
template <int OP>
constexpr bool has_index = OP == PYGPU_MAX || OP == PYGPU_MIN;

template <int OP, typename A> __device__ __forceinline__ Acc<A> identity()
{
    if constexpr (OP == PYGPU_MAX) {
        /* Loses every comparison: below any value, index after any index. */
        if constexpr (std::is_integral<A>::value) {
            return {A(INT64_MIN), INT64_MAX};
        } else {
            return {A(-INFINITY), INT64_MAX};
        }
    } else if constexpr (OP == PYGPU_MIN) {
        if constexpr (std::is_integral<A>::value) {
            return {A(INT64_MAX), INT64_MAX};
        } else {
            return {A(INFINITY), INT64_MAX};
        }
    } else if constexpr (OP == PYGPU_PROD) {
        return {A(1), 0};
    } else {
        return {A(0), 0};
    }
}

/* Max is a total order: NaN above everything, then the value, then the
 * smaller index; so any combining order gives the first NaN or else the
 * first maximum, as torch does.  Min alike, NaN still first. */
template <int OP, typename A>
__device__ __forceinline__ Acc<A> combine(Acc<A> x, Acc<A> y)
{
    if constexpr (has_index<OP>) {
        bool xn = is_nan(x.v), yn = is_nan(y.v);
        if (xn != yn) {
            return xn ? x : y;
        }
        if (!xn && x.v != y.v) {
            if constexpr (OP == PYGPU_MAX) {
                return x.v > y.v ? x : y;
            } else {
                return x.v < y.v ? x : y;
            }
        }
        return x.i <= y.i ? x : y;
    } else if constexpr (OP == PYGPU_PROD) {
        if constexpr (std::is_same<A, int64_t>::value) {
            return {(int64_t)((uint64_t)x.v * (uint64_t)y.v), 0};
        } else {
            return {x.v * y.v, 0};
        }
    } else if constexpr (std::is_same<A, int64_t>::value) {
        /* wraps, as the CPU sum does */
        return {(int64_t)((uint64_t)x.v + (uint64_t)y.v), 0};
    } else {
        return {x.v + y.v, 0};
    }
}

/* Lane 0 gets the result of the 32 lanes. */
template <int OP, typename A> __device__ Acc<A> warp_reduce(Acc<A> x)
{
    for (int off = WARP / 2; off > 0; off /= 2) {
        Acc<A> y;
        y.v = __shfl_down_sync(FULL_MASK, x.v, off);
        y.i = has_index<OP> ? __shfl_down_sync(FULL_MASK, x.i, off) : 0;
        x = combine<OP>(x, y);
    }
    return x;
}

/* Thread 0 of the block gets the result of the block.  Every thread of the
 * block must call it. */
template <int OP, typename A> __device__ Acc<A> block_reduce(Acc<A> x)
{
    constexpr int WARPS = BLOCK / WARP;
    __shared__ Acc<A> part[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    x = warp_reduce<OP>(x);
    if (lane == 0) {
        part[warp] = x;
    }
    __syncthreads();
    if (warp == 0) {
        x = warp_reduce<OP>(lane < WARPS ? part[lane] : identity<OP, A>());
    }
    __syncthreads(); /* part is reused by the caller's next trip */
    return x;
}

/* The final pass divides a mean by mean_n (0: no division) and rounds to
 * the output dtype out_dtype (whose compute type is A); pass 1 stores the
 * compute type as it is. */
template <typename A>
__device__ __forceinline__ void store(void *out, int out_dtype,
                                      int64_t *out_idx, int64_t pos, Acc<A> r,
                                      int64_t mean_n)
{
    A v = r.v;
    if (mean_n > 0) {
        v = v / static_cast<A>(mean_n);
    }
    store_acc<A>(out, out_dtype, pos, v);
    if (out_idx != nullptr) {
        out_idx[pos] = r.i;
    }
}

// -------------------------------------------------------------- kernels

/* `rows` contiguous rows of length n, each cut in `chunks` pieces of
 * chunk_len; one group of GROUP_WARPS warps per (row, chunk) unit, whose
 * result goes to out[unit].  An element's index is in_idx[...] when given
 * (pass 2 over partials), else its position j in the row. */
template <int OP, int GROUP_WARPS, typename In>
__global__ void reduce_rows_kernel(void *out, int out_dtype, int64_t *out_idx,
                                   in_ptr<In> in, const int64_t *in_idx,
                                   int64_t rows, int64_t n, int64_t chunks,
                                   int64_t chunk_len, int64_t mean_n)
{
    using A = acc_t<In>;
    constexpr int GROUP = GROUP_WARPS * WARP;
    constexpr int GROUPS = BLOCK / GROUP;
    const int lane = threadIdx.x % GROUP;
    const int64_t units = rows * chunks;
    for (int64_t u = (int64_t)blockIdx.x * GROUPS + threadIdx.x / GROUP;
         u < units; u += (int64_t)gridDim.x * GROUPS) {
        const int64_t row = u / chunks;
        const int64_t begin = (u % chunks) * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<In> src = in + row * n;
        Acc<A> x = identity<OP, A>();
#pragma unroll 4
        for (int64_t j = begin + lane; j < end; j += GROUP) {
            Acc<A> y = {convert<A>(src[j]), in_idx ? in_idx[row * n + j] : j};
            x = combine<OP>(x, y);
        }
        if constexpr (GROUP_WARPS == 1) {
            x = warp_reduce<OP>(x);
        } else {
            x = block_reduce<OP>(x);
        }
        if (lane == 0) {
            store(out, out_dtype, out_idx, u, x, mean_n);
        }
    }
}

/* One thread per (o, chunk, i): reads in[(o * n + j) * inner + i] for the
 * j of its chunk and writes out[(o * inner + i) * chunks + chunk]. */
template <int OP, typename T>
__global__ void reduce_cols_kernel(void *out, int out_dtype, int64_t *out_idx,
                                   in_ptr<T> in, int64_t outer, int64_t n,
                                   int64_t inner, int64_t chunks,
                                   int64_t chunk_len, int64_t mean_n)
{
    using A = acc_t<T>;
    const int64_t units = outer * chunks * inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         u < units; u += stride) {
        const int64_t i = u % inner;
        const int64_t c = u / inner % chunks;
        const int64_t o = u / inner / chunks;
        const int64_t begin = c * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<T> src = in + o * n * inner + i;
        Acc<A> x = identity<OP, A>();
#pragma unroll 4
        for (int64_t j = begin; j < end; j++) {
            x = combine<OP>(x, Acc<A>{convert<A>(src[j * inner]), j});
        }
        store(out, out_dtype, out_idx, (o * inner + i) * chunks + c, x,
              mean_n);
    }
}

// ------------------------------------------------------------ launchers

/* Pieces the middle dim is cut into: 1 means a single pass.  Every piece
 * is non-empty: chunks == ceil(n / ceil(n / chunks)). */
static int64_t reduce_chunks(int64_t outer, int64_t n, int64_t inner)
{
    int64_t chunks;
    if (inner == 1) {
        if (n <= WARP_ROW_MAX) {
            return 1;
        }
        chunks = ceil_div(TARGET_ROW_UNITS, outer);
        int64_t most = ceil_div(n, MIN_ROW_CHUNK);
        chunks = chunks < most ? chunks : most;
    } else {
        chunks = ceil_div(TARGET_COL_UNITS, outer * inner);
        int64_t most = ceil_div(n, MIN_COL_CHUNK);
        chunks = chunks < most ? chunks : most;
    }
    if (chunks <= 1) {
        return 1;
    }
    return ceil_div(n, ceil_div(n, chunks));
}

/* out (of dtype out_dtype) and out_idx get the results of `rows` rows. */
template <int OP, typename In>
static cudaError_t launch_rows(void *out, int out_dtype, int64_t *out_idx,
                               in_ptr<In> in, const int64_t *in_idx,
                               int64_t rows, int64_t n, int64_t chunks,
                               int64_t mean_n, cudaStream_t stream)
{
    const int64_t chunk_len = ceil_div(n, chunks);
    const int64_t units = rows * chunks;
    if (chunk_len <= WARP_ROW_MAX) {
        constexpr auto kernel = reduce_rows_kernel<OP, 1, In>;
        kernel<<<grid_for<kernel>(units * WARP), BLOCK, 0, stream>>>(
            out, out_dtype, out_idx, in, in_idx, rows, n, chunks, chunk_len,
            mean_n);
    } else {
        constexpr auto kernel = reduce_rows_kernel<OP, BLOCK / WARP, In>;
        kernel<<<grid_for<kernel>(units * BLOCK), BLOCK, 0, stream>>>(
            out, out_dtype, out_idx, in, in_idx, rows, n, chunks, chunk_len,
            mean_n);
    }
    return cudaGetLastError();
}

/* The first (or only) pass over the input. */
template <int OP, typename T>
static cudaError_t launch_pass1(void *out, int out_dtype, int64_t *out_idx,
                                in_ptr<T> in, int64_t outer, int64_t n,
                                int64_t inner, int64_t chunks, int64_t mean_n,
                                cudaStream_t stream)
{
    if (inner == 1) {
        return launch_rows<OP, T>(out, out_dtype, out_idx, in,
                                  (const int64_t *)nullptr, outer, n, chunks,
                                  mean_n, stream);
    }
    constexpr auto kernel = reduce_cols_kernel<OP, T>;
    kernel<<<grid_for<kernel>(outer * chunks * inner), BLOCK, 0, stream>>>(
        out, out_dtype, out_idx, in, outer, n, inner, chunks,
        ceil_div(n, chunks), mean_n);
    return cudaGetLastError();
}

/* The dtype code of compute type A (the partials' dtype). */
template <typename A> constexpr int acc_dtype_code()
{
    return std::is_same<A, float>::value    ? PYGPU_FLOAT32
           : std::is_same<A, double>::value ? PYGPU_FLOAT64
                                            : PYGPU_INT64;
}

template <int OP, typename T>
static cudaError_t reduce_launch(void *out, int out_dtype, int64_t *indices,
                                 in_ptr<T> in, int64_t outer, int64_t n,
                                 int64_t inner, void *workspace,
                                 cudaStream_t stream)
{
    using A = acc_t<T>;
    /* A mean runs the sum's kernels, divided by n at the final store. */
    constexpr int KOP = OP == PYGPU_MEAN ? PYGPU_SUM : OP;
    const int64_t mean_n = OP == PYGPU_MEAN ? n : 0;
    int64_t *out_idx = has_index<OP> ? indices : nullptr;
    const int64_t chunks = reduce_chunks(outer, n, inner);
    if (chunks == 1) {
        return launch_pass1<KOP, T>(out, out_dtype, out_idx, in, outer, n,
                                    inner, 1, mean_n, stream);
    }
    if (workspace == nullptr) {
        return cudaErrorInvalidValue;
    }
    /* Workspace: the int64 indices first (max and min only), so they are
     * 8-byte aligned whatever the value size, then the values. */
    const int64_t parts = outer * inner * chunks;
    int64_t *part_idx = has_index<OP> ? (int64_t *)workspace : nullptr;
    A *part = (A *)((char *)workspace +
                    (has_index<OP> ? parts * sizeof(int64_t) : 0));
    cudaError_t err = launch_pass1<KOP, T>(part, acc_dtype_code<A>(),
                                           part_idx, in, outer, n, inner,
                                           chunks, 0, stream);
    if (err != cudaSuccess) {
        return err;
    }
    return launch_rows<KOP, A>(out, out_dtype, out_idx, part,
                               (const int64_t *)part_idx, outer * inner,
                               chunks, 1, mean_n, stream);
}

static bool reduce_args_valid(int op, int dtype)
{
    return op >= 0 && op < PYGPU_NREDOPS && dtype >= 0 &&
           dtype < PYGPU_NDTYPES &&
           !(op == PYGPU_MEAN && pygpu_reduce_acc_dtype(dtype) == PYGPU_INT64);
}

extern "C" size_t pygpu_cuda_reduce_workspace(int op, int dtype,
                                              int64_t outer, int64_t n,
                                              int64_t inner)
{
    if (!reduce_args_valid(op, dtype) || outer <= 0 || n <= 0 ||
        inner <= 0) {
        return 0;
    }
    const int64_t chunks = reduce_chunks(outer, n, inner);
    if (chunks == 1) {
        return 0;
    }
    const size_t acc_size =
        pygpu_reduce_acc_dtype(dtype) == PYGPU_FLOAT32 ? sizeof(float) : 8;
    const size_t idx_size =
        op == PYGPU_MAX || op == PYGPU_MIN ? sizeof(int64_t) : 0;
    return (size_t)(outer * inner * chunks) * (acc_size + idx_size);
}

extern "C" cudaError_t pygpu_cuda_reduce(int op, int dtype, int to_acc,
                                         void *out, int64_t *indices,
                                         const void *in, int64_t outer,
                                         int64_t n, int64_t inner,
                                         void *workspace, cudaStream_t stream)
{
    if (!reduce_args_valid(op, dtype) || outer < 0 || n < 0 || inner < 0) {
        return cudaErrorInvalidValue;
    }
    if (outer == 0 || inner == 0) {
        return cudaSuccess;
    }
    if (n == 0) {
        /* Empty sum is 0, empty mean NaN, empty product 1; an empty max
         * or min has no value. */
        if (op == PYGPU_MAX || op == PYGPU_MIN) {
            return cudaErrorInvalidValue;
        }
        pygpu_scalar_value v = {op == PYGPU_MEAN ? (double)NAN : 0.0, 0};
        if (op == PYGPU_PROD) {
            v.f = 1.0;
            v.i = 1;
        }
        return pygpu_cuda_fill(pygpu_reduce_out_dtype(op, dtype, to_acc),
                               out, v, outer * inner, stream);
    }
    /* max and min: the input's dtype; sum and prod of bool and the
     * integers: int64; with to_acc, the accumulator, unrounded. */
    const int out_dtype = pygpu_reduce_out_dtype(op, dtype, to_acc);
    return dispatch_dtype_read(dtype, [&](auto tag) {
        using T = decltype(tag);
        using A = acc_t<T>;
        const in_ptr<T> src = make_in_ptr<T>(in, dtype);
        return dispatch_op<PYGPU_NREDOPS>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            if constexpr (OP == PYGPU_MEAN && std::is_integral<A>::value) {
                return cudaErrorInvalidValue; /* refused above */
            } else {
                return reduce_launch<OP, T>(out, out_dtype, indices, src,
                                            outer, n, inner, workspace,
                                            stream);
            }
        });
    });
}
