/* ops_random.c - the front ends that fill tensors with random numbers:
 * rand / randn (pygpu_op_random) and the draws of enum pygpu_dist past
 * them (_C._sample: exponential, integers, Poisson), each from its
 * device's default generator or a Generator (ops_generator.c).  A draw of
 * n numbers takes ceil(n / 4) Philox counters, and the CPU loops and CUDA
 * kernels make the same numbers from the same state (kernels/philox.h,
 * kernels/sample.h).  The Python front ends (pygpu/_random.py) build the
 * torch functions over these. */
#include "ops/ops.h"

/* One table call for a draw into contiguous t. */
static int
draw(TensorObject *t, int dist, const pygpu_random_args *a,
     PyObject *generator, const char *what)
{
    int64_t n = pygpu_numel(t->ndim, t->shape);
    pygpu_philox_state st;
    if (n == 0) {
        return 0;
    }
    if (pygpu_generator_take(generator, t->device, (uint64_t)((n + 3) / 4),
                             &st) < 0) {
        return -1;
    }
    pygpu_kargs k = {.out = t->data, .flag = dist, .numel = n,
                     .philox = st, .rnd = *a};
    return pygpu_dispatch(PYGPU_K_RANDOM, t->device, t->dtype, &k, what);
}

int
pygpu_op_random(TensorObject *t, int normal, PyObject *generator)
{
    pygpu_random_args a = {0};
    return draw(t, normal ? PYGPU_DIST_NORMAL : PYGPU_DIST_UNIFORM, &a,
                generator, normal ? "randn" : "rand");
}

/* rates: a contiguous tensor like out (0), or -1 with RuntimeError. */
static int
check_rates(PyObject *obj, TensorObject *out)
{
    TensorObject *r = (TensorObject *)obj;
    if (!Tensor_Check(obj) || r->dtype != out->dtype ||
        !pygpu_device_equal(&r->device, &out->device) ||
        !pygpu_is_contiguous(r) ||
        pygpu_numel(r->ndim, r->shape) != pygpu_numel(out->ndim, out->shape)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_sample: rates must be a contiguous tensor like out");
        return -1;
    }
    return 0;
}

/* _sample(out, dist, param, range, generator, rates): out contiguous, of a
 * floating dtype (int64 for INTEGER); param is low (INTEGER), lambd
 * (EXPONENTIAL) or p (BERNOULLI), range the count of integers or
 * BERNOULLI's value; rates (POISSON; BERNOULLI's p per element, or None)
 * like out. */
static PyObject *
sample_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !Tensor_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "_sample(out, dist, param, range, generator, rates)");
        return NULL;
    }
    TensorObject *out = (TensorObject *)args[0];
    long dist = PyLong_AsLong(args[1]);
    if (dist == -1 && PyErr_Occurred()) {
        return NULL;
    }
    pygpu_random_args a = {0};
    const char *what = "random_";
    int want_int = dist == PYGPU_DIST_INTEGER;
    if (dist < PYGPU_DIST_UNIFORM || dist > PYGPU_DIST_BERNOULLI) {
        PyErr_Format(PyExc_ValueError, "_sample: unknown distribution %ld",
                     dist);
        return NULL;
    }
    if (!pygpu_is_contiguous(out) ||
        (want_int ? out->dtype != PYGPU_INT64
                  : !pygpu_dtype_table[out->dtype].is_floating_point)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_sample: out must be contiguous, int64 for "
                        "integers and floating otherwise");
        return NULL;
    }
    if (dist == PYGPU_DIST_INTEGER) {
        a.low = PyLong_AsLongLong(args[2]);
        if (a.low == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (!PyLong_Check(args[3])) {
            PyErr_SetString(PyExc_TypeError, "_sample: range must be an int");
            return NULL;
        }
        a.range = PyLong_AsUnsignedLongLongMask(args[3]);
        if (a.range == (uint64_t)-1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    else if (dist == PYGPU_DIST_EXPONENTIAL) {
        what = "exponential_";
        a.lambd = PyFloat_AsDouble(args[2]);
        if (a.lambd == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    else if (dist == PYGPU_DIST_POISSON) {
        what = "poisson";
        if (check_rates(args[5], out) < 0) {
            return NULL;
        }
        a.rates = ((TensorObject *)args[5])->data;
    }
    else if (dist == PYGPU_DIST_BERNOULLI) {
        what = "bernoulli";
        a.p = PyFloat_AsDouble(args[2]);
        a.value = a.p == -1.0 && PyErr_Occurred() ? -1.0
                                                  : PyFloat_AsDouble(args[3]);
        if (a.value == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        if (args[5] != Py_None) {
            if (check_rates(args[5], out) < 0) {
                return NULL;
            }
            a.rates = ((TensorObject *)args[5])->data;
        }
    }
    if (draw(out, (int)dist, &a, args[4], what) < 0) {
        return NULL;
    }
    return Py_NewRef(args[0]);
}

PyMethodDef pygpu_sample_functions[] = {
    {"_sample", FAST(sample_fn),
     "_sample($module, out, dist, param, range, generator, rates, /)\n--\n\n"
     "Fill contiguous out with a draw of enum pygpu_dist: 0 uniform,\n"
     "1 normal, 2 exponential(param), 3 integers in [param, param +\n"
     "range), 4 Poisson(rates), 5 range with probability param (or\n"
     "rates), else 0."},
    {"_randperm", FAST(pygpu_randperm_fn),
     "_randperm($module, n, device, generator, /)\n--\n\n"
     "A random permutation of range(n) (int64, on the CPU) drawn from\n"
     "device's generator."},
    {"_multinomial", FAST(pygpu_multinomial_fn),
     "_multinomial($module, probs, num_samples, replacement, device,\n"
     "             generator, /)\n--\n\n"
     "Category indices (int64, on the CPU) drawn from the rows of probs\n"
     "(float64, contiguous, 2-D, checked) with device's generator."},
    {NULL},
};
