/* sort.cu - the indices that sort each line of a contiguous input seen as
 * [outer, n, inner] along n (PYGPU_K_SORT), in the order of sort_key.h:
 * every element is a (uint64 key, int64 index) pair, and since no two
 * pairs are equal the result is the one stable order, the same as the
 * CPU's (cpu/cpu_sort.c).
 *
 * A bitonic sort over the line padded to P, the least power of two >= n
 * (at least 2), with pairs that sort last (key ~0, index >= n):
 *   P <= TILE: a block sorts TILE / P lines at once in shared memory
 *           (read from the input, written to out), so short lines still
 *           fill a block.
 *   longer:  the workspace holds every line's P pairs.  A block per tile
 *           of TILE pairs sorts its tile in shared memory as the first
 *           log2(TILE) stages of the whole network (the direction of each
 *           merge from the pair's position in the line); then for each
 *           larger stage k, the steps of stride >= TILE run over global
 *           memory (one launch each, a thread per compare-exchange), and
 *           the steps below TILE in shared memory again (one launch).
 *           The last of those writes the first n indices to out.
 * O(n log^2 n) work, log2(P / TILE) * (log2(P / TILE) + 1) / 2 + log2(P /
 * TILE) + 1 launches: a 2^24-element line takes 67.  Tuning (a radix
 * sort for long lines, registers before shared memory) is left for
 * measurements on a GPU.
 */
#include "common.cuh"
#include "sort_key.h"

#define TILE 2048

/* The line of block-or-thread index l: its first element's offset. */
__device__ __forceinline__ int64_t line_base(int64_t l, int64_t n,
                                             int64_t inner)
{
    return (l / inner) * n * inner + l % inner;
}

/* One compare-exchange of the bitonic network: positions i < i + j, the
 * merge of size k ascending where (pos & k) == 0. */
__device__ __forceinline__ void cmpx(uint64_t *key, int64_t *ix, int64_t a,
                                     int64_t b, bool up)
{
    const bool swap = up ? pygpu_sort_before(key[b], ix[b], key[a], ix[a])
                         : pygpu_sort_before(key[a], ix[a], key[b], ix[b]);
    if (swap) {
        const uint64_t tk = key[a];
        key[a] = key[b];
        key[b] = tk;
        const int64_t ti = ix[a];
        ix[a] = ix[b];
        ix[b] = ti;
    }
}

/* Stages k_lo .. k_hi of the network over `size` pairs in shared memory:
 * segments of `seg` pairs (a line each, or one tile of a longer line),
 * the first at position `start` of its line; the first stage from stride
 * j_first (0: k_lo / 2). */
__device__ void tile_network(uint64_t *key, int64_t *ix, int64_t size,
                             int64_t seg, int64_t start, int64_t k_lo,
                             int64_t k_hi, int64_t j_first)
{
    const int64_t half = seg / 2;
    for (int64_t k = k_lo; k <= k_hi; k <<= 1) {
        for (int64_t j = (k == k_lo && j_first) ? j_first : k >> 1; j > 0;
             j >>= 1) {
            for (int64_t p = threadIdx.x; p < size / 2; p += blockDim.x) {
                const int64_t q = p % half, base = (p / half) * seg;
                const int64_t a = (q / j) * 2 * j + q % j;
                cmpx(key, ix, base + a, base + a + j, ((start + a) & k) == 0);
            }
            __syncthreads();
        }
    }
}

/* Lines that fit a tile (P <= TILE): `per` lines of P pairs per block,
 * made from the input (padding past n, and whole padding lines past the
 * last), sorted, the first n indices of each written to out. */
__global__ void lines_kernel(int64_t *out, const void *in, int dtype,
                             int desc, int64_t lines, int64_t n,
                             int64_t inner, int64_t P, int64_t per)
{
    __shared__ uint64_t key[TILE];
    __shared__ int64_t ix[TILE];
    const int64_t size = per * P, first = blockIdx.x * per;
    for (int64_t t = threadIdx.x; t < size; t += blockDim.x) {
        const int64_t line = first + t / P, pos = t % P;
        key[t] = pos < n && line < lines
                     ? pygpu_sort_key(in, dtype,
                                      line_base(line, n, inner) + pos * inner,
                                      desc)
                     : ~0ull;
        ix[t] = pos;
    }
    __syncthreads();
    tile_network(key, ix, size, P, 0, 2, P, 0);
    for (int64_t t = threadIdx.x; t < size; t += blockDim.x) {
        const int64_t line = first + t / P, pos = t % P;
        if (pos < n && line < lines) {
            out[line_base(line, n, inner) + pos * inner] = ix[t];
        }
    }
}

/* A line longer than a tile, a block per tile of TILE pairs.  from_input:
 * the pairs made from the input (padding past n), else read from the
 * workspace; to_out: the indices among the first n go to out (the last
 * pass), else back to the workspace. */
__global__ void tile_kernel(int64_t *out, const void *in, int dtype,
                            int desc, int64_t n, int64_t inner, int64_t P,
                            uint64_t *wkey, int64_t *wix, int from_input,
                            int to_out, int64_t k_lo, int64_t k_hi,
                            int64_t j_first)
{
    __shared__ uint64_t key[TILE];
    __shared__ int64_t ix[TILE];
    const int64_t tiles = P / TILE;
    const int64_t line = blockIdx.x / tiles;
    const int64_t start = (blockIdx.x % tiles) * TILE;
    const int64_t base = line_base(line, n, inner);
    for (int64_t t = threadIdx.x; t < TILE; t += blockDim.x) {
        const int64_t pos = start + t;
        if (from_input) {
            key[t] = pos < n ? pygpu_sort_key(in, dtype, base + pos * inner,
                                              desc)
                             : ~0ull;
            ix[t] = pos;
        } else {
            key[t] = wkey[line * P + pos];
            ix[t] = wix[line * P + pos];
        }
    }
    __syncthreads();
    tile_network(key, ix, TILE, TILE, start, k_lo, k_hi, j_first);
    for (int64_t t = threadIdx.x; t < TILE; t += blockDim.x) {
        const int64_t pos = start + t;
        if (to_out) {
            if (pos < n) {
                out[base + pos * inner] = ix[t];
            }
        } else {
            wkey[line * P + pos] = key[t];
            wix[line * P + pos] = ix[t];
        }
    }
}

/* One step (stage k, stride j >= TILE) over the workspace: a thread per
 * compare-exchange, lines * P / 2 of them. */
__global__ void global_step_kernel(uint64_t *wkey, int64_t *wix, int64_t P,
                                   int64_t total, int64_t k, int64_t j)
{
    const int64_t half = P / 2;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
         t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t line = t / half, p = t % half;
        const int64_t a = (p / j) * 2 * j + p % j;
        cmpx(wkey + line * P, wix + line * P, a, a + j, (a & k) == 0);
    }
}

/* The padded length: a power of two, at least 2. */
static int64_t padded(int64_t n)
{
    int64_t P = 2;
    while (P < n) {
        P <<= 1;
    }
    return P;
}

extern "C" size_t pygpu_cuda_sort_workspace(int dtype, int64_t outer,
                                            int64_t n, int64_t inner)
{
    (void)dtype;
    const int64_t P = padded(n);
    if (outer <= 0 || inner <= 0 || P <= TILE) {
        return 0;
    }
    return (size_t)(outer * inner) * (size_t)P *
           (sizeof(uint64_t) + sizeof(int64_t));
}

extern "C" cudaError_t pygpu_cuda_sort(int dtype, int64_t *out,
                                       const void *in, int64_t outer,
                                       int64_t n, int64_t inner,
                                       int descending, void *workspace,
                                       cudaStream_t stream)
{
    if (dtype < 0 || dtype >= PYGPU_NDTYPES || outer < 0 || n < 0 ||
        inner < 0) {
        return cudaErrorInvalidValue;
    }
    const int64_t lines = outer * inner;
    if (lines == 0 || n == 0) {
        return cudaSuccess;
    }
    const int64_t P = padded(n);
    if (lines > INT32_MAX / (P > TILE ? P / TILE : 1)) {
        return cudaErrorInvalidConfiguration;
    }
    if (P <= TILE) {
        const int64_t per = TILE / P < lines ? TILE / P : lines;
        const int64_t blocks = (lines + per - 1) / per;
        lines_kernel<<<(unsigned)blocks, (unsigned)(per * P / 2), 0,
                       stream>>>(out, in, dtype, descending, lines, n, inner,
                                 P, per);
        return cudaGetLastError();
    }
    if (workspace == NULL) {
        return cudaErrorInvalidValue;
    }
    uint64_t *wkey = (uint64_t *)workspace;
    int64_t *wix = (int64_t *)(wkey + lines * P);
    const unsigned blocks = (unsigned)(lines * (P / TILE));
    tile_kernel<<<blocks, TILE / 2, 0, stream>>>(
        out, in, dtype, descending, n, inner, P, wkey, wix, 1, 0, 2, TILE,
        0);
    cudaError_t e = cudaGetLastError();
    const int64_t total = lines * (P / 2);
    const int64_t want = (total + 255) / 256;
    const unsigned grid = (unsigned)(want < 65535 * 16 ? want : 65535 * 16);
    for (int64_t k = 2 * TILE; e == cudaSuccess && k <= P; k <<= 1) {
        for (int64_t j = k / 2; e == cudaSuccess && j >= TILE; j >>= 1) {
            global_step_kernel<<<grid, 256, 0, stream>>>(wkey, wix, P, total,
                                                         k, j);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess) {
            tile_kernel<<<blocks, TILE / 2, 0, stream>>>(
                out, in, dtype, descending, n, inner, P, wkey, wix, 0,
                k == P, k, k, TILE / 2);
            e = cudaGetLastError();
        }
    }
    return e;
}
