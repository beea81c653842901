/* random.cu - uniform and normal random numbers against the host's
 * Philox (kernels/philox.h, shared with the kernels) (selftest.h). */
#include "selftest.h"

#include "kernels/philox.h"

// ------------------------------------------------------------ random

static double ref_random(int dt, int normal, pygpu_philox_state st,
                         int64_t e)
{
    pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)(e / 4), st.seed);
    int k = (int)(e % 4);
    if (!normal) {
        return dt == PYGPU_FLOAT64   ? pygpu_u01_f64(w.v[k])
               : dt == PYGPU_FLOAT16 ? pygpu_u01_f16(w.v[k])
                                     : pygpu_u01_f32(w.v[k]);
    }
    uint32_t w0 = w.v[k & 2], w1 = w.v[(k & 2) + 1];
    if (dt == PYGPU_FLOAT64) {
        return pygpu_normal_f64(w0, w1, k & 1);
    }
    return round_to(dt, pygpu_normal_f32(w0, w1, k & 1));
}

void test_random(void)
{
    /* 2^22 + 5 elements are 2^20 + 2 counters: several trips of a wave. */
    const int64_t sizes[] = {0, 1, 3, 4, 5, 1001, 65536 + 3,
                             ((int64_t)1 << 22) + 5};
    /* The second state carries the counter across 32 bits. */
    const pygpu_philox_state states[] = {{0, 0},
                                         {0x0123456789ABCDEFull, 0xFFFFFFFEull}};
    const int dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT16, PYGPU_FLOAT64};
    for (int dt : dtypes) {
        for (int normal = 0; normal < 2; normal++) {
            Case c("random %s %s", DTYPE_NAME[dt],
                   normal ? "normal" : "uniform");
            int salt = 0;
            for (int64_t n : sizes) {
                for (int s = 0; s < 2; s++) {
                    if (n > 65539 && s == 0) {
                        continue; /* the big size with one state */
                    }
                    const pygpu_philox_state st = states[s];
                    DevArr out = dev_alloc(dt, n, salt++ % 4);
                    c.expect_success(pygpu_cuda_random(dt, out.ptr(), n, normal,
                                                       st, g_stream),
                                     "random");
                    HostArr h = dev_get(out, dt);
                    for (int64_t e = 0; c.ok && e < n; e++) {
                        double want = ref_random(dt, normal, st, e);
                        double got = h.get(e);
                        /* Uniform is exact, and so are float and
                         * float16 normals (normal.h rounds each operation
                         * alike on both sides); float64 normals go through
                         * the device's and the host's log/sin/cos, which
                         * may differ in the last bits. */
                        double tol = normal && dt == PYGPU_FLOAT64 ? 1e-12
                                                                   : 0;
                        if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
                            c.fail("n=%lld element %lld: got %.17g, want "
                                   "%.17g",
                                   (long long)n, (long long)e, got, want);
                        }
                    }
                    if (c.ok && !dev_guards_ok(out)) {
                        c.fail("n=%lld: wrote outside the output",
                               (long long)n);
                    }
                    dev_free(out);
                }
            }
            report(c);
        }
    }
}

