/* elementwise.cu - binary, binary_scalar, unary, copy and fill against
 * host references, over the geometries of geometry.cu (selftest.h). */
#include "selftest.h"

#include "gelu_slack.h"

// ------------------------------------------------------- elementwise

/* Runs launch(out, a, b, g) over geometry gc with random inputs of in_dt
 * and compares every output element with ref(a, b); salt varies the
 * misalignment of the three arrays.  With rtol > 0, finite results may
 * differ from ref by rtol relative (plus atol, for subnormal results, plus
 * gelu_slack(slack_op, a) for the gelu family, computed in float or, for
 * float64, in double). */
template <typename Launch, typename Ref>
static void check_elementwise(Case &c, int out_dt, int in_dt,
                              const GeomCase &gc, int salt, bool specials,
                              Launch launch, Ref ref, double rtol = 0,
                              double atol = 0, int slack_op = -1)
{
    const double unit = in_dt == PYGPU_FLOAT64 ? 0x1p-53 : 0x1p-24;
    const pygpu_geom &g = gc.g;
    DevArr out = dev_alloc(out_dt, extent(g, 0), salt % 4);
    DevArr a = dev_alloc(in_dt, extent(g, 1), (salt + 1) % 4);
    DevArr b = dev_alloc(in_dt, extent(g, 2), (salt + 2) % 4);
    HostArr ha = random_arr(in_dt, a.n, specials);
    HostArr hb = random_arr(in_dt, b.n, specials);
    dev_put(a, ha);
    dev_put(b, hb);
    c.expect_success(launch(out.ptr(), a.ptr(), b.ptr(), &g), gc.name);
    HostArr ho = dev_get(out, out_dt);
    const int64_t n = numel(g);
    GeomIter it(g);
    for (int64_t i = 0; c.ok && i < n; i++, it.next()) {
        const double x = ha.get(it.off[1]), y = hb.get(it.off[2]);
        const double want = ref(x, y);
        const double got = ho.get(it.off[0]);
        const double slack = slack_op >= 0 ? gelu_slack(slack_op, x, unit)
                                           : 0.0;
        const bool near = rtol > 0 && isfinite(got) && isfinite(want) &&
                          fabs(got - want) <= rtol * fabs(want) + atol + slack;
        if (!same(got, want) && !near) {
            c.fail("%s, element %lld (a=%.9g b=%.9g): got %.17g, want %.17g",
                   gc.name, (long long)i, x, y, got, want);
        }
    }
    if (c.ok && !dev_guards_ok(out)) {
        c.fail("%s: wrote outside the output", gc.name);
    }
    dev_free(out);
    dev_free(a);
    dev_free(b);
}

static double ref_binop(int dt, int op, double a, double b)
{
    if (dt == PYGPU_INT64) {
        return (double)ref_i64(op, (int64_t)a, (int64_t)b);
    }
    if (dt == PYGPU_FLOAT64) {
        return ref_binop_d(op, a, b);
    }
    /* float16 computes in float and rounds the float result: with a scalar
     * that is not a half value, that can differ from rounding the exact
     * result once, so the reference does the same. */
    return round_to(dt, ref_binop_f(op, (float)a, (float)b));
}

/* pow is the C library's on the host and CUDA's (within a few ulp) on the
 * GPU; every other binary op is exact. */
static void binary_tolerance(int op, int dt, double *rtol, double *atol)
{
    *rtol = *atol = 0;
    if (op != PYGPU_POW || dt == PYGPU_INT64) {
        return;
    }
    *rtol = dt == PYGPU_FLOAT64 ? 0x1p-48 : dt == PYGPU_FLOAT32 ? 0x1p-20
                                                                : 0x1p-10;
    *atol = dt == PYGPU_FLOAT64 ? 0x1p-1070 : dt == PYGPU_FLOAT32 ? 0x1p-146
                                                                 : 0x1p-24;
}

/* The scalar as the kernels compute with it. */
static double scalar_compute_value(int dt, pygpu_scalar_value s)
{
    if (dt == PYGPU_INT64) {
        return (double)s.i;
    }
    return dt == PYGPU_FLOAT64 ? s.f : (double)(float)s.f;
}

void test_binary(void)
{
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS_ARITH; op++) {
            const std::vector<GeomCase> geoms =
                geom_cases(op == PYGPU_ADD || op == PYGPU_DIV);
            Case c("binary %s %s", DTYPE_NAME[dt], BINOP_NAME[op]);
            double rtol, atol;
            binary_tolerance(op, dt, &rtol, &atol);
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *b,
                        const pygpu_geom *g) {
                        return pygpu_cuda_binary(op, dt, o, a, b, g, g_stream);
                    },
                    [&](double a, double b) { return ref_binop(dt, op, a, b); },
                    rtol, atol);
            }
            report(c);
        }
    }
}

void test_binary_scalar(void)
{
    /* 1.5 is exact everywhere; -0.1 is not, so float32 and float16 must
     * round it to float first; 0 checks int64 division by zero and the
     * signs of float zeros. */
    const pygpu_scalar_value scalars[] = {{1.5, 7}, {-0.1, -3}, {0.0, 0}};
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS_ARITH; op++) {
            for (int first = 0; first < 2; first++) {
                /* The big shapes once per dtype, each with another op. */
                const std::vector<GeomCase> geoms =
                    geom_cases(op == dt && first == dt % 2);
                Case c("binary_scalar %s %s scalar_first=%d", DTYPE_NAME[dt],
                       BINOP_NAME[op], first);
                double rtol, atol;
                binary_tolerance(op, dt, &rtol, &atol);
                for (size_t k = 0; k < geoms.size(); k++) {
                    pygpu_scalar_value s = scalars[k % 3];
                    double sv = scalar_compute_value(dt, s);
                    check_elementwise(
                        c, dt, dt, geoms[k], (int)k, true,
                        [&](void *o, const void *a, const void *,
                            const pygpu_geom *g) {
                            return pygpu_cuda_binary_scalar(op, dt, o, a, s,
                                                            first, g,
                                                            g_stream);
                        },
                        [&](double a, double) {
                            return first ? ref_binop(dt, op, sv, a)
                                         : ref_binop(dt, op, a, sv);
                        },
                        rtol, atol);
                }
                report(c);
            }
        }
    }
}

/* The tolerance of the floating functions (CUDA's are within a few ulp,
 * float16 rounds the float result once) against the double rule rounded
 * to dt; the exact ops have none.  The gelu family adds the
 * slack of gelu_slack.h, where the rules cancel. */
static void unary_tolerance(int op, int dt, double *rtol, double *atol)
{
    *rtol = *atol = 0;
    if (!pygpu_unop_promotes_int(op)) {
        return;
    }
    if (dt == PYGPU_INT64) {
        /* computed in double (CUDA's within a few ulp of the host's), then
         * truncated: one unit either way where the value nears an integer */
        *rtol = 0x1p-48;
        *atol = 1;
        return;
    }
    *rtol = dt == PYGPU_FLOAT64 ? 0x1p-48 : dt == PYGPU_FLOAT32 ? 0x1p-20
                                                                : 0x1p-10;
    *atol = dt == PYGPU_FLOAT64 ? 0x1p-1070 : dt == PYGPU_FLOAT32 ? 0x1p-146
                                                                 : 0x1p-24;
}

void test_unary(void)
{
    const std::vector<GeomCase> geoms = geom_cases(true);
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NUNOPS; op++) {
            Case c("unary %s %s", DTYPE_NAME[dt], UNOP_NAME[op]);
            double rtol, atol;
            unary_tolerance(op, dt, &rtol, &atol);
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_unary(op, dt, o, a, g, g_stream);
                    },
                    [&](double a, double) {
                        const double r = ref_unary(op, dt, a);
                        return rtol > 0 ? round_to(dt, r) : r;
                    },
                    rtol, atol, dt == PYGPU_INT64 ? -1 : op);
            }
            report(c);
        }
    }
}

void test_copy(void)
{
    for (int to = 0; to < SELFTEST_NDTYPES; to++) {
        for (int from = 0; from < SELFTEST_NDTYPES; from++) {
            /* The big shapes for float32 -> float16 -> float64 -> int64
             * -> float32: each dtype converted from and to once. */
            const std::vector<GeomCase> geoms =
                geom_cases(to == (from + 1) % SELFTEST_NDTYPES);
            Case c("copy %s -> %s", DTYPE_NAME[from], DTYPE_NAME[to]);
            for (size_t k = 0; k < geoms.size(); k++) {
                /* NaN and +-inf into int64 give INT64_MIN (round_to). */
                check_elementwise(
                    c, to, from, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_copy(to, o, from, a, g, g_stream);
                    },
                    [&](double a, double) { return round_to(to, a); });
            }
            report(c);
        }
    }
}

void test_fill(void)
{
    const pygpu_scalar_value values[] = {
        {1.5, 42}, {-0.1, -7}, {NAN, 0}, {-0.0, INT64_MIN}};
    const int64_t sizes[] = {0, 1, 7, 1000003, ((int64_t)1 << 23) + 1};
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        Case c("fill %s", DTYPE_NAME[dt]);
        int salt = 0;
        for (const pygpu_scalar_value &val : values) {
            for (int64_t n : sizes) {
                if (n > 1000003 && val.i != 42) {
                    continue; /* one value is enough for the big size */
                }
                /* int64 takes the exact integer (INT64_MIN is exact as a
                 * double too). */
                double want = dt == PYGPU_INT64 ? (double)val.i
                                                : round_to(dt, val.f);
                DevArr out = dev_alloc(dt, n, salt++ % 4);
                c.expect_success(pygpu_cuda_fill(dt, out.ptr(), val, n,
                                                 g_stream),
                                 "fill");
                HostArr h = dev_get(out, dt);
                for (int64_t i = 0; c.ok && i < n; i++) {
                    if (!same(h.get(i), want)) {
                        c.fail("value %g, n=%lld element %lld: got %.17g, "
                               "want %.17g",
                               val.f, (long long)n, (long long)i, h.get(i),
                               want);
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

