/* cpu_mixed.c - binary ops and comparisons whose inputs have dtypes other
 * than the one they compute in: each input is read in its own dtype, a
 * chunk at a time, and converted into a small buffer of that dtype by the
 * conversion loops of pygpu_cpu_copy; the same-dtype loop then runs on the
 * buffers.  The values are those of converting whole inputs first, without
 * making those copies.
 */
#include "cpu/cpu_loops.h"

/* Elements converted per step: buffers of 2 KiB on the stack. */
#define CHUNK 256

typedef struct mixed_ctx {
    int dtype;               /* the inputs are converted to */
    int out_dtype;           /* of the result (bool for comparisons) */
    int in_dtype[2];         /* of the inputs (in_dtype[1] unused for a
                                scalar op) */
    inner_loop op;           /* the same-dtype loop */
    const pygpu_cpu_scalar *scalar; /* NULL: both inputs are tensors */
} mixed_ctx;

/* Input k (1 or 2) of a row, elements [i, i + c), as the result's dtype:
 * *p and *s for the op's loop, converting into buf when needed. */
static void
stage(const mixed_ctx *m, int k, char *const *p, const int64_t *s,
      int64_t i, int64_t c, char *buf, char **pk, int64_t *sk)
{
    int from = m->in_dtype[k - 1];
    char *src = p[k] + i * s[k] * (int64_t)pygpu_cpu_dtype_size[from];
    if (from == m->dtype) {
        *pk = src;
        *sk = s[k];
        return;
    }
    /* A broadcast input (stride 0) is one element for the whole chunk. */
    int64_t n = s[k] == 0 ? 1 : c;
    char *cp[3] = {buf, src, NULL};
    const int64_t cs[3] = {1, s[k], 0};
    pygpu_cpu_copy_loop(m->dtype, from)(cp, cs, n, NULL);
    *pk = buf;
    *sk = s[k] == 0 ? 0 : 1;
}

static void
mixed_row(char *const *p, const int64_t *s, int64_t n, const void *ctx)
{
    const mixed_ctx *m = ctx;
    _Alignas(64) char buf[2][CHUNK * sizeof(double)];
    int nin = m->scalar ? 1 : 2;
    size_t out_size = pygpu_cpu_dtype_size[m->out_dtype];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t c = n - i < CHUNK ? n - i : CHUNK;
        char *q[3] = {p[0] + i * s[0] * (int64_t)out_size, NULL, NULL};
        int64_t qs[3] = {s[0], 0, 0};
        for (int k = 1; k <= nin; k++) {
            stage(m, k, p, s, i, c, buf[k - 1], &q[k], &qs[k]);
        }
        m->op(q, qs, c, m->scalar);
    }
}

static int
valid(int op, int dtype)
{
    return op >= 0 && op < PYGPU_NBINOPS && dtype >= 0 &&
           dtype < PYGPU_NDTYPES;
}

void pygpu_cpu_binary_mixed(int op, int dtype, void *out, int a_dtype,
                            const void *a, int b_dtype, const void *b,
                            const pygpu_geom *g)
{
    if (!valid(op, dtype) || !valid(0, a_dtype) || !valid(0, b_dtype)) {
        return;
    }
    mixed_ctx m = {dtype, dtype, {a_dtype, b_dtype},
                   pygpu_cpu_binary_loop(op, dtype), NULL};
    if (m.op == NULL) {
        return; /* a bitwise op of a floating dtype: refused before */
    }
    char *base[3] = {(char *)out, (char *)a, (char *)b};
    size_t esize[3] = {pygpu_cpu_dtype_size[dtype],
                       pygpu_cpu_dtype_size[a_dtype],
                       pygpu_cpu_dtype_size[b_dtype]};
    pygpu_cpu_for_each_row(g, 3, base, esize, mixed_row, &m);
}

void pygpu_cpu_binary_scalar_mixed(int op, int dtype, void *out,
                                   int a_dtype, const void *a,
                                   pygpu_scalar_value s, int scalar_first,
                                   const pygpu_geom *g)
{
    if (!valid(op, dtype) || !valid(0, a_dtype)) {
        return;
    }
    pygpu_cpu_scalar sv = pygpu_cpu_scalar_in(dtype, s);
    mixed_ctx m = {dtype, dtype, {a_dtype, dtype},
                   pygpu_cpu_scalar_loop(scalar_first, op, dtype), &sv};
    if (m.op == NULL) {
        return;
    }
    char *base[3] = {(char *)out, (char *)a, NULL};
    size_t esize[3] = {pygpu_cpu_dtype_size[dtype],
                       pygpu_cpu_dtype_size[a_dtype], 0};
    pygpu_cpu_for_each_row(g, 2, base, esize, mixed_row, &m);
}

void pygpu_cpu_compare(int op, int dtype, void *out, int a_dtype,
                       const void *a, int b_dtype, const void *b,
                       const pygpu_geom *g)
{
    if (op < 0 || op >= PYGPU_NCMPOPS || !valid(0, dtype) ||
        !valid(0, a_dtype) || !valid(0, b_dtype)) {
        return;
    }
    mixed_ctx m = {dtype, PYGPU_BOOL, {a_dtype, b_dtype},
                   pygpu_cpu_compare_loop(op, dtype), NULL};
    char *base[3] = {(char *)out, (char *)a, (char *)b};
    size_t esize[3] = {1, pygpu_cpu_dtype_size[a_dtype],
                       pygpu_cpu_dtype_size[b_dtype]};
    if (a_dtype == dtype && b_dtype == dtype) {
        pygpu_cpu_for_each_row(g, 3, base, esize, m.op, NULL);
    }
    else {
        pygpu_cpu_for_each_row(g, 3, base, esize, mixed_row, &m);
    }
}
