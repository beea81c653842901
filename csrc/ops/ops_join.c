/* ops_join.c - new tensors made of others by strided copies: cat (concat,
 * concatenate), stack, flip, repeat.
 *
 * Each is one allocation and copies through the COPY kind of the dispatch
 * table over an explicit geometry: cat and stack one copy per input (into
 * its slice of the output, converting to the promoted dtype as it goes),
 * flip and repeat one copy in all (flip reads with negative strides, which
 * only ever live inside the geometry: no view has them).
 */
#include "ops/ops.h"

#include <string.h>

int
pygpu_op_copy_geom(pygpu_device dev, int out_dtype, void *out, int in_dtype,
                   const void *in, const pygpu_geom *g, int64_t numel)
{
    pygpu_kargs k;
    if (numel == 0) {
        return 0;
    }
    k.in_dtypes[0] = in_dtype;
    k.out = out;
    k.in[0] = in;
    k.g = g;
    k.numel = numel;
    return pygpu_dispatch(PYGPU_K_COPY, dev, out_dtype, &k, "copy");
}

int
pygpu_geom_build(pygpu_geom *g, int ndim, const int64_t *shape, int nops,
                 const int64_t *const *st)
{
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) {
            continue;
        }
        if (n > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++) {
                merge &= g->stride[k][n - 1] == st[k][d] * shape[d];
            }
            if (merge) {
                g->shape[n - 1] *= shape[d];
                for (int k = 0; k < nops; k++) {
                    g->stride[k][n - 1] = st[k][d];
                }
                continue;
            }
        }
        if (n == PYGPU_MAX_DIMS) {
            return -1;
        }
        g->shape[n] = shape[d];
        for (int k = 0; k < 3; k++) {
            g->stride[k][n] = k < nops ? st[k][d] : 0;
        }
        n++;
    }
    g->ndim = n;
    return 0;
}

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
    *seq = PySequence_Fast(obj, "tensors");
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
        shape[dim] += t->shape[dim];
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
fail:
    Py_XDECREF(seq);
    return (PyObject *)res;
}

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
        shape[d] = reps[d] * s;
        if (reps[d] < 0) {
            shape[d] = reps[d] * (s > 0 ? s : 1);
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

PyObject *
pygpu_t_expand_as(PyObject *op, PyObject *other)
{
    if (pygpu_tensor_arg(other, "expand_as", "other") < 0) {
        return NULL;
    }
    TensorObject *o = (TensorObject *)other;
    PyObject *size = pygpu_size_new(o->ndim, o->shape);
    if (size == NULL) {
        return NULL;
    }
    PyObject *r = pygpu_t_expand(op, &size, 1);
    Py_DECREF(size);
    return r;
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
    {"flip", FASTKW(flip_fn),
     "flip($module, input, dims)\n--\n\n"
     "A copy of input with the order of elements reversed along dims."},
    {NULL},
};
