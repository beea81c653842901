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
 */
#include "autograd/autograd.h"

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

/* ------------------------------------------------- functions and methods */

static PyObject *scatter_call(const char *fname, TensorObject *self,
                              PyObject *dimobj, PyObject *indexobj,
                              PyObject *srcobj, PyObject *alpha,
                              int index_add, int inplace);

/* An in-place call, its arguments kept for the recorded write. */
typedef struct {
    const char *fname;
    TensorObject *self;
    PyObject *dimobj, *indexobj, *srcobj, *alpha;
    int index_add;
} inplace_call;

static PyObject *
run_inplace(void *arg)
{
    inplace_call *c = arg;
    return scatter_call(c->fname, c->self, c->dimobj, c->indexobj,
                        c->srcobj, c->alpha, c->index_add, 1);
}

/* The work of the four entries: into self (in place) or into a copy of
 * self (out of place), src scaled by alpha (NULL: 1) first. */
static PyObject *
scatter_call(const char *fname, TensorObject *self, PyObject *dimobj,
             PyObject *indexobj, PyObject *srcobj, PyObject *alpha,
             int index_add, int inplace)
{
    const char *arg = index_add ? "source" : "src";
    TensorObject *target = NULL, *src = NULL;
    int dim;
    if (pygpu_parse_dim(dimobj, self->ndim, &dim) < 0 ||
        check_index(fname, indexobj, self) < 0 ||
        check_src(fname, arg, srcobj, self) < 0) {
        return NULL;
    }
    TensorObject *in[2] = {self, (TensorObject *)srcobj};
    if (pygpu_ag_wanted(2, in)) {
        double a = alpha && alpha != Py_None ? PyFloat_AsDouble(alpha) : 1.0;
        if (a == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        if (inplace) {
            inplace_call c = {fname, self, dimobj, indexobj, srcobj, alpha,
                              index_add};
            return pygpu_ag_scatter_(self, dim, (TensorObject *)indexobj,
                                     (TensorObject *)srcobj, a, index_add,
                                     run_inplace, &c);
        }
        PyObject *res;
        PYGPU_UNRECORDED(res, scatter_call(fname, self, dimobj, indexobj,
                                           srcobj, alpha, index_add, 0));
        return pygpu_ag_scatter(self, dim, (TensorObject *)indexobj,
                                (TensorObject *)srcobj, a, index_add, res);
    }
    src = (TensorObject *)Py_NewRef(srcobj);
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
             : index_add ? pygpu_index_add_into(target, dim,
                                                (TensorObject *)indexobj, src)
                         : pygpu_scatter_add_into(target, dim,
                                                  (TensorObject *)indexobj,
                                                  src);
    Py_DECREF(src);
    if (rc < 0) {
        Py_XDECREF(target);
        return NULL;
    }
    return (PyObject *)target;
}

static const char *const fn_names[] = {"input", "dim", "index", "src",
                                       "alpha"};
static const char *const fn_names_ia[] = {"input", "dim", "index", "source",
                                          "alpha"};

/* fname(input, dim, index, src) / t.fname(dim, index, src); index_add
 * takes source and a keyword-only alpha. */
#define SCATTER_ENTRIES(fname, index_add, inplace)                           \
    static PyObject *fname##_fn(PyObject *self, PyObject *const *args,       \
                                Py_ssize_t nargs, PyObject *kwnames)         \
    {                                                                        \
        PyObject *a[5] = {NULL, NULL, NULL, NULL, NULL};                     \
        if (pygpu_parse_args(#fname, args, nargs, kwnames,                   \
                             index_add ? fn_names_ia : fn_names,             \
                             index_add ? 5 : 4, 4, 4, a) < 0 ||              \
            pygpu_tensor_arg(a[0], #fname, "input") < 0) {                   \
            return NULL;                                                     \
        }                                                                    \
        return scatter_call(#fname, (TensorObject *)a[0], a[1], a[2], a[3],  \
                            a[4], index_add, inplace);                       \
    }                                                                        \
    static PyObject *t_##fname(PyObject *op, PyObject *const *args,          \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        PyObject *a[4] = {NULL, NULL, NULL, NULL};                           \
        if (pygpu_parse_args(#fname, args, nargs, kwnames,                   \
                             (index_add ? fn_names_ia : fn_names) + 1,       \
                             index_add ? 4 : 3, 3, 3, a) < 0) {              \
            return NULL;                                                     \
        }                                                                    \
        return scatter_call(#fname, (TensorObject *)op, a[0], a[1], a[2],    \
                            a[3], index_add, inplace);                       \
    }

SCATTER_ENTRIES(scatter_add, 0, 0)
SCATTER_ENTRIES(scatter_add_, 0, 1)
SCATTER_ENTRIES(index_add, 1, 0)
SCATTER_ENTRIES(index_add_, 1, 1)

#define SCATTER_DOC                                                          \
    "self[index[i][j][k]][j][k] += src[i][j][k] for dim 0 (likewise for\n"  \
    "the others) over the positions of index, which has self's number of\n" \
    "dims and sizes no larger than src's (nor self's outside dim);\n"       \
    "repeated indices accumulate."
#define INDEX_ADD_DOC                                                        \
    "self[..., index[i], ...] += alpha * source[..., i, ...] along dim,\n"  \
    "index a 1-d int32/int64 tensor of source.size(dim) entries; repeated\n" \
    "indices accumulate."

static PyMethodDef scatter_functions[] = {
    {"scatter_add", FASTKW(scatter_add_fn),
     "scatter_add($module, input, dim, index, src)\n--\n\n"
     "A copy of input with src added at index: " SCATTER_DOC},
    {"index_add", FASTKW(index_add_fn),
     "index_add($module, input, dim, index, source, *, alpha=1)\n--\n\n"
     "A copy of input with: " INDEX_ADD_DOC},
    {NULL},
};

PyMethodDef pygpu_scatter_methods[] = {
    {"scatter_add", FASTKW(t_scatter_add),
     "scatter_add($self, dim, index, src)\n--\n\n"
     "Out-of-place scatter_add_: " SCATTER_DOC},
    {"scatter_add_", FASTKW(t_scatter_add_),
     "scatter_add_($self, dim, index, src)\n--\n\n"
     "In place: " SCATTER_DOC},
    {"index_add", FASTKW(t_index_add),
     "index_add($self, dim, index, source, *, alpha=1)\n--\n\n"
     "Out-of-place index_add_: " INDEX_ADD_DOC},
    {"index_add_", FASTKW(t_index_add_),
     "index_add_($self, dim, index, source, *, alpha=1)\n--\n\n"
     "In place: " INDEX_ADD_DOC},
    {NULL},
};

int
pygpu_scatter_register(PyObject *m)
{
    return PyModule_AddFunctions(m, scatter_functions);
}
