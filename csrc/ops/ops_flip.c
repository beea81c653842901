/* ops_flip.c - flip and repeat: a new tensor holding one tensor's
 * elements in another order, by one strided copy through the COPY kind
 * (pygpu_op_copy_geom).  flip reads with negative strides, which only ever
 * live inside the geometry: no view has them.  Nothing here records
 * autograd history (autograd_layout.c's wrappers do); the Python-facing
 * functions are in tensor/tensor_join.c.
 */
#include "ops/ops.h"

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

PyObject *
pygpu_op_flip(TensorObject *t, PyObject *const *dims, Py_ssize_t ndims)
{
    int flipped[PYGPU_MAX_DIMS];
    int64_t st[PYGPU_MAX_DIMS], from = 0;
    pygpu_geom g;
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

/* --------------------------------------------------------------- repeat */

/* repeat: each dim i of the result (size r * s) is walked as two, (r, s):
 * the output steps s * stride and stride, the input 0 and its own stride;
 * one copy. */
PyObject *
pygpu_op_repeat(TensorObject *t, const int64_t *reps, int n)
{
    int64_t shape[PYGPU_MAX_DIMS] = {0}; /* n may be 0 */
    int64_t shape2[2 * PYGPU_MAX_DIMS], ost[2 * PYGPU_MAX_DIMS],
        ist[2 * PYGPU_MAX_DIMS];
    pygpu_geom g;
    if (n < t->ndim) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Number of dimensions of repeat dims can not be "
                        "smaller than number of dimensions of tensor");
        return NULL;
    }
    int nd = n, lead = nd - t->ndim;
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
            return NULL;
        }
    }
    TensorObject *res = pygpu_tensor_empty(nd, shape, t->dtype, t->device);
    if (res == NULL) {
        return NULL;
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
        Py_DECREF(res);
        return NULL;
    }
    if (pygpu_op_copy_geom(t->device, t->dtype, res->data, t->dtype, t->data,
                           &g, numel) < 0) {
        Py_CLEAR(res);
    }
    return (PyObject *)res;
}
