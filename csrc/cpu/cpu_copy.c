/* cpu_copy.c - the COPY row: out = a between any two strided layouts,
 * with or without a dtype conversion (.contiguous(), .clone() of views,
 * copy_ into and from views, reshape of what cannot be a view, expand then
 * copy, .to(dtype) of strided tensors).
 *
 * The geometry is put in the output's memory order and coalesced
 * (pygpu_cpu_copy_order).  Its last dim L (the output's innermost) and one
 * other dim P make a 2-D block that one call of a typed loop copies; an
 * N-d counter (a carry per wrapped digit, no division) walks the other
 * dims and the blocks.  P is the dim before L, except for a transpose-like
 * copy (the source's L stride spans a cache line or more and some dim has
 * a smaller source stride): P is then that dim, and blocks are tiles of
 * 64x64 elements, moved by 8x8 sub-blocks or through a buffer in the
 * cache (TILE_LOOP).
 *
 * A block's rows are, by the L strides: contiguous on both sides (memcpy,
 * streamed past the caches for large copies; memmove where the two
 * overlap), a source stride of 0 (a broadcast fill), or a typed strided
 * gather.  A conversion reads rows that are contiguous in the source
 * straight into the conversion loops of cpu_convert.c (float16/bfloat16
 * by cpu_half.c); other source rows are first gathered, a block of at most
 * BUF_ELEMS elements at a time, into a buffer on the stack.  The split over
 * the pool (cpu_split.c) cuts the geometry in the same output order, into
 * boxes of its leading dims; a copy is exact, so the bits never depend on
 * the cut.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu/cpu_copy.h"
#include "cpu/cpu_loops.h"
#include "kernels/kernels.h"

/* Copies of at least this many bytes in all (split over threads or not)
 * write their contiguous rows with streaming stores: they do not fit the
 * caches anyway, and writing around them (no read of the destination's
 * lines first) took 3.6 ms instead of memmove's 6.2 for 64 MiB on one
 * thread of the 2-core test machine (equal at 16 MiB; at 4 MiB, which the
 * caches hold, streaming took twice memmove's time). */
#define STREAM_BYTES ((size_t)16 << 20)

/* The staging buffer of a conversion from gathered source rows. */
#define BUF_ELEMS 4096

/* A source stride of at least this many bytes along the output's rows
 * makes a copy transpose-like. */
#define TILE_STRIDE_BYTES 64

/* n bytes from src to dst, not overlapping; streamed or not. */
static void copy_bytes(char *dst, const char *src, size_t n, int stream)
{
#if defined(__SSE2__)
    if (stream && n >= 64) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head;
        src += head;
        n -= head;
        size_t body = n & ~(size_t)63;
        for (size_t i = 0; i < body; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
            _mm_stream_si128((__m128i *)(dst + i), a);
            _mm_stream_si128((__m128i *)(dst + i + 16), b);
            _mm_stream_si128((__m128i *)(dst + i + 32), c);
            _mm_stream_si128((__m128i *)(dst + i + 48), d);
        }
        _mm_sfence(); /* the stores ordered before anything after */
        dst += body;
        src += body;
        n -= body;
    }
#endif
    memcpy(dst, src, n);
}

/* One block of elements of one size: np rows of nl elements, row p and
 * element l at o[p * st[0] + l * st[1]] and a[p * st[2] + l * st[3]]
 * (strides in elements).  A same-dtype copy moves the bytes (NaN payloads
 * kept). */
typedef void (*block_fn)(char *o, const char *a, int64_t np, int64_t nl,
                         const int64_t *st, int stream);

#define BLOCK_LOOP(NAME, T)                                                  \
    static void NAME(char *o_, const char *a_, int64_t np, int64_t nl,       \
                     const int64_t *st, int stream)                          \
    {                                                                        \
        T *o = (T *)o_;                                                      \
        const T *a = (const T *)a_;                                          \
        const int64_t osp = st[0], osl = st[1], isp = st[2], isl = st[3];    \
        if (osl == 1 && isl == 1) {                                          \
            size_t bytes = (size_t)nl * sizeof(T);                           \
            for (int64_t p = 0; p < np; p++) {                               \
                T *r = o + p * osp;                                          \
                const T *s = a + p * isp;                                    \
                if (r + nl <= s || s + nl <= r) {                            \
                    copy_bytes((char *)r, (const char *)s, bytes, stream);   \
                } else {                                                     \
                    memmove(r, s, bytes);                                    \
                }                                                            \
            }                                                                \
        } else if (osl == 1 && isl == 0) {                                   \
            for (int64_t p = 0; p < np; p++) {                               \
                T *r = o + p * osp;                                          \
                const T v = a[p * isp];                                      \
                for (int64_t l = 0; l < nl; l++) {                           \
                    r[l] = v;                                                \
                }                                                            \
            }                                                                \
        } else if (osl == 1) {                                               \
            for (int64_t p = 0; p < np; p++) {                               \
                T *r = o + p * osp;                                          \
                const T *s = a + p * isp;                                    \
                for (int64_t l = 0; l < nl; l++) {                           \
                    r[l] = s[l * isl];                                       \
                }                                                            \
            }                                                                \
        } else {                                                             \
            for (int64_t p = 0; p < np; p++) {                               \
                T *r = o + p * osp;                                          \
                const T *s = a + p * isp;                                    \
                for (int64_t l = 0; l < nl; l++) {                           \
                    r[l * osl] = s[l * isl];                                 \
                }                                                            \
            }                                                            \
        }                                                                    \
    }

BLOCK_LOOP(block_1, uint8_t)
BLOCK_LOOP(block_2, uint16_t)
BLOCK_LOOP(block_4, uint32_t)
BLOCK_LOOP(block_8, uint64_t)

/* A tile of a transpose-like copy (np, nl <= TILE).  Where the source is
 * contiguous along P and the output along L (a plain transpose): blocks
 * of 8x8 elements read 8 source lines into a local array and written out
 * as 8 output lines, the edges element by element.  Otherwise: the
 * source's lines along P read into a buffer whose rows are padded by one
 * element (so that its columns do not fall in one cache set), then the
 * output's rows written from the buffer's columns.  Going straight from
 * one to the other, a row at a time, took 65-130 ms for a 4096x4096
 * float32 transpose on the test machine (strides of powers of two keep
 * evicting lines a tile still needs); through the buffer 30-40 ms, by
 * 8x8 blocks 23-26 ms. */
#define TILE 64

#define TILE_LOOP(NAME, T)                                                   \
    static void NAME(char *o_, const char *a_, int64_t np, int64_t nl,       \
                     const int64_t *st, int stream)                          \
    {                                                                        \
        T *o = (T *)o_;                                                      \
        const T *a = (const T *)a_;                                          \
        const int64_t osp = st[0], osl = st[1], isp = st[2], isl = st[3];    \
        (void)stream;                                                        \
        if (isp == 1 && osl == 1) {                                          \
            const int64_t p8 = np & ~(int64_t)7, l8 = nl & ~(int64_t)7;      \
            for (int64_t pb = 0; pb < p8; pb += 8) {                         \
                for (int64_t lb = 0; lb < l8; lb += 8) {                     \
                    T m[8][8];                                               \
                    const T *s = a + lb * isl + pb;                          \
                    T *r = o + pb * osp + lb;                                \
                    for (int l = 0; l < 8; l++) {                            \
                        for (int p = 0; p < 8; p++) {                        \
                            m[p][l] = s[l * isl + p];                        \
                        }                                                    \
                    }                                                        \
                    for (int p = 0; p < 8; p++) {                            \
                        for (int l = 0; l < 8; l++) {                        \
                            r[p * osp + l] = m[p][l];                        \
                        }                                                    \
                    }                                                        \
                }                                                            \
            }                                                                \
            for (int64_t p = 0; p < np; p++) {                               \
                T *r = o + p * osp;                                          \
                const T *s = a + p;                                          \
                for (int64_t l = p < p8 ? l8 : 0; l < nl; l++) {             \
                    r[l] = s[l * isl];                                       \
                }                                                            \
            }                                                                \
            return;                                                          \
        }                                                                    \
        T buf[TILE * (TILE + 1)];                                            \
        for (int64_t l = 0; l < nl; l++) {                                   \
            const T *s = a + l * isl;                                        \
            T *b = buf + l * (TILE + 1);                                     \
            for (int64_t p = 0; p < np; p++) {                               \
                b[p] = s[p * isp];                                           \
            }                                                                \
        }                                                                    \
        for (int64_t p = 0; p < np; p++) {                                   \
            T *r = o + p * osp;                                              \
            const T *b = buf + p;                                            \
            for (int64_t l = 0; l < nl; l++) {                               \
                r[l * osl] = b[l * (TILE + 1)];                              \
            }                                                                \
        }                                                                    \
    }

TILE_LOOP(tile_1, uint8_t)
TILE_LOOP(tile_2, uint16_t)
TILE_LOOP(tile_4, uint32_t)
TILE_LOOP(tile_8, uint64_t)

/* The block loop (tile == 0) or the tile loop for elements of size. */
static block_fn loop_of_size(size_t size, int tile)
{
    switch (size) {
    case 1:
        return tile ? tile_1 : block_1;
    case 2:
        return tile ? tile_2 : block_2;
    case 4:
        return tile ? tile_4 : block_4;
    default:
        return tile ? tile_8 : block_8;
    }
}

/* What one copy call needs at each block. */
typedef struct copy_job {
    size_t eo, ei;        /* element sizes: output, input */
    block_fn move;        /* same dtype: the block loop; else the gather */
    inner_loop convert;   /* NULL for a same-dtype copy */
    int stream;
    int64_t st[4];        /* block strides: out P, out L, in P, in L */
    unsigned char *buf;   /* BUF_ELEMS source elements */
} copy_job;

/* One block converted: contiguous source rows straight into the
 * conversion loop, others gathered into the buffer first. */
static void convert_block(const copy_job *j, char *o, const char *a,
                          int64_t np, int64_t nl)
{
    const int64_t osp = j->st[0], osl = j->st[1], isp = j->st[2];
    const int64_t rs[2] = {osl, 1};
    if (j->st[3] == 1) {
        for (int64_t p = 0; p < np; p++) {
            char *pp[2] = {o + p * osp * (int64_t)j->eo,
                           (char *)a + p * isp * (int64_t)j->ei};
            j->convert(pp, rs, nl, NULL);
        }
        return;
    }
    const int64_t gst[4] = {nl, 1, isp, j->st[3]};
    j->move((char *)j->buf, a, np, nl, gst, 0);
    if (osl == 1 && osp == nl) {
        char *pp[2] = {o, (char *)j->buf};
        j->convert(pp, rs, np * nl, NULL);
        return;
    }
    for (int64_t p = 0; p < np; p++) {
        char *pp[2] = {o + p * osp * (int64_t)j->eo,
                       (char *)j->buf + p * nl * (int64_t)j->ei};
        j->convert(pp, rs, nl, NULL);
    }
}

static int64_t abs64(int64_t x)
{
    return x < 0 ? -x : x;
}

/* Dim x goes before dim y: a larger output stride, or an equal one and a
 * larger source stride. */
static int goes_before(int64_t ox, int64_t ix, int64_t oy, int64_t iy)
{
    ox = abs64(ox);
    oy = abs64(oy);
    return ox > oy || (ox == oy && abs64(ix) > abs64(iy));
}

void pygpu_cpu_copy_order(pygpu_geom *g)
{
    int n = 0;
    for (int d = 0; d < g->ndim; d++) {
        if (g->shape[d] != 1) {
            g->shape[n] = g->shape[d];
            g->stride[0][n] = g->stride[0][d];
            g->stride[1][n] = g->stride[1][d];
            n++;
        }
    }
    /* Insertion sort: stable, and ndim is small. */
    for (int i = 1; i < n; i++) {
        int64_t sh = g->shape[i], os = g->stride[0][i], is = g->stride[1][i];
        int k = i;
        while (k > 0 &&
               goes_before(os, is, g->stride[0][k - 1], g->stride[1][k - 1])) {
            g->shape[k] = g->shape[k - 1];
            g->stride[0][k] = g->stride[0][k - 1];
            g->stride[1][k] = g->stride[1][k - 1];
            k--;
        }
        g->shape[k] = sh;
        g->stride[0][k] = os;
        g->stride[1][k] = is;
    }
    int m = 0;
    for (int d = 0; d < n; d++) {
        if (m > 0 && g->stride[0][m - 1] == g->stride[0][d] * g->shape[d] &&
            g->stride[1][m - 1] == g->stride[1][d] * g->shape[d]) {
            g->shape[m - 1] *= g->shape[d];
            g->stride[0][m - 1] = g->stride[0][d];
            g->stride[1][m - 1] = g->stride[1][d];
            continue;
        }
        g->shape[m] = g->shape[d];
        g->stride[0][m] = g->stride[0][d];
        g->stride[1][m] = g->stride[1][d];
        m++;
    }
    for (int d = 0; d < m; d++) {
        g->stride[2][d] = 0;
    }
    g->ndim = m;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

void pygpu_cpu_transpose(char *dst, int64_t ldd, const char *src,
                         int64_t lds, int64_t rows, int64_t cols,
                         size_t size)
{
    block_fn tile = loop_of_size(size, 1);
    const int64_t st[4] = {ldd, 1, 1, lds}; /* out P, out L, in P, in L */
    for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
        for (int64_t r0 = 0; r0 < rows; r0 += TILE) {
            tile(dst + (c0 * ldd + r0) * (int64_t)size,
                 src + (r0 * lds + c0) * (int64_t)size,
                 min64(TILE, cols - c0), min64(TILE, rows - r0), st, 0);
        }
    }
}

/* The dim the blocks pair with L (the last): the one before it, or, for a
 * transpose-like copy, the dim of smallest nonzero source stride (at
 * least 8 long).  *tile is set when the blocks are tiles. */
static int block_partner(const pygpu_geom *c, size_t ei, int *tile)
{
    int last = c->ndim - 1;
    *tile = 0;
    if (last == 0) {
        return -1;
    }
    int64_t isl = abs64(c->stride[1][last]);
    if (isl * (int64_t)ei < TILE_STRIDE_BYTES || c->shape[last] < 8) {
        return last - 1;
    }
    int best = -1;
    for (int d = 0; d < last; d++) {
        int64_t s = abs64(c->stride[1][d]);
        if (s != 0 && c->shape[d] >= 8 &&
            (best < 0 || s < abs64(c->stride[1][best]))) {
            best = d;
        }
    }
    if (best < 0 || abs64(c->stride[1][best]) >= isl) {
        return last - 1;
    }
    *tile = 1;
    return best;
}

void pygpu_cpu_copy(int out_dtype, void *out, int in_dtype, const void *a,
                    const pygpu_geom *g, int64_t whole)
{
    if (out_dtype < 0 || out_dtype >= PYGPU_NDTYPES || in_dtype < 0 ||
        in_dtype >= PYGPU_NDTYPES) {
        return;
    }
    for (int d = 0; d < g->ndim; d++) {
        if (g->shape[d] <= 0) {
            return;
        }
    }
    _Alignas(64) unsigned char buf[BUF_ELEMS * sizeof(int64_t)];
    pygpu_geom c = *g;
    pygpu_cpu_copy_order(&c);
    if (c.ndim == 0) {
        c.ndim = 1;
        c.shape[0] = 1;
        c.stride[0][0] = c.stride[1][0] = 1;
    }
    copy_job j = {.eo = pygpu_cpu_dtype_size[out_dtype],
                  .ei = pygpu_cpu_dtype_size[in_dtype],
                  .buf = buf};
    j.convert = out_dtype == in_dtype
                    ? NULL
                    : pygpu_cpu_copy_loop(out_dtype, in_dtype);
    j.stream = (size_t)whole * j.eo >= STREAM_BYTES;

    int tile, last = c.ndim - 1;
    int part = block_partner(&c, j.ei, &tile);
    j.move = loop_of_size(j.ei, tile);
    int64_t nl = c.shape[last];
    int64_t np = part >= 0 ? c.shape[part] : 1;
    j.st[0] = part >= 0 ? c.stride[0][part] : 0;
    j.st[1] = c.stride[0][last];
    j.st[2] = part >= 0 ? c.stride[1][part] : 0;
    j.st[3] = c.stride[1][last];
    int64_t bl = nl, bp = np;
    if (tile) {
        bl = min64(nl, TILE);
        bp = min64(np, TILE);
    } else if (j.convert != NULL && j.st[3] != 1) {
        bl = min64(nl, BUF_ELEMS);
        bp = min64(np, BUF_ELEMS / bl);
    }

    /* The counter's digits: the other dims in order, then P's blocks,
     * then L's; steps in bytes. */
    int64_t cnt[PYGPU_MAX_DIMS + 1], idx[PYGPU_MAX_DIMS + 1];
    ptrdiff_t ostep[PYGPU_MAX_DIMS + 1], istep[PYGPU_MAX_DIMS + 1];
    int m = 0;
    for (int d = 0; d < last; d++) {
        if (d != part) {
            cnt[m] = c.shape[d];
            ostep[m] = (ptrdiff_t)(c.stride[0][d] * (int64_t)j.eo);
            istep[m] = (ptrdiff_t)(c.stride[1][d] * (int64_t)j.ei);
            m++;
        }
    }
    const int dp = m, dl = m + 1;
    cnt[dp] = (np + bp - 1) / bp;
    ostep[dp] = (ptrdiff_t)(j.st[0] * bp * (int64_t)j.eo);
    istep[dp] = (ptrdiff_t)(j.st[2] * bp * (int64_t)j.ei);
    cnt[dl] = (nl + bl - 1) / bl;
    ostep[dl] = (ptrdiff_t)(j.st[1] * bl * (int64_t)j.eo);
    istep[dl] = (ptrdiff_t)(j.st[3] * bl * (int64_t)j.ei);
    m += 2;
    memset(idx, 0, sizeof(idx));

    /* Offsets in bytes, so that no pointer points outside its array. */
    ptrdiff_t oo = 0, io = 0;
    for (;;) {
        int64_t bnp = min64(bp, np - idx[dp] * bp);
        int64_t bnl = min64(bl, nl - idx[dl] * bl);
        char *o = (char *)out + oo;
        const char *s = (const char *)a + io;
        if (j.convert == NULL) {
            j.move(o, s, bnp, bnl, j.st, j.stream);
        } else {
            convert_block(&j, o, s, bnp, bnl);
        }
        int d = m - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < cnt[d]) {
                oo += ostep[d];
                io += istep[d];
                break;
            }
            oo -= (ptrdiff_t)(cnt[d] - 1) * ostep[d];
            io -= (ptrdiff_t)(cnt[d] - 1) * istep[d];
            idx[d] = 0;
        }
        if (d < 0) {
            return;
        }
    }
}
