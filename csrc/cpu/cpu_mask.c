/* cpu_mask.c - the CPU loops of the masked copy (where, masked_fill, mask
 * assignment): out[i] = cond[i] ? a[i] : out[i], and of the row gather and
 * scatter of boolean-mask indexing.  For the masked copy, a is converted
 * to out's dtype a chunk at a time by the conversion loops (as cpu_mixed.c
 * does); the selection itself only moves elements, by size.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_loops.h"
#include "kernels/kernels.h"

/* Elements converted per step: a buffer of 2 KiB on the stack. */
#define CHUNK 256

#define SELECT_LOOP(NAME, T)                                                 \
    static void NAME(char *const *p, const int64_t *s, int64_t n,            \
                     const void *ctx)                                        \
    {                                                                        \
        T *o = (T *)p[0];                                                    \
        const uint8_t *c = (const uint8_t *)p[1];                            \
        const T *a = (const T *)p[2];                                        \
        (void)ctx;                                                           \
        for (int64_t i = 0; i < n; i++) {                                    \
            if (c[i * s[1]]) {                                               \
                o[i * s[0]] = a[i * s[2]];                                   \
            }                                                                \
        }                                                                    \
    }

SELECT_LOOP(select_1, uint8_t)
SELECT_LOOP(select_2, uint16_t)
SELECT_LOOP(select_4, uint32_t)
SELECT_LOOP(select_8, uint64_t)

static inner_loop select_loop(size_t size)
{
    return size == 1 ? select_1 : size == 2 ? select_2
                                : size == 4 ? select_4 : select_8;
}

typedef struct mask_ctx {
    int dtype;   /* of out */
    int a_dtype; /* of a */
} mask_ctx;

static void masked_row(char *const *p, const int64_t *s, int64_t n,
                       const void *ctx)
{
    const mask_ctx *m = ctx;
    size_t osize = pygpu_cpu_dtype_size[m->dtype];
    size_t asize = pygpu_cpu_dtype_size[m->a_dtype];
    inner_loop select = select_loop(osize);
    if (m->a_dtype == m->dtype) {
        select(p, s, n, NULL);
        return;
    }
    _Alignas(64) char buf[CHUNK * sizeof(double)];
    inner_loop convert = pygpu_cpu_copy_loop(m->dtype, m->a_dtype);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t c = n - i < CHUNK ? n - i : CHUNK;
        /* A broadcast a (stride 0) is one element for the whole chunk. */
        char *cp[3] = {buf, p[2] + i * s[2] * (int64_t)asize, NULL};
        const int64_t cs[3] = {1, s[2], 0};
        convert(cp, cs, s[2] == 0 ? 1 : c, NULL);
        char *q[3] = {p[0] + i * s[0] * (int64_t)osize, p[1] + i * s[1],
                      buf};
        const int64_t qs[3] = {s[0], s[1], s[2] == 0 ? 0 : 1};
        select(q, qs, c, NULL);
    }
}

void pygpu_cpu_masked_copy(int dtype, void *out, const void *cond,
                           int a_dtype, const void *a, const pygpu_geom *g)
{
    if (dtype < 0 || dtype >= PYGPU_NDTYPES || a_dtype < 0 ||
        a_dtype >= PYGPU_NDTYPES) {
        return;
    }
    mask_ctx m = {dtype, a_dtype};
    char *base[3] = {(char *)out, (char *)cond, (char *)a};
    size_t esize[3] = {pygpu_cpu_dtype_size[dtype], 1,
                       pygpu_cpu_dtype_size[a_dtype]};
    pygpu_cpu_for_each_row(g, 3, base, esize, masked_row, &m);
}

void pygpu_cpu_index_rows(int dtype, void *out, const void *in,
                          const int64_t *idx, int64_t n, int64_t row,
                          int scatter)
{
    if (dtype < 0 || dtype >= PYGPU_NDTYPES || n <= 0 || row <= 0) {
        return;
    }
    size_t bytes = (size_t)row * pygpu_cpu_dtype_size[dtype];
    for (int64_t j = 0; j < n; j++) {
        size_t from = (size_t)(scatter ? j : idx[j]) * bytes;
        size_t to = (size_t)(scatter ? idx[j] : j) * bytes;
        memcpy((char *)out + to, (const char *)in + from, bytes);
    }
}
