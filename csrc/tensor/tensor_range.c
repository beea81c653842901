/* tensor_range.c - pygpu.arange, linspace and eye, with torch's rules.
 *
 * arange and linspace compute their values on the host (int64 or float64,
 * as torch's CPU kernels compute them in their accumulate type) and convert
 * them to the dtype and device asked for in one copy; eye fills zeros and
 * writes its diagonal with one strided copy of a single one, on the device.
 */
#include "tensor/tensor.h"

#include <math.h>
#include <stdint.h>

static const pygpu_device cpu_device = {PYGPU_CPU, -1};

/* A number argument of arange/linspace: the value as a double and, when it
 * was an integer, exactly as an int64.  A 0-d tensor gives its item. */
typedef struct range_num {
    double d;
    int64_t i;
    int is_float;
} range_num;

static int
parse_num(const char *fname, const char *arg, int pos, PyObject *obj,
          range_num *out)
{
    PyObject *item = NULL;
    int rc = -1;
    if (Tensor_Check(obj)) {
        item = obj = pygpu_t_item(obj, NULL);
        if (obj == NULL) {
            return -1;
        }
    }
    if (PyIndex_Check(obj) && !PyFloat_Check(obj)) {
        PyObject *v = PyNumber_Index(obj);
        int overflow = 0;
        long long x = v ? PyLong_AsLongLongAndOverflow(v, &overflow) : -1;
        Py_XDECREF(v);
        if (x == -1 && PyErr_Occurred()) {
            goto fail;
        }
        if (overflow) {
            PyErr_SetString(PyExc_RuntimeError,
                            "value cannot be converted to type int64_t "
                            "without overflow");
            goto fail;
        }
        out->i = x;
        out->d = (double)x;
        out->is_float = 0;
        rc = 0;
        goto fail;
    }
    if (!PyFloat_Check(obj) && !PyArray_IsScalar(obj, Floating)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' (position %d) must be Number, not "
                     "%.100s", fname, arg, pos, Py_TYPE(obj)->tp_name);
        goto fail;
    }
    out->d = PyFloat_AsDouble(obj);
    if (out->d == -1.0 && PyErr_Occurred()) {
        goto fail;
    }
    out->is_float = 1;
    /* float to int64 as a C cast would, for integral dtypes */
    out->i = isfinite(out->d) && fabs(out->d) < 9.2e18 ? (int64_t)out->d : 0;
    rc = 0;
fail:
    Py_XDECREF(item);
    return rc;
}

/* The tail of arange and linspace: `host` (contiguous, on the CPU, int64
 * or float64) converted to dtype on dev.  Steals host. */
static PyObject *
finish(TensorObject *host, int dtype, pygpu_device dev)
{
    if (host == NULL) {
        return NULL;
    }
    if (host->dtype == dtype && dev.type == PYGPU_CPU) {
        return (PyObject *)host;
    }
    TensorObject *r = pygpu_tensor_to(host, dev, dtype);
    Py_DECREF(host);
    return (PyObject *)r;
}

/* dtype, device and requires_grad: the keywords every factory takes. */
static int
parse_factory_kw(PyObject *dtype_obj, PyObject *device_obj, PyObject *rg,
                 int def_dtype, int *dtype, pygpu_device *dev)
{
    (void)rg; /* applied to the result (pygpu_with_requires_grad) */
    pygpu_device def_dev = pygpu_default_device();
    if (pygpu_parse_dtype_opt(dtype_obj, def_dtype, dtype) < 0 ||
        pygpu_parse_device_opt(device_obj, &def_dev, dev) < 0) {
        return -1;
    }
    return pygpu_device_resolve(dev);
}

/* arange(end) or arange(start, end, step=1): torch's length
 * ceil((end - start) / step) and values start + i * step. */
static PyObject *
arange_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames)
{
    static const char *const names[] = {"start", "end", "step", "dtype",
                                        "device", "requires_grad"};
    PyObject *a[6];
    range_num start = {0.0, 0, 0}, end, step = {1.0, 1, 0};
    int dtype;
    pygpu_device dev;
    if (pygpu_parse_args("arange", args, nargs, kwnames, names, 6, 3, 0,
                         a) < 0) {
        return NULL;
    }
    if (a[1] == NULL) { /* arange(end) */
        if (a[0] == NULL) {
            PyErr_SetString(PyExc_TypeError,
                            "arange() missing required argument 'end' "
                            "(pos 1)");
            return NULL;
        }
        a[1] = a[0];
        a[0] = NULL;
    }
    if ((a[0] != NULL && parse_num("arange", "start", 1, a[0], &start) < 0) ||
        parse_num("arange", "end", a[0] ? 2 : 1, a[1], &end) < 0 ||
        (a[2] != NULL && parse_num("arange", "step", 3, a[2], &step) < 0)) {
        return NULL;
    }
    int any_float = start.is_float || end.is_float || step.is_float;
    int fallback = any_float ? pygpu_default_dtype() : PYGPU_INT64;
    if (parse_factory_kw(a[3], a[4], a[5], fallback, &dtype, &dev) < 0) {
        return NULL;
    }
    int integral = !pygpu_dtype_table[dtype].is_floating_point;
    if (integral ? step.i == 0 : step.d == 0.0) {
        PyErr_SetString(PyExc_RuntimeError, "step must be nonzero");
        return NULL;
    }
    if (!isfinite(start.d) || !isfinite(end.d)) {
        PyObject *s = a[0] ? a[0] : PyLong_FromLong(0);
        if (s != NULL) {
            PyErr_Format(PyExc_RuntimeError, "unsupported range: %R -> %R",
                         s, a[1]);
        }
        if (a[0] == NULL) {
            Py_XDECREF(s);
        }
        return NULL;
    }
    double span = integral ? (double)end.i - (double)start.i
                           : end.d - start.d;
    double st = integral ? (double)step.i : step.d;
    if (!((st > 0 && span >= 0) || (st < 0 && span <= 0))) {
        PyErr_SetString(PyExc_RuntimeError,
                        "upper bound and lower bound inconsistent with step "
                        "sign");
        return NULL;
    }
    double size_d = ceil(span / st);
    if (!(size_d >= 0 && size_d < 9.2e18)) {
        PyErr_Format(PyExc_RuntimeError,
                     "invalid size, possible overflow?");
        return NULL;
    }
    int64_t n = (int64_t)size_d;
    TensorObject *host = pygpu_tensor_empty(
        1, &n, integral ? PYGPU_INT64 : PYGPU_FLOAT64, cpu_device);
    if (host == NULL) {
        return NULL;
    }
    if (integral) {
        int64_t *v = (int64_t *)host->data;
        for (int64_t i = 0; i < n; i++) {
            /* wraps like the int64 loops instead of overflowing */
            uint64_t x = (uint64_t)start.i + (uint64_t)i * (uint64_t)step.i;
            v[i] = (int64_t)x;
        }
    }
    else {
        double *v = (double *)host->data;
        for (int64_t i = 0; i < n; i++) {
            v[i] = start.d + (double)i * step.d;
        }
    }
    return pygpu_with_requires_grad(finish(host, dtype, dev), a[5]);
}

/* linspace(start, end, steps): torch's formula, symmetric from both ends:
 * start + i * step for the first half, end - (steps - 1 - i) * step for
 * the rest. */
static PyObject *
linspace_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"start", "end", "steps", "dtype",
                                        "device", "requires_grad"};
    PyObject *a[6];
    range_num start, end;
    int64_t n;
    int dtype;
    pygpu_device dev;
    if (pygpu_parse_args("linspace", args, nargs, kwnames, names, 6, 3, 3,
                         a) < 0 ||
        parse_num("linspace", "start", 1, a[0], &start) < 0 ||
        parse_num("linspace", "end", 2, a[1], &end) < 0) {
        return NULL;
    }
    int ok = pygpu_parse_size_item(a[2], &n);
    if (ok <= 0) {
        if (ok == 0) {
            PyErr_Format(PyExc_TypeError,
                         "linspace(): argument 'steps' (position 3) must be "
                         "int, not %.100s", Py_TYPE(a[2])->tp_name);
        }
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "number of steps must be non-negative");
        return NULL;
    }
    if (parse_factory_kw(a[3], a[4], a[5], pygpu_default_dtype(), &dtype,
                         &dev) < 0) {
        return NULL;
    }
    TensorObject *host = pygpu_tensor_empty(1, &n, PYGPU_FLOAT64, cpu_device);
    if (host == NULL) {
        return NULL;
    }
    double *v = (double *)host->data;
    double step = n > 1 ? (end.d - start.d) / (double)(n - 1) : 0.0;
    int64_t half = n / 2;
    for (int64_t i = 0; i < n; i++) {
        v[i] = i < half ? start.d + step * (double)i
                        : end.d - step * (double)(n - 1 - i);
    }
    if (n == 1) {
        v[0] = start.d;
    }
    return pygpu_with_requires_grad(finish(host, dtype, dev), a[5]);
}

/* eye(n, m=None): zeros, then one strided copy of a single one onto the
 * diagonal (stride m + 1). */
static PyObject *
eye_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
       PyObject *kwnames)
{
    static const char *const names[] = {"n", "m", "dtype", "device",
                                        "requires_grad"};
    PyObject *a[5];
    int64_t shape[2];
    int dtype;
    pygpu_device dev;
    TensorObject *out = NULL, *one = NULL;
    if (pygpu_parse_args("eye", args, nargs, kwnames, names, 5, 2, 1, a) < 0) {
        return NULL;
    }
    for (int k = 0; k < 2; k++) {
        PyObject *obj = a[k] != NULL && a[k] != Py_None ? a[k] : a[0];
        int ok = pygpu_parse_size_item(obj, &shape[k]);
        if (ok <= 0) {
            if (ok == 0) {
                PyErr_Format(PyExc_TypeError,
                             "eye(): argument '%s' (position %d) must be "
                             "int, not %.100s", names[k], k + 1,
                             Py_TYPE(obj)->tp_name);
            }
            return NULL;
        }
        if (shape[k] < 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s must be greater or equal to 0, got %lld",
                         names[k], (long long)shape[k]);
            return NULL;
        }
    }
    if (parse_factory_kw(a[2], a[3], a[4], pygpu_default_dtype(), &dtype,
                         &dev) < 0) {
        return NULL;
    }
    out = pygpu_tensor_empty(2, shape, dtype, dev);
    if (out == NULL || pygpu_op_fill(out, 0.0) < 0) {
        goto fail;
    }
    int64_t k = shape[0] < shape[1] ? shape[0] : shape[1];
    if (k > 0) {
        pygpu_geom g;
        one = pygpu_tensor_empty(0, NULL, dtype, dev);
        if (one == NULL || pygpu_op_fill(one, 1.0) < 0) {
            goto fail;
        }
        g.ndim = 1;
        g.shape[0] = k;
        g.stride[0][0] = shape[1] + 1;
        g.stride[1][0] = 0;
        if (pygpu_op_copy_geom(dev, dtype, out->data, dtype, one->data, &g,
                               k) < 0) {
            goto fail;
        }
    }
    Py_XDECREF(one);
    return pygpu_with_requires_grad((PyObject *)out, a[4]);
fail:
    Py_XDECREF(one);
    Py_XDECREF(out);
    return NULL;
}

PyMethodDef pygpu_range_functions[] = {
    {"arange", FASTKW(arange_fn),
     "arange($module, start=0, end=None, step=1, *, dtype=None,\n"
     "       device=None, requires_grad=False)\n--\n\n"
     "Values from start (inclusive) to end (exclusive) by step:\n"
     "ceil((end - start) / step) of them.  arange(end) starts at 0.  Ints\n"
     "give int64, any float the default float32, unless dtype."},
    {"linspace", FASTKW(linspace_fn),
     "linspace($module, start, end, steps, *, dtype=None, device=None,\n"
     "         requires_grad=False)\n--\n\n"
     "steps values evenly spaced from start to end inclusive (float32\n"
     "unless dtype)."},
    {"eye", FASTKW(eye_fn),
     "eye($module, n, m=None, *, dtype=None, device=None,\n"
     "    requires_grad=False)\n--\n\n"
     "An n x m (n x n without m) matrix with ones on the diagonal, zeros\n"
     "elsewhere (float32 unless dtype)."},
    {NULL},
};
