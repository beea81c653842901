/* tensor_strided.c - _C._strided_view(base, size, stride, storage_offset):
 * a view of a contiguous 1-d tensor with any sizes and non-negative
 * strides (in elements) whose elements all lie inside it, as torch's
 * as_strided over a storage.  pygpu.load rebuilds the tensors that shared
 * memory when they were saved as such views of one loaded storage.
 *
 * Nothing is recorded for autograd, so base must not require grad; the
 * view starts as a leaf that does not require grad either.
 */
#include "tensor/tensor.h"

/* A list or tuple of ints into out[0..*n); *n checked against
 * PYGPU_MAX_DIMS.  0 or -1 with an exception. */
static int
int_list(PyObject *obj, const char *what, int64_t *out, int *n)
{
    PyObject *seq = pygpu_sequence_tuple(obj, what);
    int rc = -1;
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t len = PyTuple_GET_SIZE(seq);
    if (len > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "_strided_view(): %s has %zd entries; at most %d dims "
                     "are supported", what, len, PYGPU_MAX_DIMS);
        goto fail;
    }
    if (pygpu_parse_sizes(what, &PyTuple_GET_ITEM(seq, 0), len, out) < 0) {
        goto fail;
    }
    *n = (int)len;
    rc = 0;
fail:
    Py_DECREF(seq);
    return rc;
}

/* Whether every element of (shape, strides) at offset lies in [0, n):
 * sizes and strides non-negative, the last element's position (computed
 * without overflow) below n.  An empty view fits anywhere from 0 to n. */
static int
fits(int nd, const int64_t *shape, const int64_t *strides, int64_t offset,
     int64_t n)
{
    int64_t last = offset;
    int empty = 0;
    if (offset < 0) {
        return 0;
    }
    for (int d = 0; d < nd; d++) {
        if (shape[d] < 0 || strides[d] < 0) {
            return 0;
        }
        empty |= shape[d] == 0;
    }
    if (empty) {
        return offset <= n;
    }
    for (int d = 0; d < nd; d++) {
        int64_t step;
        if (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
            __builtin_add_overflow(last, step, &last)) {
            return 0;
        }
    }
    return last < n;
}

static PyObject *
strided_view(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    static const char *const names[] = {"base", "size", "stride",
                                        "storage_offset"};
    PyObject *a[4] = {NULL, NULL, NULL, NULL};
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS], offset;
    int nd, ns;
    (void)m;
    if (pygpu_parse_args("_strided_view", args, nargs, kwnames, names, 4, 4,
                         4, a) < 0 ||
        pygpu_tensor_arg(a[0], "_strided_view", "base") < 0 ||
        int_list(a[1], "size", shape, &nd) < 0 ||
        int_list(a[2], "stride", strides, &ns) < 0 ||
        pygpu_parse_sizes("storage_offset", &a[3], 1, &offset) < 0) {
        return NULL;
    }
    TensorObject *base = (TensorObject *)a[0];
    if (base->ndim != 1 || !pygpu_is_contiguous(base)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_strided_view(): base must be a contiguous 1-d "
                        "tensor");
        return NULL;
    }
    if (pygpu_requires_grad(base)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_strided_view(): base must not require grad");
        return NULL;
    }
    if (ns != nd) {
        PyErr_Format(PyExc_RuntimeError,
                     "mismatch in length of strides and shape (%d and %d)",
                     ns, nd);
        return NULL;
    }
    if (!fits(nd, shape, strides, offset, base->shape[0])) {
        PyErr_Format(PyExc_RuntimeError,
                     "_strided_view(): the view (offset %lld) does not lie "
                     "inside base's %lld elements", (long long)offset,
                     (long long)base->shape[0]);
        return NULL;
    }
    return (PyObject *)pygpu_tensor_view(base, nd, shape, strides, offset);
}

PyMethodDef pygpu_strided_functions[] = {
    {"_strided_view", FASTKW(strided_view),
     "_strided_view($module, base, size, stride, storage_offset)\n--\n\n"
     "A view of base (a contiguous 1-d tensor that does not require grad)\n"
     "with the given sizes, non-negative strides and offset in elements,\n"
     "every element inside base; for pygpu.load."},
    {NULL},
};
