/* ops_join.c - new tensors made of others by strided copies: cat (concat,
 * concatenate) and stack; and the explicit geometries they (and flip,
 * repeat, eye) copy over.
 *
 * Each is one allocation and one copy per input through the COPY kind of
 * the dispatch table, into the input's slice of the output, converting to
 * the promoted dtype as it goes.
 */
#include "autograd/autograd.h"

#include <string.h>

/* Copy src into out's memory at byte offset `at`, walked with strides
 * out_st over src's shape. */
static int
copy_into(TensorObject *out, int64_t at, const int64_t *out_st,
          TensorObject *src)
{
    pygpu_geom g;
    const int64_t *st[2] = {out_st, src->strides};
    pygpu_geom_build(&g, src->ndim, src->shape, 2, st);
    return pygpu_op_copy_geom(out->device, out->dtype, out->data + at,
                              src->dtype, src->data, &g,
                              pygpu_numel(src->ndim, src->shape));
}

/* ------------------------------------------------------------ the inputs */

/* The tensors of cat/stack: borrowed items of *seq (to release), their
 * promoted dtype; all on one device.  -1 with torch's errors. */
static int
parse_tensor_list(const char *fname, PyObject *obj, PyObject **seq,
                  Py_ssize_t *n, int *dtype)
{
    *seq = NULL;
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'tensors' (position 1) must be tuple of "
                     "Tensors, not %.100s", fname, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *seq = pygpu_sequence_tuple(obj, "tensors");
    if (*seq == NULL) {
        return -1;
    }
    *n = PySequence_Fast_GET_SIZE(*seq);
    PyObject **items = PySequence_Fast_ITEMS(*seq);
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (!Tensor_Check(items[i])) {
            PyErr_Format(PyExc_TypeError,
                         "expected Tensor as element %zd in argument 0, but "
                         "got %.100s", i, Py_TYPE(items[i])->tp_name);
            goto fail;
        }
        TensorObject *t = (TensorObject *)items[i];
        if (i == 0) {
            *dtype = t->dtype;
            continue;
        }
        if (pygpu_check_same_device((TensorObject *)items[0], t) < 0) {
            goto fail;
        }
        *dtype = pygpu_promote(*dtype, t->dtype);
    }
    return 0;
fail:
    Py_CLEAR(*seq);
    return -1;
}

/* out= of cat/stack: a tensor of the result's shape on its device that
 * the result's dtype can be cast to, sharing no memory with an input. */
static int
check_out(const char *fname, TensorObject *out, int ndim,
          const int64_t *shape, int dtype, PyObject **items, Py_ssize_t n)
{
    char want[256], got[256];
    if (pygpu_check_same_device((TensorObject *)items[0], out) < 0) {
        return -1;
    }
    if (out->ndim != ndim ||
        memcmp(out->shape, shape, sizeof(int64_t) * (size_t)ndim) != 0) {
        pygpu_format_shape(want, sizeof(want), ndim, shape);
        pygpu_format_shape(got, sizeof(got), out->ndim, out->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): out has shape [%s] but the result has shape [%s] "
                     "(pygpu does not resize out)", fname, got, want);
        return -1;
    }
    if (pygpu_dtype_table[dtype].is_floating_point &&
        !pygpu_dtype_table[out->dtype].is_floating_point) {
        PyErr_Format(PyExc_TypeError,
                     "torch.%s(): input types can't be cast to the desired "
                     "output type %s", fname,
                     pygpu_dtype_table[out->dtype].name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pygpu_check_write(out, (TensorObject *)items[i], NULL) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The result: out (a new reference) after its checks, or a new tensor. */
static TensorObject *
make_result(const char *fname, PyObject *out, int ndim, const int64_t *shape,
            int dtype, PyObject **items, Py_ssize_t n)
{
    TensorObject *first = (TensorObject *)items[0];
    if (out == NULL || out == Py_None) {
        return pygpu_tensor_empty(ndim, shape, dtype, first->device);
    }
    if (pygpu_tensor_arg(out, fname, "out") < 0 ||
        check_out(fname, (TensorObject *)out, ndim, shape, dtype, items,
                  n) < 0) {
        return NULL;
    }
    return (TensorObject *)Py_NewRef(out);
}

/* ------------------------------------------------------------------ cat */

/* torch's legacy rule: a 1-d tensor with no elements joins anything. */
static int
skipped(const TensorObject *t)
{
    return t->ndim == 1 && t->shape[0] == 0;
}

static PyObject *
cat_impl(const char *fname, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"tensors", "dim", "out"};
    PyObject *a[3], *seq = NULL;
    TensorObject *res = NULL, *ref = NULL;
    Py_ssize_t n;
    int dtype, dim = 0;
    int64_t shape[PYGPU_MAX_DIMS] = {0};
    if (pygpu_parse_args(fname, args, nargs, kwnames, names, 3, 2, 1, a) <
            0 ||
        parse_tensor_list(fname, a[0], &seq, &n, &dtype) < 0) {
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int record = pygpu_ag_wanted((int)n, (TensorObject *const *)items);
    if (record && a[2] && a[2] != Py_None) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): functions with out=... arguments don't support "
                     "automatic differentiation, but one of the arguments "
                     "requires grad.", fname);
        Py_DECREF(seq);
        return NULL;
    }
    if (n == 0) {
        PyErr_Format(PyExc_ValueError,
                     "torch.%s(): expected a non-empty list of Tensors",
                     fname);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (t->ndim == 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "zero-dimensional tensor (at position %zd) cannot "
                         "be concatenated", i);
            goto fail;
        }
        if (ref == NULL && !skipped(t)) {
            ref = t;
        }
    }
    int ndim = ref ? ref->ndim : 1;
    if (a[1] != NULL && pygpu_parse_dim(a[1], ndim, &dim) < 0) {
        goto fail;
    }
    if (ref != NULL) {
        memcpy(shape, ref->shape, sizeof(int64_t) * (size_t)ndim);
        shape[dim] = 0;
    }
    for (Py_ssize_t i = 0; ref != NULL && i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (skipped(t)) {
            continue;
        }
        if (t->ndim != ndim) {
            PyErr_Format(PyExc_RuntimeError,
                         "Tensors must have same number of dimensions: got "
                         "%d and %d", ndim, t->ndim);
            goto fail;
        }
        for (int d = 0; d < ndim; d++) {
            if (d != dim && t->shape[d] != ref->shape[d]) {
                PyErr_Format(PyExc_RuntimeError,
                             "Sizes of tensors must match except in "
                             "dimension %d. Expected size %lld but got size "
                             "%lld for tensor number %zd in the list.", dim,
                             (long long)ref->shape[d],
                             (long long)t->shape[d], i);
                goto fail;
            }
        }
        if (__builtin_add_overflow(shape[dim], t->shape[dim], &shape[dim])) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s(): the result's size along dim %d overflows "
                         "int64 (at tensor number %zd in the list)", fname,
                         dim, i);
            goto fail;
        }
    }
    res = make_result(fname, a[2], ndim, shape, dtype, items, n);
    if (res == NULL) {
        goto fail;
    }
    int64_t at = 0, step = res->strides[dim] *
                           (int64_t)pygpu_dtype_table[res->dtype].itemsize;
    for (Py_ssize_t i = 0; ref != NULL && i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (skipped(t)) {
            continue;
        }
        if (copy_into(res, at, res->strides, t) < 0) {
            Py_CLEAR(res);
            goto fail;
        }
        at += t->shape[dim] * step;
    }
    if (record && res != NULL) {
        res = (TensorObject *)pygpu_ag_cat(items, (int)n, dim, 0,
                                           (PyObject *)res);
    }
fail:
    Py_XDECREF(seq);
    return (PyObject *)res;
}

#define CAT_FN(name)                                                         \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return cat_impl(#name, args, nargs, kwnames);                        \
    }

CAT_FN(cat)
CAT_FN(concat)
CAT_FN(concatenate)

/* ---------------------------------------------------------------- stack */

static PyObject *
stack_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"tensors", "dim", "out"};
    PyObject *a[3], *seq = NULL;
    TensorObject *res = NULL;
    Py_ssize_t n;
    int dtype, dim = 0;
    int64_t shape[PYGPU_MAX_DIMS], st[PYGPU_MAX_DIMS];
    char s0[256], si[256];
    if (pygpu_parse_args("stack", args, nargs, kwnames, names, 3, 2, 1, a) <
            0 ||
        parse_tensor_list("stack", a[0], &seq, &n, &dtype) < 0) {
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int record = pygpu_ag_wanted((int)n, (TensorObject *const *)items);
    if (record && a[2] && a[2] != Py_None) {
        PyErr_SetString(PyExc_RuntimeError,
                        "stack(): functions with out=... arguments don't "
                        "support automatic differentiation, but one of the "
                        "arguments requires grad.");
        goto fail;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "stack expects a non-empty TensorList");
        goto fail;
    }
    TensorObject *first = (TensorObject *)items[0];
    int ndim = first->ndim;
    if (ndim + 1 > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %d",
                     PYGPU_MAX_DIMS, ndim + 1);
        goto fail;
    }
    if (a[1] != NULL && pygpu_parse_dim(a[1], ndim + 1, &dim) < 0) {
        goto fail;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        TensorObject *t = (TensorObject *)items[i];
        if (t->ndim != ndim ||
            memcmp(t->shape, first->shape, sizeof(int64_t) * (size_t)ndim)) {
            pygpu_format_shape(s0, sizeof(s0), ndim, first->shape);
            pygpu_format_shape(si, sizeof(si), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "stack expects each tensor to be equal size, but "
                         "got [%s] at entry 0 and [%s] at entry %zd", s0, si,
                         i);
            goto fail;
        }
    }
    for (int d = 0, s = 0; d <= ndim; d++) {
        shape[d] = d == dim ? (int64_t)n : first->shape[s++];
    }
    res = make_result("stack", a[2], ndim + 1, shape, dtype, items, n);
    if (res == NULL) {
        goto fail;
    }
    /* input i goes to res[..., i, ...]: res's strides without dim */
    for (int d = 0, s = 0; d <= ndim; d++) {
        if (d != dim) {
            st[s++] = res->strides[d];
        }
    }
    int64_t step = res->strides[dim] *
                   (int64_t)pygpu_dtype_table[res->dtype].itemsize;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (copy_into(res, (int64_t)i * step, st,
                      (TensorObject *)items[i]) < 0) {
            Py_CLEAR(res);
            goto fail;
        }
    }
    if (record) {
        res = (TensorObject *)pygpu_ag_cat(items, (int)n, dim, 1,
                                           (PyObject *)res);
    }
fail:
    Py_XDECREF(seq);
    return (PyObject *)res;
}

PyMethodDef pygpu_join_functions[] = {
    {"cat", FASTKW(cat_fn),
     "cat($module, tensors, dim=0, *, out=None)\n--\n\n"
     "The tensors joined along dim (promoted to a common dtype, on one\n"
     "device; 1-d tensors with no elements are skipped, as in torch)."},
    {"concat", FASTKW(concat_fn),
     "concat($module, tensors, dim=0, *, out=None)\n--\n\n"
     "An alias of cat."},
    {"concatenate", FASTKW(concatenate_fn),
     "concatenate($module, tensors, dim=0, *, out=None)\n--\n\n"
     "An alias of cat."},
    {"stack", FASTKW(stack_fn),
     "stack($module, tensors, dim=0, *, out=None)\n--\n\n"
     "The tensors (all of one shape) joined along a new dim."},
    {NULL},
};
