/* ops_index.c - indexing by integer tensors: index_select, gather, and
 * t[idx] / t[idx] = v where idx is an int32/int64 tensor, a list of ints
 * or a NumPy integer array (one such index, with basic indexing around
 * it).  All of them are one GATHER of the dispatch table (see dispatch.h):
 * a dense operand, an indexed one, an index, and the dim the index picks.
 *
 * Negative indices count from the end for t[idx] only: index_select,
 * gather (and scatter_add, index_add_ in ops_scatter.c) refuse them, as
 * torch's do (PYGPU_GATHER_NO_WRAP).  An index out of range raises
 * torch's error: on the CPU the loop stops at it; on CUDA the kernel
 * records it and the runner raises after reading it back (a sync per
 * call; cuda_dispatch.c).
 *
 * Nothing here records autograd history (autograd_select.c's wrappers
 * do); the Python-facing index_select and gather are in
 * tensor/tensor_select.c, t[idx] in tensor/tensor_index.c over
 * ops_getitem.c and ops_index_int.c.
 */
#include "ops/ops.h"

#include <string.h>

/* int32 or int64: integers of 4 or 8 bytes, so that dtypes added to the
 * table need nothing here (bool and uint8 index as masks). */
static int
index_dtype(int dtype)
{
    return !pygpu_dtype_table[dtype].is_floating_point &&
           pygpu_dtype_table[dtype].itemsize >= 4;
}

/* One GATHER: over shape, the dense operand, the indexed one (without its
 * indexed dim) and the index walk st[0], st[1], st[2]. */
typedef struct plan {
    int nd;
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t st[3][PYGPU_MAX_DIMS];
    int64_t dim_stride, dim_size;
    int dim;
} plan;

/* 0; -1 with an exception; 1 with *bad the first index out of range (the
 * CPU: the caller raises in its op's words). */
static int
run_plan(const char *what, const plan *p, TensorObject *dense,
         TensorObject *indexed, TensorObject *index, int mode, int64_t *bad)
{
    pygpu_geom g;
    pygpu_kargs k;
    int64_t numel = pygpu_numel(p->nd, p->shape);
    const int64_t *st[3] = {p->st[0], p->st[1], p->st[2]};
    if (numel == 0) {
        return 0;
    }
    pygpu_geom_build(&g, p->nd, p->shape, 3, st); /* nd <= MAX: fits */
    k.in_dtypes[1] = index->dtype;
    int scatter = pygpu_gather_writes_indexed(mode);
    k.out = scatter ? indexed->data : dense->data;
    k.in[0] = scatter ? dense->data : indexed->data;
    k.in[1] = index->data;
    k.g = &g;
    k.numel = numel;
    k.flag = mode;
    k.ix.stride = p->dim_stride;
    k.ix.size = p->dim_size;
    k.ix.dim = p->dim;
    k.ix.failed = 0;
    k.ix.bad = 0;
    if (pygpu_dispatch(PYGPU_K_GATHER, dense->device, dense->dtype, &k,
                       what) < 0) {
        return -1;
    }
    *bad = k.ix.bad;
    return k.ix.failed ? 1 : 0;
}

int
pygpu_index_plan_run_as(const char *what, int nd, const int64_t *shape,
                        const int64_t *const *st, int64_t dim_stride,
                        int64_t dim_size, int dim, TensorObject *dense,
                        TensorObject *indexed, TensorObject *index, int mode,
                        PyObject *exc, const char *in_words)
{
    plan p;
    int64_t bad;
    p.nd = nd;
    for (int k = 0; k < 3; k++) {
        memcpy(p.st[k], st[k], sizeof(int64_t) * (size_t)nd);
    }
    memcpy(p.shape, shape, sizeof(int64_t) * (size_t)nd);
    p.dim_stride = dim_stride;
    p.dim_size = dim_size;
    p.dim = dim;
    int rc = run_plan(what, &p, dense, indexed, index, mode, &bad);
    if (rc == 1 && in_words != NULL) {
        PyErr_SetString(exc, in_words);
        return -1;
    }
    if (rc == 1) {
        PyErr_Format(exc,
                     "index %lld is out of bounds for dimension %d with size "
                     "%lld", (long long)bad, dim, (long long)dim_size);
        return -1;
    }
    return rc;
}

int
pygpu_index_plan_run(const char *what, int nd, const int64_t *shape,
                     const int64_t *const *st, int64_t dim_stride,
                     int64_t dim_size, int dim, TensorObject *dense,
                     TensorObject *indexed, TensorObject *index, int mode)
{
    return pygpu_index_plan_run_as(what, nd, shape, st, dim_stride, dim_size,
                                   dim, dense, indexed, index, mode,
                                   PyExc_IndexError, NULL);
}

/* The new dense result of a gathering plan, then the gather into it. */
static PyObject *
gather_new(const char *what, plan *p, TensorObject *src, TensorObject *index,
           PyObject *exc, const char *in_words)
{
    int64_t bad;
    TensorObject *res = pygpu_tensor_empty(p->nd, p->shape, src->dtype,
                                           src->device);
    if (res == NULL) {
        return NULL;
    }
    memcpy(p->st[0], res->strides, sizeof(int64_t) * (size_t)p->nd);
    int rc = run_plan(what, p, res, src, index,
                      PYGPU_GATHER_READ | PYGPU_GATHER_NO_WRAP, &bad);
    if (rc == 1) {
        if (in_words != NULL) {
            PyErr_SetString(exc, in_words);
        }
        else {
            PyErr_Format(exc,
                         "index %lld is out of bounds for dimension %d with "
                         "size %lld", (long long)bad, p->dim,
                         (long long)p->dim_size);
        }
    }
    if (rc != 0) {
        Py_CLEAR(res);
    }
    return (PyObject *)res;
}

static int
check_index(const char *fname, PyObject *obj, TensorObject *t,
            const char *dtype_words)
{
    if (pygpu_tensor_arg(obj, fname, "index") < 0) {
        return -1;
    }
    if (!index_dtype(((TensorObject *)obj)->dtype)) {
        PyErr_Format(PyExc_RuntimeError, "%s(): Expected dtype %s for index",
                     fname, dtype_words);
        return -1;
    }
    return pygpu_check_same_device(t, (TensorObject *)obj);
}

/* ---------------------------------------------------------- index_select */

PyObject *
pygpu_op_index_select(TensorObject *t, int dim, PyObject *index)
{
    plan p;
    if (check_index("index_select", index, t, "int32 or int64") < 0) {
        return NULL;
    }
    TensorObject *ix = (TensorObject *)index;
    if (ix->ndim > 1) {
        PyErr_SetString(PyExc_IndexError,
                        "index_select(): Index is supposed to be a vector");
        return NULL;
    }
    int64_t len = ix->ndim ? ix->shape[0] : 1;
    if (t->ndim == 0 && len != 1) {
        PyErr_Format(PyExc_IndexError,
                     "index_select(): Index to scalar can have only 1 value, "
                     "got %lld value(s)", (long long)len);
        return NULL;
    }
    p.nd = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        p.shape[d] = d == dim ? len : t->shape[d];
        p.st[1][d] = d == dim ? 0 : t->strides[d];
        p.st[2][d] = d == dim && ix->ndim ? ix->strides[0] : 0;
    }
    p.dim_stride = t->ndim ? t->strides[dim] : 0;
    p.dim_size = t->ndim ? t->shape[dim] : 1;
    p.dim = dim;
    return gather_new("index_select", &p, t, ix, PyExc_IndexError,
                      "index out of range in self");
}

/* ---------------------------------------------------------------- gather */

PyObject *
pygpu_op_gather(TensorObject *t, int dim, PyObject *index)
{
    plan p;
    char si[256], st[256];
    if (check_index("gather", index, t, "int32 or int64") < 0) {
        return NULL;
    }
    TensorObject *ix = (TensorObject *)index;
    if (ix->ndim != t->ndim) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Index tensor must have the same number of "
                        "dimensions as input tensor");
        return NULL;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (d != dim && ix->shape[d] > t->shape[d]) {
            pygpu_format_shape(si, sizeof(si), ix->ndim, ix->shape);
            pygpu_format_shape(st, sizeof(st), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "Size does not match at dimension %d expected index "
                         "[%s] to be no larger than self [%s] apart from "
                         "dimension %d", d, si, st, dim);
            return NULL;
        }
    }
    p.nd = ix->ndim;
    for (int d = 0; d < ix->ndim; d++) {
        p.shape[d] = ix->shape[d];
        p.st[1][d] = d == dim ? 0 : t->strides[d];
        p.st[2][d] = ix->strides[d];
    }
    p.dim_stride = t->ndim ? t->strides[dim] : 0;
    p.dim_size = t->ndim ? t->shape[dim] : 1;
    p.dim = dim;
    return gather_new("gather", &p, t, ix, PyExc_RuntimeError, NULL);
}
