/* relu_bias.cu - relu_contig (every alignment, in place and not) and
 * bias_act against host references (selftest.h). */
#include "selftest.h"

// -------------------------------------------------------- relu, bias

/* relu_contig of n random elements (specials included) with out `out_off`
 * and in `in_off` elements past a 16-byte boundary; in_off < 0: in place. */
static void check_relu_contig(Case &c, int dt, int64_t n, int out_off,
                              int in_off)
{
    const bool in_place = in_off < 0;
    HostArr hin = random_arr(dt, n, true);
    DevArr out = dev_alloc(dt, n, out_off);
    DevArr in = in_place ? out : dev_alloc(dt, n, in_off);
    dev_put(in, hin);
    c.expect_success(
        pygpu_cuda_relu_contig(dt, out.ptr(), in.ptr(), n, g_stream),
        "relu_contig");
    HostArr h = dev_get(out, dt);
    for (int64_t i = 0; c.ok && i < n; i++) {
        const double want = ref_relu(hin.get(i));
        if (!same(h.get(i), want)) {
            c.fail("n=%lld, offsets out %d in %d, element %lld (x=%.9g): got "
                   "%.17g, want %.17g",
                   (long long)n, out_off, in_off, (long long)i, hin.get(i),
                   h.get(i), want);
        }
    }
    if (c.ok && !(dev_guards_ok(out) && dev_guards_ok(in))) {
        c.fail("n=%lld, offsets out %d in %d: wrote out of range",
               (long long)n, out_off, in_off);
    }
    dev_free(out);
    if (!in_place) {
        dev_free(in);
    }
}

void test_relu_contig(void)
{
    const int64_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1000, 100003};
    /* (out offset, in offset) in elements; -1 marks in place. */
    const int offs[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {0, 1},
                           {1, 0}, {3, 2}, {0, -1}, {1, -1}, {3, -1}};
    const int noffs = (int)(sizeof offs / sizeof offs[0]);
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int64_t n : sizes) {
            Case c("relu_contig %s n=%lld (%d alignments)", DTYPE_NAME[dt],
                   (long long)n, noffs);
            for (const auto &o : offs) {
                check_relu_contig(c, dt, n, o[0], o[1]);
            }
            report(c);
        }
    }
    /* Several trips of the grid-stride loops: the scalar kernel (out and
     * in misaligned differently) and the vector one, which moves UNROLL = 4
     * vectors of 16 bytes per thread and trip, so float64 at 2^23 + 3 and
     * float16 at 2^25 + 3 take about 4 trips of an H100 wave; odd sizes
     * and misaligned starts leave a head and a tail. */
    struct Big {
        int dt;
        int64_t n;
        int noffs; /* the first noffs of big_offs */
    };
    const Big bigs[] = {{PYGPU_FLOAT16, ((int64_t)1 << 23) + 3, 4},
                        {PYGPU_FLOAT64, ((int64_t)1 << 23) + 3, 4},
                        {PYGPU_FLOAT16, ((int64_t)1 << 25) + 3, 2}};
    const int big_offs[][2] = {{1, 1}, {2, -1}, {3, 3}, {0, 1}};
    for (const Big &b : bigs) {
        Case c("relu_contig %s n=%lld (%d alignments)", DTYPE_NAME[b.dt],
               (long long)b.n, b.noffs);
        for (int k = 0; k < b.noffs; k++) {
            check_relu_contig(c, b.dt, b.n, big_offs[k][0], big_offs[k][1]);
        }
        report(c);
    }
}

/* out + bias computed as the kernel does (float16 in float, int64
 * wrapping), relu'd, then rounded to the dtype. */
static double ref_bias_act(int dt, double o, double b, int act)
{
    double x;
    if (dt == PYGPU_INT64) {
        x = (double)ref_i64(PYGPU_ADD, (int64_t)o, (int64_t)b);
    } else if (dt == PYGPU_FLOAT64) {
        x = o + b;
    } else {
        x = (float)o + (float)b;
    }
    return round_to(dt, act ? ref_relu(x) : x);
}

void test_bias_act(void)
{
    /* 3000 x 777 takes about 9 trips of an H100 wave, each moving a
     * thread's column on by stride % cols with a wrap (the `c += step`
     * logic); 3 x 300007 has rows longer than the stride. */
    const int64_t shapes[][2] = {{0, 5},    {1, 1},      {3, 7},
                                 {129, 257}, {1000, 3},  {2, 100003},
                                 {4096, 1},  {3000, 777}, {3, 300007}};
    for (int dt = 0; dt < SELFTEST_NDTYPES; dt++) {
        for (int act = 0; act < 2; act++) {
            Case c("bias_act %s relu=%d", DTYPE_NAME[dt], act);
            int salt = 0;
            for (const auto &s : shapes) {
                int64_t rows = s[0], cols = s[1];
                HostArr hout = random_arr(dt, rows * cols, true);
                HostArr hbias = random_arr(dt, cols, true);
                DevArr out = dev_alloc(dt, rows * cols, salt % 4);
                DevArr bias = dev_alloc(dt, cols, (salt + 1) % 4);
                salt++;
                dev_put(out, hout);
                dev_put(bias, hbias);
                c.expect_success(pygpu_cuda_bias_act(dt, out.ptr(), bias.ptr(),
                                                     rows, cols, act,
                                                     g_stream),
                                 "bias_act");
                HostArr h = dev_get(out, dt);
                for (int64_t i = 0, col = 0; c.ok && i < rows * cols; i++) {
                    const double want =
                        ref_bias_act(dt, hout.get(i), hbias.get(col), act);
                    if (!same(h.get(i), want)) {
                        c.fail("%lldx%lld element %lld (out=%.9g bias=%.9g): "
                               "got %.17g, want %.17g",
                               (long long)rows, (long long)cols, (long long)i,
                               hout.get(i), hbias.get(col), h.get(i), want);
                    }
                    if (++col == cols) {
                        col = 0;
                    }
                }
                if (c.ok && !dev_guards_ok(out)) {
                    c.fail("%lldx%lld: wrote outside the output",
                           (long long)rows, (long long)cols);
                }
                dev_free(out);
                dev_free(bias);
            }
            report(c);
        }
    }
}

