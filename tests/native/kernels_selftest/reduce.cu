/* reduce.cu - sum, mean, max and min (with indices) and prod over
 * [outer, n, inner] against a host reference, float16 into its float32
 * accumulator (to_acc), and int64 wrap-around (selftest.h). */
#include "selftest.h"

#include <algorithm>

// ------------------------------------------------------------ reduce

/* Spacing of dtype dt's values at |x| (the smallest subnormal step near 0). */
static double ulp_of(int dt, double x)
{
    const int mant = dt == PYGPU_FLOAT16 ? 10 : dt == PYGPU_FLOAT32 ? 23 : 52;
    const int emin = dt == PYGPU_FLOAT16   ? -14
                     : dt == PYGPU_FLOAT32 ? -126
                                           : -1022;
    x = fabs(x);
    int e = x > 0 && isfinite(x) ? ilogb(x) : emin;
    return ldexp(1.0, (e < emin ? emin : e) - mant);
}

/* Values k/4 for |k| <= kmax (int64: k itself); kmax is 8 (|x| <= 2)
 * unless n * kmax would pass 2^24: then every partial sum of an output, a
 * multiple of 1/4 no larger than its sum of |x| <= n * kmax / 4, is exact
 * in a float32 accumulator.  Maxima and minima repeat, so the first index
 * matters; for max and min on floats a third of the outputs get one or two
 * NaN.  For prod: +-1, and at about 48 places of each output (never more
 * than PROD_MAX_OTHERS) +-2 or +-1/2 (int64: +-2 or +-3), so that every
 * partial product of floats, in any order, is a power of two within
 * 2^+-PROD_MAX_OTHERS: exact in a float32 accumulator. */
static const int64_t PROD_MAX_OTHERS = 100;

static HostArr reduce_input(int dt, int op, int64_t outer, int64_t n,
                            int64_t inner)
{
    const int64_t total = outer * n * inner;
    HostArr h(dt, total);
    if (op == PYGPU_PROD) {
        const uint64_t per_2_20 =
            n > 0 ? (uint64_t)std::min<int64_t>((1 << 17), (48 << 20) / n) : 0;
        std::vector<int64_t> others((size_t)(outer * inner), 0);
        for (int64_t e = 0; e < total; e++) {
            const int64_t k = (e / (n * inner)) * inner + e % inner;
            const uint64_t r = rng_next();
            const double sign = (r & 1) ? -1.0 : 1.0;
            double v = sign;
            if (((r >> 1) & 0xFFFFF) < per_2_20 &&
                others[(size_t)k] < PROD_MAX_OTHERS) {
                others[(size_t)k]++;
                v = dt == PYGPU_INT64 ? sign * (double)(2 + ((r >> 21) & 1))
                                      : sign * (((r >> 21) & 1) ? 2.0 : 0.5);
            }
            h.set(e, v);
        }
        return h;
    }
    int64_t kmax = 8;
    if (dt != PYGPU_INT64 && n > 0) {
        kmax = std::min<int64_t>(
            8, std::max<int64_t>(1, ((int64_t)1 << 24) / n));
    }
    HostArr table(dt, 2 * kmax + 1);
    for (int64_t k = -kmax; k <= kmax; k++) {
        table.set(k + kmax, (double)k / (dt == PYGPU_INT64 ? 1 : 4));
    }
    for (int64_t e = 0; e < total; e++) {
        h.copy_elem(e, table, (int64_t)rng_below((uint64_t)(2 * kmax + 1)));
    }
    if ((op == PYGPU_MAX || op == PYGPU_MIN) && dt != PYGPU_INT64 && n > 0) {
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t i = 0; i < inner; i++) {
                int nans = (int)(rng_next() % 6);
                for (int k = 0; k < nans && k < 2; k++) {
                    h.set((o * n + rng_int(0, n - 1)) * inner + i, NAN);
                }
            }
        }
    }
    return h;
}

struct ReduceOut {
    HostArr val, idx;
};

/* pygpu_cuda_reduce over hin seen as [outer, n, inner], with its
 * workspace, into an output of pygpu_reduce_out_dtype(op, dt, to_acc);
 * checks the guards of the output, indices and workspace. */
static ReduceOut run_reduce(Case &c, int dt, int op, int to_acc,
                            int64_t outer, int64_t n, int64_t inner,
                            const HostArr &hin, bool with_indices, int salt)
{
    const int64_t nout = outer * inner;
    const int out_dt = pygpu_reduce_out_dtype(op, dt, to_acc);
    DevArr in = dev_alloc(dt, outer * n * inner, salt % 4);
    DevArr out = dev_alloc(out_dt, nout, (salt + 1) % 4);
    DevArr idx = dev_alloc(PYGPU_INT64, with_indices ? nout : 0, 0);
    size_t wsize = pygpu_cuda_reduce_workspace(op, dt, outer, n, inner);
    DevArr ws = dev_alloc((size_t)1, (int64_t)wsize, 0);
    dev_put(in, hin);
    c.expect_success(pygpu_cuda_reduce(op, dt, to_acc, out.ptr(),
                                       with_indices ? (int64_t *)idx.ptr()
                                                    : nullptr,
                                       in.ptr(), outer, n, inner,
                                       wsize ? ws.ptr() : nullptr, g_stream),
                     "reduce");
    ReduceOut r = {dev_get(out, out_dt), dev_get(idx, PYGPU_INT64)};
    if (c.ok && !(dev_guards_ok(out) && dev_guards_ok(idx) &&
                  dev_guards_ok(ws))) {
        c.fail("[%lld,%lld,%lld]: wrote outside the output or workspace",
               (long long)outer, (long long)n, (long long)inner);
    }
    dev_free(in);
    dev_free(out);
    dev_free(idx);
    dev_free(ws);
    return r;
}

/* Tolerances: a sum whose accumulator is exact (see reduce_input) must be
 * the exact sum rounded once to the output dtype, so it is compared
 * exactly (float16 included: one rounding of the exact float32
 * accumulator; none with to_acc, whose output is that accumulator).  A
 * mean is that exact sum divided once in the accumulator type (float32
 * for float16) and, for a float16 output, rounded once more: at most half
 * an ulp of each (plus the reference's own double rounding).  A product
 * of the powers of two of reduce_input is exact, then rounded once to the
 * output dtype (int64 wraps: compared as integers).  Max, min and their
 * indices are exact.  Only an accumulator that cannot be exact (not
 * reached by the shapes here) falls back to the worst-case bound of n - 1
 * roundings. */
static void check_reduce(Case &c, int dt, int op, int to_acc, int64_t outer,
                         int64_t n, int64_t inner, bool with_indices,
                         int salt)
{
    const int64_t nout = outer * inner;
    const bool extremum = op == PYGPU_MAX || op == PYGPU_MIN;
    const HostArr hin = reduce_input(dt, op, outer, n, inner);
    const ReduceOut r = run_reduce(c, dt, op, to_acc, outer, n, inner, hin,
                                   with_indices, salt);

    /* The reference in one pass over the input in memory order. */
    std::vector<double> acc(nout, op == PYGPU_PROD ? 1.0 : 0.0);
    std::vector<double> acc_abs(nout, 0.0);
    std::vector<uint64_t> acc_i64(nout, op == PYGPU_PROD ? 1 : 0);
    std::vector<int64_t> acc_idx(nout, 0);
    for (int64_t o = 0, e = 0; o < outer; o++) {
        for (int64_t j = 0; j < n; j++) {
            for (int64_t i = 0; i < inner; i++, e++) {
                const double x = hin.get(e);
                const int64_t k = o * inner + i;
                if (op == PYGPU_PROD && dt == PYGPU_INT64) {
                    acc_i64[k] *= (uint64_t)hin.get_i64(e); /* wraps */
                } else if (op == PYGPU_PROD) {
                    acc[k] *= x;
                } else if (!extremum) {
                    acc[k] += x;
                    acc_abs[k] += fabs(x);
                } else if (j == 0 ||
                           (!isnan(acc[k]) &&
                            (isnan(x) || (op == PYGPU_MAX ? x > acc[k]
                                                          : x < acc[k])))) {
                    acc[k] = x;
                    acc_idx[k] = j;
                }
            }
        }
    }

    const int out_dt = pygpu_reduce_out_dtype(op, dt, to_acc);
    const int acc_dt = dt == PYGPU_FLOAT16 ? PYGPU_FLOAT32 : dt;
    /* An accumulator of multiples of 1/4 is exact while every partial sum
     * (at most the sum of |x|) is below 2^24 / 4 in float32. */
    const double acc_limit = acc_dt == PYGPU_FLOAT64 ? 0x1p51 : 0x1p22;
    const double acc_eps = acc_dt == PYGPU_FLOAT64 ? 0x1p-53 : 0x1p-24;
    for (int64_t k = 0; c.ok && k < nout; k++) {
        const int64_t o = k / inner, i = k % inner;
        if (op == PYGPU_PROD && dt == PYGPU_INT64) {
            const int64_t got = r.val.get_i64(k), want = (int64_t)acc_i64[k];
            if (got != want) {
                c.fail("[%lld,%lld,%lld] output (%lld,%lld): got %lld, want "
                       "%lld",
                       (long long)outer, (long long)n, (long long)inner,
                       (long long)o, (long long)i, (long long)got,
                       (long long)want);
            }
            continue;
        }
        const double s = acc[k], sum_abs = acc_abs[k];
        const bool exact = dt == PYGPU_INT64 || sum_abs <= acc_limit;
        const double acc_err = exact ? 0 : (double)(n - 1) * acc_eps * sum_abs;
        double want, tol = 0;
        if (extremum) {
            want = s;
        } else if (n == 0) {
            want = op == PYGPU_SUM ? 0.0 : op == PYGPU_PROD ? 1.0 : NAN;
        } else if (op == PYGPU_PROD) {
            want = round_to(out_dt, s);
        } else if (op == PYGPU_SUM) {
            want = round_to(out_dt, s);
            if (!exact) {
                tol = acc_err +
                      (out_dt == PYGPU_FLOAT16 ? 0.5 * ulp_of(out_dt, s) : 0);
            }
        } else {
            want = s / (double)n;
            tol = 0.5 * ulp_of(acc_dt, want) + ulp_of(PYGPU_FLOAT64, want) +
                  acc_err / (double)n;
            if (acc_dt == PYGPU_FLOAT32 && n > ((int64_t)1 << 24)) {
                tol += fabs(want) * 0x1p-24; /* n itself rounded to float */
            }
            if (out_dt == PYGPU_FLOAT16) {
                tol += 0.5 * ulp_of(out_dt, fabs(want) * (1 + 0x1p-22));
            }
        }
        const double got = r.val.get(k);
        const bool close = tol == 0 ? same(got, want)
                                    : same(got, want) ||
                                          fabs(got - want) <= tol;
        if (!close) {
            c.fail("[%lld,%lld,%lld] output (%lld,%lld): got %.17g, want "
                   "%.17g (tolerance %.3g)",
                   (long long)outer, (long long)n, (long long)inner,
                   (long long)o, (long long)i, got, want, tol);
        } else if (with_indices && r.idx.get_i64(k) != acc_idx[k]) {
            c.fail("[%lld,%lld,%lld] output (%lld,%lld): index %lld, want "
                   "%lld",
                   (long long)outer, (long long)n, (long long)inner,
                   (long long)o, (long long)i, (long long)r.idx.get_i64(k),
                   (long long)acc_idx[k]);
        }
    }
}

void test_reduce(void)
{
    /* [outer, n, inner]: empty ones, warp rows, block rows, rows cut in
     * chunks, columns, columns cut in chunks; then shapes with several
     * trips of the grid-stride loops (an H100 wave is about 270k threads):
     * 20000 block rows (of 1100: more than a warp's 1024), 100003 warp
     * rows, 600002 column threads, and
     * columns cut in 32768 chunks whose second pass strides along rows of
     * 32768 partials.  The two largest (over 10M elements) run for sum,
     * mean and max of each dtype; min, prod and the float32 outputs of
     * float16 (to_acc) share every other path with them. */
    const int64_t shapes[][3] = {
        {1, 0, 1},          {3, 0, 4},
        {0, 5, 3},          {4, 5, 0},
        {1, 1, 1},          {1, 7, 1},
        {5, 33, 1},         {1, 1000, 1},
        {1, 1024, 1},       {1, 1025, 1},
        {4, 5000, 1},       {1000, 17, 1},
        {3, 300000, 1},     {1, (1 << 22) + 3, 1},
        {2, 17, 3},         {3, 1000, 129},
        {1, 100000, 4},     {1, 50001, 2},
        {7, 3, 1000},       {2, 600, 3000},
        {1, 1, 70000},      {20000, 1100, 1},
        {100003, 40, 1},    {2, 20, 300001},
        {1, 1 << 20, 4}};
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NREDOPS; op++) {
            if (op == PYGPU_MEAN && dt == PYGPU_INT64) {
                continue; /* never asked */
            }
            const bool extremum = op == PYGPU_MAX || op == PYGPU_MIN;
            /* to_acc = 1: float16 sum, mean and prod into float32. */
            const int acc_variants = dt == PYGPU_FLOAT16 && !extremum ? 2 : 1;
            for (int to_acc = 0; to_acc < acc_variants; to_acc++) {
                const bool all_shapes = op <= PYGPU_MAX && !to_acc;
                Case c("reduce %s %s%s", DTYPE_NAME[dt], REDOP_NAME[op],
                       to_acc ? " to float32" : "");
                int salt = 0;
                for (const auto &s : shapes) {
                    if (extremum && s[1] == 0) {
                        continue; /* refused by the caller */
                    }
                    if (!all_shapes && s[0] * s[1] * s[2] > 10000000) {
                        continue;
                    }
                    check_reduce(c, dt, op, to_acc, s[0], s[1], s[2],
                                 extremum && salt % 4 != 3, salt);
                    salt++;
                }
                report(c);
            }
        }
    }
}

/* int64 sums wrap modulo 2^64 (as the CPU's), in both passes; max over
 * INT64_MIN must still report the first index, though INT64_MIN is also
 * the identity's value. */
void test_reduce_int64_wrap(void)
{
    const int64_t MAX = INT64_MAX, MIN = INT64_MIN;
    struct Shape {
        int64_t outer, n, inner;
        std::vector<int64_t> values; /* repeated over the input; empty:
                                        random over the whole range */
        int64_t want_sum, want_max; /* of every output, when values given */
    };
    const Shape shapes[] = {
        {1, 2, 1, {MAX, 1}, MIN, MAX},
        {1, 3, 1, {MAX, MAX, 2}, 0, MAX},
        {1, 5, 1, {MIN}, MIN, MIN},
        {3, 5000, 1, {MIN}, 0, MIN},   /* two passes */
        {2, 7, 3, {MIN}, MIN, MIN},    /* columns */
        {5, 3000, 9, {MIN}, 0, MIN},   /* columns in chunks, two passes */
        {1, 100003, 1, {}, 0, 0},      /* rows in chunks */
        {5, 3000, 9, {}, 0, 0},
    };
    const int ops[] = {PYGPU_SUM, PYGPU_MAX};
    for (int op : ops) {
        Case c("reduce int64 %s wraps, edge values", REDOP_NAME[op]);
        int salt = 0;
        for (const Shape &sh : shapes) {
            const int64_t total = sh.outer * sh.n * sh.inner;
            HostArr hin(PYGPU_INT64, total);
            for (int64_t e = 0; e < total; e++) {
                hin.set_i64(e, sh.values.empty()
                                   ? (int64_t)rng_next()
                                   : sh.values[(size_t)e % sh.values.size()]);
            }
            const ReduceOut r = run_reduce(c, PYGPU_INT64, op, 0, sh.outer,
                                           sh.n, sh.inner, hin,
                                           op == PYGPU_MAX, salt++);
            for (int64_t o = 0; c.ok && o < sh.outer; o++) {
                for (int64_t i = 0; c.ok && i < sh.inner; i++) {
                    uint64_t sum = 0;
                    int64_t best = 0, best_j = 0;
                    for (int64_t j = 0; j < sh.n; j++) {
                        const int64_t x = hin.get_i64((o * sh.n + j) * sh.inner + i);
                        sum += (uint64_t)x;
                        if (j == 0 || x > best) {
                            best = x;
                            best_j = j;
                        }
                    }
                    int64_t want = op == PYGPU_SUM ? (int64_t)sum : best;
                    if (!sh.values.empty()) {
                        /* the literal must agree with the loop */
                        const int64_t lit =
                            op == PYGPU_SUM ? sh.want_sum : sh.want_max;
                        if (lit != want) {
                            c.fail("[%lld,%lld,%lld]: table says %lld, the "
                                   "host loop %lld",
                                   (long long)sh.outer, (long long)sh.n,
                                   (long long)sh.inner, (long long)lit,
                                   (long long)want);
                        }
                        want = lit;
                    }
                    const int64_t k = o * sh.inner + i;
                    const int64_t got = r.val.get_i64(k);
                    if (got != want) {
                        c.fail("[%lld,%lld,%lld] output (%lld,%lld): got "
                               "%lld, want %lld",
                               (long long)sh.outer, (long long)sh.n,
                               (long long)sh.inner, (long long)o,
                               (long long)i, (long long)got, (long long)want);
                    } else if (op == PYGPU_MAX && r.idx.get_i64(k) != best_j) {
                        c.fail("[%lld,%lld,%lld] output (%lld,%lld): index "
                               "%lld, want %lld",
                               (long long)sh.outer, (long long)sh.n,
                               (long long)sh.inner, (long long)o,
                               (long long)i, (long long)r.idx.get_i64(k),
                               (long long)best_j);
                    }
                }
            }
        }
        report(c);
    }
}

