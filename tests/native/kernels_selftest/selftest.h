/* selftest.h - the shared harness of the kernel self-test: checks every
 * CUDA launcher of kernels.h against a plain host reference, then times
 * relu_contig against a device-to-device cudaMemcpy.  Standalone: no
 * Python.
 *
 * Build from the repository root with every .cu file of this folder and
 * of csrc/kernels, as the selftests stage of scripts/gpu_check.sh does
 * (?*.cu: any .cu file; -arch=sm_90 or another target in place of native
 * where the building machine has no GPU):
 *   nvcc -std=c++17 -O3 -DPYGPU_WITH_CUDA -I csrc -arch=native \
 *        tests/native/kernels_selftest/?*.cu csrc/kernels/?*.cu \
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
 * NaN), except where a tolerance is spelled out (the floating functions,
 * with an absolute slack for the gelu family where its rules cancel:
 * gelu_slack.h; reduce mean; normals).
 * Several shapes exceed one wave of threads (about 132 SMs x 2048 threads
 * on an H100), so every grid-stride loop makes several trips.
 *
 * The files, one concern each:
 *   selftest.h      this harness: results, host values and references
 *                   shared by several areas, device arrays, geometry
 *   harness.cu      its globals, reporting, random data, device arrays
 *   geometry.cu     the shapes and strides of the elementwise tests
 *   elementwise.cu  binary, binary_scalar, unary, copy, fill
 *   gelu_slack.h    the gelu family's error bound (plain C; checked on
 *                   the host by tests/native/gelu_slack_check.c)
 *   int64_edges.cu  int64 wrap-around and float-to-int64 edge values
 *   relu_bias.cu    relu_contig and bias_act
 *   reduce.cu       reduce (every op, float16 into float32 too), int64
 *                   reduce edge values
 *   random.cu       uniform and normal random numbers
 *   gather.cu       gather and scatter by an index, bad indices
 *   main.cu         refused codes, the benchmark, the order of the run
 */
#ifndef PYGPU_KERNELS_SELFTEST_H
#define PYGPU_KERNELS_SELFTEST_H

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/rules.h"

inline constexpr const char *const DTYPE_NAME[] = {"float32", "float16",
                                                   "float64", "int64"};
inline constexpr size_t DTYPE_SIZE[] = {4, 2, 8, 8};
/* The dtypes with host references here (the first four); bool, uint8,
 * int32 and bfloat16 are covered by the Python tests on a GPU, and the
 * bfloat16 rule by bfloat16.cu. */
inline constexpr int SELFTEST_NDTYPES = 4;
#define SELFTEST_OP_NAME(OP, name) #name,
inline constexpr const char *const BINOP_NAME[] = {
    PYGPU_BINARY_OPS(SELFTEST_OP_NAME)};
inline constexpr const char *const UNOP_NAME[] = {
    PYGPU_UNARY_OPS(SELFTEST_OP_NAME)};
inline constexpr const char *const REDOP_NAME[] = {"sum", "mean", "max",
                                                  "min", "prod"};
static_assert(sizeof REDOP_NAME / sizeof REDOP_NAME[0] == PYGPU_NREDOPS,
              "a name for every reduce op");

/* Defined in harness.cu. */
extern cudaStream_t g_stream;
extern int g_passed, g_failed;
/* The case being run, for the message of a CUDA error that ends the run. */
extern char g_case[200];

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

void report(const Case &c);

// ------------------------------------------------------- host values

/* The state of the test data's generator (harness.cu). */
extern uint64_t g_rng;

/* splitmix64 */
inline uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, m) for 0 < m <= 2^32, by multiply and shift (no division:
 * the big arrays draw tens of millions of these). */
inline uint64_t rng_below(uint64_t m)
{
    return ((rng_next() >> 32) * m) >> 32;
}

inline int64_t rng_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)rng_below((uint64_t)(hi - lo + 1));
}

/* Floating to int64 by the rule the CPU loops and the kernels share
 * (kernels/rules.h): truncation toward zero inside [-2^63, 2^63),
 * INT64_MIN for NaN, the infinities and everything beyond. */
inline int64_t host_f2i64(double x)
{
    return pygpu_f64_to_i64(x);
}

/* int64 arithmetic by the shared rules: wraps; x / 0 is 0 and x / -1 the
 * wrapped negation. */
inline int64_t ref_i64(int op, int64_t x, int64_t y)
{
    switch (op) {
#define SELFTEST_I64_CASE(OP, name)                                          \
    case PYGPU_##OP:                                                         \
        return pygpu_##name##_i(x, y);
        PYGPU_BINARY_OPS(SELFTEST_I64_CASE)
    default:
        return 0;
    }
}

/* The floating binary ops by the shared rules, in double and in float. */
inline double ref_binop_d(int op, double x, double y)
{
    switch (op) {
#define SELFTEST_D_CASE(OP, name)                                            \
    case PYGPU_##OP:                                                         \
        return pygpu_##name##_d(x, y);
        PYGPU_BINARY_OPS(SELFTEST_D_CASE)
    default:
        return NAN;
    }
}

inline float ref_binop_f(int op, float x, float y)
{
    switch (op) {
#define SELFTEST_F_CASE(OP, name)                                            \
    case PYGPU_##OP:                                                         \
        return pygpu_##name##_f(x, y);
        PYGPU_BINARY_OPS(SELFTEST_F_CASE)
    default:
        return NAN;
    }
}

/* x rounded to dtype dt the way the kernels store it. */
inline double round_to(int dt, double x)
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
inline bool same(double got, double want)
{
    if (isnan(got) || isnan(want)) {
        return isnan(got) && isnan(want);
    }
    return got == want && !signbit(got) == !signbit(want);
}

/* relu by the shared rule: NaN stays NaN and -0.0 stays -0.0. */
inline double ref_relu(double x)
{
    return pygpu_relu_d(x);
}

/* Unary op `op` on x of dtype dt by the shared rules: int64 by its own
 * rule (so int64 0 negates to 0, not -0.0), the floating types in double
 * (exact for the int ops, so the same as in float once rounded; the
 * floating functions are compared within a tolerance). */
inline double ref_unary(int op, int dt, double x)
{
    switch (op) {
#define SELFTEST_UNARY_CASE(OP, name)                                        \
    case PYGPU_##OP:                                                         \
        return dt == PYGPU_INT64 ? (double)pygpu_##name##_i((int64_t)x)      \
                                 : pygpu_##name##_d(x);
        PYGPU_UNARY_OPS(SELFTEST_UNARY_CASE)
    default:
        return NAN;
    }
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

/* Random test data: half of the floats are multiples of 1/8 in [-8, 8]
 * (exact in every dtype, often equal), half arbitrary values of [-8, 8]
 * rounded to the dtype; int64 in [-1000, 1000].  Elements are drawn from a
 * pool of 4096 such values, so that arrays of millions fill quickly.
 * `specials` sprinkles NaN, +-inf, -0.0 and +0.0 among the floats (about
 * one in eight), and puts all of them, in turn, at the first positions (and
 * the last ones, when there is room) so that every array of 5 or more
 * elements holds each one; for int64 those positions get 0, -1 and 1. */
/* In harness.cu. */
HostArr random_arr(int dt, int64_t n, bool specials);

// ----------------------------------------------------- device arrays

inline constexpr size_t GUARD = 64; /* keeps base + GUARD 16-byte aligned */
inline constexpr unsigned char PATTERN = 0xA5;

/* In harness.cu: copies ordered with the launches on g_stream. */
void to_device(void *dst, const void *src, size_t bytes);
void to_host(void *dst, const void *src, size_t bytes);

/* n elements of esize bytes, `off` elements past a 16-byte boundary, with
 * PATTERN bytes around them. */
struct DevArr {
    size_t esize;
    int64_t n, off;
    unsigned char *base;
    size_t total;
    void *ptr() const { return base + GUARD + (size_t)off * esize; }
};

/* In harness.cu. */
DevArr dev_alloc(size_t esize, int64_t n, int64_t off);
DevArr dev_alloc(int dt, int64_t n, int64_t off);
void dev_put(const DevArr &d, const HostArr &h);
HostArr dev_get(const DevArr &d, int dt);
/* True when every byte outside the n elements still holds PATTERN (only
 * the bytes before and after them are read back). */
bool dev_guards_ok(const DevArr &d);
void dev_free(DevArr &d);

// ---------------------------------------------------------- geometry

struct GeomCase {
    const char *name;
    pygpu_geom g;
};

/* In geometry.cu. */
GeomCase make_geom(const char *name, std::vector<int64_t> shape,
                   std::vector<int64_t> s0, std::vector<int64_t> s1,
                   std::vector<int64_t> s2);
GeomCase contiguous_geom(const char *name, int64_t n);
int64_t numel(const pygpu_geom &g);
/* Elements operand k spans (strides are non-negative in these tests). */
int64_t extent(const pygpu_geom &g, int k);
/* The shapes of the elementwise tests (see geometry.cu); `big` adds two
 * that take many trips of the grid-stride loops. */
std::vector<GeomCase> geom_cases(bool big);

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

// ------------------------------------------------------------- areas

/* The areas, each reporting one or more cases; main.cu runs them. */

/* elementwise.cu */
void test_binary(void);
void test_binary_scalar(void);
void test_unary(void);
void test_copy(void);
void test_fill(void);

/* int64_edges.cu */
void test_copy_to_int64(void);
void test_int64_wrap(void);

/* relu_bias.cu */
void test_relu_contig(void);
void test_bias_act(void);

/* reduce.cu */
void test_reduce(void);
void test_reduce_int64_wrap(void);

/* random.cu */
void test_random(void);

/* bfloat16.cu */
void test_bfloat16(void);

/* gather.cu */
void test_gather(void);

/* sample.cu */
void test_sample(void);

#endif /* PYGPU_KERNELS_SELFTEST_H */
