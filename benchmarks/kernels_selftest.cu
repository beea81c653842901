/* kernels_selftest.cu - checks every CUDA launcher of kernels.h against a
 * plain host reference, then times relu_contig against a device-to-device
 * cudaMemcpy.  Standalone: no Python.
 *
 * Build from the repository root, linking the .cu files of csrc/kernels:
 *   nvcc -std=c++17 -O3 -DPYGPU_WITH_CUDA -I csrc \
 *        -gencode arch=compute_90,code=sm_90 \
 *        benchmarks/kernels_selftest.cu csrc/kernels/elementwise.cu \
 *        csrc/kernels/relu.cu csrc/kernels/reduce.cu csrc/kernels/random.cu \
 *        -o kernels_selftest
 * Prints one PASS or FAIL line per case (a case sweeps its shapes and
 * alignments and names the first mismatch), the timings, and last
 * "N passed, M failed".  Exits 1 when a case failed.
 *
 * Every device array sits 0..3 elements past a 16-byte boundary, between
 * guard bytes that must come back untouched.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/philox.h"

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t err_ = (call);                                           \
        if (err_ != cudaSuccess) {                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(err_));                               \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

static const char *const DTYPE_NAME[] = {"float32", "float16", "float64",
                                         "int64"};
static const size_t DTYPE_SIZE[] = {4, 2, 8, 8};
static const char *const BINOP_NAME[] = {"add", "sub", "mul", "div"};
static const char *const UNOP_NAME[] = {"neg", "relu"};
static const char *const REDOP_NAME[] = {"sum", "mean", "max"};

static cudaStream_t g_stream;
static int g_passed, g_failed;

// ------------------------------------------------------------- results

/* One case: passes until its first failure, which it keeps for the report. */
struct Case {
    bool ok = true;
    char detail[400] = "";
    void fail(const char *fmt, ...)
    {
        if (!ok) {
            return;
        }
        ok = false;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    }
    void expect_success(cudaError_t err, const char *where)
    {
        if (err != cudaSuccess) {
            fail("%s: launcher returned %s", where, cudaGetErrorName(err));
        }
    }
};

static void report(const Case &c, const char *fmt, ...)
{
    printf("%s ", c.ok ? "PASS" : "FAIL");
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (!c.ok) {
        printf(": %s", c.detail);
    }
    printf("\n");
    fflush(stdout);
    if (c.ok) {
        g_passed++;
    } else {
        g_failed++;
    }
}

// ------------------------------------------------------- host values

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

/* splitmix64 */
static uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t rng_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

/* x rounded to dtype dt the way the kernels store it (int64 truncates). */
static double round_to(int dt, double x)
{
    switch (dt) {
    case PYGPU_FLOAT32:
        return (float)x;
    case PYGPU_FLOAT16:
        return __half2float(__double2half(x));
    case PYGPU_FLOAT64:
        return x;
    default:
        return (double)(int64_t)x;
    }
}

static bool same(double got, double want)
{
    return (isnan(got) && isnan(want)) || got == want;
}

/* A host array of one dtype, read and written as doubles (int64 values in
 * the tests stay far below 2^53, so doubles hold them exactly). */
struct HostArr {
    int dt;
    std::vector<unsigned char> bytes;
    HostArr(int dtype, int64_t n) : dt(dtype), bytes((size_t)n * DTYPE_SIZE[dtype])
    {
    }
    double get(int64_t i) const
    {
        const unsigned char *p = bytes.data() + (size_t)i * DTYPE_SIZE[dt];
        float f;
        __half h;
        double d;
        int64_t v;
        switch (dt) {
        case PYGPU_FLOAT32:
            memcpy(&f, p, 4);
            return f;
        case PYGPU_FLOAT16:
            memcpy(&h, p, 2);
            return __half2float(h);
        case PYGPU_FLOAT64:
            memcpy(&d, p, 8);
            return d;
        default:
            memcpy(&v, p, 8);
            return (double)v;
        }
    }
    void set(int64_t i, double x)
    {
        unsigned char *p = bytes.data() + (size_t)i * DTYPE_SIZE[dt];
        if (dt == PYGPU_FLOAT32) {
            float f = (float)x;
            memcpy(p, &f, 4);
        } else if (dt == PYGPU_FLOAT16) {
            __half h = __double2half(x);
            memcpy(p, &h, 2);
        } else if (dt == PYGPU_FLOAT64) {
            memcpy(p, &x, 8);
        } else {
            int64_t v = (int64_t)x;
            memcpy(p, &v, 8);
        }
    }
};

/* Random test data: half of the floats are multiples of 1/8 in [-8, 8]
 * (exact in every dtype, often equal), half arbitrary values of [-8, 8]
 * rounded to the dtype; int64 in [-1000, 1000].  `specials` sprinkles NaN,
 * +-inf, -0.0 and 0 among the floats. */
static HostArr random_arr(int dt, int64_t n, bool specials)
{
    HostArr h(dt, n);
    for (int64_t i = 0; i < n; i++) {
        double x;
        if (dt == PYGPU_INT64) {
            x = (double)rng_int(-1000, 1000);
        } else if (specials && rng_next() % 8 == 0) {
            const double s[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
            x = s[rng_next() % 5];
        } else if (rng_next() % 2) {
            x = (double)rng_int(-64, 64) / 8;
        } else {
            x = (double)(rng_next() >> 11) / 9007199254740992.0 * 16 - 8;
        }
        h.set(i, x);
    }
    return h;
}

// ----------------------------------------------------- device arrays

constexpr size_t GUARD = 64; /* keeps base + GUARD 16-byte aligned */
constexpr unsigned char PATTERN = 0xA5;

/* n elements of esize bytes, `off` elements past a 16-byte boundary, with
 * PATTERN bytes around them. */
struct DevArr {
    size_t esize;
    int64_t n, off;
    unsigned char *base;
    size_t total;
    void *ptr() const { return base + GUARD + (size_t)off * esize; }
};

static DevArr dev_alloc(size_t esize, int64_t n, int64_t off)
{
    DevArr d = {esize, n, off, nullptr, 0};
    d.total = GUARD + (size_t)(n + off) * esize + GUARD;
    CHECK(cudaMalloc((void **)&d.base, d.total));
    CHECK(cudaMemset(d.base, PATTERN, d.total));
    return d;
}

static DevArr dev_alloc(int dt, int64_t n, int64_t off)
{
    return dev_alloc(DTYPE_SIZE[dt], n, off);
}

static void dev_put(const DevArr &d, const HostArr &h)
{
    CHECK(cudaMemcpy(d.ptr(), h.bytes.data(), h.bytes.size(),
                     cudaMemcpyHostToDevice));
}

static HostArr dev_get(const DevArr &d, int dt)
{
    HostArr h(dt, d.n);
    CHECK(cudaMemcpy(h.bytes.data(), d.ptr(), h.bytes.size(),
                     cudaMemcpyDeviceToHost));
    return h;
}

/* True when every byte outside the n elements still holds PATTERN. */
static bool dev_guards_ok(const DevArr &d)
{
    std::vector<unsigned char> all(d.total);
    CHECK(cudaMemcpy(all.data(), d.base, d.total, cudaMemcpyDeviceToHost));
    size_t begin = GUARD + (size_t)d.off * d.esize;
    size_t end = begin + (size_t)d.n * d.esize;
    for (size_t i = 0; i < d.total; i++) {
        if ((i < begin || i >= end) && all[i] != PATTERN) {
            return false;
        }
    }
    return true;
}

static void dev_free(DevArr &d)
{
    CHECK(cudaFree(d.base));
    d.base = nullptr;
}

// ---------------------------------------------------------- geometry

struct GeomCase {
    const char *name;
    pygpu_geom g;
};

static GeomCase make_geom(const char *name, std::vector<int64_t> shape,
                          std::vector<int64_t> s0, std::vector<int64_t> s1,
                          std::vector<int64_t> s2)
{
    GeomCase c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.g.ndim = (int)shape.size();
    for (size_t d = 0; d < shape.size(); d++) {
        c.g.shape[d] = shape[d];
        c.g.stride[0][d] = s0[d];
        c.g.stride[1][d] = s1[d];
        c.g.stride[2][d] = s2[d];
    }
    return c;
}

static int64_t numel(const pygpu_geom &g)
{
    int64_t n = 1;
    for (int d = 0; d < g.ndim; d++) {
        n *= g.shape[d];
    }
    return n;
}

/* Elements operand k spans (strides are non-negative in these tests). */
static int64_t extent(const pygpu_geom &g, int k)
{
    if (numel(g) == 0) {
        return 0;
    }
    int64_t e = 1;
    for (int d = 0; d < g.ndim; d++) {
        e += (g.shape[d] - 1) * g.stride[k][d];
    }
    return e;
}

static void offsets(const pygpu_geom &g, int64_t i, int64_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        int64_t idx = i % g.shape[d];
        i /= g.shape[d];
        for (int k = 0; k < 3; k++) {
            off[k] += idx * g.stride[k][d];
        }
    }
}

static std::vector<GeomCase> geom_cases(void)
{
    std::vector<GeomCase> c;
    c.push_back(make_geom("empty", {0}, {1}, {1}, {1}));
    c.push_back(make_geom("0-d", {}, {}, {}, {}));
    c.push_back(make_geom("n=1", {1}, {1}, {1}, {1}));
    c.push_back(make_geom("n=7", {7}, {1}, {1}, {1}));
    c.push_back(make_geom("n=1000", {1000}, {1}, {1}, {1}));
    c.push_back(make_geom("n=100003", {100003}, {1}, {1}, {1}));
    c.push_back(make_geom("row broadcast 37x65", {37, 65}, {65, 1}, {65, 1},
                          {0, 1}));
    c.push_back(make_geom("column broadcast 37x65", {37, 65}, {65, 1},
                          {1, 0}, {65, 1}));
    c.push_back(make_geom("transposed input 33x47", {33, 47}, {47, 1},
                          {1, 33}, {47, 1}));
    c.push_back(make_geom("transposed output 20x30", {20, 30}, {1, 20},
                          {30, 1}, {30, 1}));
    c.push_back(make_geom("strided 5x6x7", {5, 6, 7}, {42, 7, 1}, {0, 7, 1},
                          {84, 14, 2}));
    c.push_back(make_geom("1-d stride 2, scalar", {500}, {1}, {2}, {0}));
    std::vector<int64_t> shape(16, 2), rowmajor(16), reversed(16);
    for (int d = 0; d < 16; d++) {
        rowmajor[d] = (int64_t)1 << (15 - d);
        reversed[d] = (int64_t)1 << d;
    }
    c.push_back(make_geom("16-d", shape, rowmajor, reversed, rowmajor));
    return c;
}

// ------------------------------------------------------- elementwise

/* Runs launch(out, a, b, g) over geometry gc with random inputs of in_dt
 * and compares every output element with ref(a, b); salt varies the
 * misalignment of the three arrays. */
template <typename Launch, typename Ref>
static void check_elementwise(Case &c, int out_dt, int in_dt,
                              const GeomCase &gc, int salt, bool specials,
                              Launch launch, Ref ref)
{
    const pygpu_geom &g = gc.g;
    DevArr out = dev_alloc(out_dt, extent(g, 0), salt % 4);
    DevArr a = dev_alloc(in_dt, extent(g, 1), (salt + 1) % 4);
    DevArr b = dev_alloc(in_dt, extent(g, 2), (salt + 2) % 4);
    HostArr ha = random_arr(in_dt, a.n, specials);
    HostArr hb = random_arr(in_dt, b.n, specials);
    dev_put(a, ha);
    dev_put(b, hb);
    c.expect_success(launch(out.ptr(), a.ptr(), b.ptr(), &g), gc.name);
    CHECK(cudaStreamSynchronize(g_stream));
    HostArr ho = dev_get(out, out_dt);
    for (int64_t i = 0; c.ok && i < numel(g); i++) {
        int64_t off[3];
        offsets(g, i, off);
        double want = ref(ha.get(off[1]), hb.get(off[2]));
        double got = ho.get(off[0]);
        if (!same(got, want)) {
            c.fail("%s, element %lld (a=%.9g b=%.9g): got %.17g, want %.17g",
                   gc.name, (long long)i, ha.get(off[1]), hb.get(off[2]), got,
                   want);
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
        int64_t x = (int64_t)a, y = (int64_t)b;
        int64_t r = op == PYGPU_ADD   ? x + y
                    : op == PYGPU_SUB ? x - y
                    : op == PYGPU_MUL ? x * y
                    : y == 0          ? 0
                                      : x / y;
        return (double)r;
    }
    if (dt == PYGPU_FLOAT64) {
        return op == PYGPU_ADD   ? a + b
               : op == PYGPU_SUB ? a - b
               : op == PYGPU_MUL ? a * b
                                 : a / b;
    }
    /* float16 computes in float and rounds the float result: with a scalar
     * that is not a half value, that can differ from rounding the exact
     * result once, so the reference does the same. */
    float x = (float)a, y = (float)b;
    float r = op == PYGPU_ADD   ? x + y
              : op == PYGPU_SUB ? x - y
              : op == PYGPU_MUL ? x * y
                                : x / y;
    return round_to(dt, r);
}

/* The scalar as the kernels compute with it. */
static double scalar_compute_value(int dt, pygpu_scalar_value s)
{
    if (dt == PYGPU_INT64) {
        return (double)s.i;
    }
    return dt == PYGPU_FLOAT64 ? s.f : (double)(float)s.f;
}

static void test_binary(void)
{
    std::vector<GeomCase> geoms = geom_cases();
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS; op++) {
            Case c;
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *b,
                        const pygpu_geom *g) {
                        return pygpu_cuda_binary(op, dt, o, a, b, g, g_stream);
                    },
                    [&](double a, double b) { return ref_binop(dt, op, a, b); });
            }
            report(c, "binary %s %s", DTYPE_NAME[dt], BINOP_NAME[op]);
        }
    }
}

static void test_binary_scalar(void)
{
    std::vector<GeomCase> geoms = geom_cases();
    /* 1.5 is exact everywhere; -0.1 is not, so float32 and float16 must
     * round it to float first; 0 checks int64 division by zero. */
    const pygpu_scalar_value scalars[] = {{1.5, 7}, {-0.1, -3}, {0.0, 0}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS; op++) {
            for (int first = 0; first < 2; first++) {
                Case c;
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
                        });
                }
                report(c, "binary_scalar %s %s scalar_first=%d",
                       DTYPE_NAME[dt], BINOP_NAME[op], first);
            }
        }
    }
}

static void test_unary(void)
{
    std::vector<GeomCase> geoms = geom_cases();
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NUNOPS; op++) {
            Case c;
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_unary(op, dt, o, a, g, g_stream);
                    },
                    [&](double a, double) {
                        if (op == PYGPU_NEG) {
                            return -a;
                        }
                        return a <= 0 ? 0.0 : a; /* NaN stays */
                    });
            }
            report(c, "unary %s %s", DTYPE_NAME[dt], UNOP_NAME[op]);
        }
    }
}

static void test_copy(void)
{
    std::vector<GeomCase> geoms = geom_cases();
    for (int to = 0; to < PYGPU_NDTYPES; to++) {
        for (int from = 0; from < PYGPU_NDTYPES; from++) {
            Case c;
            for (size_t k = 0; k < geoms.size(); k++) {
                /* NaN and inf have no int64 value: no specials into int64. */
                check_elementwise(
                    c, to, from, geoms[k], (int)k, to != PYGPU_INT64,
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_copy(to, o, from, a, g, g_stream);
                    },
                    [&](double a, double) { return round_to(to, a); });
            }
            report(c, "copy %s -> %s", DTYPE_NAME[from], DTYPE_NAME[to]);
        }
    }
}

static void test_fill(void)
{
    const pygpu_scalar_value values[] = {{1.5, 42}, {-0.1, -7}, {NAN, 0}};
    const int64_t sizes[] = {0, 1, 7, 1000003};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        Case c;
        for (int v = 0; v < 3; v++) {
            for (int s = 0; s < 4; s++) {
                pygpu_scalar_value val = values[v];
                double want = dt == PYGPU_INT64 ? (double)val.i
                                                : round_to(dt, val.f);
                DevArr out = dev_alloc(dt, sizes[s], (v + s) % 4);
                c.expect_success(pygpu_cuda_fill(dt, out.ptr(), val, sizes[s],
                                                 g_stream),
                                 "fill");
                CHECK(cudaStreamSynchronize(g_stream));
                HostArr h = dev_get(out, dt);
                for (int64_t i = 0; c.ok && i < sizes[s]; i++) {
                    if (!same(h.get(i), want)) {
                        c.fail("n=%lld element %lld: got %.17g, want %.17g",
                               (long long)sizes[s], (long long)i, h.get(i),
                               want);
                    }
                }
                if (c.ok && !dev_guards_ok(out)) {
                    c.fail("n=%lld: wrote outside the output",
                           (long long)sizes[s]);
                }
                dev_free(out);
            }
        }
        report(c, "fill %s", DTYPE_NAME[dt]);
    }
}

// -------------------------------------------------------- relu, bias

static double ref_relu(double x)
{
    return x <= 0 ? 0.0 : x;
}

static void test_relu_contig(void)
{
    const int64_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1000, 100003};
    /* (out offset, in offset) in elements; -1 marks in place. */
    const int offs[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {0, 1},
                           {1, 0}, {3, 2}, {0, -1}, {1, -1}, {3, -1}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int64_t n : sizes) {
            Case c;
            for (const auto &o : offs) {
                bool in_place = o[1] < 0;
                HostArr hin = random_arr(dt, n, true);
                DevArr out = dev_alloc(dt, n, o[0]);
                DevArr in = in_place ? out : dev_alloc(dt, n, o[1]);
                dev_put(in, hin);
                c.expect_success(pygpu_cuda_relu_contig(dt, out.ptr(), in.ptr(),
                                                        n, g_stream),
                                 "relu_contig");
                CHECK(cudaStreamSynchronize(g_stream));
                HostArr h = dev_get(out, dt);
                for (int64_t i = 0; c.ok && i < n; i++) {
                    double want = ref_relu(hin.get(i));
                    if (!same(h.get(i), want)) {
                        c.fail("offsets out %d in %d, element %lld: got "
                               "%.17g, want %.17g",
                               o[0], o[1], (long long)i, h.get(i), want);
                    }
                }
                if (c.ok && !(dev_guards_ok(out) && dev_guards_ok(in))) {
                    c.fail("offsets out %d in %d: wrote out of range", o[0],
                           o[1]);
                }
                dev_free(out);
                if (!in_place) {
                    dev_free(in);
                }
            }
            report(c, "relu_contig %s n=%lld (%d alignments)", DTYPE_NAME[dt],
                   (long long)n, (int)(sizeof offs / sizeof offs[0]));
        }
    }
}

static void test_bias_act(void)
{
    const int64_t shapes[][2] = {{0, 5},  {1, 1},    {3, 7},   {129, 257},
                                 {1000, 3}, {2, 100003}, {4096, 1}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int act = 0; act < 2; act++) {
            Case c;
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
                CHECK(cudaStreamSynchronize(g_stream));
                HostArr h = dev_get(out, dt);
                for (int64_t i = 0; c.ok && i < rows * cols; i++) {
                    double want;
                    if (dt == PYGPU_INT64) {
                        want = hout.get(i) + hbias.get(i % cols);
                    } else {
                        want = round_to(dt, hout.get(i) + hbias.get(i % cols));
                    }
                    if (act) {
                        want = ref_relu(want);
                    }
                    if (!same(h.get(i), want)) {
                        c.fail("%lldx%lld element %lld: got %.17g, want %.17g",
                               (long long)rows, (long long)cols, (long long)i,
                               h.get(i), want);
                    }
                }
                if (c.ok && !dev_guards_ok(out)) {
                    c.fail("%lldx%lld: wrote outside the output",
                           (long long)rows, (long long)cols);
                }
                dev_free(out);
                dev_free(bias);
            }
            report(c, "bias_act %s relu=%d", DTYPE_NAME[dt], act);
        }
    }
}

// ------------------------------------------------------------ reduce

/* Values k/4 for k in [-8, 8]: maxima repeat, so the first index matters;
 * for max on floats a third of the outputs get one or two NaN. */
static HostArr reduce_input(int dt, int op, int64_t outer, int64_t n,
                            int64_t inner)
{
    HostArr h(dt, outer * n * inner);
    for (int64_t e = 0; e < outer * n * inner; e++) {
        h.set(e, (double)rng_int(-8, 8) / (dt == PYGPU_INT64 ? 1 : 4));
    }
    if (op == PYGPU_MAX && dt != PYGPU_INT64 && n > 0) {
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

static void check_reduce(Case &c, int dt, int op, int64_t outer, int64_t n,
                         int64_t inner, bool with_indices, int salt)
{
    const int64_t nout = outer * inner;
    HostArr hin = reduce_input(dt, op, outer, n, inner);
    DevArr in = dev_alloc(dt, outer * n * inner, salt % 4);
    DevArr out = dev_alloc(dt, nout, (salt + 1) % 4);
    DevArr idx = dev_alloc(PYGPU_INT64, with_indices ? nout : 0, 0);
    size_t wsize = pygpu_cuda_reduce_workspace(op, dt, outer, n, inner);
    DevArr ws = dev_alloc((size_t)1, (int64_t)wsize, 0);
    dev_put(in, hin);
    c.expect_success(pygpu_cuda_reduce(op, dt, out.ptr(),
                                       with_indices ? (int64_t *)idx.ptr()
                                                    : nullptr,
                                       in.ptr(), outer, n, inner,
                                       wsize ? ws.ptr() : nullptr, g_stream),
                     "reduce");
    CHECK(cudaStreamSynchronize(g_stream));
    HostArr hout = dev_get(out, dt);
    HostArr hidx = dev_get(idx, PYGPU_INT64);
    for (int64_t o = 0; c.ok && o < outer; o++) {
        for (int64_t i = 0; c.ok && i < inner; i++) {
            double want = 0, sum_abs = 0;
            int64_t want_idx = 0;
            for (int64_t j = 0; j < n; j++) {
                double x = hin.get((o * n + j) * inner + i);
                if (op != PYGPU_MAX) {
                    want += x;
                    sum_abs += fabs(x);
                } else if (j == 0 || (!isnan(want) && (isnan(x) || x > want))) {
                    want = x;
                    want_idx = j;
                }
            }
            if (op == PYGPU_MEAN) {
                want = n ? want / (double)n : NAN;
                sum_abs = n ? sum_abs / (double)n : 0;
            }
            /* float32 accumulation error, then rounding to the dtype. */
            double tol = 0;
            if (dt == PYGPU_FLOAT32 || dt == PYGPU_FLOAT16) {
                tol = 1e-5 * sum_abs +
                      fabs(want) * (dt == PYGPU_FLOAT16 ? 1.0 / 1024 : 0);
            } else if (dt == PYGPU_FLOAT64) {
                tol = 1e-12 * sum_abs;
            }
            double got = hout.get(o * inner + i);
            bool close = same(got, want) || fabs(got - want) <= tol;
            if (!close) {
                c.fail("[%lld,%lld,%lld] output (%lld,%lld): got %.17g, want "
                       "%.17g",
                       (long long)outer, (long long)n, (long long)inner,
                       (long long)o, (long long)i, got, want);
            } else if (with_indices && hidx.get(o * inner + i) != want_idx) {
                c.fail("[%lld,%lld,%lld] output (%lld,%lld): index %.0f, "
                       "want %lld",
                       (long long)outer, (long long)n, (long long)inner,
                       (long long)o, (long long)i, hidx.get(o * inner + i),
                       (long long)want_idx);
            }
        }
    }
    if (c.ok && !(dev_guards_ok(out) && dev_guards_ok(idx) &&
                  dev_guards_ok(ws))) {
        c.fail("[%lld,%lld,%lld]: wrote outside the output or workspace",
               (long long)outer, (long long)n, (long long)inner);
    }
    dev_free(in);
    dev_free(out);
    dev_free(idx);
    dev_free(ws);
}

static void test_reduce(void)
{
    /* [outer, n, inner]: empty ones, warp rows, block rows, rows cut in
     * chunks, columns, columns cut in chunks. */
    const int64_t shapes[][3] = {
        {1, 0, 1},      {3, 0, 4},       {0, 5, 3},
        {4, 5, 0},      {1, 1, 1},       {1, 7, 1},
        {5, 33, 1},     {1, 1000, 1},    {1, 1024, 1},
        {1, 1025, 1},   {4, 5000, 1},    {1000, 17, 1},
        {3, 300000, 1}, {1, (1 << 22) + 3, 1}, {2, 17, 3},
        {3, 1000, 129}, {1, 100000, 4},  {1, 50001, 2},
        {7, 3, 1000},   {2, 600, 3000},  {1, 1, 70000}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NREDOPS; op++) {
            if (op == PYGPU_MEAN && dt == PYGPU_INT64) {
                continue; /* never asked */
            }
            Case c;
            int salt = 0;
            for (const auto &s : shapes) {
                if (op == PYGPU_MAX && s[1] == 0) {
                    continue; /* refused by the caller */
                }
                check_reduce(c, dt, op, s[0], s[1], s[2],
                             op == PYGPU_MAX && salt % 4 != 3, salt);
                salt++;
            }
            report(c, "reduce %s %s", DTYPE_NAME[dt], REDOP_NAME[op]);
        }
    }
}

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

static void test_random(void)
{
    const int64_t sizes[] = {0, 1, 3, 4, 5, 1001, 65536 + 3};
    /* The second state carries the counter across 32 bits. */
    const pygpu_philox_state states[] = {{0, 0},
                                         {0x0123456789ABCDEFull, 0xFFFFFFFEull}};
    const int dtypes[] = {PYGPU_FLOAT32, PYGPU_FLOAT16, PYGPU_FLOAT64};
    for (int dt : dtypes) {
        for (int normal = 0; normal < 2; normal++) {
            Case c;
            int salt = 0;
            for (int64_t n : sizes) {
                for (const pygpu_philox_state &st : states) {
                    DevArr out = dev_alloc(dt, n, salt++ % 4);
                    c.expect_success(pygpu_cuda_random(dt, out.ptr(), n, normal,
                                                       st, g_stream),
                                     "random");
                    CHECK(cudaStreamSynchronize(g_stream));
                    HostArr h = dev_get(out, dt);
                    for (int64_t e = 0; c.ok && e < n; e++) {
                        double want = ref_random(dt, normal, st, e);
                        double got = h.get(e);
                        /* Uniform is exact; normal goes through the device
                         * and host log/sin/cos, which may differ in the
                         * last bits (then in float16 rounding). */
                        double tol = !normal                ? 0
                                     : dt == PYGPU_FLOAT64 ? 1e-12
                                     : dt == PYGPU_FLOAT32 ? 1e-5
                                                           : 1e-3;
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
            report(c, "random %s %s", DTYPE_NAME[dt],
                   normal ? "normal" : "uniform");
        }
    }
}

/* Unknown codes are refused without launching anything. */
static void test_invalid_codes(void)
{
    Case c;
    pygpu_geom g;
    memset(&g, 0, sizeof g);
    g.ndim = 1;
    g.shape[0] = 4;
    pygpu_scalar_value s = {1.0, 1};
    pygpu_philox_state st = {0, 0};
    const cudaError_t got[] = {
        pygpu_cuda_binary(PYGPU_NBINOPS, PYGPU_FLOAT32, nullptr, nullptr,
                          nullptr, &g, g_stream),
        pygpu_cuda_binary(PYGPU_ADD, PYGPU_NDTYPES, nullptr, nullptr, nullptr,
                          &g, g_stream),
        pygpu_cuda_binary_scalar(-1, PYGPU_FLOAT32, nullptr, nullptr, s, 0,
                                 &g, g_stream),
        pygpu_cuda_unary(PYGPU_NUNOPS, PYGPU_FLOAT32, nullptr, nullptr, &g,
                         g_stream),
        pygpu_cuda_copy(PYGPU_FLOAT32, nullptr, 7, nullptr, &g, g_stream),
        pygpu_cuda_fill(-1, nullptr, s, 4, g_stream),
        pygpu_cuda_reduce(PYGPU_NREDOPS, PYGPU_FLOAT32, nullptr, nullptr,
                          nullptr, 1, 4, 1, nullptr, g_stream),
        pygpu_cuda_random(PYGPU_INT64, nullptr, 4, 0, st, g_stream),
        pygpu_cuda_relu_contig(9, nullptr, nullptr, 4, g_stream),
        pygpu_cuda_bias_act(9, nullptr, nullptr, 1, 4, 0, g_stream),
    };
    for (size_t k = 0; k < sizeof got / sizeof got[0]; k++) {
        if (got[k] != cudaErrorInvalidValue) {
            c.fail("call %zu returned %s", k, cudaGetErrorName(got[k]));
        }
    }
    if (pygpu_cuda_reduce_workspace(PYGPU_NREDOPS, PYGPU_FLOAT32, 1, 1 << 28,
                                    1) != 0) {
        c.fail("workspace for an unknown op is not 0");
    }
    c.expect_success(cudaGetLastError(), "after refusals");
    report(c, "invalid codes refused");
}

// ------------------------------------------------------------- timing

/* Median milliseconds of `runs` timed calls after a warm-up. */
template <typename F> static float median_ms(F fn, int runs = 20)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int r = 0; r < 3; r++) {
        CHECK(fn());
    }
    std::vector<float> ms(runs);
    for (int r = 0; r < runs; r++) {
        CHECK(cudaEventRecord(start, g_stream));
        CHECK(fn());
        CHECK(cudaEventRecord(stop, g_stream));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return ms[runs / 2];
}

static void bench(void)
{
    const int64_t n = (int64_t)1 << 28;
    const size_t bytes = (size_t)n * sizeof(float);
    float *in, *out;
    CHECK(cudaMalloc((void **)&in, bytes));
    CHECK(cudaMalloc((void **)&out, bytes));
    CHECK(pygpu_cuda_random(PYGPU_FLOAT32, in, n, 1, {7, 0}, g_stream));

    /* Validate the big run before timing it. */
    Case c;
    CHECK(pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, in, n, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
    std::vector<float> hin(n), hout(n);
    CHECK(cudaMemcpy(hin.data(), in, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hout.data(), out, bytes, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; c.ok && i < n; i++) {
        if (!same(hout[i], ref_relu(hin[i]))) {
            c.fail("element %lld: got %.9g from %.9g", (long long)i, hout[i],
                   hin[i]);
        }
    }
    report(c, "relu_contig float32 n=2^28 before timing");

    float relu_ms = median_ms([&] {
        return pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, in, n, g_stream);
    });
    float inplace_ms = median_ms([&] {
        return pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, out, n, g_stream);
    });
    float copy_ms = median_ms([&] {
        return cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice,
                               g_stream);
    });
    size_t wsize = pygpu_cuda_reduce_workspace(PYGPU_SUM, PYGPU_FLOAT32, 1, n, 1);
    void *ws = nullptr;
    if (wsize > 0) {
        CHECK(cudaMalloc(&ws, wsize));
    }
    float sum_ms = median_ms([&] {
        return pygpu_cuda_reduce(PYGPU_SUM, PYGPU_FLOAT32, out, nullptr, in, 1,
                                 n, 1, ws, g_stream);
    });

    /* Bytes read plus bytes written, in GB/s. */
    double moved = 2.0 * (double)bytes;
    double copy_gbs = moved / copy_ms / 1e6;
    double relu_gbs = moved / relu_ms / 1e6;
    double inplace_gbs = moved / inplace_ms / 1e6;
    printf("cudaMemcpy D2D     2^28 float32: %8.1f GB/s (%.3f ms)\n", copy_gbs,
           copy_ms);
    printf("relu_contig        2^28 float32: %8.1f GB/s (%.3f ms), %.1f%% of "
           "memcpy\n",
           relu_gbs, relu_ms, 100 * relu_gbs / copy_gbs);
    printf("relu_contig in place 2^28 float32: %6.1f GB/s (%.3f ms), %.1f%% "
           "of memcpy\n",
           inplace_gbs, inplace_ms, 100 * inplace_gbs / copy_gbs);
    printf("reduce sum         2^28 float32: %8.1f GB/s read (%.3f ms)\n",
           (double)bytes / sum_ms / 1e6, sum_ms);
    CHECK(cudaFree(ws));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

    test_invalid_codes();
    test_binary();
    test_binary_scalar();
    test_unary();
    test_copy();
    test_fill();
    test_relu_contig();
    test_bias_act();
    test_reduce();
    test_random();

    bench();

    CHECK(cudaStreamDestroy(g_stream));
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
