/* out_arg.c - the `out=` argument of every op, with torch's rules, and
 * Tensor.resize_.
 *
 * pygpu_out_prepare runs before an op writes into a tensor it was given:
 * the out tensor must be writable, on the op's device and of a dtype the
 * result can be cast to; an out of another shape is resized (with torch's
 * deprecation warning when it held elements), except in place, where the
 * shape must already be the result's; then the overlap rules of overlap.c.
 * The op computes in the result's dtype: into out itself when the dtypes
 * agree, else into a temporary that pygpu_out_finish copies into out.
 */
#include "ops/ops.h"

#include <string.h>

/* torch's name of a dtype in its messages ("Float", "Long"). */
const char *
pygpu_dtype_torch_name(int dtype)
{
    return pygpu_dtype_table[dtype].scalar_name;
}

/* torch's canCast: no move to a lower category (float > int > bool). */
int
pygpu_check_cast(int from, int to)
{
    if (pygpu_dtype_category(from) > pygpu_dtype_category(to)) {
        PyErr_Format(PyExc_RuntimeError,
                     "result type %s can't be cast to the desired output "
                     "type %s",
                     pygpu_dtype_torch_name(from), pygpu_dtype_torch_name(to));
        return -1;
    }
    return 0;
}

/* "[2, 3]" into buf, as torch prints a shape in messages. */
static void
shape_str(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t k = 0;
    buf[k++] = '[';
    for (int d = 0; d < ndim && k + 24 < size; d++) {
        k += (size_t)PyOS_snprintf(buf + k, size - k, d ? ", %lld" : "%lld",
                                   (long long)shape[d]);
    }
    PyOS_snprintf(buf + k, size - k, "]");
}

/* Bytes of t's memory from t->data to the end of its base; 0 when unknown
 * (a base array that is not one contiguous block). */
static size_t
bytes_available(const TensorObject *t)
{
    const char *start;
    size_t total;
    if (PyArray_Check(t->base)) {
        PyArrayObject *arr = (PyArrayObject *)t->base;
        if (!PyArray_IS_C_CONTIGUOUS(arr)) {
            return 0;
        }
        start = PyArray_BYTES(arr);
        total = (size_t)PyArray_NBYTES(arr);
    }
    else {
        StorageObject *st = (StorageObject *)t->base;
        start = st->ptr;
        total = st->nbytes;
    }
    if (start == NULL || t->data < start ||
        (size_t)(t->data - start) > total) {
        return 0;
    }
    return total - (size_t)(t->data - start);
}

int
pygpu_tensor_resize(TensorObject *t, int ndim, const int64_t *shape)
{
    int64_t n;
    size_t need, have;
    if (ndim == t->ndim &&
        memcmp(shape, t->shape, sizeof(int64_t) * (size_t)ndim) == 0) {
        return 0;
    }
    if (pygpu_check_writable(t) < 0 ||
        pygpu_shape_nbytes(ndim, shape, t->dtype, &need) < 0) {
        return -1;
    }
    n = pygpu_numel(ndim, shape);
    have = bytes_available(t);
    if (need > have) {
        /* New memory, the old bytes copied to its start, as torch's
         * storage resize; this tensor alone moves to it. */
        TensorObject *fresh = pygpu_tensor_empty(1, &n, t->dtype, t->device);
        if (fresh == NULL) {
            return -1;
        }
        if (have > 0) {
            int64_t old_n = (int64_t)(have / (size_t)
                                      pygpu_dtype_table[t->dtype].itemsize);
            const int64_t unit = 1;
            TensorObject *src = pygpu_tensor_view(t, 1, &old_n, &unit, 0);
            TensorObject *dst =
                src ? pygpu_tensor_view(fresh, 1, &old_n, &unit, 0) : NULL;
            int rc = dst ? pygpu_op_copy_same_device(dst, src) : -1;
            Py_XDECREF(src);
            Py_XDECREF(dst);
            if (rc < 0) {
                Py_DECREF(fresh);
                return -1;
            }
        }
        Py_SETREF(t->base, Py_NewRef(fresh->base));
        t->data = fresh->data;
        Py_DECREF(fresh);
    }
    t->ndim = ndim;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    }
    pygpu_contiguous_strides(ndim, t->shape, t->strides);
    return 0;
}

/* out of the wrong shape: resized (warning when it had elements), or in
 * place an error. */
static int
fit_shape(TensorObject *out, int ndim, const int64_t *shape, int inplace)
{
    char have[PYGPU_MAX_DIMS * 24], want[PYGPU_MAX_DIMS * 24];
    if (ndim == out->ndim &&
        memcmp(shape, out->shape, sizeof(int64_t) * (size_t)ndim) == 0) {
        return 0;
    }
    shape_str(out->ndim, out->shape, have, sizeof(have));
    shape_str(ndim, shape, want, sizeof(want));
    if (inplace) {
        PyErr_Format(PyExc_RuntimeError,
                     "output with shape %s doesn't match the broadcast shape "
                     "%s", have, want);
        return -1;
    }
    if (pygpu_numel(out->ndim, out->shape) != 0 &&
        PyErr_WarnFormat(PyExc_UserWarning, 1,
                         "An output with one or more elements was resized "
                         "since it had shape %s, which does not match the "
                         "required output shape %s. This behavior is "
                         "deprecated, and in a future PyTorch release "
                         "outputs will not be resized unless they have zero "
                         "elements. You can explicitly reuse an out tensor t "
                         "by resizing it, inplace, to zero elements with "
                         "t.resize_(0).", have, want) < 0) {
        return -1;
    }
    return pygpu_tensor_resize(out, ndim, shape);
}

TensorObject *
pygpu_out_prepare(TensorObject *out, int ndim, const int64_t *shape,
                  int dtype, pygpu_device dev, int inplace,
                  const TensorObject *in1, const TensorObject *in2)
{
    if (pygpu_check_readonly(out) < 0) { /* the write's check is below */
        return NULL;
    }
    if (!pygpu_device_equal(&out->device, &dev)) {
        char d1[32], d2[32];
        pygpu_device_str(&dev, d1, sizeof(d1));
        pygpu_device_str(&out->device, d2, sizeof(d2));
        PyErr_Format(PyExc_RuntimeError,
                     "Expected all tensors to be on the same device, but "
                     "found at least two devices, %s and %s!", d1, d2);
        return NULL;
    }
    if (pygpu_check_cast(dtype, out->dtype) < 0 ||
        fit_shape(out, ndim, shape, inplace) < 0 ||
        pygpu_check_write(out, in1, in2) < 0) {
        return NULL;
    }
    if (out->dtype == dtype) {
        return (TensorObject *)Py_NewRef(out);
    }
    return pygpu_tensor_empty(ndim, shape, dtype, dev);
}

PyObject *
pygpu_out_finish(TensorObject *out, TensorObject *res)
{
    if (res == NULL) {
        return NULL;
    }
    if (res != out) {
        int rc = pygpu_op_copy_same_device(out, res);
        Py_DECREF(res);
        if (rc < 0) {
            return NULL;
        }
        return Py_NewRef(out);
    }
    return (PyObject *)res;
}

/* ------------------------------------------------------------- resize_ */

/* t.resize_(*sizes): contiguous with the new shape, over the same memory
 * when it holds the elements, else over new memory (the old bytes kept at
 * its start). */
PyObject *
pygpu_t_resize_(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "resize_() missing 1 required positional arguments: "
                        "\"size\"");
        return NULL;
    }
    if (pygpu_parse_shape(args, nargs, &ndim, shape) < 0 ||
        pygpu_tensor_resize((TensorObject *)op, ndim, shape) < 0) {
        return NULL;
    }
    return Py_NewRef(op);
}

/* ----------------------------------------------------- out= after the fact */

PyObject *
pygpu_out_assign(TensorObject *out, PyObject *result, const TensorObject *in)
{
    if (result == NULL) {
        return NULL;
    }
    TensorObject *r = (TensorObject *)result;
    TensorObject *dst = pygpu_out_prepare(out, r->ndim, r->shape, r->dtype,
                                          r->device, 0, in, NULL);
    int rc = dst ? pygpu_op_copy_same_device(out, r) : -1;
    Py_XDECREF(dst);
    Py_DECREF(result);
    return rc < 0 ? NULL : Py_NewRef(out);
}

int
pygpu_split_out_kwarg(const char *fname, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames, PyObject **argv,
                      Py_ssize_t cap, PyObject **rest, TensorObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, k = 0;
    *rest = NULL;
    *out = NULL;
    if (nargs + nkw > cap) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments",
                     fname, cap);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        argv[i] = args[i];
    }
    if (nkw == 0) {
        return 0;
    }
    *rest = PyTuple_New(nkw);
    if (*rest == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        PyObject *value = args[nargs + i];
        if (PyUnicode_Check(name) &&
            PyUnicode_CompareWithASCIIString(name, "out") == 0) {
            if (value != Py_None &&
                pygpu_tensor_arg(value, fname, "out") < 0) {
                Py_CLEAR(*rest);
                return -1;
            }
            *out = value == Py_None ? NULL : (TensorObject *)value;
            continue;
        }
        PyTuple_SET_ITEM(*rest, k, Py_NewRef(name));
        argv[nargs + k++] = value;
    }
    if (k == 0) {
        Py_CLEAR(*rest);
    }
    else if (k < nkw) {
        Py_SETREF(*rest, PyTuple_GetSlice(*rest, 0, k));
        if (*rest == NULL) {
            return -1;
        }
    }
    return 0;
}
