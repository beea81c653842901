/* cpu_softmax_short.c - softmax, log_softmax and logsumexp of short
 * contiguous float32 lines (n <= PYGPU_SHORT_LINE), and the statistics
 * cross-entropy's forward takes from them (cpu_xent.c).
 *
 * A line of ten classes fills a vector and a bit: read along its length,
 * most lanes idle and a line costs a maximum, a sum and a tail loop of
 * its own.  Here SHORT_GROUP lines go at once: copied into a tile, element
 * j of line i at t[j][i], each step works on element j of every line of
 * the group, one line per float lane.  Each line's arithmetic is the row
 * path's (cpu_softmax.c) step for step: its maximum element by element
 * (MAX_TAKES), exp(x - m) by pygpu_cpu_expf_neg, element j added into sum
 * lane j % PYGPU_SUM_LANES in order, the lanes added in the same tree; so
 * a line gets the same bits here as read along its length or through a
 * tile of columns.
 */
#include <math.h>
#include <stdint.h>

#include "cpu/cpu_softmax.h"
#include "cpu/simd.h"
#include "kernels/kernels.h"

/* Lines per group: one AVX-512 vector of floats, two AVX2 ones. */
#define SHORT_GROUP 16

/* Replaces m: larger, or NaN (so that NaN propagates); cpu_softmax.c's. */
#define MAX_TAKES(v, m) (((v) > (m)) | ((v) != (v)))

/* Lines x + i n, i < g <= SHORT_GROUP, n <= PYGPU_SHORT_LINE: each line's
 * maximum m[i] and sum s[i] of exp(x - m); t (n rows of SHORT_GROUP) left
 * holding exp(x - m) (keep PYGPU_KEEP_EXP) or x - m (PYGPU_KEEP_DIFF),
 * element j of line i at t[j * SHORT_GROUP + i].  Lanes past g repeat
 * line 0 and are not used. */
static inline __attribute__((always_inline)) void
group_stats(int keep, float *restrict t, const float *restrict x,
            int64_t n, int64_t g, float *restrict m, double *restrict s)
{
    for (int64_t i = 0; i < SHORT_GROUP; i++) {
        const float *xi = x + (i < g ? i : 0) * n;
        for (int64_t j = 0; j < n; j++) {
            t[j * SHORT_GROUP + i] = xi[j];
        }
    }
    /* the maximum in vector lanes (a NaN passed over), then, for a group
     * holding a NaN, again element by element for the NaN MAX_TAKES
     * keeps */
    int nan[SHORT_GROUP], any = 0;
    for (int i = 0; i < SHORT_GROUP; i++) {
        m[i] = t[i];
        nan[i] = t[i] != t[i];
    }
    for (int64_t j = 1; j < n; j++) {
        const float *r = t + j * SHORT_GROUP;
        for (int i = 0; i < SHORT_GROUP; i++) {
            m[i] = r[i] > m[i] ? r[i] : m[i];
            nan[i] |= r[i] != r[i];
        }
    }
    for (int i = 0; i < SHORT_GROUP; i++) {
        any |= nan[i];
    }
    if (any) {
        for (int i = 0; i < SHORT_GROUP; i++) {
            m[i] = t[i];
            for (int64_t j = 1; j < n; j++) {
                float v = t[j * SHORT_GROUP + i];
                m[i] = MAX_TAKES(v, m[i]) ? v : m[i];
            }
        }
    }
    float lane[PYGPU_SUM_LANES][SHORT_GROUP] = {{0}};
    for (int64_t j = 0; j < n; j++) {
        float *restrict r = t + j * SHORT_GROUP;
        float *restrict acc = lane[j % PYGPU_SUM_LANES];
        for (int i = 0; i < SHORT_GROUP; i++) {
            float d = r[i] - m[i];
            float e = pygpu_cpu_expf_neg(d);
            acc[i] += e;
            r[i] = keep == PYGPU_KEEP_EXP ? e : d;
        }
    }
    /* the row path's tree: lanes k and k + 8 in float, then k and k + 4
     * in double, then (0 + 2) + (1 + 3) */
    for (int i = 0; i < SHORT_GROUP; i++) {
        float h[PYGPU_SUM_LANES / 2];
        double d[PYGPU_SUM_LANES / 4];
        for (int k = 0; k < PYGPU_SUM_LANES / 2; k++) {
            h[k] = lane[k][i] + lane[k + PYGPU_SUM_LANES / 2][i];
        }
        for (int k = 0; k < PYGPU_SUM_LANES / 4; k++) {
            d[k] = (double)h[k] + (double)h[k + PYGPU_SUM_LANES / 4];
        }
        s[i] = (d[0] + d[2]) + (d[1] + d[3]);
    }
}

/* softmax / log_softmax / logsumexp of `lines` contiguous lines of n
 * elements (cpu_softmax.h). */
PYGPU_CLONES(, void, pygpu_cpu_short_rows_f32,
             (int op, float *y, const float *x, int64_t lines, int64_t n),
             (op, y, x, lines, n))
{
    float t[PYGPU_SHORT_LINE * SHORT_GROUP], m[SHORT_GROUP];
    double s[SHORT_GROUP];
    int keep = pygpu_cpu_softmax_keeps(op);
    for (int64_t o = 0; o < lines; o += SHORT_GROUP) {
        int64_t g = lines - o < SHORT_GROUP ? lines - o : SHORT_GROUP;
        float a[SHORT_GROUP];
        group_stats(keep, t, x + o * n, n, g, m, s);
        for (int i = 0; i < SHORT_GROUP; i++) {
            a[i] = pygpu_cpu_line_const(op, m[i], s[i]);
        }
        for (int64_t i = 0; i < g; i++) {
            if (op == PYGPU_LOGSUMEXP) {
                y[o + i] = a[i];
                continue;
            }
            float *yi = y + (o + i) * n;
            if (op == PYGPU_SOFTMAX) {
                for (int64_t j = 0; j < n; j++) {
                    yi[j] = t[j * SHORT_GROUP + i] * a[i];
                }
            }
            else {
                for (int64_t j = 0; j < n; j++) {
                    yi[j] = t[j * SHORT_GROUP + i] - a[i];
                }
            }
        }
    }
}

/* m[i] and ls[i] = log s[i] of lines x + i n, i < g <= PYGPU_SHORT_GROUP
 * (cpu_softmax.h). */
PYGPU_CLONES(, void, pygpu_cpu_short_stats_f32,
             (const float *x, int64_t n, int64_t g, float *m, float *ls),
             (x, n, g, m, ls))
{
    float t[PYGPU_SHORT_LINE * SHORT_GROUP], mm[SHORT_GROUP],
        ll[SHORT_GROUP];
    double ss[SHORT_GROUP];
    group_stats(PYGPU_KEEP_NONE, t, x, n, g, mm, ss);
    for (int i = 0; i < SHORT_GROUP; i++) {
        ll[i] = pygpu_cpu_log_sum(ss[i]);
    }
    for (int64_t i = 0; i < g; i++) {
        m[i] = mm[i];
        ls[i] = ll[i];
    }
}

_Static_assert(SHORT_GROUP == PYGPU_SHORT_GROUP,
               "cpu_softmax.h's group size is this file's");
