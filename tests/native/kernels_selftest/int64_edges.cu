/* int64_edges.cu - int64 wrap-around in the elementwise launchers and
 * the float-to-int64 conversion of copy, against literal tables
 * (selftest.h). */
#include "selftest.h"

// ------------------------------------------------- int64 edge values

static HostArr i64_arr(const std::vector<int64_t> &v)
{
    HostArr h(PYGPU_INT64, (int64_t)v.size());
    for (size_t i = 0; i < v.size(); i++) {
        h.set_i64((int64_t)i, v[i]);
    }
    return h;
}

/* Runs an int64 elementwise launch over n contiguous elements and returns
 * the output; `a` and `b` are the inputs (b may be empty). */
template <typename Launch>
static HostArr run_i64(Case &c, const char *where, int out_dt,
                       const HostArr &ha, const HostArr &hb, Launch launch)
{
    const int64_t n = ha.size();
    DevArr out = dev_alloc(out_dt, n, 1);
    DevArr a = dev_alloc(ha.dt, n, 3);
    DevArr b = dev_alloc(PYGPU_INT64, hb.size(), 2);
    dev_put(a, ha);
    dev_put(b, hb);
    GeomCase gc = contiguous_geom(where, n);
    c.expect_success(launch(out.ptr(), a.ptr(), b.ptr(), &gc.g), where);
    HostArr h = dev_get(out, out_dt);
    if (c.ok && !dev_guards_ok(out)) {
        c.fail("%s: wrote outside the output", where);
    }
    dev_free(out);
    dev_free(a);
    dev_free(b);
    return h;
}

/* int64 arithmetic wraps like the CPU loops (csrc/cpu/cpu_elementwise.c):
 * add, sub and mul modulo 2^64, x / 0 == 0, INT64_MIN / -1 == INT64_MIN,
 * -INT64_MIN == INT64_MIN; division truncates toward zero.  Checked with
 * literal results, through tensor-tensor and both scalar forms. */
void test_int64_wrap(void)
{
    const int64_t MAX = INT64_MAX, MIN = INT64_MIN;
    struct Row {
        int64_t a, b;
        int64_t want[PYGPU_NBINOPS_ARITH]; /* add, sub, mul, div; pow, maximum,
                                        minimum, fmod, remainder,
                                        floor_divide */
    };
    const Row rows[] = {
        {MAX, 1, {MIN, MAX - 1, MAX, MAX,
          MAX, MAX, 1, 0, 0, MAX}},
        {MIN, -1, {MAX, -MAX, MIN, MIN,
          0, -1, MIN, 0, 0, MIN}},
        {MIN, 0, {MIN, MIN, 0, 0,
          1, 0, MIN, 0, 0, 0}},
        {7, 0, {7, 7, 0, 0,
          1, 7, 0, 0, 0, 0}},
        {0, 0, {0, 0, 0, 0,
          1, 0, 0, 0, 0, 0}},
        {-7, 2, {-5, -9, -14, -3,
          49, 2, -7, -1, 1, -4}},
        {7, -2, {5, 9, -14, -3,
          0, 7, -2, 1, -1, -4}},
        {-9, -4, {-13, -5, 36, 2,
          0, -4, -9, -1, -1, 2}},
        {MAX, -1, {MAX - 1, MIN, -MAX, -MAX,
          0, MAX, -1, 0, 0, -MAX}},
        {MIN, 2, {MIN + 2, MAX - 1, 0, -(MAX / 2) - 1,
          0, 2, MIN, 0, 0, -4611686018427387904}},
        {-1, MIN, {MAX, MAX, MIN, 0,
          1, -1, MIN, -1, -1, 0}},
        {3037000500, 3037000500, {6074001000, 0, -9223372036709301616, 1,
          0, 3037000500, 3037000500, 0, 0, 1}},
        {(int64_t)1 << 32, (int64_t)1 << 32, {(int64_t)1 << 33, 0, 0, 1,
          0, 4294967296, 4294967296, 0, 0, 1}},
        {MAX, MAX, {-2, 0, 1, 1,
          MAX, MAX, MAX, 0, 0, 1}},
        {MIN, MIN, {0, 0, 0, 1,
          0, MIN, MIN, 0, 0, 1}},
        {MIN, 1, {-MAX, MAX, MIN, MIN,
          MIN, 1, MIN, 0, 0, MIN}},
        {MIN, MAX, {-1, 1, MIN, -1,
          0, MAX, MIN, -1, 9223372036854775806, -2}},
        {-((int64_t)1 << 62), 3,
         {-((int64_t)1 << 62) + 3, -((int64_t)1 << 62) - 3, (int64_t)1 << 62,
          -1537228672809129301,
          0, 3, -4611686018427387904, -1, 2, -1537228672809129302}},
    };
    const int64_t nrows = (int64_t)(sizeof rows / sizeof rows[0]);
    std::vector<int64_t> va, vb;
    for (const Row &r : rows) {
        va.push_back(r.a);
        vb.push_back(r.b);
    }
    const HostArr ha = i64_arr(va), hb = i64_arr(vb);
    for (int op = 0; op < PYGPU_NBINOPS_ARITH; op++) {
        Case c("int64 %s wraps (binary, binary_scalar)", BINOP_NAME[op]);
        /* The table itself must agree with the reference semantics. */
        for (int64_t r = 0; r < nrows; r++) {
            if (ref_i64(op, rows[r].a, rows[r].b) != rows[r].want[op]) {
                c.fail("table row %lld disagrees with ref_i64", (long long)r);
            }
        }
        HostArr h = run_i64(
            c, "binary", PYGPU_INT64, ha, hb,
            [&](void *o, const void *a, const void *b, const pygpu_geom *g) {
                return pygpu_cuda_binary(op, PYGPU_INT64, o, a, b, g,
                                         g_stream);
            });
        for (int64_t r = 0; c.ok && r < nrows; r++) {
            if (h.get_i64(r) != rows[r].want[op]) {
                c.fail("binary: %lld %s %lld: got %lld, want %lld",
                       (long long)rows[r].a, BINOP_NAME[op],
                       (long long)rows[r].b, (long long)h.get_i64(r),
                       (long long)rows[r].want[op]);
            }
        }
        /* a op s with the tensor a, then s op b with the tensor b; the
         * scalar's double is deliberately useless (int64 takes .i). */
        for (int first = 0; first < 2 && c.ok; first++) {
            for (int64_t r = 0; c.ok && r < nrows; r++) {
                const int64_t tensor = first ? rows[r].b : rows[r].a;
                const pygpu_scalar_value s = {0.25,
                                              first ? rows[r].a : rows[r].b};
                HostArr h1 = run_i64(
                    c, "binary_scalar", PYGPU_INT64, i64_arr({tensor}),
                    HostArr(PYGPU_INT64, 0),
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_binary_scalar(op, PYGPU_INT64, o, a,
                                                        s, first, g, g_stream);
                    });
                if (c.ok && h1.get_i64(0) != rows[r].want[op]) {
                    c.fail("binary_scalar scalar_first=%d: %lld %s %lld: got "
                           "%lld, want %lld",
                           first, (long long)rows[r].a, BINOP_NAME[op],
                           (long long)rows[r].b, (long long)h1.get_i64(0),
                           (long long)rows[r].want[op]);
                }
            }
        }
        report(c);
    }

    const int64_t un_in[] = {MIN, MAX, 0, 1, -1, MIN + 1};
    const int64_t un_want[PYGPU_NUNOPS][6] = {
        {MIN, -MAX, 0, -1, 1, MAX}, /* neg: -INT64_MIN wraps to itself */
        {0, MAX, 0, 1, 0, 0},       /* relu */
        {MIN, MAX, 0, 1, 1, MAX},   /* abs: |INT64_MIN| wraps to itself */
        {MIN, MAX, 0, 1, -1, MIN + 1}, /* floor */
        {MIN, MAX, 0, 1, -1, MIN + 1}, /* ceil */
        {MIN, MAX, 0, 1, -1, MIN + 1}, /* round */
        {-1, 1, 0, 1, -1, -1},         /* sign */
        /* The floating functions in double, converted back (their ops
         * promote int64 to float32 before they get here). */
        {0, MIN, 1, 2, 0, 0},               /* exp */
        {MIN, 43, MIN, 0, MIN, MIN},        /* log */
        {MIN, 43, 0, 0, MIN, MIN},          /* log1p */
        {-1, MIN, 0, 1, 0, -1},             /* expm1 */
        {MIN, 3037000499, 0, 1, MIN, MIN},  /* sqrt */
        {MIN, 0, MIN, 1, MIN, MIN},         /* rsqrt */
        {0, 0, 0, 0, 0, 0},                 /* sin */
        {0, 0, 1, 0, 0, 0},                 /* cos */
        {-1, 1, 0, 0, 0, -1},               /* tanh */
        {0, 1, 0, 0, 0, 0},                 /* sigmoid */
        {0, 0, MIN, 1, -1, 0},              /* reciprocal */
        {0, MIN, 0, 0, 0, 0},               /* silu */
        {0, MIN, 0, 0, 0, 0},               /* gelu */
        {0, MIN, 0, 0, 0, 0},               /* gelu_tanh */
        {0, 1, 0, 1, 0, 0},                 /* gelu_grad */
        {0, 1, 0, 1, 0, 0},                 /* gelu_tanh_grad */
    };
    const HostArr hu = i64_arr(std::vector<int64_t>(un_in, un_in + 6));
    for (int op = 0; op < PYGPU_NUNOPS; op++) {
        Case c("int64 %s edge values", UNOP_NAME[op]);
        HostArr h = run_i64(
            c, "unary", PYGPU_INT64, hu, HostArr(PYGPU_INT64, 0),
            [&](void *o, const void *a, const void *, const pygpu_geom *g) {
                return pygpu_cuda_unary(op, PYGPU_INT64, o, a, g, g_stream);
            });
        for (int k = 0; c.ok && k < 6; k++) {
            if (h.get_i64(k) != un_want[op][k]) {
                c.fail("%s(%lld): got %lld, want %lld", UNOP_NAME[op],
                       (long long)un_in[k], (long long)h.get_i64(k),
                       (long long)un_want[op][k]);
            }
        }
        report(c);
    }
}

/* Floating to int64 (csrc/kernels/common.cuh f2i64, the CPU's f64_to_i64):
 * the value is first rounded to the source dtype (HostArr::set), then
 * truncated toward zero inside [-2^63, 2^63); NaN, +-inf and everything
 * outside give INT64_MIN. */
void test_copy_to_int64(void)
{
    const int64_t MIN = INT64_MIN;
    struct Row {
        double x;
        int64_t want[3]; /* from float32, float16, float64 */
    };
    const Row rows[] = {
        {INFINITY, {MIN, MIN, MIN}},
        {-INFINITY, {MIN, MIN, MIN}},
        {NAN, {MIN, MIN, MIN}},
        {1e19, {MIN, MIN, MIN}},
        {-1e19, {MIN, MIN, MIN}},
        /* float16 overflows to +-inf from 65520 on */
        {0x1p62, {(int64_t)1 << 62, MIN, (int64_t)1 << 62}},
        {-0x1p63, {MIN, MIN, MIN}}, /* in range: exactly INT64_MIN */
        {0x1p63, {MIN, MIN, MIN}},  /* just out of range */
        {-0x1p63 - 2048, {MIN, MIN, MIN}},
        /* the largest float below 2^63; float64 holds it exactly */
        {0x1.fffffep62,
         {(int64_t)0x7fffff8000000000, MIN, (int64_t)0x7fffff8000000000}},
        /* the largest double below 2^63: float32 rounds it to 2^63 */
        {0x1.fffffffffffffp62, {MIN, MIN, (int64_t)0x7ffffffffffffc00}},
        {-0x1.fffffffffffffp62, {MIN, MIN, -(int64_t)0x7ffffffffffffc00}},
        {3.9, {3, 3, 3}},
        {-3.9, {-3, -3, -3}},
        {-0.0, {0, 0, 0}},
        {0.5, {0, 0, 0}},
        {-0.99, {0, 0, 0}},
        {65504, {65504, 65504, 65504}},
        {-65504, {-65504, -65504, -65504}},
        {2049, {2049, 2048, 2049}}, /* float16 rounds 2049 to even */
        {16777217, {16777216, MIN, 16777217}},
    };
    const int64_t nrows = (int64_t)(sizeof rows / sizeof rows[0]);
    const int from_dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT16, PYGPU_FLOAT64};
    for (int col = 0; col < 3; col++) {
        const int from = from_dtypes[col];
        Case c("copy %s -> int64 edge values", DTYPE_NAME[from]);
        HostArr ha(from, nrows);
        for (int64_t r = 0; r < nrows; r++) {
            ha.set(r, rows[r].x);
            if (host_f2i64(ha.get(r)) != rows[r].want[col]) {
                c.fail("table row %lld disagrees with host_f2i64",
                       (long long)r);
            }
        }
        HostArr h = run_i64(
            c, "copy", PYGPU_INT64, ha, HostArr(PYGPU_INT64, 0),
            [&](void *o, const void *a, const void *, const pygpu_geom *g) {
                return pygpu_cuda_copy(PYGPU_INT64, o, from, a, g, g_stream);
            });
        for (int64_t r = 0; c.ok && r < nrows; r++) {
            if (h.get_i64(r) != rows[r].want[col]) {
                c.fail("%.17g (as %s: %.17g): got %lld, want %lld", rows[r].x,
                       DTYPE_NAME[from], ha.get(r), (long long)h.get_i64(r),
                       (long long)rows[r].want[col]);
            }
        }
        report(c);
    }
}

