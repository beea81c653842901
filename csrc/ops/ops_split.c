/* ops_split.c - views of parts of a tensor along a dim: split, chunk,
 * unbind and narrow, as module functions and Tensor methods, with torch's
 * rules and words; and expand_as.  Nothing is copied. */
#include "autograd/autograd.h"

#include <string.h>

/* A view of t narrowed to [start, start + len) along dim. */
static PyObject *
narrowed(TensorObject *t, int dim, int64_t start, int64_t len)
{
    int64_t shape[PYGPU_MAX_DIMS];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    shape[dim] = len;
    return pygpu_ag_view_along(
        t, dim, start, start + len, 0,
        (PyObject *)pygpu_tensor_view(t, t->ndim, shape, t->strides,
                                      start * t->strides[dim]));
}

/* n views along dim, of sizes[i] or, with sizes NULL, of step each (the
 * last takes what is left, never less than 0). */
static PyObject *
pieces(TensorObject *t, int dim, Py_ssize_t n, int64_t step,
       const int64_t *sizes)
{
    PyObject *r = PyTuple_New(n);
    int64_t at = 0;
    if (r == NULL && PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Format(PyExc_RuntimeError,
                     "cannot make %zd views: out of memory", n);
        return NULL;
    }
    for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
        int64_t left = t->shape[dim] - at;
        int64_t len = sizes ? sizes[i] : (step < left ? step : left);
        PyObject *v = narrowed(t, dim, at, len > 0 ? len : 0);
        if (v == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
        at += len;
    }
    return r;
}

static int
need_dims(const TensorObject *t, const char *what)
{
    if (t->ndim == 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s expects at least a 1-dimensional tensor", what);
        return -1;
    }
    return 0;
}

/* An int argument of torch's; TypeError naming it otherwise. */
static int
int_arg(PyObject *obj, const char *fname, const char *arg, int64_t *out)
{
    int ok = pygpu_parse_size_item(obj, out);
    if (ok == 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' must be int, not %.100s", fname,
                     arg, Py_TYPE(obj)->tp_name);
    }
    return ok == 1 ? 0 : -1;
}

/* split_with_sizes: the sizes of a sequence, summing to the dim's size. */
static PyObject *
split_sizes(TensorObject *t, int dim, PyObject *seq_obj)
{
    PyObject *seq = pygpu_sequence_tuple(seq_obj, "split sizes"), *r = NULL;
    int64_t *sizes = NULL, sum = 0;
    int negative = 0, overflow = 0;
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    size_t nbytes = sizeof(int64_t) * (size_t)(n > 0 ? n : 1);
    sizes = PyMem_Malloc(nbytes);
    if (sizes == NULL) {
        pygpu_raise_no_memory("the split sizes", nbytes);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (int_arg(PySequence_Fast_GET_ITEM(seq, i), "split",
                    "split_size_or_sections", &sizes[i]) < 0) {
            goto fail;
        }
        negative |= sizes[i] < 0;
        overflow |= __builtin_add_overflow(sum, sizes[i], &sum);
    }
    if (negative) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_with_sizes expects split_sizes have only "
                     "non-negative entries, but got split_sizes=%R", seq_obj);
        goto fail;
    }
    if (overflow || sum != t->shape[dim]) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_with_sizes expects split_sizes to sum exactly to "
                     "%lld (input tensor's size at dimension %d), but got "
                     "split_sizes=%R", (long long)t->shape[dim], dim, seq_obj);
        goto fail;
    }
    r = pieces(t, dim, n, 0, sizes);
fail:
    PyMem_Free(sizes);
    Py_DECREF(seq);
    return r;
}

/* a: split_size_or_sections, dim */
static PyObject *
split_impl(TensorObject *t, PyObject **a)
{
    int dim = 0;
    int64_t step;
    if (need_dims(t, "split") < 0 ||
        (a[1] != NULL && pygpu_parse_dim(a[1], t->ndim, &dim) < 0)) {
        return NULL;
    }
    if (PyList_Check(a[0]) || PyTuple_Check(a[0])) {
        return split_sizes(t, dim, a[0]);
    }
    if (int_arg(a[0], "split", "split_size", &step) < 0) {
        return NULL;
    }
    int64_t size = t->shape[dim];
    if (step < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "split expects split_size be non-negative, but got "
                     "split_size=%lld", (long long)step);
        return NULL;
    }
    if (step == 0 && size != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_size can only be 0 if dimension size is 0, but "
                     "got dimension size of %lld", (long long)size);
        return NULL;
    }
    /* ceil(size / step), which size + step - 1 could overflow */
    int64_t n = step == 0 ? 1 : size / step + (size % step != 0);
    return pieces(t, dim, (Py_ssize_t)(n > 0 ? n : 1), step, NULL);
}

/* a: chunks, dim.  Pieces of ceil(size / chunks); fewer when they run
 * out, as torch. */
static PyObject *
chunk_impl(TensorObject *t, PyObject **a)
{
    int dim = 0;
    int64_t chunks;
    if (need_dims(t, "chunk") < 0 ||
        int_arg(a[0], "chunk", "chunks", &chunks) < 0 ||
        (a[1] != NULL && pygpu_parse_dim(a[1], t->ndim, &dim) < 0)) {
        return NULL;
    }
    if (chunks <= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "chunk expects `chunks` to be greater than 0, got: %lld",
                     (long long)chunks);
        return NULL;
    }
    int64_t size = t->shape[dim];
    /* ceil(size / chunks), which size + chunks - 1 could overflow */
    int64_t step = size / chunks + (size % chunks != 0);
    if (step == 0) { /* an empty dim: `chunks` empty pieces */
        return pieces(t, dim, (Py_ssize_t)chunks, 0, NULL);
    }
    return pieces(t, dim, (Py_ssize_t)(size / step + (size % step != 0)),
                  step, NULL);
}

/* a: dim.  The views t.select(dim, i). */
static PyObject *
unbind_impl(TensorObject *t, PyObject **a)
{
    int dim = 0;
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_IndexError,
                        "Dimension specified as 0 but tensor has no "
                        "dimensions");
        return NULL;
    }
    if (a[0] != NULL && pygpu_parse_dim(a[0], t->ndim, &dim) < 0) {
        return NULL;
    }
    for (int d = 0, k = 0; d < t->ndim; d++) {
        if (d != dim) {
            shape[k] = t->shape[d];
            strides[k++] = t->strides[d];
        }
    }
    Py_ssize_t n = (Py_ssize_t)t->shape[dim];
    PyObject *r = PyTuple_New(n);
    for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
        PyObject *v = pygpu_ag_view_along(
            t, dim, (int64_t)i, 0, 1,
            (PyObject *)pygpu_tensor_view(t, t->ndim - 1, shape, strides,
                                          (int64_t)i * t->strides[dim]));
        if (v == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
    }
    return r;
}

/* a: dim, start, length */
static PyObject *
narrow_impl(TensorObject *t, PyObject **a)
{
    int dim;
    int64_t start, length;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "narrow() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (pygpu_parse_dim(a[0], t->ndim, &dim) < 0 ||
        int_arg(a[1], "narrow", "start", &start) < 0 ||
        int_arg(a[2], "narrow", "length", &length) < 0) {
        return NULL;
    }
    if (length < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "narrow(): length must be non-negative.");
        return NULL;
    }
    int64_t size = t->shape[dim];
    if (start < -size || start > size) {
        PyErr_Format(PyExc_IndexError,
                     "start out of range (expected to be in range of "
                     "[%lld, %lld], but got %lld)", (long long)-size,
                     (long long)size, (long long)start);
        return NULL;
    }
    if (start < 0) {
        start += size;
    }
    if (length > size - start) { /* start + length could overflow */
        PyErr_Format(PyExc_RuntimeError,
                     "start (%lld) + length (%lld) exceeds dimension size "
                     "(%lld).", (long long)start, (long long)length,
                     (long long)size);
        return NULL;
    }
    return narrowed(t, dim, start, length);
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

/* fname's names after "input", the first `required` of them required;
 * all may come positionally. */
#define SPLIT_OP(fname, required, ...)                                       \
    static const char *const fname##_names[] = {"input", __VA_ARGS__};      \
    PYGPU_FUNCTION_AND_METHOD(fname, fname##_n - 1, required)

SPLIT_OP(split, 1, "split_size_or_sections", "dim")
SPLIT_OP(chunk, 1, "chunks", "dim")
SPLIT_OP(unbind, 0, "dim")
SPLIT_OP(narrow, 3, "dim", "start", "length")

PyMethodDef pygpu_split_functions[] = {
    {"split", FASTKW(split_fn),
     "split($module, input, split_size_or_sections, dim=0)\n--\n\n"
     "Views of input along dim: pieces of split_size_or_sections (an int;\n"
     "the last piece may be smaller) or of the sizes it lists."},
    {"chunk", FASTKW(chunk_fn),
     "chunk($module, input, chunks, dim=0)\n--\n\n"
     "At most `chunks` views of input along dim, of ceil(size / chunks)\n"
     "each (the last may be smaller)."},
    {"unbind", FASTKW(unbind_fn),
     "unbind($module, input, dim=0)\n--\n\n"
     "The views input.select(dim, i) for every i, as a tuple."},
    {"narrow", FASTKW(narrow_fn),
     "narrow($module, input, dim, start, length)\n--\n\n"
     "The view of input's elements start .. start + length - 1 along dim\n"
     "(a negative start counts from the end)."},
    {NULL},
};
