/* ops_scatter.c - scatter_add and index_add: the elements of src added
 * into the slots an index picks along one dim of self.  Both are one
 * GATHER of the dispatch table (see ops_index.c) in an ADD mode: the
 * dense operand is src, the indexed one self.
 *
 * The loops add in float32, float64 or int64 (kernels.h): float16 and
 * bfloat16 go through a float32 copy of self, bool, uint8 and int32
 * through an int64 one, copied back after (bool: a sum that is nonzero is
 * true, torch's logical or).  On the CPU the additions run in the index's
 * order; on CUDA they are atomic, so float sums may differ in the last
 * bits between runs, as torch's do.
 *
 * Every index lies in [0, self.size(dim)): a negative one is refused, as
 * torch refuses it (RuntimeError "index -1 is out of bounds for dimension
 * 0 with size 4" for scatter_add, IndexError "index out of range in self"
 * for index_add_; on CUDA the CudaError of the gather runner).
 *
 * Nothing here records autograd history (autograd_select.c's
 * pygpu_ag_scatter does); the Python-facing functions and methods are in
 * tensor/tensor_select.c.
 */
#include "ops/ops.h"

#include <string.h>

/* The dtype the loop adds in, and its mode. */
static int
work_dtype(int dtype, int *mode)
{
    const pygpu_dtype_info *d = &pygpu_dtype_table[dtype];
    if (d->is_floating_point) {
        *mode = PYGPU_GATHER_ADD;
        return dtype == PYGPU_FLOAT64 ? PYGPU_FLOAT64 : PYGPU_FLOAT32;
    }
    *mode = PYGPU_GATHER_ADD_INT;
    return PYGPU_INT64;
}

/* x as dtype (x itself when it is). */
static TensorObject *
as_work(TensorObject *x, int dtype)
{
    if (x->dtype == dtype) {
        return (TensorObject *)Py_NewRef(x);
    }
    return pygpu_tensor_to(x, x->device, dtype);
}

/* self[... index[p] along dim ...] += src[p] over the positions p of
 * `shape` (nd dims): src_st walks src, self_st self (0 along dim) and
 * ix_st the index.  The strides are of self and src as given; converted
 * copies are walked with their own. */
static int
add_into(const char *what, TensorObject *self, TensorObject *src,
         TensorObject *index, int dim, int nd, const int64_t *shape,
         int along_index_only)
{
    int mode;
    int wd = work_dtype(self->dtype, &mode);
    TensorObject *s = NULL, *w = NULL;
    int64_t st[3][PYGPU_MAX_DIMS];
    int rc = -1;
    if (pygpu_numel(nd, shape) == 0) {
        return 0;
    }
    s = as_work(src, wd);
    w = s ? (self->dtype == wd ? (TensorObject *)Py_NewRef(self)
                               : pygpu_tensor_to(self, self->device, wd))
          : NULL;
    if (w == NULL) {
        goto fail;
    }
    for (int d = 0; d < nd; d++) {
        st[0][d] = s->ndim ? s->strides[d] : 0;
        st[1][d] = d == dim || w->ndim == 0 ? 0 : w->strides[d];
        st[2][d] = along_index_only ? (d == dim && index->ndim
                                           ? index->strides[0] : 0)
                                    : index->strides[d];
    }
    const int64_t *stp[3] = {st[0], st[1], st[2]};
    /* torch's CPU errors: scatter_add's names the index, index_add_'s
     * does not; a negative index is out of range for both. */
    if (pygpu_index_plan_run_as(
            what, nd, shape, stp, w->ndim ? w->strides[dim] : 0,
            w->ndim ? w->shape[dim] : 1, dim, s, w, index,
            mode | PYGPU_GATHER_NO_WRAP,
            along_index_only ? PyExc_IndexError : PyExc_RuntimeError,
            along_index_only ? "index out of range in self" : NULL) < 0) {
        goto fail;
    }
    if (w != self && pygpu_tensor_copy_into(self, w) < 0) {
        goto fail;
    }
    rc = 0;
fail:
    Py_XDECREF(s);
    Py_XDECREF(w);
    return rc;
}

static int
check_index(const char *fname, PyObject *obj, TensorObject *t)
{
    if (pygpu_tensor_arg(obj, fname, "index") < 0) {
        return -1;
    }
    int dt = ((TensorObject *)obj)->dtype;
    if (pygpu_dtype_table[dt].is_floating_point ||
        pygpu_dtype_table[dt].itemsize < 4) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): Expected dtype int32 or int64 for index", fname);
        return -1;
    }
    return pygpu_check_same_device(t, (TensorObject *)obj);
}

static int
check_src(const char *fname, const char *arg, PyObject *obj,
          TensorObject *self)
{
    if (pygpu_tensor_arg(obj, fname, arg) < 0) {
        return -1;
    }
    TensorObject *s = (TensorObject *)obj;
    if (s->dtype != self->dtype) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): Expected self.dtype to be equal to %s.dtype",
                     fname, arg);
        return -1;
    }
    return pygpu_check_same_device(self, s);
}

/* ------------------------------------------------------------ scatter_add */

int
pygpu_scatter_add_into(TensorObject *self, int dim, TensorObject *index,
                       TensorObject *src)
{
    char a[256], b[256], c[256];
    if (index->ndim != self->ndim || src->ndim != self->ndim) {
        PyErr_Format(PyExc_RuntimeError,
                     "Index tensor must have the same number of dimensions "
                     "as %s tensor", index->ndim != self->ndim ? "self"
                                                               : "src");
        return -1;
    }
    for (int d = 0; d < index->ndim; d++) {
        if (index->shape[d] > src->shape[d] ||
            (d != dim && index->shape[d] > self->shape[d])) {
            pygpu_format_shape(a, sizeof(a), index->ndim, index->shape);
            pygpu_format_shape(b, sizeof(b), self->ndim, self->shape);
            pygpu_format_shape(c, sizeof(c), src->ndim, src->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "Expected index [%s] to be smaller than self [%s] "
                         "apart from dimension %d and to be smaller size "
                         "than src [%s]", a, b, dim, c);
            return -1;
        }
    }
    if (pygpu_check_write(self, src, index) < 0) {
        return -1;
    }
    return add_into("scatter_add", self, src, index, dim, index->ndim,
                    index->shape, 0);
}

/* ------------------------------------------------------------- index_add */

int
pygpu_index_add_into(TensorObject *self, int dim, TensorObject *index,
                     TensorObject *src)
{
    char a[256], b[256];
    int64_t len = index->ndim ? index->shape[0] : 1;
    if (index->ndim > 1) {
        PyErr_SetString(PyExc_IndexError,
                        "index_add_(): Index is supposed to be a vector");
        return -1;
    }
    if (src->ndim != self->ndim && !(self->ndim == 0 && src->ndim <= 1)) {
        PyErr_SetString(PyExc_IndexError,
                        "index_add_(): self and source must have the same "
                        "number of dimensions");
        return -1;
    }
    int64_t src_len = src->ndim ? src->shape[self->ndim ? dim : 0] : 1;
    if (src_len != len) {
        PyErr_Format(PyExc_IndexError,
                     "index_add_(): Number of indices (%lld) should be equal "
                     "to source.size(dim) (%lld)", (long long)len,
                     (long long)src_len);
        return -1;
    }
    for (int d = 0; d < self->ndim; d++) {
        if (d != dim && src->shape[d] != self->shape[d]) {
            pygpu_format_shape(a, sizeof(a), self->ndim, self->shape);
            pygpu_format_shape(b, sizeof(b), src->ndim, src->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "index_add_(): self [%s] and source [%s] must have "
                         "the same size apart from dimension %d", a, b, dim);
            return -1;
        }
    }
    if (pygpu_check_write(self, src, index) < 0) {
        return -1;
    }
    int64_t shape[PYGPU_MAX_DIMS];
    for (int d = 0; d < self->ndim; d++) {
        shape[d] = d == dim ? len : self->shape[d];
    }
    if (self->ndim == 0) { /* one slot, a 0-d or 1-element source */
        int64_t none[1] = {0};
        TensorObject *s0 = pygpu_tensor_view(src, 0, none, none, 0);
        int rc = s0 ? add_into("index_add_", self, s0, index, 0, 0, shape,
                               1)
                    : -1;
        Py_XDECREF(s0);
        return rc;
    }
    return add_into("index_add_", self, src, index, dim, self->ndim, shape,
                    1);
}

/* ---------------------------------------- the four entries' common work */

int
pygpu_scatter_check(const char *fname, TensorObject *self, PyObject *dimobj,
                    PyObject *index, PyObject *src, int index_add, int *dim)
{
    const char *arg = index_add ? "source" : "src";
    if (pygpu_parse_dim(dimobj, self->ndim, dim) < 0 ||
        check_index(fname, index, self) < 0 ||
        check_src(fname, arg, src, self) < 0) {
        return -1;
    }
    return 0;
}

PyObject *
pygpu_op_scatter(TensorObject *self, int dim, TensorObject *index,
                 TensorObject *src, PyObject *alpha, int index_add,
                 int inplace)
{
    TensorObject *target = NULL;
    src = (TensorObject *)Py_NewRef(src);
    if (alpha != NULL && alpha != Py_None) {
        Py_SETREF(src, (TensorObject *)pygpu_op_binary(
                           PYGPU_MUL, (PyObject *)src, alpha, NULL));
        if (src != NULL && src->dtype != self->dtype) {
            Py_SETREF(src, pygpu_tensor_to(src, src->device, self->dtype));
        }
        if (src == NULL) {
            return NULL;
        }
    }
    target = inplace ? (TensorObject *)Py_NewRef(self)
                     : pygpu_tensor_to(self, self->device, self->dtype);
    int rc = target == NULL ? -1
             : index_add    ? pygpu_index_add_into(target, dim, index, src)
                            : pygpu_scatter_add_into(target, dim, index, src);
    Py_DECREF(src);
    if (rc < 0) {
        Py_XDECREF(target);
        return NULL;
    }
    return (PyObject *)target;
}
