/* geometry.cu - the geometries (shape and the strides of the output and
 * two inputs) that the elementwise tests run over (selftest.h). */
#include "selftest.h"

GeomCase make_geom(const char *name, std::vector<int64_t> shape,
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

GeomCase contiguous_geom(const char *name, int64_t n)
{
    return make_geom(name, {n}, {1}, {1}, {1});
}

int64_t numel(const pygpu_geom &g)
{
    int64_t n = 1;
    for (int d = 0; d < g.ndim; d++) {
        n *= g.shape[d];
    }
    return n;
}

int64_t extent(const pygpu_geom &g, int k)
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

/* The shapes of the elementwise tests; `big` adds two that take many trips
 * of the grid-stride loops (one H100 wave is about 270k threads): 2^23
 * contiguous elements, and 3000 x 2049 with the first input transposed and
 * the second a broadcast row.  Every functor runs the same two loops, so
 * the big shapes go to a selection of the cases (every dtype, every unary
 * op, both kinds of operands) that keeps the host's reference work to a
 * few seconds. */
std::vector<GeomCase> geom_cases(bool big)
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

