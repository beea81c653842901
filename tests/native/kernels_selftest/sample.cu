/* sample.cu - exponential, integer, Poisson and Bernoulli numbers against
 * the host's element rules (kernels/sample.h, shared with the kernels)
 * (selftest.h). */
#include "selftest.h"

#include "kernels/sample.h"

// ------------------------------------------------------------ sample

static const pygpu_philox_state SAMPLE_STATES[] = {
    {0, 0}, {0x0123456789ABCDEFull, 0xFFFFFFFEull}};
static const int64_t SAMPLE_SIZES[] = {0, 1, 3, 4, 5, 1001, 65536 + 3};

static void test_exponential(void)
{
    const int dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT16, PYGPU_FLOAT64};
    const pygpu_random_args a = {2.5, 0, 0, NULL, 0, 0};
    for (int dt : dtypes) {
        Case c("sample exponential %s", DTYPE_NAME[dt]);
        int salt = 0;
        for (int64_t n : SAMPLE_SIZES) {
            for (const pygpu_philox_state &st : SAMPLE_STATES) {
                DevArr out = dev_alloc(dt, n, salt++ % 4);
                c.expect_success(pygpu_cuda_sample(dt, out.ptr(), n,
                                                   PYGPU_DIST_EXPONENTIAL, &a,
                                                   st, g_stream),
                                 "exponential");
                HostArr h = dev_get(out, dt);
                for (int64_t e = 0; c.ok && e < n; e++) {
                    pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)(e / 4),
                                                 st.seed);
                    uint32_t x = w.v[e % 4];
                    /* float rules are exact on both sides; float64 goes
                     * through the host's and the device's log. */
                    double want = dt == PYGPU_FLOAT64
                                      ? pygpu_exponential_f64(x, a.lambd)
                                      : round_to(dt, pygpu_exponential_f32(
                                                         x, a.lambd));
                    double tol = dt == PYGPU_FLOAT64 ? 1e-13 : 0;
                    double got = h.get(e);
                    if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
                        c.fail("n=%lld element %lld: got %.17g, want %.17g",
                               (long long)n, (long long)e, got, want);
                    }
                }
                if (c.ok && !dev_guards_ok(out)) {
                    c.fail("n=%lld: wrote outside the output", (long long)n);
                }
                dev_free(out);
            }
        }
        report(c);
    }
}

static void test_integers(void)
{
    /* A small range, one of exactly 2^32, a wide one and all of 2^64. */
    const pygpu_random_args ranges[] = {
        {0, -7, 10, NULL, 0, 0},
        {0, 5, 4294967296ull, NULL, 0, 0},
        {0, -(1ll << 40), 3ull << 40, NULL, 0, 0},
        {0, INT64_MIN, 0, NULL, 0, 0}};
    for (const pygpu_random_args &a : ranges) {
        Case c("sample integers low %lld range %llu", (long long)a.low,
               (unsigned long long)a.range);
        int salt = 0;
        for (int64_t n : SAMPLE_SIZES) {
            for (const pygpu_philox_state &st : SAMPLE_STATES) {
                DevArr out = dev_alloc(PYGPU_INT64, n, salt++ % 4);
                c.expect_success(pygpu_cuda_sample(PYGPU_INT64, out.ptr(), n,
                                                   PYGPU_DIST_INTEGER, &a, st,
                                                   g_stream),
                                 "integers");
                HostArr h = dev_get(out, PYGPU_INT64);
                for (int64_t e = 0; c.ok && e < n; e++) {
                    uint64_t ctr = st.offset + (uint64_t)(e / 4);
                    int k = (int)(e % 4);
                    uint32_t lo = pygpu_philox(ctr, st.seed).v[k];
                    uint32_t hi = pygpu_philox_sub(ctr, 1, st.seed).v[k];
                    int64_t want = pygpu_random_integer(lo, hi, a.low,
                                                        a.range);
                    if (h.get_i64(e) != want) {
                        c.fail("n=%lld element %lld: got %lld, want %lld",
                               (long long)n, (long long)e,
                               (long long)h.get_i64(e), (long long)want);
                    }
                }
                if (c.ok && !dev_guards_ok(out)) {
                    c.fail("n=%lld: wrote outside the output", (long long)n);
                }
                dev_free(out);
            }
        }
        report(c);
    }
}

static void test_poisson(void)
{
    const int dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT64};
    const double rates[] = {0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1e5};
    const int nr = (int)(sizeof rates / sizeof rates[0]);
    for (int dt : dtypes) {
        Case c("sample poisson %s", DTYPE_NAME[dt]);
        const int64_t n = 7 * 4001;
        const pygpu_philox_state st = SAMPLE_STATES[1];
        HostArr r(dt, n);
        for (int64_t e = 0; e < n; e++) {
            r.set(e, rates[e % nr]);
        }
        DevArr din = dev_alloc(dt, n, 0);
        dev_put(din, r);
        DevArr out = dev_alloc(dt, n, 1);
        pygpu_random_args a = {0, 0, 0, din.ptr(), 0, 0};
        c.expect_success(pygpu_cuda_sample(dt, out.ptr(), n,
                                           PYGPU_DIST_POISSON, &a, st,
                                           g_stream),
                         "poisson");
        HostArr h = dev_get(out, dt);
        /* exp and log may differ in the last bit between the host and the
         * device: a count may differ where a test lands on its bound. */
        int64_t differ = 0;
        for (int64_t e = 0; c.ok && e < n; e++) {
            double want = pygpu_poisson(r.get(e), st.offset + (uint64_t)(e / 4),
                                        (int)(e % 4), st.seed);
            if (h.get(e) != want) {
                differ++;
            }
        }
        if (differ > n / 1000) {
            c.fail("%lld of %lld counts differ from the host's",
                   (long long)differ, (long long)n);
        }
        if (c.ok && !dev_guards_ok(out)) {
            c.fail("wrote outside the output");
        }
        dev_free(din);
        dev_free(out);
        report(c);
    }
}

static void test_bernoulli(void)
{
    const int dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT16, PYGPU_FLOAT64};
    for (int dt : dtypes) {
        for (int per_elem = 0; per_elem < 2; per_elem++) {
            Case c("sample bernoulli %s %s", DTYPE_NAME[dt],
                   per_elem ? "per element" : "one p");
            const int64_t n = 65536 + 7;
            const pygpu_philox_state st = SAMPLE_STATES[1];
            HostArr probs(dt, n);
            for (int64_t e = 0; e < n; e++) {
                probs.set(e, (double)(e % 11) / 10.0); /* 0, 0.1, .., 1 */
            }
            DevArr din = dev_alloc(dt, n, 0);
            dev_put(din, probs);
            DevArr out = dev_alloc(dt, n, 3);
            pygpu_random_args a = {0, 0, 0, per_elem ? din.ptr() : NULL,
                                   0.3, 1.25};
            c.expect_success(pygpu_cuda_sample(dt, out.ptr(), n,
                                               PYGPU_DIST_BERNOULLI, &a, st,
                                               g_stream),
                             "bernoulli");
            HostArr h = dev_get(out, dt);
            for (int64_t e = 0; c.ok && e < n; e++) {
                pygpu_u32x4 w = pygpu_philox(st.offset + (uint64_t)(e / 4),
                                             st.seed);
                double p = per_elem ? probs.get(e) : a.p;
                double want = pygpu_bernoulli(w.v[e % 4], p) ? 1.25 : 0.0;
                if (h.get(e) != want) {
                    c.fail("element %lld: got %.17g, want %.17g",
                           (long long)e, h.get(e), want);
                }
            }
            if (c.ok && !dev_guards_ok(out)) {
                c.fail("wrote outside the output");
            }
            dev_free(din);
            dev_free(out);
            report(c);
        }
    }
}

void test_sample(void)
{
    test_exponential();
    test_integers();
    test_poisson();
    test_bernoulli();
}
