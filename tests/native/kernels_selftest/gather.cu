/* gather.cu - pygpu_cuda_gather (every element size, int32 and int64
 * indices, gather, scatter and offsets, negative indices, an index out of
 * range)
 * against a host reference (selftest.h).  Elements are random bytes:
 * the kernel moves them without looking at them. */
#include "selftest.h"

/* rows x cols of a source of `size` rows picked by an index of `rows`
 * entries: dense[r][c] = src[index[r]][c] (gather) or src[index[r]][c] =
 * dense[r][c] (scatter, the index a permutation so that every slot is
 * written once).  bad >= 0 puts an index out of range at entry `bad`. */
static void check_gather(Case &c, int esize, int iesize, int64_t rows,
                         int64_t cols, int64_t size, bool scatter,
                         int64_t bad)
{
    const int64_t n = rows * cols, nsrc = size * cols;
    std::vector<unsigned char> dense((size_t)(n * esize) + 1),
        src((size_t)(nsrc * esize) + 1), index((size_t)(rows * iesize) + 1);
    std::vector<int64_t> idx((size_t)rows);
    for (auto &b : dense) {
        b = (unsigned char)rng_next();
    }
    for (auto &b : src) {
        b = (unsigned char)rng_next();
    }
    for (int64_t r = 0; r < rows; r++) {
        /* scatter: a permutation of the rows (size == rows), some negative */
        int64_t i = scatter ? (r * 7 + 3) % size : rng_int(-size, size - 1);
        if (scatter && r % 3 == 0) {
            i -= size;
        }
        idx[(size_t)r] = r == bad ? size + r : i;
        if (iesize == 4) {
            int32_t v = (int32_t)idx[(size_t)r];
            memcpy(&index[(size_t)r * 4], &v, 4);
        } else {
            memcpy(&index[(size_t)r * 8], &idx[(size_t)r], 8);
        }
    }
    DevArr dd = dev_alloc((size_t)esize, n, 1);
    DevArr ds = dev_alloc((size_t)esize, nsrc, 2);
    DevArr di = dev_alloc((size_t)iesize, rows, 3);
    int64_t *err = nullptr;
    CHECK(cudaMalloc((void **)&err, 2 * sizeof(int64_t)));
    to_device(dd.ptr(), dense.data(), (size_t)(n * esize));
    to_device(ds.ptr(), src.data(), (size_t)(nsrc * esize));
    to_device(di.ptr(), index.data(), (size_t)(rows * iesize));
    GeomCase gc = make_geom("rows x cols", {rows, cols}, {cols, 1}, {0, 1},
                            {1, 0});
    c.expect_success(pygpu_cuda_gather(esize, dd.ptr(), ds.ptr(), di.ptr(),
                                       iesize, &gc.g, cols, size,
                                       scatter ? PYGPU_GATHER_SCATTER
                                               : PYGPU_GATHER_READ,
                                       err, g_stream),
                     "gather");
    int64_t herr[2];
    to_host(herr, err, sizeof herr);
    std::vector<unsigned char> got(scatter ? src.size() : dense.size());
    to_host(got.data(), scatter ? ds.ptr() : dd.ptr(),
            (size_t)((scatter ? nsrc : n) * esize));
    if (bad >= 0) {
        if (herr[0] != 1 || herr[1] != size + bad) {
            c.fail("rows=%lld: a bad index %lld gave err {%lld, %lld}",
                   (long long)rows, (long long)(size + bad),
                   (long long)herr[0], (long long)herr[1]);
        }
    } else if (herr[0] != 0) {
        c.fail("rows=%lld: err set (%lld) with every index in range",
               (long long)rows, (long long)herr[1]);
    }
    for (int64_t r = 0; c.ok && r < rows; r++) {
        if (r == bad) {
            continue; /* nothing written through it */
        }
        int64_t w = idx[(size_t)r] < 0 ? idx[(size_t)r] + size
                                       : idx[(size_t)r];
        for (int64_t k = 0; c.ok && k < cols; k++) {
            size_t at_dense = (size_t)((r * cols + k) * esize);
            size_t at_src = (size_t)((w * cols + k) * esize);
            const unsigned char *g = scatter ? &got[at_src]
                                             : &got[at_dense];
            const unsigned char *want = scatter ? &dense[at_dense]
                                                : &src[at_src];
            if (memcmp(g, want, (size_t)esize) != 0) {
                c.fail("rows=%lld cols=%lld: element (%lld, %lld) via index "
                       "%lld differs", (long long)rows, (long long)cols,
                       (long long)r, (long long)k, (long long)idx[(size_t)r]);
            }
        }
    }
    if (c.ok && !(dev_guards_ok(dd) && dev_guards_ok(ds) &&
                  dev_guards_ok(di))) {
        c.fail("rows=%lld cols=%lld: wrote out of range", (long long)rows,
               (long long)cols);
    }
    CHECK(cudaFree(err));
    dev_free(dd);
    dev_free(ds);
    dev_free(di);
}

/* OFFSETS mode: out[r] (int64) = the checked index r times dim_stride. */
static void check_offsets(Case &c, int iesize, int64_t rows, int64_t size,
                          int64_t stride)
{
    std::vector<int64_t> idx((size_t)rows), got((size_t)rows);
    std::vector<unsigned char> index((size_t)(rows * iesize) + 1);
    for (int64_t r = 0; r < rows; r++) {
        idx[(size_t)r] = rng_int(-size, size - 1);
        int32_t v = (int32_t)idx[(size_t)r];
        memcpy(&index[(size_t)(r * iesize)],
               iesize == 4 ? (const void *)&v : (const void *)&idx[(size_t)r],
               (size_t)iesize);
    }
    DevArr dout = dev_alloc((size_t)8, rows, 1);
    DevArr di = dev_alloc((size_t)iesize, rows, 2);
    int64_t *err = nullptr, herr[2];
    CHECK(cudaMalloc((void **)&err, 2 * sizeof(int64_t)));
    to_device(di.ptr(), index.data(), (size_t)(rows * iesize));
    GeomCase gc = make_geom("rows", {rows}, {1}, {0}, {1});
    c.expect_success(pygpu_cuda_gather(8, dout.ptr(), nullptr, di.ptr(),
                                       iesize, &gc.g, stride, size,
                                       PYGPU_GATHER_OFFSETS, err, g_stream),
                     "gather offsets");
    to_host(herr, err, sizeof herr);
    to_host(got.data(), dout.ptr(), (size_t)(rows * 8));
    if (herr[0] != 0) {
        c.fail("offsets rows=%lld: err set", (long long)rows);
    }
    for (int64_t r = 0; c.ok && r < rows; r++) {
        int64_t i = idx[(size_t)r], w = i < 0 ? i + size : i;
        if (got[(size_t)r] != w * stride) {
            c.fail("offsets rows=%lld: entry %lld (index %lld) gave %lld",
                   (long long)rows, (long long)r, (long long)i,
                   (long long)got[(size_t)r]);
        }
    }
    if (c.ok && !(dev_guards_ok(dout) && dev_guards_ok(di))) {
        c.fail("offsets rows=%lld: wrote out of range", (long long)rows);
    }
    CHECK(cudaFree(err));
    dev_free(dout);
    dev_free(di);
}

void test_gather(void)
{
    {
        Case c("gather offsets, int32 and int64 indices");
        check_offsets(c, 4, 1000, 37, 5);
        check_offsets(c, 8, 100003, 1 << 20, 3);
        report(c);
    }
    const int esizes[] = {1, 2, 4, 8};
    for (int esize : esizes) {
        for (int iesize = 4; iesize <= 8; iesize += 4) {
            Case c("gather %d-byte elements, int%d index", esize,
                   iesize * 8);
            check_gather(c, esize, iesize, 0, 3, 5, false, -1);
            check_gather(c, esize, iesize, 7, 1, 3, false, -1);
            check_gather(c, esize, iesize, 100, 13, 17, false, -1);
            check_gather(c, esize, iesize, 64, 5, 64, true, -1);
            check_gather(c, esize, iesize, 50, 4, 9, false, 31);
            check_gather(c, esize, iesize, 40, 3, 40, true, 0);
            report(c);
        }
    }
    /* several trips of the grid-stride loop */
    Case c("gather 4-byte elements, int64 index, 2^20 x 9");
    check_gather(c, 4, 8, (int64_t)1 << 20, 9, 1000, false, -1);
    check_gather(c, 4, 8, (int64_t)1 << 20, 9, (int64_t)1 << 20, true, -1);
    report(c);
}
