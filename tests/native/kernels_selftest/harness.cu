/* harness.cu - the globals of the kernel self-test, the report of a
 * case, random test data and the guarded device arrays (selftest.h). */
#include "selftest.h"

cudaStream_t g_stream;
int g_passed, g_failed;
char g_case[200] = "setup";
uint64_t g_rng = 0x9E3779B97F4A7C15ull;

// ------------------------------------------------------------- results

void report(const Case &c)
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

HostArr random_arr(int dt, int64_t n, bool specials)
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

/* Host to device and back, ordered with the launches on g_stream: a copy
 * is queued behind all earlier work there and waited for, so an upload is
 * complete before the next launch and a download sees every earlier one. */
void to_device(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) {
        return;
    }
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
}

void to_host(void *dst, const void *src, size_t bytes)
{
    CHECK(cudaStreamSynchronize(g_stream));
    if (bytes == 0) {
        return;
    }
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
}

DevArr dev_alloc(size_t esize, int64_t n, int64_t off)
{
    DevArr d = {esize, n, off, nullptr, 0};
    d.total = GUARD + (size_t)(n + off) * esize + GUARD;
    CHECK(cudaMalloc((void **)&d.base, d.total));
    CHECK(cudaMemsetAsync(d.base, PATTERN, d.total, g_stream));
    CHECK(cudaStreamSynchronize(g_stream));
    return d;
}

DevArr dev_alloc(int dt, int64_t n, int64_t off)
{
    return dev_alloc(DTYPE_SIZE[dt], n, off);
}

void dev_put(const DevArr &d, const HostArr &h)
{
    to_device(d.ptr(), h.data(), h.nbytes());
}

HostArr dev_get(const DevArr &d, int dt)
{
    HostArr h(dt, d.n);
    to_host(h.data(), d.ptr(), h.nbytes());
    return h;
}

bool dev_guards_ok(const DevArr &d)
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

void dev_free(DevArr &d)
{
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudaFree(d.base));
    d.base = nullptr;
}

