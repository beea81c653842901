/* cpu_im2col.c - the IM2COL kind on the CPU: an image batch to its
 * columns (torch's unfold) and the columns summed back into an image
 * (fold); shapes and layout in kernels.h (pygpu_im2col_args).
 *
 * im2col moves elements as they are (a 2-, 4- or 8-byte copy serves every
 * dtype), one column row (one (n, c, i, j)) at a time: each block row is
 * a zeroed head, the image row's elements and a zeroed tail.  col2im sums each image plane (n, c) on one thread, adding
 * the column rows in (i, j, oh, ow) order, so every element's sum has
 * the same order on any number of threads (and CUDA's gather,
 * kernels/im2col.cu); float16 and bfloat16 sum in float, gathering each
 * element's terms, and round once.  Rows and planes are grouped into
 * tasks of about PYGPU_TASK_MIN elements over the thread pool.
 */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_parallel.h"
#include "cpu/cpu_split.h"
#include "cpu/half.h"
#include "kernels/kernels.h"

/* Tasks of a job at most. */
#define IM2COL_MAX_TASKS 256

/* floor(a / b) and ceil(a / b) for b > 0. */
static inline int64_t
floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static inline int64_t
ceil_div(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* The blocks ow in [*lo, *hi) whose element ow * s + off lies in [0, n). */
static inline void
valid_range(int64_t off, int64_t s, int64_t n, int64_t count, int64_t *lo,
            int64_t *hi)
{
    int64_t a = s == 1 ? -off : ceil_div(-off, s);
    int64_t b = s == 1 ? n - off : floor_div(n - 1 - off, s) + 1;
    *lo = a < 0 ? 0 : a > count ? count : a;
    *hi = b < *lo ? *lo : b > count ? count : b;
}

/* Tasks for `units` units of `per` elements each: about PYGPU_TASK_MIN
 * elements a task, at most IM2COL_MAX_TASKS, at least 1. */
static int64_t
task_count(int64_t units, int64_t per)
{
    int64_t total = units * per;
    int64_t t = total / PYGPU_TASK_MIN;
    if (t > IM2COL_MAX_TASKS) {
        t = IM2COL_MAX_TASKS;
    }
    if (t > units) {
        t = units;
    }
    return t < 1 ? 1 : t;
}

/* --------------------------------------------------------------- im2col */

typedef struct {
    char *cols;
    const char *img;
    const pygpu_im2col_args *a;
    int64_t esize, rows, ntasks;
} im2col_job;

/* Column row ((n * C + c) * kh + i) * kw + j, elements of type T (any
 * type of the dtype's size): each block row a zeroed head, the image row's
 * elements from lo to hi (at stride 1 by 8 at a time, as one fixed-size
 * copy, then one by one), a zeroed tail. */
#define IM2COL_ROW(T, name)                                                  \
    /* dst[0 .. n) = src[0 .. n): 8 at a time as one fixed-size copy, then  \
     * one by one. */                                                        \
    static inline void name##_run(T *restrict dst, const T *restrict src,   \
                                  int64_t n)                                 \
    {                                                                        \
        int64_t i = 0;                                                       \
        for (; i + 8 <= n; i += 8) {                                         \
            memcpy(dst + i, src + i, 8 * sizeof(T));                         \
        }                                                                    \
        for (; i < n; i++) {                                                 \
            dst[i] = src[i];                                                 \
        }                                                                    \
    }                                                                        \
    static void name(T *restrict dst, const T *restrict src,                \
                     const pygpu_im2col_args *a, int64_t i, int64_t j)       \
    {                                                                        \
        /* the arguments in locals: stores through dst may alias them */     \
        const int64_t off_w = j * a->dw - a->pw, sw = a->sw;                 \
        const int64_t ow_n = a->out_w, oh_n = a->out_h, sh = a->sh;          \
        const int64_t ih0 = i * a->dh - a->ph;                               \
        const int64_t height = a->height, width = a->width;                  \
        int64_t lo, hi;                                                      \
        valid_range(off_w, sw, width, ow_n, &lo, &hi);                       \
        if (sw == 1 && lo == 0 && hi == ow_n && ih0 >= 0 &&                  \
            (oh_n - 1) * sh + ih0 < height) {                                \
            /* no padding on this row: a block copy */                       \
            const T *restrict row = src + ih0 * width + off_w;               \
            for (int64_t oh = 0; oh < oh_n; oh++) {                          \
                name##_run(dst, row, ow_n);                                  \
                dst += ow_n;                                                 \
                row += sh * width;                                           \
            }                                                                \
            return;                                                          \
        }                                                                    \
        for (int64_t oh = 0; oh < oh_n; oh++, dst += ow_n) {                 \
            int64_t ih = oh * sh + ih0;                                      \
            if (ih < 0 || ih >= height || lo == hi) {                        \
                for (int64_t ow = 0; ow < ow_n; ow++) {                      \
                    dst[ow] = 0;                                             \
                }                                                            \
                continue;                                                    \
            }                                                                \
            const T *restrict row = src + ih * width + off_w;                \
            for (int64_t ow = 0; ow < lo; ow++) {                            \
                dst[ow] = 0;                                                 \
            }                                                                \
            if (sw == 1) {                                                   \
                name##_run(dst + lo, row + lo, hi - lo);                     \
            }                                                                \
            else {                                                           \
                for (int64_t ow = lo; ow < hi; ow++) {                       \
                    dst[ow] = row[ow * sw];                                  \
                }                                                            \
            }                                                                \
            for (int64_t ow = hi; ow < ow_n; ow++) {                         \
                dst[ow] = 0;                                                 \
            }                                                                \
        }                                                                    \
    }

IM2COL_ROW(uint16_t, im2col_row_2)
IM2COL_ROW(uint32_t, im2col_row_4)
IM2COL_ROW(uint64_t, im2col_row_8)

/* Column row r of the job, (plane, i, j) = (r / (kh * kw), r / kw % kh,
 * r % kw), counted along rather than divided out for each row. */
static void
im2col_task(void *ctx, int64_t task)
{
    const im2col_job *jb = ctx;
    const pygpu_im2col_args *a = jb->a;
    const int64_t L = a->out_h * a->out_w, hw = a->height * a->width;
    int64_t r0 = jb->rows * task / jb->ntasks;
    int64_t r1 = jb->rows * (task + 1) / jb->ntasks;
    int64_t j = r0 % a->kw, i = r0 / a->kw % a->kh;
    int64_t plane = r0 / (a->kw * a->kh);
    for (int64_t r = r0; r < r1; r++) {
        switch (jb->esize) {
        case 2:
            im2col_row_2((uint16_t *)jb->cols + r * L,
                         (const uint16_t *)jb->img + plane * hw, a, i, j);
            break;
        case 4:
            im2col_row_4((uint32_t *)jb->cols + r * L,
                         (const uint32_t *)jb->img + plane * hw, a, i, j);
            break;
        default:
            im2col_row_8((uint64_t *)jb->cols + r * L,
                         (const uint64_t *)jb->img + plane * hw, a, i, j);
            break;
        }
        if (++j == a->kw) {
            j = 0;
            if (++i == a->kh) {
                i = 0;
                plane++;
            }
        }
    }
}

void
pygpu_cpu_im2col(int dtype, void *cols, const void *img,
                 const pygpu_im2col_args *a)
{
    im2col_job j = {.cols = cols, .img = img, .a = a,
                    .esize = dtype == PYGPU_FLOAT64   ? 8
                             : dtype == PYGPU_FLOAT32 ? 4
                                                      : 2,
                    .rows = a->batch * a->channels * a->kh * a->kw};
    j.ntasks = task_count(j.rows, a->out_h * a->out_w);
    if (j.ntasks == 1) {
        im2col_task(&j, 0);
    }
    else {
        pygpu_parallel_run(j.ntasks, im2col_task, &j);
    }
}

/* --------------------------------------------------------------- col2im */

typedef struct {
    void *img;
    const void *cols;
    const pygpu_im2col_args *a;
    int dtype;
    int64_t planes, ntasks;
} col2im_job;

/* One plane of float32 or float64: zeroed, then each column row added in
 * (i, j, oh, ow) order.  The arguments are read into locals first: stores
 * through img may alias them, which would reload each in the loops. */
#define COL2IM_PLANE(T, name)                                                \
    static void name(T *img, const T *cols, const pygpu_im2col_args *a)      \
    {                                                                        \
        const int64_t oh_n = a->out_h, ow_n = a->out_w, L = oh_n * ow_n;     \
        const int64_t sw = a->sw, sh = a->sh, kh = a->kh, kw = a->kw;        \
        const int64_t height = a->height, width = a->width;                  \
        memset(img, 0, sizeof(T) * (size_t)(height * width));                \
        for (int64_t i = 0; i < kh; i++) {                                   \
            const int64_t ih0 = i * a->dh - a->ph;                           \
            for (int64_t j = 0; j < kw; j++) {                               \
                const T *row = cols + (i * kw + j) * L;                      \
                int64_t off_w = j * a->dw - a->pw, lo, hi;                   \
                valid_range(off_w, sw, width, ow_n, &lo, &hi);               \
                for (int64_t oh = 0; oh < oh_n; oh++) {                      \
                    int64_t ih = oh * sh + ih0;                              \
                    if (ih < 0 || ih >= height) {                            \
                        continue;                                            \
                    }                                                        \
                    T *restrict dst = img + ih * width + off_w;              \
                    const T *restrict src = row + oh * ow_n;                 \
                    if (sw == 1) {                                           \
                        for (int64_t ow = lo; ow < hi; ow++) {               \
                            dst[ow] += src[ow];                              \
                        }                                                    \
                    }                                                        \
                    else {                                                   \
                        for (int64_t ow = lo; ow < hi; ow++) {               \
                            dst[ow * sw] += src[ow];                         \
                        }                                                    \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

COL2IM_PLANE(float, col2im_plane_f)
COL2IM_PLANE(double, col2im_plane_d)

static inline float
half_load(const uint16_t *p, int64_t k, int bf16)
{
    return bf16 ? pygpu_bf16_to_float(p[k]) : pygpu_half_to_float(p[k]);
}

/* One plane of float16 or bfloat16: each element's terms gathered in
 * (i, j) order, summed in float and rounded once. */
static void
col2im_plane_half(uint16_t *img, const uint16_t *cols,
                  const pygpu_im2col_args *a, int bf16)
{
    const int64_t L = a->out_h * a->out_w;
    for (int64_t h = 0; h < a->height; h++) {
        for (int64_t w = 0; w < a->width; w++) {
            float sum = 0.0f;
            for (int64_t i = 0; i < a->kh; i++) {
                int64_t t = h + a->ph - i * a->dh;
                if (t < 0 || t % a->sh != 0 || t / a->sh >= a->out_h) {
                    continue;
                }
                for (int64_t j = 0; j < a->kw; j++) {
                    int64_t u = w + a->pw - j * a->dw;
                    if (u < 0 || u % a->sw != 0 || u / a->sw >= a->out_w) {
                        continue;
                    }
                    sum += half_load(cols, (i * a->kw + j) * L +
                                               t / a->sh * a->out_w +
                                               u / a->sw, bf16);
                }
            }
            img[h * a->width + w] = bf16 ? pygpu_float_to_bf16(sum)
                                         : pygpu_float_to_half(sum);
        }
    }
}

static void
col2im_task(void *ctx, int64_t task)
{
    const col2im_job *j = ctx;
    const pygpu_im2col_args *a = j->a;
    const int64_t hw = a->height * a->width;
    const int64_t rows = a->kh * a->kw * a->out_h * a->out_w;
    int64_t p0 = j->planes * task / j->ntasks;
    int64_t p1 = j->planes * (task + 1) / j->ntasks;
    for (int64_t p = p0; p < p1; p++) {
        switch (j->dtype) {
        case PYGPU_FLOAT32:
            col2im_plane_f((float *)j->img + p * hw,
                           (const float *)j->cols + p * rows, a);
            break;
        case PYGPU_FLOAT64:
            col2im_plane_d((double *)j->img + p * hw,
                           (const double *)j->cols + p * rows, a);
            break;
        default:
            col2im_plane_half((uint16_t *)j->img + p * hw,
                              (const uint16_t *)j->cols + p * rows, a,
                              j->dtype == PYGPU_BFLOAT16);
            break;
        }
    }
}

void
pygpu_cpu_col2im(int dtype, void *img, const void *cols,
                 const pygpu_im2col_args *a)
{
    col2im_job j = {.img = img, .cols = cols, .a = a, .dtype = dtype,
                    .planes = a->batch * a->channels};
    j.ntasks = task_count(j.planes,
                          a->kh * a->kw * a->out_h * a->out_w +
                              a->height * a->width);
    if (j.ntasks == 1) {
        col2im_task(&j, 0);
    }
    else {
        pygpu_parallel_run(j.ntasks, col2im_task, &j);
    }
}
