/* scan.cu - inclusive scans (cumsum, cumprod) along the middle dim of a
 * contiguous input seen as [outer, n, inner].
 *
 * A thread holds ITEMS elements per trip, loaded before any is combined
 * (so that a warp has that many loads in flight), striped across the lanes
 * of its group: element k * G + l of a segment of G * ITEMS is x[k] of
 * lane l.  segment_scan() scans a segment with warp shuffles.
 *   rows, short (inner == 1, n <= GROUP_ROW_MAX): G lanes per row (2, 8
 *           or 32, by n), several rows per warp, a carry from segment to
 *           segment.
 *   rows, long (inner == 1): a block per (row, chunk) walks tiles of
 *           BLOCK * ITEMS elements: a segment per warp, the warps' totals
 *           through shared memory, a carry from tile to tile.  The grid
 *           has a block per unit (not one resident wave that loops), so
 *           the GPU starts the next unit wherever one ends.
 *   columns (inner > 1): a thread per (line, chunk), sequential along n;
 *           neighbouring threads read neighbouring columns (coalesced).
 * Few long lines would leave most of the GPU idle, so n is cut into
 * chunks (scan_plan) and the scan takes three passes: the total of each
 * chunk into the workspace, an inclusive scan of each line's totals there
 * (the rows kernels again), then each chunk scanned again from the
 * totals before it.  Every combination happens in an order fixed by the
 * shape alone (not by the device or by timing), so a call gives the same
 * bits every time; no pass waits on another block.
 * The input is read in its own dtype: float16 and bfloat16 run in float,
 * bool and the integers in int64 (the output's dtype, pygpu_scan_out_dtype),
 * wrapping modulo 2^64, as the CPU loops.  float32, float16, bfloat16,
 * float64 and int64 have kernels of their own; bool, uint8 and int32 share
 * one (int_any: the dtype switched on at each read, common.cuh).
 */
#include "dtype_switch.cuh"

/* Elements a thread holds per trip; a warp's segment and a block's tile. */
constexpr int ITEMS = 8;
constexpr int SEG = WARP * ITEMS;
constexpr int TILE = BLOCK * ITEMS;
/* Rows up to this long take groups of lanes, longer ones blocks. */
constexpr int64_t GROUP_ROW_MAX = 1024;
/* Cutting n into chunks.  Fixed numbers rather than the current device's,
 * so that the workspace size and the order of combination depend on the
 * shape alone: block units for rows (about ten times what an H100 runs at
 * once, so that the last blocks to start leave it idle for a small share
 * of the time), thread units for columns, and the least work a chunk must
 * have to pay for the extra pass.  MAX_CHUNKS keeps the scan of a line's
 * totals one pass of a few tiles. */
constexpr int64_t TARGET_ROW_UNITS = 8192;
constexpr int64_t TARGET_COL_UNITS = (int64_t)1 << 18;
constexpr int64_t MIN_ROW_CHUNK = 2 * TILE;
constexpr int64_t MIN_COL_CHUNK = 64;
constexpr int64_t MAX_CHUNKS = 8192;

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

/* Inclusive scan over the G lanes of each group of a warp. */
template <int OP, int G, typename A> __device__ __forceinline__ A group_scan(A x)
{
    const int lane = threadIdx.x % G;
#pragma unroll
    for (int off = 1; off < G; off *= 2) {
        A y = __shfl_up_sync(FULL_MASK, x, off, G);
        if (lane >= off) {
            x = scan_op<OP>(y, x);
        }
    }
    return x;
}

/* Scans the segment a group of G lanes holds (x[k] of lane l is element
 * k * G + l) in place, from the identity, and returns its total, the same
 * in every lane of the group.  Element k * G + l becomes
 * (t_0 op ... op t_{k-1}) op (scan of row k up to lane l), t_k the total of
 * row k.  Every lane of the warp must call it. */
template <int OP, int G, typename A>
__device__ __forceinline__ A segment_scan(A (&x)[ITEMS])
{
    A tot[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        x[k] = group_scan<OP, G>(x[k]);
    }
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        tot[k] = __shfl_sync(FULL_MASK, x[k], G - 1, G);
    }
    A run = tot[0];
#pragma unroll
    for (int k = 1; k < ITEMS; k++) {
        x[k] = scan_op<OP>(run, x[k]);
        run = scan_op<OP>(run, tot[k]);
    }
    return run;
}

/* Lane `lane` of a group of G: its elements of the segment at `start`,
 * the identity past `end`. */
template <int OP, int G, typename A, typename P>
__device__ __forceinline__ void load_segment(A (&x)[ITEMS], P src,
                                             int64_t start, int64_t end,
                                             int lane)
{
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int64_t j = start + k * G + lane;
        x[k] = j < end ? convert<A>(src[j]) : scan_identity<OP, A>();
    }
}

/* carry op x[k] to the elements before `end`. */
template <int OP, int G, typename A, typename Out>
__device__ __forceinline__ void store_segment(Out *dst, int64_t start,
                                              int64_t end, int lane,
                                              A carry, const A (&x)[ITEMS])
{
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int64_t j = start + k * G + lane;
        if (j < end) {
            dst[j] = convert<Out>(scan_op<OP>(carry, x[k]));
        }
    }
}

/* The order-fixed combination of the 32 lanes of a warp: every lane gets
 * the same value. */
template <int OP, typename A> __device__ __forceinline__ A warp_all(A x)
{
#pragma unroll
    for (int off = WARP / 2; off > 0; off /= 2) {
        x = scan_op<OP>(x, __shfl_xor_sync(FULL_MASK, x, off));
    }
    return x;
}

// -------------------------------------------------------------- kernels

/* inner == 1, short rows: a group of G lanes per row, WARP / G rows per
 * warp.  The trip count is the same for every lane of a warp (a row past
 * the last one has no elements), so all reach the shuffles. */
template <int OP, int G, typename Out, typename T>
__global__ void scan_group_kernel(Out *out, in_ptr<T> in, int64_t rows,
                                  int64_t n)
{
    using A = acc_t<T>;
    constexpr int PER_WARP = WARP / G, WARPS = BLOCK / WARP;
    const int lane = threadIdx.x % G;
    const int64_t step = (int64_t)gridDim.x * WARPS * PER_WARP;
    for (int64_t base = ((int64_t)blockIdx.x * WARPS + threadIdx.x / WARP) *
                        PER_WARP;
         base < rows; base += step) {
        const int64_t row = base + threadIdx.x % WARP / G;
        const int64_t len = row < rows ? n : 0;
        const in_ptr<T> src = in + (row < rows ? row : 0) * n;
        Out *dst = out + (row < rows ? row : 0) * n;
        A carry = scan_identity<OP, A>();
        for (int64_t j0 = 0; j0 < n; j0 += G * ITEMS) {
            A x[ITEMS];
            load_segment<OP, G>(x, src, j0, len, lane);
            const A tot = segment_scan<OP, G>(x);
            store_segment<OP, G>(dst, j0, len, lane, carry, x);
            carry = scan_op<OP>(carry, tot);
        }
    }
}

/* inner == 1, long rows: a block per unit u = line * chunks + c, the
 * elements [c * chunk_len, (c + 1) * chunk_len) of the line, in tiles;
 * it starts from carry_in[u - 1] (the lines' scanned chunk totals) for
 * c > 0.  A tile's element is carry op (the totals of the warps before
 * its own, in order) op its segment's scan.  warp_total is double
 * buffered, so one barrier per tile suffices: a warp writes a buffer
 * again only after the barrier that every warp reaches once it has read
 * that buffer. */
template <int OP, typename Out, typename T>
__global__ void scan_tiles_kernel(Out *out, in_ptr<T> in, int64_t lines,
                                  int64_t n, int64_t chunks,
                                  int64_t chunk_len,
                                  const acc_t<T> *carry_in)
{
    using A = acc_t<T>;
    constexpr int WARPS = BLOCK / WARP;
    __shared__ A warp_total[2][WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    int buf = 0;
    for (int64_t u = blockIdx.x; u < lines * chunks; u += gridDim.x) {
        const int64_t c = u % chunks, begin = c * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<T> src = in + u / chunks * n;
        Out *dst = out + u / chunks * n;
        A carry = c > 0 ? carry_in[u - 1] : scan_identity<OP, A>();
        for (int64_t t0 = begin; t0 < end; t0 += TILE) {
            const int64_t s0 = t0 + warp * SEG;
            A x[ITEMS];
            load_segment<OP, WARP>(x, src, s0, end, lane);
            const A tot = segment_scan<OP, WARP>(x);
            if (lane == 0) {
                warp_total[buf][warp] = tot;
            }
            __syncthreads();
            A pre = carry;
            for (int w = 0; w < warp; w++) {
                pre = scan_op<OP>(pre, warp_total[buf][w]);
            }
            A next = pre; /* the same left fold in every thread */
            for (int w = warp; w < WARPS; w++) {
                next = scan_op<OP>(next, warp_total[buf][w]);
            }
            store_segment<OP, WARP>(dst, s0, end, lane, pre, x);
            carry = next;
            buf ^= 1;
        }
    }
}

/* Pass 1 for long rows: totals[u] = the combination of unit u's elements
 * (per thread in element order, then the lanes by a fixed butterfly, then
 * the warps in order). */
template <int OP, typename T>
__global__ void scan_tile_totals_kernel(acc_t<T> *totals, in_ptr<T> in,
                                        int64_t lines, int64_t n,
                                        int64_t chunks, int64_t chunk_len)
{
    using A = acc_t<T>;
    constexpr int WARPS = BLOCK / WARP;
    __shared__ A part[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    for (int64_t u = blockIdx.x; u < lines * chunks; u += gridDim.x) {
        const int64_t c = u % chunks, begin = c * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<T> src = in + u / chunks * n;
        A acc = scan_identity<OP, A>();
        for (int64_t t0 = begin; t0 < end; t0 += TILE) {
            A x[ITEMS];
            load_segment<OP, WARP>(x, src, t0 + warp * SEG, end, lane);
#pragma unroll
            for (int k = 0; k < ITEMS; k++) {
                acc = scan_op<OP>(acc, x[k]);
            }
        }
        acc = warp_all<OP>(acc);
        if (lane == 0) {
            part[warp] = acc;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            A t = part[0];
            for (int w = 1; w < WARPS; w++) {
                t = scan_op<OP>(t, part[w]);
            }
            totals[u] = t;
        }
        __syncthreads(); /* part is written again next unit */
    }
}

/* inner > 1: a thread per unit u = (o * chunks + c) * inner + i, line
 * o * inner + i, the elements j of chunk c; it starts from
 * carry_in[line * chunks + c - 1] for c > 0.  Neighbouring threads read
 * neighbouring columns. */
template <int OP, typename Out, typename T>
__global__ void scan_cols_kernel(Out *out, in_ptr<T> in, int64_t outer,
                                 int64_t n, int64_t inner, int64_t chunks,
                                 int64_t chunk_len, const acc_t<T> *carry_in)
{
    using A = acc_t<T>;
    const int64_t units = outer * chunks * inner;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         u < units; u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = u % inner, c = u / inner % chunks;
        const int64_t o = u / inner / chunks, line = o * inner + i;
        const int64_t begin = c * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<T> src = in + o * n * inner + i;
        Out *dst = out + o * n * inner + i;
        A acc = c > 0 ? carry_in[line * chunks + c - 1]
                      : scan_identity<OP, A>();
        for (int64_t j = begin; j < end; j++) {
            acc = scan_op<OP>(acc, convert<A>(src[j * inner]));
            dst[j * inner] = convert<Out>(acc);
        }
    }
}

/* Pass 1 for columns: totals[line * chunks + c], in element order. */
template <int OP, typename T>
__global__ void scan_col_totals_kernel(acc_t<T> *totals, in_ptr<T> in,
                                       int64_t outer, int64_t n,
                                       int64_t inner, int64_t chunks,
                                       int64_t chunk_len)
{
    using A = acc_t<T>;
    const int64_t units = outer * chunks * inner;
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         u < units; u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = u % inner, c = u / inner % chunks;
        const int64_t o = u / inner / chunks;
        const int64_t begin = c * chunk_len;
        const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
        const in_ptr<T> src = in + o * n * inner + i;
        A acc = scan_identity<OP, A>();
        for (int64_t j = begin; j < end; j++) {
            acc = scan_op<OP>(acc, convert<A>(src[j * inner]));
        }
        totals[(o * inner + i) * chunks + c] = acc;
    }
}

// ------------------------------------------------------------ launchers

/* Grid of a kernel with a block per unit: one block each (the GPU starts
 * a block as soon as another ends, so units of equal work finish
 * together), up to a bound past which the kernel's loop takes the rest. */
static unsigned unit_grid(int64_t units)
{
    constexpr int64_t MOST = (int64_t)1 << 24;
    return units < 1 ? 1u : (unsigned)(units < MOST ? units : MOST);
}

/* How a shape is scanned: `chunks` pieces of chunk_len along n (1: one
 * pass, no workspace).  Every chunk is non-empty; rows' chunks are whole
 * tiles.  Depends on the shape alone. */
struct scan_plan {
    int64_t chunks, chunk_len;
};

static scan_plan plan_for(int64_t outer, int64_t n, int64_t inner)
{
    int64_t chunks;
    if (inner == 1) {
        if (n <= GROUP_ROW_MAX) {
            return {1, n};
        }
        chunks = ceil_div(TARGET_ROW_UNITS, outer);
        const int64_t most = ceil_div(n, MIN_ROW_CHUNK);
        chunks = chunks < most ? chunks : most;
    } else {
        chunks = ceil_div(TARGET_COL_UNITS, outer * inner);
        const int64_t most = ceil_div(n, MIN_COL_CHUNK);
        chunks = chunks < most ? chunks : most;
    }
    chunks = chunks < MAX_CHUNKS ? chunks : MAX_CHUNKS;
    if (chunks <= 1) {
        return {1, n};
    }
    int64_t len = ceil_div(n, chunks);
    if (inner == 1) {
        len = ceil_div(len, TILE) * TILE;
    }
    return {ceil_div(n, len), len};
}

/* One pass over `rows` contiguous rows of n: groups of lanes for short
 * rows, a block per row for long ones.  Also the middle pass, over the
 * chunk totals (in place: every element is read and written by the same
 * thread, the read first). */
template <int OP, typename Out, typename T>
static cudaError_t launch_rows(Out *out, in_ptr<T> in, int64_t rows,
                               int64_t n, cudaStream_t stream)
{
    auto group = [&](auto g) {
        constexpr int G = decltype(g)::value;
        constexpr auto kernel = scan_group_kernel<OP, G, Out, T>;
        const int64_t warps = ceil_div(rows, WARP / G);
        kernel<<<grid_for<kernel>(warps * WARP), BLOCK, 0, stream>>>(
            out, in, rows, n);
        return cudaGetLastError();
    };
    if (n <= 2 * ITEMS) {
        return group(std::integral_constant<int, 2>());
    }
    if (n <= 8 * ITEMS) {
        return group(std::integral_constant<int, 8>());
    }
    if (n <= GROUP_ROW_MAX) {
        return group(std::integral_constant<int, WARP>());
    }
    scan_tiles_kernel<OP, Out, T><<<unit_grid(rows), BLOCK, 0, stream>>>(
        out, in, rows, n, 1, n, (const acc_t<T> *)nullptr);
    return cudaGetLastError();
}

template <int OP, typename Out, typename T>
static cudaError_t scan_launch(Out *out, in_ptr<T> in, int64_t outer,
                               int64_t n, int64_t inner, void *workspace,
                               cudaStream_t stream)
{
    using A = acc_t<T>;
    const scan_plan p = plan_for(outer, n, inner);
    if (p.chunks == 1 && inner == 1) {
        return launch_rows<OP, Out, T>(out, in, outer, n, stream);
    }
    const int64_t lines = outer * inner, units = lines * p.chunks;
    A *totals = (A *)workspace;
    if (p.chunks > 1) {
        if (totals == nullptr) {
            return cudaErrorInvalidValue;
        }
        if (inner == 1) {
            scan_tile_totals_kernel<OP, T><<<unit_grid(units), BLOCK, 0,
                                             stream>>>(totals, in, lines, n,
                                                       p.chunks, p.chunk_len);
        } else {
            constexpr auto kernel = scan_col_totals_kernel<OP, T>;
            kernel<<<grid_for<kernel>(units), BLOCK, 0, stream>>>(
                totals, in, outer, n, inner, p.chunks, p.chunk_len);
        }
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) {
            e = launch_rows<OP, A, A>(totals, totals, lines, p.chunks,
                                      stream);
        }
        if (e != cudaSuccess) {
            return e;
        }
    }
    if (inner == 1) {
        scan_tiles_kernel<OP, Out, T><<<unit_grid(units), BLOCK, 0, stream>>>(
            out, in, lines, n, p.chunks, p.chunk_len, (const A *)totals);
    } else {
        constexpr auto kernel = scan_cols_kernel<OP, Out, T>;
        kernel<<<grid_for<kernel>(units), BLOCK, 0, stream>>>(
            out, in, outer, n, inner, p.chunks, p.chunk_len,
            (const A *)totals);
    }
    return cudaGetLastError();
}

static bool scan_args_valid(int op, int dtype, int64_t outer, int64_t n,
                            int64_t inner)
{
    return op >= 0 && op < PYGPU_NSCANOPS && dtype >= 0 &&
           dtype < PYGPU_NDTYPES && outer >= 0 && n >= 0 && inner >= 0;
}

extern "C" size_t pygpu_cuda_scan_workspace(int op, int dtype, int64_t outer,
                                            int64_t n, int64_t inner)
{
    if (!scan_args_valid(op, dtype, outer, n, inner) || outer == 0 ||
        n == 0 || inner == 0) {
        return 0;
    }
    const scan_plan p = plan_for(outer, n, inner);
    if (p.chunks == 1) {
        return 0;
    }
    const int acc = pygpu_reduce_acc_dtype(dtype);
    const size_t size = acc == PYGPU_FLOAT32 ? sizeof(float) : 8;
    return (size_t)(outer * inner * p.chunks) * size;
}

extern "C" cudaError_t pygpu_cuda_scan(int op, int dtype, void *out,
                                       const void *in, int64_t outer,
                                       int64_t n, int64_t inner,
                                       void *workspace, cudaStream_t stream)
{
    if (!scan_args_valid(op, dtype, outer, n, inner)) {
        return cudaErrorInvalidValue;
    }
    if (outer == 0 || n == 0 || inner == 0) {
        return cudaSuccess;
    }
    return dispatch_dtype_read(dtype, [&](auto tag) {
        using T = decltype(tag);
        /* bool and the integers give int64, the others their own dtype */
        using Out = typename std::conditional<
            std::is_integral<acc_t<T>>::value, int64_t, T>::type;
        const in_ptr<T> src = make_in_ptr<T>(in, dtype);
        return dispatch_op<PYGPU_NSCANOPS>(op, [&](auto code) {
            constexpr int OP = decltype(code)::value;
            return scan_launch<OP, Out, T>((Out *)out, src, outer, n, inner,
                                           workspace, stream);
        });
    });
}
