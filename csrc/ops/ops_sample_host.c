/* ops_sample_host.c - randperm and multinomial, drawn on the host from the
 * generator of the device the result goes to (then copied there by the
 * Python front end), so that the CPU and CUDA give the same indices for
 * the same seed.  Both are sequential by nature (a shuffle, a sort of
 * keys per row); the numbers come from Philox as every draw's do: element
 * e takes word e % 4 of counter offset + e / 4 (kernels/sample.h), and a
 * call of E elements takes ceil(E / 4) counters.
 *
 * randperm(n): Fisher-Yates from the end, the swap partner of position i
 *   (i = n-1 .. 1) an integer in [0, i] from element i.
 * multinomial with replacement: per row, the running sums of the
 *   probabilities (double, in order) and, for sample s of row r, the first
 *   category whose sum exceeds u * total, u the uniform of element
 *   r * num_samples + s.
 * without replacement: the categories of the num_samples largest keys
 *   p_i / E_i, E_i exponential from element r * K + i (ties: the lower
 *   index), largest first: sampling in proportion to p without repeats.
 */
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "kernels/sample.h"

/* The words of counter c, cached while consecutive elements share it. */
typedef struct {
    uint64_t seed, offset, counter;
    int have;
    pygpu_u32x4 lo, hi;
} word_cache;

static void
words_at(word_cache *w, uint64_t e, int wide, uint32_t *lo, uint32_t *hi)
{
    uint64_t c = e / 4;
    if (!w->have || w->counter != c) {
        w->lo = pygpu_philox(w->offset + c, w->seed);
        w->hi = pygpu_philox_sub(w->offset + c, 1, w->seed);
        w->counter = c;
        w->have = 1;
    }
    *lo = w->lo.v[e % 4];
    *hi = wide ? w->hi.v[e % 4] : 0;
}

static int
parse_target(PyObject *devobj, pygpu_device *dev)
{
    if (pygpu_parse_device(devobj, dev) < 0) {
        return -1;
    }
    return pygpu_device_resolve(dev); /* cuda: the current device */
}

PyObject *
pygpu_randperm_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    pygpu_device dev;
    pygpu_philox_state st;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_randperm(n, device, generator)");
        return NULL;
    }
    int64_t n = PyLong_AsLongLong(args[0]);
    if ((n == -1 && PyErr_Occurred()) || parse_target(args[1], &dev) < 0) {
        return NULL;
    }
    if (n < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "n must be non-negative, got%lld", (long long)n);
        return NULL;
    }
    pygpu_device cpu = {PYGPU_CPU, -1};
    TensorObject *t = pygpu_tensor_empty(1, &n, PYGPU_INT64, cpu);
    if (t == NULL) {
        return NULL;
    }
    if (pygpu_generator_take(args[2], dev, (uint64_t)((n + 3) / 4), &st) <
        0) {
        Py_DECREF(t);
        return NULL;
    }
    int64_t *p = (int64_t *)t->data;
    Py_BEGIN_ALLOW_THREADS
    word_cache w = {.seed = st.seed, .offset = st.offset};
    for (int64_t i = 0; i < n; i++) {
        p[i] = i;
    }
    for (int64_t i = n - 1; i >= 1; i--) {
        uint64_t range = (uint64_t)i + 1;
        uint32_t lo, hi;
        words_at(&w, (uint64_t)i, pygpu_integer_wide(range), &lo, &hi);
        int64_t j = pygpu_random_integer(lo, hi, 0, range);
        int64_t tmp = p[i];
        p[i] = p[j];
        p[j] = tmp;
    }
    Py_END_ALLOW_THREADS
    return (PyObject *)t;
}

typedef struct {
    double key;
    int64_t index;
} keyed;

static int
larger_key_first(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->key != b->key) {
        return a->key > b->key ? -1 : 1;
    }
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Row r (K probabilities) with replacement: S samples into out. */
static void
row_with_replacement(const double *p, int64_t K, int64_t S, double *cdf,
                     word_cache *w, uint64_t first, int64_t *out)
{
    double total = 0.0;
    int64_t last = 0;
    for (int64_t i = 0; i < K; i++) {
        total += p[i];
        cdf[i] = total;
        if (p[i] > 0.0) {
            last = i;
        }
    }
    for (int64_t s = 0; s < S; s++) {
        uint32_t lo, hi;
        words_at(w, first + (uint64_t)s, 0, &lo, &hi);
        double u = pygpu_u01_f64(lo) * total;
        int64_t a = 0, b = K; /* the first i with cdf[i] > u */
        while (a < b) {
            int64_t mid = a + (b - a) / 2;
            if (cdf[mid] > u) {
                b = mid;
            }
            else {
                a = mid + 1;
            }
        }
        out[s] = a < K ? a : last;
    }
}

static void
row_without_replacement(const double *p, int64_t K, int64_t S, keyed *keys,
                        word_cache *w, uint64_t first, int64_t *out)
{
    for (int64_t i = 0; i < K; i++) {
        uint32_t lo, hi;
        words_at(w, first + (uint64_t)i, 0, &lo, &hi);
        double u = ((double)lo + 0.5) * (1.0 / 4294967296.0); /* (0, 1) */
        keys[i].key = p[i] / -log(u);
        keys[i].index = i;
    }
    qsort(keys, (size_t)K, sizeof *keys, larger_key_first);
    for (int64_t s = 0; s < S; s++) {
        out[s] = keys[s].index;
    }
}

PyObject *
pygpu_multinomial_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    pygpu_device dev;
    pygpu_philox_state st;
    TensorObject *t = NULL;
    void *work = NULL;
    if (nargs != 5 || !Tensor_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "_multinomial(probs, num_samples, replacement, "
                        "device, generator)");
        return NULL;
    }
    TensorObject *probs = (TensorObject *)args[0];
    int64_t S = PyLong_AsLongLong(args[1]);
    int replacement = PyObject_IsTrue(args[2]);
    if ((S == -1 && PyErr_Occurred()) || replacement < 0 ||
        parse_target(args[3], &dev) < 0) {
        return NULL;
    }
    if (probs->ndim != 2 || probs->dtype != PYGPU_FLOAT64 ||
        probs->device.type != PYGPU_CPU || !pygpu_is_contiguous(probs) ||
        S < 0 || (!replacement && S > probs->shape[1])) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_multinomial: probs must be a contiguous 2-D "
                        "float64 CPU tensor with enough categories");
        return NULL;
    }
    int64_t R = probs->shape[0], K = probs->shape[1];
    int64_t shape[2] = {R, S};
    pygpu_device cpu = {PYGPU_CPU, -1};
    t = pygpu_tensor_empty(2, shape, PYGPU_INT64, cpu);
    if (t == NULL) {
        goto fail;
    }
    size_t each = replacement ? sizeof(double) : sizeof(keyed);
    work = PyMem_RawMalloc((size_t)(K > 0 ? K : 1) * each);
    if (work == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    int64_t per_row = replacement ? S : K;
    if (pygpu_generator_take(args[4], dev,
                             (uint64_t)((R * per_row + 3) / 4), &st) < 0) {
        goto fail;
    }
    const double *p = (const double *)probs->data;
    int64_t *out = (int64_t *)t->data;
    Py_BEGIN_ALLOW_THREADS
    word_cache w = {.seed = st.seed, .offset = st.offset};
    for (int64_t r = 0; r < R; r++) {
        uint64_t first = (uint64_t)(r * per_row);
        if (replacement) {
            row_with_replacement(p + r * K, K, S, work, &w, first,
                                 out + r * S);
        }
        else {
            row_without_replacement(p + r * K, K, S, work, &w, first,
                                    out + r * S);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(work);
    return (PyObject *)t;
fail:
    PyMem_RawFree(work);
    Py_XDECREF(t);
    return NULL;
}
