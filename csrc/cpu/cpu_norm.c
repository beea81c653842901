/* cpu_norm.c - layer norm and RMS norm over contiguous rows on the CPU:
 * the NORM kind (kernels/norm.h states the math and the buffers).
 *
 * The rows are cut into the parts the front end chose (about
 * PYGPU_NORM_PART_WORK elements each) and the parts run as the thread
 * pool's tasks.  A row is read a few times while it stays in the cache:
 * forward, its sum (layer norm), the sum of squared deviations, then the
 * output; backward, the sum of g, the sum of g * xhat, then dx, then the
 * part's parameter sums.  Each sum runs in LANES accumulators of the compute type
 * (element j into lane j % LANES, which vectorizes), added up in double.
 * float16 and bfloat16 are converted element by element as they are read
 * and rounded once when written; float64 computes in double.  A part's
 * parameter sums accumulate in the compute type over its rows, and the
 * parts' sums are added in double, in part order, after the job: the bits
 * depend on the sizes only, never on the threads. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_parallel.h"
#include "cpu/cpu_norm.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/bfloat16.h"
#include "kernels/kernels.h"
#include "kernels/norm.h"


/* The lanes of a sum, added up in double in a fixed order. */
#define LANES_TOTAL(lane, total)                                             \
    do {                                                                     \
        total = 0;                                                           \
        for (int k_ = 0; k_ < LANES; k_++) {                                 \
            total += (double)(lane)[k_];                                     \
        }                                                                    \
    } while (0)

/* The rows [r0, r1) forward. */
#define FORWARD_BODY(T, A, LD, ST)                                           \
    {                                                                        \
        const int64_t n = a->n;                                              \
        const A *w = (const A *)a->w, *b = (const A *)a->b;                  \
        for (int64_t r = r0; r < r1; r++) {                                  \
            const T *x = (const T *)a->x + r * n;                            \
            T *y = (T *)a->y + r * n;                                        \
            A lane[LANES] = {0};                                             \
            double total;                                                    \
            int64_t j;                                                       \
            A m = 0;                                                         \
            if (!a->rms) {                                                   \
                for (j = 0; j + LANES <= n; j += LANES) {                    \
                    for (int k = 0; k < LANES; k++) {                        \
                        lane[k] += LD(x[j + k]);                             \
                    }                                                        \
                }                                                            \
                for (int k = 0; j < n; j++, k++) {                           \
                    lane[k] += LD(x[j]);                                     \
                }                                                            \
                LANES_TOTAL(lane, total);                                    \
                m = (A)(total / (double)n);                                  \
                ((A *)a->mean)[r] = m;                                       \
                memset(lane, 0, sizeof(lane));                               \
            }                                                                \
            for (j = 0; j + LANES <= n; j += LANES) {                        \
                for (int k = 0; k < LANES; k++) {                            \
                    A d = LD(x[j + k]) - m;                                  \
                    lane[k] += d * d;                                        \
                }                                                            \
            }                                                                \
            for (int k = 0; j < n; j++, k++) {                               \
                A d = LD(x[j]) - m;                                          \
                lane[k] += d * d;                                            \
            }                                                                \
            LANES_TOTAL(lane, total);                                        \
            A rs = (A)(1.0 / sqrt(total / (double)n + a->eps));              \
            ((A *)a->rstd)[r] = rs;                                          \
            if (w != NULL && b != NULL) {                                    \
                for (j = 0; j < n; j++) {                                    \
                    y[j] = ST((LD(x[j]) - m) * rs * w[j] + b[j]);            \
                }                                                            \
            }                                                                \
            else if (w != NULL) {                                            \
                for (j = 0; j < n; j++) {                                    \
                    y[j] = ST((LD(x[j]) - m) * rs * w[j]);                   \
                }                                                            \
            }                                                                \
            else if (b != NULL) {                                            \
                for (j = 0; j < n; j++) {                                    \
                    y[j] = ST((LD(x[j]) - m) * rs + b[j]);                   \
                }                                                            \
            }                                                                \
            else {                                                           \
                for (j = 0; j < n; j++) {                                    \
                    y[j] = ST((LD(x[j]) - m) * rs);                          \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

/* The sums of g (given as an expression of j_) and g * xhat over a row,
 * in the lanes l1 and l2: one loop each (one loop filling both ran four
 * times slower: gcc keeps two lane arrays in memory). */
#define LANE_SUM(T, A, LD, L, TERM)                                          \
    do {                                                                     \
        int64_t j0_ = 0;                                                     \
        for (; j0_ + LANES <= n; j0_ += LANES) {                             \
            for (int k = 0; k < LANES; k++) {                                \
                const int64_t j_ = j0_ + k;                                  \
                L[k] += TERM;                                                \
            }                                                                \
        }                                                                    \
        for (int k = 0; j0_ + k < n; k++) {                                  \
            const int64_t j_ = j0_ + k;                                      \
            L[k] += TERM;                                                    \
        }                                                                    \
    } while (0)
#define GRAD_SUMS(T, A, LD, G)                                               \
    do {                                                                     \
        LANE_SUM(T, A, LD, l1, (G));                                         \
        LANE_SUM(T, A, LD, l2, (G) * ((LD(x[j_]) - m) * rs));                \
    } while (0)

/* The rows of part p backward: dx, and the part's parameter sums. */
#define BACKWARD_BODY(T, A, LD, ST)                                          \
    {                                                                        \
        const int64_t n = a->n;                                              \
        const int64_t r0 = p * a->rows_per_part;                             \
        const int64_t r1 = r0 + a->rows_per_part < a->rows                   \
                               ? r0 + a->rows_per_part                       \
                               : a->rows;                                    \
        const A *w = (const A *)a->w;                                        \
        A *pw = NULL, *pb = NULL;                                            \
        if (a->part_sums != NULL) {                                          \
            pw = (A *)a->part_sums + p * 2 * n;                              \
            pb = pw + n;                                                     \
            memset(pw, 0, 2 * (size_t)n * sizeof(A));                        \
        }                                                                    \
        for (int64_t r = r0; r < r1; r++) {                                  \
            const T *x = (const T *)a->x + r * n;                            \
            const T *dy = (const T *)a->dy + r * n;                          \
            const A m = a->rms ? (A)0 : ((const A *)a->mean)[r];             \
            const A rs = ((const A *)a->rstd)[r];                            \
            int64_t j;                                                       \
            if (a->dx != NULL) {                                             \
                T *dx = (T *)a->dx + r * n;                                  \
                A l1[LANES] = {0}, l2[LANES] = {0};                          \
                double s1, s2;                                               \
                if (w != NULL) {                                             \
                    GRAD_SUMS(T, A, LD, LD(dy[j_]) * w[j_]);                 \
                }                                                            \
                else {                                                       \
                    GRAD_SUMS(T, A, LD, LD(dy[j_]));                         \
                }                                                            \
                LANES_TOTAL(l1, s1);                                         \
                LANES_TOTAL(l2, s2);                                         \
                const A c1 = a->rms ? (A)0 : (A)(s1 / (double)n);            \
                const A c2 = (A)(s2 / (double)n);                            \
                if (w != NULL) {                                             \
                    for (j = 0; j < n; j++) {                                \
                        A xh = (LD(x[j]) - m) * rs;                          \
                        dx[j] = ST(rs * (LD(dy[j]) * w[j] - c1 - xh * c2));  \
                    }                                                        \
                }                                                            \
                else {                                                       \
                    for (j = 0; j < n; j++) {                                \
                        A xh = (LD(x[j]) - m) * rs;                          \
                        dx[j] = ST(rs * (LD(dy[j]) - c1 - xh * c2));         \
                    }                                                        \
                }                                                            \
            }                                                                \
            if (pw != NULL) {                                                \
                for (j = 0; j < n; j++) {                                    \
                    A d = LD(dy[j]);                                         \
                    pw[j] += d * ((LD(x[j]) - m) * rs);                      \
                    pb[j] += d;                                              \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#define NORM_LOOPS(SFX, T, A, LD, ST)                                        \
    PYGPU_CLONES(static, void, forward_##SFX,                                \
                 (const pygpu_norm_args *a, int64_t r0, int64_t r1),         \
                 (a, r0, r1))                                                \
    FORWARD_BODY(T, A, LD, ST)                                               \
    PYGPU_CLONES(static, void, backward_##SFX,                               \
                 (const pygpu_norm_args *a, int64_t p), (a, p))              \
    BACKWARD_BODY(T, A, LD, ST)

/* The parts' parameter sums, added in part order. */
#define PARAM_SUMS(SFX, A)                                                   \
    static void param_sums_##SFX(const pygpu_norm_args *a)                   \
    {                                                                        \
        const int64_t n = a->n;                                              \
        const A *ps = (const A *)a->part_sums;                               \
        for (int64_t j = 0; j < 2 * n; j++) {                                \
            A *dst = j < n ? (A *)a->dw : (A *)a->db;                        \
            if (dst == NULL) {                                               \
                continue;                                                    \
            }                                                                \
            double s = 0;                                                    \
            for (int64_t p = 0; p < a->parts; p++) {                         \
                s += (double)ps[p * 2 * n + j];                              \
            }                                                                \
            dst[j < n ? j : j - n] = (A)s;                                   \
        }                                                                    \
    }

NORM_LOOPS(f32, float, float, LD_SAME, ST_F32)
NORM_LOOPS(f64, double, double, LD_SAME, ST_F64)
NORM_LOOPS(f16, uint16_t, float, LD_F16, ST_F16)
NORM_LOOPS(bf16, uint16_t, float, LD_BF16, ST_BF16)
PARAM_SUMS(f32, float)
PARAM_SUMS(f64, double)

typedef struct norm_job {
    int op, dtype;
    const pygpu_norm_args *a;
} norm_job;

static void
norm_task(void *ctx, int64_t p)
{
    const norm_job *j = ctx;
    const pygpu_norm_args *a = j->a;
    if (j->op == PYGPU_NORM_FORWARD) {
        int64_t r0 = p * a->rows_per_part;
        int64_t r1 = r0 + a->rows_per_part < a->rows ? r0 + a->rows_per_part
                                                     : a->rows;
        switch (j->dtype) {
        case PYGPU_FLOAT32: forward_f32(a, r0, r1); break;
        case PYGPU_FLOAT64: forward_f64(a, r0, r1); break;
        case PYGPU_FLOAT16: forward_f16(a, r0, r1); break;
        case PYGPU_BFLOAT16: forward_bf16(a, r0, r1); break;
        default: break;
        }
        return;
    }
    switch (j->dtype) {
    case PYGPU_FLOAT32: backward_f32(a, p); break;
    case PYGPU_FLOAT64: backward_f64(a, p); break;
    case PYGPU_FLOAT16: backward_f16(a, p); break;
    case PYGPU_BFLOAT16: backward_bf16(a, p); break;
    default: break;
    }
}

void
pygpu_cpu_norm(int op, int dtype, const pygpu_norm_args *a)
{
    norm_job j = {.op = op, .dtype = dtype, .a = a};
    if (a->parts > 0) {
        pygpu_parallel_run(a->parts, norm_task, &j);
    }
    if (op == PYGPU_NORM_BACKWARD && a->part_sums != NULL) {
        if (dtype == PYGPU_FLOAT64) {
            param_sums_f64(a);
        }
        else {
            param_sums_f32(a);
        }
    }
}
