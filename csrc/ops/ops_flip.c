/* ops_flip.c - flip and repeat: a new tensor holding one tensor's
 * elements in another order, by one strided copy through the COPY kind
 * (pygpu_op_copy_geom).  flip reads with negative strides, which only ever
 * live inside the geometry: no view has them.
 */
#include "autograd/autograd.h"

#include <string.h>

/* ----------------------------------------------------------------- flip */

/* dims of flip: an int or a sequence of ints, none repeated. */
static int
parse_flip_dims(PyObject *const *items, Py_ssize_t n, const TensorObject *t,
                int *flipped)
{
    memset(flipped, 0, sizeof(int) * PYGPU_MAX_DIMS);
    for (Py_ssize_t i = 0; i < n; i++) {
        int d;
        if (pygpu_parse_dim(items[i], t->ndim, &d) < 0) {
            return -1;
        }
        if (flipped[d]) {
            PyErr_Format(PyExc_RuntimeError,
                         "dim %d appears multiple times in the list of dims",
                         d);
            return -1;
        }
        flipped[d] = 1;
    }
    return 0;
}

/* A contiguous copy of t read backwards along the flipped dims. */
static PyObject *
flip_impl(TensorObject *t, PyObject *const *dims, Py_ssize_t ndims)
{
    int flipped[PYGPU_MAX_DIMS];
    int64_t st[PYGPU_MAX_DIMS], from = 0;
    pygpu_geom g;
    if (pygpu_ag_wanted(1, &t)) {
        PyObject *res;
        PYGPU_UNRECORDED(res, flip_impl(t, dims, ndims));
        return pygpu_ag_flip(t, dims, ndims, res);
    }
    if (parse_flip_dims(dims, ndims, t, flipped) < 0) {
        return NULL;
    }
    TensorObject *res = pygpu_tensor_empty(t->ndim, t->shape, t->dtype,
                                           t->device);
    if (res == NULL) {
        return NULL;
    }
    for (int d = 0; d < t->ndim; d++) {
        st[d] = flipped[d] ? -t->strides[d] : t->strides[d];
        if (flipped[d] && t->shape[d] > 0) {
            from += (t->shape[d] - 1) * t->strides[d];
        }
    }
    const int64_t *sts[2] = {res->strides, st};
    pygpu_geom_build(&g, t->ndim, t->shape, 2, sts);
    int itemsize = pygpu_dtype_table[t->dtype].itemsize;
    if (pygpu_op_copy_geom(t->device, t->dtype, res->data, t->dtype,
                           t->data + from * itemsize, &g,
                           pygpu_numel(t->ndim, t->shape)) < 0) {
        Py_CLEAR(res);
    }
    return (PyObject *)res;
}

static PyObject *
flip_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"input", "dims"};
    PyObject *a[2], *seq = NULL, *r = NULL;
    PyObject *const *items;
    Py_ssize_t n;
    if (pygpu_parse_args("flip", args, nargs, kwnames, names, 2, 2, 2, a) <
            0 ||
        pygpu_tensor_arg(a[0], "flip", "input") < 0 ||
        pygpu_unpack_dims(&a[1], 1, &seq, &items, &n) < 0) {
        return NULL;
    }
    r = flip_impl((TensorObject *)a[0], items, n);
    Py_XDECREF(seq);
    return r;
}

PyObject *
pygpu_t_flip(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq = NULL, *r;
    PyObject *const *items;
    Py_ssize_t n;
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "flip() missing 1 required positional arguments: "
                        "\"dims\"");
        return NULL;
    }
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    r = flip_impl((TensorObject *)op, items, n);
    Py_XDECREF(seq);
    return r;
}

/* --------------------------------------------------------------- repeat */

/* repeat(*sizes): each dim i of the result (size r * s) is walked as two,
 * (r, s): the output steps s * stride and stride, the input 0 and its own
 * stride; one copy. */
PyObject *
pygpu_t_repeat(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    TensorObject *t = (TensorObject *)op, *res = NULL;
    PyObject *seq = NULL;
    PyObject *const *items;
    Py_ssize_t n;
    if (pygpu_ag_wanted(1, &t)) {
        PyObject *res;
        PYGPU_UNRECORDED(res, pygpu_t_repeat(op, args, nargs));
        return pygpu_ag_repeat(t, res);
    }
    int64_t reps[PYGPU_MAX_DIMS], shape[PYGPU_MAX_DIMS];
    int64_t shape2[2 * PYGPU_MAX_DIMS], ost[2 * PYGPU_MAX_DIMS],
        ist[2 * PYGPU_MAX_DIMS];
    pygpu_geom g;
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "repeat() missing 1 required positional arguments: "
                        "\"repeats\"");
        return NULL;
    }
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    if (pygpu_parse_sizes("repeats", items, n, reps) < 0) {
        goto fail;
    }
    if (n < t->ndim) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Number of dimensions of repeat dims can not be "
                        "smaller than number of dimensions of tensor");
        goto fail;
    }
    int nd = (int)n, lead = nd - t->ndim;
    for (int d = 0; d < nd; d++) {
        int64_t s = d < lead ? 1 : t->shape[d - lead];
        if (reps[d] < 0) {
            /* torch's error names the negative size rep * s; when that
             * is past int64, the repeat itself */
            if (__builtin_mul_overflow(reps[d], s > 0 ? s : 1, &shape[d])) {
                shape[d] = reps[d];
            }
        }
        else if (__builtin_mul_overflow(reps[d], s, &shape[d])) {
            PyErr_Format(PyExc_RuntimeError,
                         "repeat(): size %lld repeated %lld times overflows "
                         "int64 at dim %d", (long long)s, (long long)reps[d],
                         d);
            goto fail;
        }
    }
    res = pygpu_tensor_empty(nd, shape, t->dtype, t->device);
    if (res == NULL) {
        goto fail;
    }
    for (int d = 0; d < nd; d++) {
        int64_t s = d < lead ? 1 : t->shape[d - lead];
        shape2[2 * d] = reps[d];
        shape2[2 * d + 1] = s;
        ost[2 * d] = s * res->strides[d];
        ost[2 * d + 1] = res->strides[d];
        ist[2 * d] = 0;
        ist[2 * d + 1] = d < lead ? 0 : t->strides[d - lead];
    }
    const int64_t *sts[2] = {ost, ist};
    int64_t numel = pygpu_numel(nd, shape);
    if (numel > 0 && pygpu_geom_build(&g, 2 * nd, shape2, 2, sts) < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "repeat: too many dims to repeat in one pass");
        Py_CLEAR(res);
        goto fail;
    }
    if (pygpu_op_copy_geom(t->device, t->dtype, res->data, t->dtype, t->data,
                           &g, numel) < 0) {
        Py_CLEAR(res);
    }
fail:
    Py_XDECREF(seq);
    return (PyObject *)res;
}

PyMethodDef pygpu_flip_functions[] = {
    {"flip", FASTKW(flip_fn),
     "flip($module, input, dims)\n--\n\n"
     "A copy of input with the order of elements reversed along dims."},
    {NULL},
};
