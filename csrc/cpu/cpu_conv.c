/* cpu_conv.c - the IM2COL kind's direct convolution (flag 2) on the CPU:
 * out = conv2d(img, weight) + bias without columns, float32 and float64
 * (the front end allows no other dtype here).
 *
 * A unit makes two output rows (n, oh) and (n, oh + 1) of CONV_CH (4)
 * output channels of one group, a vector of output columns at a time:
 * 2 x CONV_CH vector sums, each step adding one weight element
 * (broadcast once for both rows from the weight packed first into
 * a->work, a block of CONV_CB channels side by side) times the two image
 * rows' elements under the vectors (one unaligned load each), over the
 * group's channels c, the kernel rows i and columns j in that order.  A
 * vector whose every tap lies inside the image row loads without
 * checks; one that reaches past it (padding, or the last vector of a
 * row), or a column stride above 1, loads its elements one by one, with
 * zeros outside the image; a row outside the image (padding, or the
 * missing second row of an odd count) adds nothing.  Channels past a
 * group's end have zero weights (the packing) and are not stored.
 * Eight sums of four channels by two rows broadcast half as many weights
 * as eight channels by one row: LeNet's 6->16 5x5 layer on a batch of 64
 * took 0.75-0.79 ms against 0.85 on one thread, 0.39-0.41 against 0.45
 * on two (2-core test machine, the two builds in turn).  Every output
 * element is summed by one unit in that fixed order, starting from its
 * bias (or 0): the bits do not depend on the thread count.  The
 * wide clones fuse the products into FMAs (cpu/simd.h).
 */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_parallel.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"

/* Output channels packed side by side (kernels.h, which sizes the packed
 * weight); a task sums half of them at once over two output rows, so
 * that each weight it broadcasts serves two vectors. */
#define CONV_CB PYGPU_CONV_CB
#define CONV_CH (CONV_CB / 2)
/* Multiply-adds a task at least (a few microseconds), so rows of small
 * images go several to a task. */
#define CONV_TASK_MACS (1 << 16)
#define CONV_MAX_TASKS 1024

typedef struct {
    void *out;
    const void *img, *packed, *bias;
    const pygpu_im2col_args *a;
    int64_t blocks;  /* channel blocks per group */
    int64_t units;   /* (n, group, block, half, pair of rows) */
    int64_t ntasks;
} conv_job;

/* The vector of output columns ow0 .. ow0 + LANES - 1 of output rows oh
 * and oh + 1 (when has1) of CONV_CH channels: acc_r[cb] += w[cb][c][i][j]
 * * img[c][ih_r][ow * sw + j * dw - pw], the weights packed as wp[k][cb]
 * (k = (c * kh + i) * kw + j, CONV_CB apart).  Each weight is broadcast
 * once for both rows.  One load at sw == 1 inside the row, else element
 * by element. */
#define CONV_VEC(T, VT, LANES, SFX)                                          \
    static inline __attribute__((always_inline)) void conv_load_##SFX(      \
        VT *x, const T *row, int64_t iw, int64_t sw, int64_t width)          \
    {                                                                        \
        if (sw == 1 && iw >= 0 && iw + LANES <= width) {                     \
            memcpy(x, row + iw, sizeof(*x));                                 \
            return;                                                          \
        }                                                                    \
        for (int q = 0; q < LANES; q++) {                                    \
            int64_t w = iw + q * sw;                                         \
            (*x)[q] = w >= 0 && w < width ? row[w] : 0;                      \
        }                                                                    \
    }                                                                        \
    /* One image row's taps into one row's sums, loads checked. */         \
    static inline __attribute__((always_inline)) void conv_row_##SFX(        \
        VT acc[CONV_CH], const T *row, const T *wk,                          \
        const pygpu_im2col_args *a, int64_t iw0)                             \
    {                                                                        \
        for (int64_t j = 0; j < a->kw; j++) {                                \
            VT x;                                                            \
            conv_load_##SFX(&x, row, iw0 + j * a->dw, a->sw, a->width);      \
            for (int cb = 0; cb < CONV_CH; cb++) {                           \
                acc[cb] += wk[j * CONV_CB + cb] * x;                         \
            }                                                                \
        }                                                                    \
    }                                                                        \
    static inline __attribute__((always_inline)) void conv_vec_##SFX(        \
        VT acc0[CONV_CH], VT acc1[CONV_CH], const T *img, const T *wp,       \
        const pygpu_im2col_args *a, int64_t cg, int64_t oh, int has1,        \
        int64_t ow0)                                                         \
    {                                                                        \
        const int64_t height = a->height, width = a->width;                  \
        const int64_t hw = height * width, sw = a->sw, sh = a->sh;           \
        const int64_t kh = a->kh, kw = a->kw, dw = a->dw;                    \
        const int64_t iw0 = ow0 * sw - a->pw;                                \
        /* every tap's vector inside the row: plain loads, no checks */      \
        const int inner = sw == 1 && iw0 >= 0 &&                             \
                          iw0 + (kw - 1) * dw + LANES <= width;              \
        for (int64_t c = 0; c < cg; c++) {                                   \
            for (int64_t i = 0; i < kh; i++) {                               \
                const int64_t ih0 = oh * sh - a->ph + i * a->dh;             \
                const int64_t ih1 = ih0 + sh;                                \
                const int v0 = ih0 >= 0 && ih0 < height;                     \
                const int v1 = has1 && ih1 >= 0 && ih1 < height;             \
                const T *plane = img + c * hw;                               \
                const T *wk = wp + (c * kh + i) * kw * CONV_CB;              \
                if (inner && v0 && v1) {                                     \
                    const T *x0p = plane + ih0 * width + iw0;                \
                    const T *x1p = plane + ih1 * width + iw0;                \
                    for (int64_t j = 0; j < kw; j++, wk += CONV_CB,          \
                                 x0p += dw, x1p += dw) {                     \
                        VT x0, x1;                                           \
                        memcpy(&x0, x0p, sizeof(x0));                        \
                        memcpy(&x1, x1p, sizeof(x1));                        \
                        for (int cb = 0; cb < CONV_CH; cb++) {               \
                            acc0[cb] += wk[cb] * x0;                         \
                            acc1[cb] += wk[cb] * x1;                         \
                        }                                                    \
                    }                                                        \
                    continue;                                                \
                }                                                            \
                if (v0) {                                                    \
                    conv_row_##SFX(acc0, plane + ih0 * width, wk, a, iw0);   \
                }                                                            \
                if (v1) {                                                    \
                    conv_row_##SFX(acc1, plane + ih1 * width, wk, a, iw0);   \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

/* LANES values of acc (m of them when fewer) to dst. */
#define CONV_STORE(T, VT, LANES, dst, acc, m)                                \
    do {                                                                     \
        if ((m) == LANES) {                                                  \
            memcpy((dst), &(acc), sizeof(VT));                               \
        }                                                                    \
        else {                                                               \
            for (int64_t q_ = 0; q_ < (m); q_++) {                           \
                (dst)[q_] = (acc)[q_];                                       \
            }                                                                \
        }                                                                    \
    } while (0)

/* One task's units: u = (((n * groups + g) * blocks + b) * 2 + half) *
 * pairs + p, the output rows 2p and 2p + 1 of the channels b * CONV_CB +
 * half * CONV_CH .. + CONV_CH - 1 of group g. */
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
        const int64_t L = a->out_h * a->out_w, ow_n = a->out_w;              \
        const int64_t pairs = (a->out_h + 1) / 2;                            \
        const T *bias = jb->bias;                                            \
        for (int64_t u = u0; u < u1; u++) {                                  \
            const int64_t oh = u % pairs * 2;                                \
            const int64_t half = u / pairs % 2;                              \
            const int64_t b = u / pairs / 2 % jb->blocks;                    \
            const int64_t g = u / pairs / 2 / jb->blocks % a->groups;        \
            const int64_t n = u / pairs / 2 / jb->blocks / a->groups;        \
            const int64_t ch0 = b * CONV_CB + half * CONV_CH;                \
            if (ch0 >= cog) {                                                \
                continue;                                                    \
            }                                                                \
            const int64_t ncb = cog - ch0 < CONV_CH ? cog - ch0 : CONV_CH;   \
            const int has1 = oh + 1 < a->out_h;                              \
            const int64_t co0 = g * cog + ch0;                               \
            const T *wp = (const T *)jb->packed +                            \
                          (g * jb->blocks + b) * K * CONV_CB +               \
                          half * CONV_CH;                                    \
            const T *img = (const T *)jb->img +                              \
                           (n * a->channels + g * cg) * a->height *          \
                               a->width;                                     \
            T *out = (T *)jb->out + (n * a->out_channels + co0) * L +        \
                     oh * ow_n;                                              \
            for (int64_t ow0 = 0; ow0 < ow_n; ow0 += LANES) {                \
                VT acc0[CONV_CH], acc1[CONV_CH];                             \
                for (int cb = 0; cb < CONV_CH; cb++) {                       \
                    T b0 = bias != NULL ? bias[co0 + (cb < ncb ? cb : 0)]    \
                                        : (T)0;                              \
                    for (int q = 0; q < LANES; q++) {                        \
                        acc0[cb][q] = b0;                                    \
                        acc1[cb][q] = b0;                                    \
                    }                                                        \
                }                                                            \
                conv_vec_##SFX(acc0, acc1, img, wp, a, cg, oh, has1, ow0);   \
                int64_t m = ow_n - ow0 < LANES ? ow_n - ow0 : LANES;         \
                for (int64_t cb = 0; cb < ncb; cb++) {                       \
                    CONV_STORE(T, VT, LANES, out + cb * L + ow0, acc0[cb],   \
                               m);                                           \
                    if (has1) {                                              \
                        CONV_STORE(T, VT, LANES, out + cb * L + ow_n + ow0,  \
                                   acc1[cb], m);                             \
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
    j.units = a->batch * a->groups * j.blocks * 2 * ((a->out_h + 1) / 2);
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
                        a->kh * a->kw; /* a unit: CONV_CH channels, 2 rows */
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
