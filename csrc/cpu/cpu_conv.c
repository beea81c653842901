/* cpu_conv.c - the IM2COL kind's direct convolution (flag 2) on the CPU:
 * out = conv2d(img, weight) + bias without columns, float32 and float64
 * (the front end allows no other dtype here).
 *
 * A task makes one output row (n, oh) of up to CONV_CB output channels
 * of one group, a vector of output columns at a time: CONV_CB vector
 * sums, each step adding one weight element (broadcast from the weight
 * packed first into a->work, the block's channels side by side) times
 * the image row's elements under the vector (one unaligned load), over
 * the group's channels c, the kernel rows i and columns j in that order.
 * A vector whose every tap lies inside the image row loads without
 * checks; one that reaches past it (padding, or the last vector of a
 * row), or a column stride above 1, loads its elements one by one,
 * with zeros outside the image; a block of fewer channels than CONV_CB
 * has zero weights past them (the packing) and stores only its own.  Every
 * output element is summed by one task in that fixed order, starting
 * from its bias (or 0): the bits do not depend on the thread count.  The
 * wide clones fuse the products into FMAs (cpu/simd.h).
 */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_parallel.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"

/* Output channels a task sums at once (kernels.h, which sizes the
 * packed weight). */
#define CONV_CB PYGPU_CONV_CB
/* Multiply-adds a task at least (a few microseconds), so rows of small
 * images go several to a task. */
#define CONV_TASK_MACS (1 << 16)
#define CONV_MAX_TASKS 1024

typedef struct {
    void *out;
    const void *img, *packed, *bias;
    const pygpu_im2col_args *a;
    int64_t blocks;  /* channel blocks per group */
    int64_t units;   /* (n, group, block, oh) rows */
    int64_t ntasks;
} conv_job;

/* The vector of output columns ow0 .. ow0 + LANES - 1 of one row of
 * CONV_CB channels: acc[cb] += w[cb][c][i][j] * img[c][ih][ow * sw +
 * j * dw - pw], the weights packed as wp[k][cb] (k = (c * kh + i) * kw
 * + j).  One load at sw == 1 inside the row, else element by element. */
#define CONV_VEC(T, VT, LANES, SFX)                                          \
    static inline __attribute__((always_inline)) void conv_vec_##SFX(        \
        VT acc[CONV_CB], const T *img, const T *wp,                          \
        const pygpu_im2col_args *a, int64_t cg, int64_t oh, int64_t ow0)     \
    {                                                                        \
        const int64_t hw = a->height * a->width, sw = a->sw;                 \
        const int64_t iw0 = ow0 * sw - a->pw;                                \
        /* every tap's vector inside the row: plain loads, no checks */      \
        const int inner = sw == 1 && iw0 >= 0 &&                             \
                          iw0 + (a->kw - 1) * a->dw + LANES <= a->width;     \
        for (int64_t c = 0; c < cg; c++) {                                   \
            for (int64_t i = 0; i < a->kh; i++) {                            \
                const int64_t ih = oh * a->sh - a->ph + i * a->dh;           \
                if (ih < 0 || ih >= a->height) {                             \
                    continue;                                                \
                }                                                            \
                const T *row = img + c * hw + ih * a->width;                 \
                const T *wk = wp + (c * a->kh + i) * a->kw * CONV_CB;        \
                if (inner) {                                                 \
                    const T *xp = row + iw0;                                 \
                    for (int64_t j = 0; j < a->kw;                           \
                         j++, wk += CONV_CB, xp += a->dw) {                  \
                        VT x;                                                \
                        memcpy(&x, xp, sizeof(x));                           \
                        for (int cb = 0; cb < CONV_CB; cb++) {               \
                            acc[cb] += wk[cb] * x;                           \
                        }                                                    \
                    }                                                        \
                    continue;                                                \
                }                                                            \
                for (int64_t j = 0; j < a->kw; j++, wk += CONV_CB) {         \
                    const int64_t iw = ow0 * sw + j * a->dw - a->pw;         \
                    VT x;                                                    \
                    if (sw == 1 && iw >= 0 && iw + LANES <= a->width) {      \
                        memcpy(&x, row + iw, sizeof(x));                     \
                    }                                                        \
                    else {                                                   \
                        for (int q = 0; q < LANES; q++) {                    \
                            int64_t w = iw + q * sw;                         \
                            x[q] = w >= 0 && w < a->width ? row[w] : 0;      \
                        }                                                    \
                    }                                                        \
                    for (int cb = 0; cb < CONV_CB; cb++) {                   \
                        acc[cb] += wk[cb] * x;                               \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

/* One task's rows: unit u = ((n * groups + g) * blocks + b) * out_h + oh. */
#define CONV_TASK(T, VT, LANES, SFX)                                         \
    CONV_VEC(T, VT, LANES, SFX)                                              \
    PYGPU_CLONES(static, void, conv_rows_##SFX,                              \
                 (const conv_job *jb, int64_t u0, int64_t u1),               \
                 (jb, u0, u1))                                               \
    {                                                                        \
        const pygpu_im2col_args *a = jb->a;                                  \
        const int64_t cog = a->out_channels / a->groups;                     \
        const int64_t cg = a->channels / a->groups;                          \
        const int64_t K = cg * a->kh * a->kw;                                \
        const int64_t L = a->out_h * a->out_w;                               \
        const T *bias = jb->bias;                                            \
        for (int64_t u = u0; u < u1; u++) {                                  \
            const int64_t oh = u % a->out_h;                                 \
            const int64_t b = u / a->out_h % jb->blocks;                     \
            const int64_t g = u / a->out_h / jb->blocks % a->groups;         \
            const int64_t n = u / a->out_h / jb->blocks / a->groups;         \
            const int64_t co0 = g * cog + b * CONV_CB;                       \
            const int64_t ncb =                                              \
                cog - b * CONV_CB < CONV_CB ? cog - b * CONV_CB : CONV_CB;   \
            const T *wp = (const T *)jb->packed +                            \
                          (g * jb->blocks + b) * K * CONV_CB;                \
            const T *img = (const T *)jb->img +                              \
                           (n * a->channels + g * cg) * a->height *          \
                               a->width;                                     \
            T *out = (T *)jb->out + (n * a->out_channels + co0) * L +        \
                     oh * a->out_w;                                          \
            for (int64_t ow0 = 0; ow0 < a->out_w; ow0 += LANES) {            \
                VT acc[CONV_CB];                                             \
                for (int cb = 0; cb < CONV_CB; cb++) {                       \
                    T b0 = bias != NULL ? bias[co0 + (cb < ncb ? cb : 0)]    \
                                        : (T)0;                              \
                    for (int q = 0; q < LANES; q++) {                        \
                        acc[cb][q] = b0;                                     \
                    }                                                        \
                }                                                            \
                conv_vec_##SFX(acc, img, wp, a, cg, oh, ow0);                \
                int64_t m = a->out_w - ow0 < LANES ? a->out_w - ow0 : LANES; \
                for (int64_t cb = 0; cb < ncb; cb++) {                       \
                    T *dst = out + cb * L + ow0;                             \
                    if (m == LANES) {                                        \
                        memcpy(dst, &acc[cb], sizeof(VT));                   \
                    }                                                        \
                    else {                                                   \
                        for (int64_t q = 0; q < m; q++) {                    \
                            dst[q] = acc[cb][q];                             \
                        }                                                    \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#if PYGPU_HAVE_VEC8
CONV_TASK(float, vec8f, 8, f)
CONV_TASK(double, vec4d, 4, d)
#else
#error "cpu_conv.c needs the GNU vector types"
#endif

/* The weight (out_channels, K) packed as [group][block][k][cb], channels
 * past a group's end zero. */
#define CONV_PACK(T, SFX)                                                    \
    static void conv_pack_##SFX(T *wp, const T *w,                          \
                                const pygpu_im2col_args *a, int64_t blocks)  \
    {                                                                        \
        const int64_t cog = a->out_channels / a->groups;                     \
        const int64_t K = a->channels / a->groups * a->kh * a->kw;           \
        for (int64_t g = 0; g < a->groups; g++) {                            \
            for (int64_t b = 0; b < blocks; b++) {                           \
                T *dst = wp + (g * blocks + b) * K * CONV_CB;                \
                for (int64_t k = 0; k < K; k++) {                            \
                    for (int64_t cb = 0; cb < CONV_CB; cb++) {               \
                        int64_t co = b * CONV_CB + cb;                       \
                        dst[k * CONV_CB + cb] =                              \
                            co < cog ? w[(g * cog + co) * K + k] : (T)0;     \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

CONV_PACK(float, f)
CONV_PACK(double, d)

static void
conv_task_f(void *ctx, int64_t task)
{
    const conv_job *j = ctx;
    conv_rows_f(j, j->units * task / j->ntasks,
                j->units * (task + 1) / j->ntasks);
}

static void
conv_task_d(void *ctx, int64_t task)
{
    const conv_job *j = ctx;
    conv_rows_d(j, j->units * task / j->ntasks,
                j->units * (task + 1) / j->ntasks);
}

void
pygpu_cpu_conv2d(int dtype, void *out, const void *img, const void *weight,
                 const pygpu_im2col_args *a)
{
    const int64_t cog = a->out_channels / a->groups;
    conv_job j = {.out = out, .img = img, .packed = a->work,
                  .bias = a->bias, .a = a,
                  .blocks = (cog + CONV_CB - 1) / CONV_CB};
    j.units = a->batch * a->groups * j.blocks * a->out_h;
    if (j.units == 0) {
        return;
    }
    if (dtype == PYGPU_FLOAT32) {
        conv_pack_f(a->work, weight, a, j.blocks);
    }
    else {
        conv_pack_d(a->work, weight, a, j.blocks);
    }
    const int64_t per = CONV_CB * a->out_w * (a->channels / a->groups) *
                        a->kh * a->kw;
    int64_t t = j.units * per / CONV_TASK_MACS;
    t = t > CONV_MAX_TASKS ? CONV_MAX_TASKS : t;
    j.ntasks = t > j.units ? j.units : t < 1 ? 1 : t;
    pygpu_task_fn fn = dtype == PYGPU_FLOAT32 ? conv_task_f : conv_task_d;
    if (j.ntasks == 1) {
        fn(&j, 0);
    }
    else {
        pygpu_parallel_run(j.ntasks, fn, &j);
    }
}
