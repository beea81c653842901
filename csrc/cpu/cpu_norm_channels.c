/* cpu_norm_channels.c - batch norm's training step over the channels of a
 * contiguous [outer, C, inner] input on the CPU: the NORM kind's CHANNELS
 * ops (kernels/norm.h).  Channel c holds outer runs of inner contiguous
 * elements, inner apart by C * inner.
 *
 * A channel is one task of the thread pool (inputs under
 * PYGPU_NORM_PART_WORK elements run on the calling thread).  Forward reads it three
 * times: its sum, the sum of squared deviations from the mean (then mean,
 * biased variance and 1/std are written), the output; backward twice: the
 * sums of dy and dy * xhat (which are also db and dw), then dx.  Sums run
 * in LANES accumulators of the compute type per run, each run's total
 * added in double; float16 and bfloat16 are converted as they are read,
 * float64 computes in double, as in cpu_norm.c. */
#include <math.h>
#include <stdint.h>

#include "cpu/cpu_parallel.h"
#include "cpu/cpu_norm.h"
#include "cpu/half.h"
#include "cpu/simd.h"
#include "kernels/bfloat16.h"
#include "kernels/kernels.h"
#include "kernels/norm.h"


/* total += the sum over the run x[0 .. len) of EXPR (of v = LD(x[j]) and
 * j), in lanes. */
#define RUN_SUM(A, total, len, EXPR)                                         \
    do {                                                                     \
        A lane_[LANES] = {0};                                                \
        int64_t j = 0;                                                       \
        for (; j + LANES <= (len); j += LANES) {                             \
            for (int k_ = 0; k_ < LANES; k_++) {                             \
                lane_[k_] += EXPR(j + k_);                                   \
            }                                                                \
        }                                                                    \
        for (int k_ = 0; j < (len); j++, k_++) {                             \
            lane_[k_] += EXPR(j);                                            \
        }                                                                    \
        for (int k_ = 0; k_ < LANES; k_++) {                                 \
            total += (double)lane_[k_];                                      \
        }                                                                    \
    } while (0)

#define CHANNEL_LOOPS(SFX, T, A, LD, ST)                                     \
    PYGPU_CLONES(static, void, forward_##SFX,                                \
                 (const pygpu_norm_args *a, int64_t c), (a, c))              \
    {                                                                        \
        const int64_t inner = a->inner, outer = a->n / a->inner;             \
        const int64_t step = a->rows * inner;                                \
        const T *x0 = (const T *)a->x + c * inner;                           \
        T *y0 = (T *)a->y + c * inner;                                       \
        double total = 0;                                                    \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = x0 + o * step;                                      \
            RUN_SUM(A, total, inner, X_AT);                                  \
        }                                                                    \
        const A m = (A)(total / (double)a->n);                               \
        total = 0;                                                           \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = x0 + o * step;                                      \
            RUN_SUM(A, total, inner, DEV2_AT);                               \
        }                                                                    \
        const double var = total / (double)a->n;                             \
        const A rs = (A)(1.0 / sqrt(var + a->eps));                          \
        ((A *)a->mean)[c] = m;                                               \
        ((A *)a->rstd)[c] = rs;                                              \
        if (a->var != NULL) {                                                \
            ((A *)a->var)[c] = (A)var;                                       \
        }                                                                    \
        const A sc = a->w ? rs * ((const A *)a->w)[c] : rs;                  \
        const A sh = a->b ? ((const A *)a->b)[c] : (A)0;                     \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = x0 + o * step;                                      \
            T *y = y0 + o * step;                                            \
            for (int64_t j = 0; j < inner; j++) {                            \
                y[j] = ST((LD(x[j]) - m) * sc + sh);                         \
            }                                                                \
        }                                                                    \
    }                                                                        \
    PYGPU_CLONES(static, void, backward_##SFX,                               \
                 (const pygpu_norm_args *a, int64_t c), (a, c))              \
    {                                                                        \
        const int64_t inner = a->inner, outer = a->n / a->inner;             \
        const int64_t step = a->rows * inner;                                \
        const T *x0 = (const T *)a->x + c * inner;                           \
        const T *dy0 = (const T *)a->dy + c * inner;                         \
        const A m = ((const A *)a->mean)[c];                                 \
        const A rs = ((const A *)a->rstd)[c];                                \
        double s1 = 0, s2 = 0;                                               \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = x0 + o * step;                                      \
            const T *dy = dy0 + o * step;                                    \
            RUN_SUM(A, s1, inner, DY_AT);                                    \
            RUN_SUM(A, s2, inner, DY_XH_AT);                                 \
        }                                                                    \
        if (a->dw != NULL) {                                                 \
            ((A *)a->dw)[c] = (A)s2;                                         \
        }                                                                    \
        if (a->db != NULL) {                                                 \
            ((A *)a->db)[c] = (A)s1;                                         \
        }                                                                    \
        if (a->dx == NULL) {                                                 \
            return;                                                          \
        }                                                                    \
        const A wc = a->w ? ((const A *)a->w)[c] : (A)1;                     \
        const A k = rs * wc;                                                 \
        const A c1 = (A)(s1 / (double)a->n);                                 \
        const A c2 = (A)(s2 / (double)a->n);                                 \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = x0 + o * step;                                      \
            const T *dy = dy0 + o * step;                                    \
            T *dx = (T *)a->dx + c * inner + o * step;                       \
            for (int64_t j = 0; j < inner; j++) {                            \
                const A xh = (LD(x[j]) - m) * rs;                            \
                dx[j] = ST(k * (LD(dy[j]) - c1 - xh * c2));                  \
            }                                                                \
        }                                                                    \
    }

/* The terms of the sums, as functions of the index within a run (x, dy,
 * m and rs in scope where they are used). */
#define X_AT(i) LDX(x[i])
#define DEV2_AT(i) ((LDX(x[i]) - m) * (LDX(x[i]) - m))
#define DY_AT(i) LDX(dy[i])
#define DY_XH_AT(i) (LDX(dy[i]) * ((LDX(x[i]) - m) * rs))

#define LDX LD_SAME
CHANNEL_LOOPS(f32, float, float, LD_SAME, ST_F32)
CHANNEL_LOOPS(f64, double, double, LD_SAME, ST_F64)
#undef LDX
#define LDX LD_F16
CHANNEL_LOOPS(f16, uint16_t, float, LD_F16, ST_F16)
#undef LDX
#define LDX LD_BF16
CHANNEL_LOOPS(bf16, uint16_t, float, LD_BF16, ST_BF16)
#undef LDX

typedef struct channel_job {
    int op, dtype;
    const pygpu_norm_args *a;
} channel_job;

static void
channel_task(void *ctx, int64_t c)
{
    const channel_job *j = ctx;
    int fwd = j->op == PYGPU_NORM_CHANNELS_FORWARD;
    switch (j->dtype) {
    case PYGPU_FLOAT32:
        fwd ? forward_f32(j->a, c) : backward_f32(j->a, c);
        break;
    case PYGPU_FLOAT64:
        fwd ? forward_f64(j->a, c) : backward_f64(j->a, c);
        break;
    case PYGPU_FLOAT16:
        fwd ? forward_f16(j->a, c) : backward_f16(j->a, c);
        break;
    case PYGPU_BFLOAT16:
        fwd ? forward_bf16(j->a, c) : backward_bf16(j->a, c);
        break;
    default:
        break;
    }
}

void
pygpu_cpu_norm_channels(int op, int dtype, const pygpu_norm_args *a)
{
    channel_job j = {.op = op, .dtype = dtype, .a = a};
    if (a->rows == 0 || a->n == 0) {
        return;
    }
    if (a->rows * a->n < PYGPU_NORM_PART_WORK) { /* small: not worth a job */
        for (int64_t c = 0; c < a->rows; c++) {
            channel_task(&j, c);
        }
        return;
    }
    pygpu_parallel_run(a->rows, channel_task, &j);
}
