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
 * alignments and names the first mismatch with the values it got and
 * wanted), the timings, and last "N passed, M failed".  Exits 1 when a case
 * failed; a CUDA error outside a launcher's return value (a failed
 * allocation or copy, a fault in a kernel) stops the run with exit code 2
 * after naming the case and printing the counts so far.
 *
 * Every device array sits 0..3 elements past a 16-byte boundary, between
 * guard bytes that must come back untouched.  All setup and readback goes
 * through g_stream, a non-blocking stream: each guard fill, upload and
 * download is queued there and waited for, so no launcher can run before
 * its inputs are in place, and a launcher that strayed onto another stream
 * would get no ordering with them (and likely be caught).
 *
 * Results are compared exactly, -0.0 against +0.0 included (NaN matches any
 * NaN), except where a tolerance is spelled out (reduce mean, normals).
 * Several shapes exceed one wave of threads (about 132 SMs x 2048 threads
 * on an H100), so every grid-stride loop makes several trips.
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
#include <memory>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/philox.h"

static const char *const DTYPE_NAME[] = {"float32", "float16", "float64",
                                         "int64"};
static const size_t DTYPE_SIZE[] = {4, 2, 8, 8};
static const char *const BINOP_NAME[] = {"add", "sub", "mul", "div"};
static const char *const UNOP_NAME[] = {"neg", "relu"};
static const char *const REDOP_NAME[] = {"sum", "mean", "max"};

static cudaStream_t g_stream;
static int g_passed, g_failed;
/* The case being run, for the message of a CUDA error that ends the run. */
static char g_case[200] = "setup";

/* A CUDA call outside the launchers under test (allocation, copies,
 * synchronization, which also reports a fault in a kernel): an error ends
 * the run, naming the case. */
#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t err_ = (call);                                           \
        if (err_ != cudaSuccess) {                                           \
            printf("FAIL %s: %s:%d: %s: %s\n", g_case, __FILE__, __LINE__,   \
                   #call, cudaGetErrorString(err_));                         \
            printf("%d passed, %d failed (run aborted)\n", g_passed,         \
                   g_failed + 1);                                            \
            fflush(stdout);                                                  \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

// ------------------------------------------------------------- results

/* One case: passes until its first failure, which it keeps for the report.
 * Constructing it names the case (printf format). */
struct Case {
    bool ok = true;
    char name[200] = "";
    char detail[400] = "";
    explicit Case(const char *fmt, ...)
    {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(name, sizeof name, fmt, ap);
        va_end(ap);
        snprintf(g_case, sizeof g_case, "%s", name);
    }
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

static void report(const Case &c)
{
    if (c.ok) {
        printf("PASS %s\n", c.name);
        g_passed++;
    } else {
        printf("FAIL %s: %s\n", c.name, c.detail);
        g_failed++;
    }
    fflush(stdout);
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

/* Uniform in [0, m) for 0 < m <= 2^32, by multiply and shift (no division:
 * the big arrays draw tens of millions of these). */
static uint64_t rng_below(uint64_t m)
{
    return ((rng_next() >> 32) * m) >> 32;
}

static int64_t rng_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)rng_below((uint64_t)(hi - lo + 1));
}

/* Floating to int64 as csrc/cpu_elementwise.c (f64_to_i64) and the kernels
 * (f2i64 in common.cuh) do it: truncation toward zero inside [-2^63, 2^63),
 * INT64_MIN for NaN, the infinities and everything beyond. */
static int64_t host_f2i64(double x)
{
    return (x >= -0x1p63 && x < 0x1p63) ? (int64_t)x : INT64_MIN;
}

/* int64 arithmetic as the CPU loops and the kernels do it: through uint64,
 * which wraps; x / 0 is 0 and x / -1 the wrapped negation. */
static int64_t ref_i64(int op, int64_t x, int64_t y)
{
    uint64_t a = (uint64_t)x, b = (uint64_t)y;
    switch (op) {
    case PYGPU_ADD:
        return (int64_t)(a + b);
    case PYGPU_SUB:
        return (int64_t)(a - b);
    case PYGPU_MUL:
        return (int64_t)(a * b);
    default:
        return y == 0 ? 0 : y == -1 ? (int64_t)(0 - a) : x / y;
    }
}

/* x rounded to dtype dt the way the kernels store it. */
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
        return (double)host_f2i64(x);
    }
}

/* Equal values with equal signs (so -0.0 is not +0.0); any NaN matches any
 * NaN (the GPU canonicalizes float16 NaNs). */
static bool same(double got, double want)
{
    if (isnan(got) || isnan(want)) {
        return isnan(got) && isnan(want);
    }
    return got == want && !signbit(got) == !signbit(want);
}

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

/* A host array of one dtype, read and written as doubles (int64 values in
 * the random tests stay far below 2^53, so doubles hold them exactly), or
 * as exact int64 with get_i64 and set_i64.  The storage starts out
 * uninitialized (the big arrays are written once, right away). */
struct HostArr {
    int dt;
    int64_t n;
    std::unique_ptr<unsigned char[]> buf;
    HostArr(int dtype, int64_t count)
        : dt(dtype), n(count), buf(new unsigned char[nbytes() + 1])
    {
    }
    size_t nbytes() const { return (size_t)n * DTYPE_SIZE[dt]; }
    unsigned char *data() { return buf.get(); }
    const unsigned char *data() const { return buf.get(); }
    int64_t size() const { return n; }
    double get(int64_t i) const
    {
        const unsigned char *p = data() + (size_t)i * DTYPE_SIZE[dt];
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
        unsigned char *p = data() + (size_t)i * DTYPE_SIZE[dt];
        if (dt == PYGPU_FLOAT32) {
            float f = (float)x;
            memcpy(p, &f, 4);
        } else if (dt == PYGPU_FLOAT16) {
            __half h = __double2half(x);
            memcpy(p, &h, 2);
        } else if (dt == PYGPU_FLOAT64) {
            memcpy(p, &x, 8);
        } else {
            int64_t v = host_f2i64(x);
            memcpy(p, &v, 8);
        }
    }
    int64_t get_i64(int64_t i) const
    {
        int64_t v;
        memcpy(&v, data() + (size_t)i * 8, 8);
        return v;
    }
    void set_i64(int64_t i, int64_t v)
    {
        memcpy(data() + (size_t)i * 8, &v, 8);
    }
    /* Element i becomes a copy of element k of `from` (same dtype). */
    void copy_elem(int64_t i, const HostArr &from, int64_t k)
    {
        /* fixed sizes, so that each memcpy is one move */
        switch (DTYPE_SIZE[dt]) {
        case 2:
            memcpy(data() + i * 2, from.data() + k * 2, 2);
            break;
        case 4:
            memcpy(data() + i * 4, from.data() + k * 4, 4);
            break;
        default:
            memcpy(data() + i * 8, from.data() + k * 8, 8);
            break;
        }
    }
};

static HostArr i64_arr(const std::vector<int64_t> &v)
{
    HostArr h(PYGPU_INT64, (int64_t)v.size());
    for (size_t i = 0; i < v.size(); i++) {
        h.set_i64((int64_t)i, v[i]);
    }
    return h;
}

/* Random test data: half of the floats are multiples of 1/8 in [-8, 8]
 * (exact in every dtype, often equal), half arbitrary values of [-8, 8]
 * rounded to the dtype; int64 in [-1000, 1000].  Elements are drawn from a
 * pool of 4096 such values, so that arrays of millions fill quickly.
 * `specials` sprinkles NaN, +-inf, -0.0 and +0.0 among the floats (about
 * one in eight), and puts all of them, in turn, at the first positions (and
 * the last ones, when there is room) so that every array of 5 or more
 * elements holds each one; for int64 those positions get 0, -1 and 1. */
static HostArr random_arr(int dt, int64_t n, bool specials)
{
    constexpr int POOL_BITS = 12;
    HostArr h(dt, n);
    if (n == 0) {
        return h;
    }
    HostArr pool(dt, 1 << POOL_BITS);
    for (int64_t k = 0; k < pool.size(); k++) {
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
        pool.set(k, x);
    }
    for (int64_t i = 0; i < n; i++) {
        h.copy_elem(i, pool, (int64_t)(rng_next() >> (64 - POOL_BITS)));
    }
    if (specials) {
        const double fs[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
        const double is[] = {0, -1, 1};
        const double *s = dt == PYGPU_INT64 ? is : fs;
        const int64_t ns = dt == PYGPU_INT64 ? 3 : 5;
        for (int64_t k = 0; k < ns && k < n; k++) {
            h.set(k, s[k]);
            if (n >= 2 * ns) {
                h.set(n - 1 - k, s[k]);
            }
        }
    }
    return h;
}

// ----------------------------------------------------- device arrays

constexpr size_t GUARD = 64; /* keeps base + GUARD 16-byte aligned */
constexpr unsigned char PATTERN = 0xA5;

/* Host to device and back, ordered with the launches on g_stream: a copy
 * is queued behind all earlier work there and waited for, so an upload is
 * complete before the next launch and a download sees every earlier one. */
static void to_device(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) {
        return;
    }
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
}

static void to_host(void *dst, const void *src, size_t bytes)
{
    CHECK(cudaStreamSynchronize(g_stream));
    if (bytes == 0) {
        return;
    }
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
}

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
    CHECK(cudaMemsetAsync(d.base, PATTERN, d.total, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
    return d;
}

static DevArr dev_alloc(int dt, int64_t n, int64_t off)
{
    return dev_alloc(DTYPE_SIZE[dt], n, off);
}

static void dev_put(const DevArr &d, const HostArr &h)
{
    to_device(d.ptr(), h.data(), h.nbytes());
}

static HostArr dev_get(const DevArr &d, int dt)
{
    HostArr h(dt, d.n);
    to_host(h.data(), d.ptr(), h.nbytes());
    return h;
}

/* True when every byte outside the n elements still holds PATTERN (only
 * the bytes before and after them are read back). */
static bool dev_guards_ok(const DevArr &d)
{
    const size_t begin = GUARD + (size_t)d.off * d.esize;
    const size_t end = begin + (size_t)d.n * d.esize;
    std::vector<unsigned char> head(begin), tail(d.total - end);
    to_host(head.data(), d.base, head.size());
    to_host(tail.data(), d.base + end, tail.size());
    for (unsigned char b : head) {
        if (b != PATTERN) {
            return false;
        }
    }
    for (unsigned char b : tail) {
        if (b != PATTERN) {
            return false;
        }
    }
    return true;
}

static void dev_free(DevArr &d)
{
    CHECK(cudaStreamSynchronize(g_stream));
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

static GeomCase contiguous_geom(const char *name, int64_t n)
{
    return make_geom(name, {n}, {1}, {1}, {1});
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

/* Walks the elements of g in row-major order, keeping the offsets of the
 * three operands (an odometer: no division per element). */
struct GeomIter {
    const pygpu_geom &g;
    int64_t idx[PYGPU_MAX_DIMS] = {0};
    int64_t off[3] = {0, 0, 0};
    explicit GeomIter(const pygpu_geom &geom) : g(geom) {}
    void next()
    {
        for (int d = g.ndim - 1; d >= 0; d--) {
            if (++idx[d] < g.shape[d]) {
                for (int k = 0; k < 3; k++) {
                    off[k] += g.stride[k][d];
                }
                return;
            }
            for (int k = 0; k < 3; k++) {
                off[k] -= (g.shape[d] - 1) * g.stride[k][d];
            }
            idx[d] = 0;
        }
    }
};

/* The shapes of the elementwise tests; `big` adds two that take many trips
 * of the grid-stride loops (one H100 wave is about 270k threads): 2^23
 * contiguous elements, and 3000 x 2049 with the first input transposed and
 * the second a broadcast row.  Every functor runs the same two loops, so
 * the big shapes go to a selection of the cases (every dtype, every unary
 * op, both kinds of operands) that keeps the host's reference work to a
 * few seconds. */
static std::vector<GeomCase> geom_cases(bool big)
{
    std::vector<GeomCase> c;
    c.push_back(contiguous_geom("empty", 0));
    c.push_back(make_geom("0-d", {}, {}, {}, {}));
    c.push_back(contiguous_geom("n=1", 1));
    c.push_back(contiguous_geom("n=7", 7));
    c.push_back(contiguous_geom("n=1000", 1000));
    c.push_back(contiguous_geom("n=100003", 100003));
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
    if (big) {
        c.push_back(contiguous_geom("n=2^23", (int64_t)1 << 23));
        c.push_back(make_geom("transposed input, row broadcast 3000x2049",
                              {3000, 2049}, {2049, 1}, {1, 3000}, {0, 1}));
    }
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
    HostArr ho = dev_get(out, out_dt);
    const int64_t n = numel(g);
    GeomIter it(g);
    for (int64_t i = 0; c.ok && i < n; i++, it.next()) {
        const double x = ha.get(it.off[1]), y = hb.get(it.off[2]);
        const double want = ref(x, y);
        const double got = ho.get(it.off[0]);
        if (!same(got, want)) {
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

/* relu as the CPU loops have it: x < 0 ? 0 : x, so NaN stays NaN and -0.0
 * stays -0.0. */
static double ref_relu(double x)
{
    return x < 0 ? 0.0 : x;
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
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS; op++) {
            const std::vector<GeomCase> geoms =
                geom_cases(op == PYGPU_ADD || op == PYGPU_DIV);
            Case c("binary %s %s", DTYPE_NAME[dt], BINOP_NAME[op]);
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *b,
                        const pygpu_geom *g) {
                        return pygpu_cuda_binary(op, dt, o, a, b, g, g_stream);
                    },
                    [&](double a, double b) { return ref_binop(dt, op, a, b); });
            }
            report(c);
        }
    }
}

static void test_binary_scalar(void)
{
    /* 1.5 is exact everywhere; -0.1 is not, so float32 and float16 must
     * round it to float first; 0 checks int64 division by zero and the
     * signs of float zeros. */
    const pygpu_scalar_value scalars[] = {{1.5, 7}, {-0.1, -3}, {0.0, 0}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NBINOPS; op++) {
            for (int first = 0; first < 2; first++) {
                /* The big shapes once per dtype, each with another op. */
                const std::vector<GeomCase> geoms =
                    geom_cases(op == dt && first == dt % 2);
                Case c("binary_scalar %s %s scalar_first=%d", DTYPE_NAME[dt],
                       BINOP_NAME[op], first);
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
                report(c);
            }
        }
    }
}

static void test_unary(void)
{
    const std::vector<GeomCase> geoms = geom_cases(true);
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NUNOPS; op++) {
            Case c("unary %s %s", DTYPE_NAME[dt], UNOP_NAME[op]);
            for (size_t k = 0; k < geoms.size(); k++) {
                check_elementwise(
                    c, dt, dt, geoms[k], (int)k, true,
                    [&](void *o, const void *a, const void *,
                        const pygpu_geom *g) {
                        return pygpu_cuda_unary(op, dt, o, a, g, g_stream);
                    },
                    [&](double a, double) {
                        if (op == PYGPU_RELU) {
                            return ref_relu(a);
                        }
                        /* int64 0 negates to 0, not -0.0 */
                        return dt == PYGPU_INT64
                                   ? (double)ref_i64(PYGPU_SUB, 0, (int64_t)a)
                                   : -a;
                    });
            }
            report(c);
        }
    }
}

static void test_copy(void)
{
    for (int to = 0; to < PYGPU_NDTYPES; to++) {
        for (int from = 0; from < PYGPU_NDTYPES; from++) {
            /* The big shapes for float32 -> float16 -> float64 -> int64
             * -> float32: each dtype converted from and to once. */
            const std::vector<GeomCase> geoms =
                geom_cases(to == (from + 1) % PYGPU_NDTYPES);
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

static void test_fill(void)
{
    const pygpu_scalar_value values[] = {
        {1.5, 42}, {-0.1, -7}, {NAN, 0}, {-0.0, INT64_MIN}};
    const int64_t sizes[] = {0, 1, 7, 1000003, ((int64_t)1 << 23) + 1};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
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

// ------------------------------------------------- int64 edge values

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

/* int64 arithmetic wraps like the CPU loops (csrc/cpu_elementwise.c):
 * add, sub and mul modulo 2^64, x / 0 == 0, INT64_MIN / -1 == INT64_MIN,
 * -INT64_MIN == INT64_MIN; division truncates toward zero.  Checked with
 * literal results, through tensor-tensor and both scalar forms. */
static void test_int64_wrap(void)
{
    const int64_t MAX = INT64_MAX, MIN = INT64_MIN;
    struct Row {
        int64_t a, b;
        int64_t want[PYGPU_NBINOPS]; /* add, sub, mul, div */
    };
    const Row rows[] = {
        {MAX, 1, {MIN, MAX - 1, MAX, MAX}},
        {MIN, -1, {MAX, -MAX, MIN, MIN}},
        {MIN, 0, {MIN, MIN, 0, 0}},
        {7, 0, {7, 7, 0, 0}},
        {0, 0, {0, 0, 0, 0}},
        {-7, 2, {-5, -9, -14, -3}},
        {7, -2, {5, 9, -14, -3}},
        {-9, -4, {-13, -5, 36, 2}},
        {MAX, -1, {MAX - 1, MIN, -MAX, -MAX}},
        {MIN, 2, {MIN + 2, MAX - 1, 0, -(MAX / 2) - 1}},
        {-1, MIN, {MAX, MAX, MIN, 0}},
        {3037000500, 3037000500, {6074001000, 0, -9223372036709301616, 1}},
        {(int64_t)1 << 32, (int64_t)1 << 32, {(int64_t)1 << 33, 0, 0, 1}},
        {MAX, MAX, {-2, 0, 1, 1}},
        {MIN, MIN, {0, 0, 0, 1}},
        {MIN, 1, {-MAX, MAX, MIN, MIN}},
        {MIN, MAX, {-1, 1, MIN, -1}},
        {-((int64_t)1 << 62), 3,
         {-((int64_t)1 << 62) + 3, -((int64_t)1 << 62) - 3, (int64_t)1 << 62,
          -1537228672809129301}},
    };
    const int64_t nrows = (int64_t)(sizeof rows / sizeof rows[0]);
    std::vector<int64_t> va, vb;
    for (const Row &r : rows) {
        va.push_back(r.a);
        vb.push_back(r.b);
    }
    const HostArr ha = i64_arr(va), hb = i64_arr(vb);
    for (int op = 0; op < PYGPU_NBINOPS; op++) {
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
static void test_copy_to_int64(void)
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

static void test_relu_contig(void)
{
    const int64_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1000, 100003};
    /* (out offset, in offset) in elements; -1 marks in place. */
    const int offs[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {0, 1},
                           {1, 0}, {3, 2}, {0, -1}, {1, -1}, {3, -1}};
    const int noffs = (int)(sizeof offs / sizeof offs[0]);
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
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

static void test_bias_act(void)
{
    /* 3000 x 777 takes about 9 trips of an H100 wave, each moving a
     * thread's column on by stride % cols with a wrap (the `c += step`
     * logic); 3 x 300007 has rows longer than the stride. */
    const int64_t shapes[][2] = {{0, 5},    {1, 1},      {3, 7},
                                 {129, 257}, {1000, 3},  {2, 100003},
                                 {4096, 1},  {3000, 777}, {3, 300007}};
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
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

// ------------------------------------------------------------ reduce

/* Values k/4 for |k| <= kmax (int64: k itself); kmax is 8 (|x| <= 2)
 * unless n * kmax would pass 2^24: then every partial sum of an output, a
 * multiple of 1/4 no larger than its sum of |x| <= n * kmax / 4, is exact
 * in a float32 accumulator.  Maxima repeat, so the first index matters;
 * for max on floats a third of the outputs get one or two NaN. */
static HostArr reduce_input(int dt, int op, int64_t outer, int64_t n,
                            int64_t inner)
{
    const int64_t total = outer * n * inner;
    HostArr h(dt, total);
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

struct ReduceOut {
    HostArr val, idx;
};

/* pygpu_cuda_reduce over hin seen as [outer, n, inner], with its
 * workspace; checks the guards of the output, indices and workspace. */
static ReduceOut run_reduce(Case &c, int dt, int op, int64_t outer, int64_t n,
                            int64_t inner, const HostArr &hin,
                            bool with_indices, int salt)
{
    const int64_t nout = outer * inner;
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
    ReduceOut r = {dev_get(out, dt), dev_get(idx, PYGPU_INT64)};
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
 * the exact sum rounded once to the dtype, so it is compared exactly
 * (float16 included: one rounding of the exact float32 accumulator).  A
 * mean is that exact sum divided once in the accumulator type (float32 for
 * float16) and, for float16, rounded once more: at most half an ulp of each
 * (plus the reference's own double rounding).  Max and its index are
 * exact.  Only an accumulator that cannot be exact (not reached by the
 * shapes here) falls back to the worst-case bound of n - 1 roundings. */
static void check_reduce(Case &c, int dt, int op, int64_t outer, int64_t n,
                         int64_t inner, bool with_indices, int salt)
{
    const int64_t nout = outer * inner;
    const HostArr hin = reduce_input(dt, op, outer, n, inner);
    const ReduceOut r =
        run_reduce(c, dt, op, outer, n, inner, hin, with_indices, salt);

    /* The reference in one pass over the input in memory order. */
    std::vector<double> acc(nout, 0.0), acc_abs(nout, 0.0);
    std::vector<int64_t> acc_idx(nout, 0);
    for (int64_t o = 0, e = 0; o < outer; o++) {
        for (int64_t j = 0; j < n; j++) {
            for (int64_t i = 0; i < inner; i++, e++) {
                const double x = hin.get(e);
                const int64_t k = o * inner + i;
                if (op != PYGPU_MAX) {
                    acc[k] += x;
                    acc_abs[k] += fabs(x);
                } else if (j == 0 ||
                           (!isnan(acc[k]) && (isnan(x) || x > acc[k]))) {
                    acc[k] = x;
                    acc_idx[k] = j;
                }
            }
        }
    }

    const int acc_dt = dt == PYGPU_FLOAT16 ? PYGPU_FLOAT32 : dt;
    /* An accumulator of multiples of 1/4 is exact while every partial sum
     * (at most the sum of |x|) is below 2^24 / 4 in float32. */
    const double acc_limit = acc_dt == PYGPU_FLOAT64 ? 0x1p51 : 0x1p22;
    const double acc_eps = acc_dt == PYGPU_FLOAT64 ? 0x1p-53 : 0x1p-24;
    for (int64_t k = 0; c.ok && k < nout; k++) {
        const double s = acc[k], sum_abs = acc_abs[k];
        const bool exact = dt == PYGPU_INT64 || sum_abs <= acc_limit;
        const double acc_err = exact ? 0 : (double)(n - 1) * acc_eps * sum_abs;
        double want, tol = 0;
        if (op == PYGPU_MAX) {
            want = s;
        } else if (n == 0) {
            want = op == PYGPU_SUM ? 0.0 : NAN;
        } else if (op == PYGPU_SUM) {
            want = round_to(dt, s);
            if (!exact) {
                tol = acc_err + (dt == PYGPU_FLOAT16 ? 0.5 * ulp_of(dt, s) : 0);
            }
        } else {
            want = s / (double)n;
            tol = 0.5 * ulp_of(acc_dt, want) + ulp_of(PYGPU_FLOAT64, want) +
                  acc_err / (double)n;
            if (acc_dt == PYGPU_FLOAT32 && n > ((int64_t)1 << 24)) {
                tol += fabs(want) * 0x1p-24; /* n itself rounded to float */
            }
            if (dt == PYGPU_FLOAT16) {
                tol += 0.5 * ulp_of(dt, fabs(want) * (1 + 0x1p-22));
            }
        }
        const double got = r.val.get(k);
        const bool close = tol == 0 ? same(got, want)
                                    : same(got, want) ||
                                          fabs(got - want) <= tol;
        const int64_t o = k / inner, i = k % inner;
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

static void test_reduce(void)
{
    /* [outer, n, inner]: empty ones, warp rows, block rows, rows cut in
     * chunks, columns, columns cut in chunks; then shapes with several
     * trips of the grid-stride loops (an H100 wave is about 270k threads):
     * 20000 block rows (of 1100: more than a warp's 1024), 100003 warp
     * rows, 600002 column threads, and
     * columns cut in 32768 chunks whose second pass strides along rows of
     * 32768 partials. */
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
    for (int dt = 0; dt < PYGPU_NDTYPES; dt++) {
        for (int op = 0; op < PYGPU_NREDOPS; op++) {
            if (op == PYGPU_MEAN && dt == PYGPU_INT64) {
                continue; /* never asked */
            }
            Case c("reduce %s %s", DTYPE_NAME[dt], REDOP_NAME[op]);
            int salt = 0;
            for (const auto &s : shapes) {
                if (op == PYGPU_MAX && s[1] == 0) {
                    continue; /* refused by the caller */
                }
                check_reduce(c, dt, op, s[0], s[1], s[2],
                             op == PYGPU_MAX && salt % 4 != 3, salt);
                salt++;
            }
            report(c);
        }
    }
}

/* int64 sums wrap modulo 2^64 (as the CPU's), in both passes; max over
 * INT64_MIN must still report the first index, though INT64_MIN is also
 * the identity's value. */
static void test_reduce_int64_wrap(void)
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
            const ReduceOut r = run_reduce(c, PYGPU_INT64, op, sh.outer, sh.n,
                                           sh.inner, hin, op == PYGPU_MAX,
                                           salt++);
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
            report(c);
        }
    }
}

/* Unknown codes are refused without launching anything. */
static void test_invalid_codes(void)
{
    Case c("invalid codes refused");
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
    report(c);
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
    snprintf(g_case, sizeof g_case, "benchmark setup");
    CHECK(cudaMalloc((void **)&in, bytes));
    CHECK(cudaMalloc((void **)&out, bytes));
    CHECK(pygpu_cuda_random(PYGPU_FLOAT32, in, n, 1, {7, 0}, g_stream));

    /* Validate the big run before timing it. */
    Case c("relu_contig float32 n=2^28 before timing");
    CHECK(pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, in, n, g_stream));
    std::vector<float> hin(n), hout(n);
    to_host(hin.data(), in, bytes);
    to_host(hout.data(), out, bytes);
    for (int64_t i = 0; c.ok && i < n; i++) {
        if (!same(hout[i], ref_relu(hin[i]))) {
            c.fail("element %lld: got %.9g from %.9g", (long long)i, hout[i],
                   hin[i]);
        }
    }
    report(c);

    snprintf(g_case, sizeof g_case, "benchmark");
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
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudaFree(ws));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    /* Non-blocking: it orders with no other stream, the legacy default
     * stream included, so a launcher that strayed from the stream it is
     * given would show, and every copy above goes through it explicitly. */
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

    test_invalid_codes();
    test_binary();
    test_binary_scalar();
    test_unary();
    test_copy();
    test_copy_to_int64();
    test_int64_wrap();
    test_fill();
    test_relu_contig();
    test_bias_act();
    test_reduce();
    test_reduce_int64_wrap();
    test_random();

    bench();

    CHECK(cudaStreamDestroy(g_stream));
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
