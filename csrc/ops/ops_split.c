/* ops_split.c - views of parts of a tensor along a dim: split, chunk,
 * unbind and narrow, with torch's rules and words.  Nothing is copied.
 *
 * Each call is first checked into a plan (pygpu_pieces: the dim, how many
 * pieces, where they start and how long they are), then the plan's views
 * are made, unrecorded: autograd_layout.c's pygpu_ag_pieces records them,
 * and the Python-facing functions are in tensor/tensor_split.c.
 */
#include "ops/ops.h"

#include <string.h>

/* A view of t narrowed to [start, start + len) along dim, or (select)
 * the index start along dim, the dim dropped. */
static PyObject *
piece(TensorObject *t, int dim, int64_t start, int64_t len, int select)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (select && d == dim) {
            continue;
        }
        shape[nd] = d == dim ? len : t->shape[d];
        strides[nd++] = t->strides[d];
    }
    return (PyObject *)pygpu_tensor_view(t, nd, shape, strides,
                                         start * t->strides[dim]);
}

/* p->n views along p->dim from p->start: of p->sizes[i] or, with sizes
 * NULL, of p->step each (the last takes what is left, never less than 0);
 * select: the indices start, start + 1, ... */
PyObject *
pygpu_op_pieces(TensorObject *t, const pygpu_pieces *p)
{
    PyObject *r = PyTuple_New(p->n);
    int64_t at = p->start;
    if (r == NULL && PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Format(PyExc_RuntimeError,
                     "cannot make %zd views: out of memory", p->n);
        return NULL;
    }
    for (Py_ssize_t i = 0; r != NULL && i < p->n; i++) {
        int64_t left = t->shape[p->dim] - at;
        int64_t len = p->select  ? 1
                      : p->sizes ? p->sizes[i]
                                 : (p->step < left ? p->step : left);
        PyObject *v = piece(t, p->dim, at, len > 0 ? len : 0, p->select);
        if (v == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
        at += len;
    }
    return r;
}

void
pygpu_pieces_clear(pygpu_pieces *p)
{
    PyMem_Free(p->sizes);
    p->sizes = NULL;
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

/* split_with_sizes: the sizes of a sequence, summing to the dim's size,
 * into p->sizes. */
static int
split_sizes(TensorObject *t, PyObject *seq_obj, pygpu_pieces *p)
{
    PyObject *seq = pygpu_sequence_tuple(seq_obj, "split sizes");
    int64_t sum = 0;
    int negative = 0, overflow = 0, rc = -1;
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    size_t nbytes = sizeof(int64_t) * (size_t)(n > 0 ? n : 1);
    p->sizes = PyMem_Malloc(nbytes);
    if (p->sizes == NULL) {
        pygpu_raise_no_memory("the split sizes", nbytes);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (int_arg(PySequence_Fast_GET_ITEM(seq, i), "split",
                    "split_size_or_sections", &p->sizes[i]) < 0) {
            goto fail;
        }
        negative |= p->sizes[i] < 0;
        overflow |= __builtin_add_overflow(sum, p->sizes[i], &sum);
    }
    if (negative) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_with_sizes expects split_sizes have only "
                     "non-negative entries, but got split_sizes=%R", seq_obj);
        goto fail;
    }
    if (overflow || sum != t->shape[p->dim]) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_with_sizes expects split_sizes to sum exactly to "
                     "%lld (input tensor's size at dimension %d), but got "
                     "split_sizes=%R", (long long)t->shape[p->dim], p->dim,
                     seq_obj);
        goto fail;
    }
    p->n = n;
    rc = 0;
fail:
    if (rc < 0) {
        pygpu_pieces_clear(p);
    }
    Py_DECREF(seq);
    return rc;
}

/* a: split_size_or_sections, dim */
static int
split_plan(TensorObject *t, PyObject **a, pygpu_pieces *p)
{
    int64_t step;
    if (need_dims(t, "split") < 0 ||
        (a[1] != NULL && pygpu_parse_dim(a[1], t->ndim, &p->dim) < 0)) {
        return -1;
    }
    if (PyList_Check(a[0]) || PyTuple_Check(a[0])) {
        return split_sizes(t, a[0], p);
    }
    if (int_arg(a[0], "split", "split_size", &step) < 0) {
        return -1;
    }
    int64_t size = t->shape[p->dim];
    if (step < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "split expects split_size be non-negative, but got "
                     "split_size=%lld", (long long)step);
        return -1;
    }
    if (step == 0 && size != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "split_size can only be 0 if dimension size is 0, but "
                     "got dimension size of %lld", (long long)size);
        return -1;
    }
    /* ceil(size / step), which size + step - 1 could overflow */
    int64_t n = step == 0 ? 1 : size / step + (size % step != 0);
    p->n = (Py_ssize_t)(n > 0 ? n : 1);
    p->step = step;
    return 0;
}

/* a: chunks, dim.  Pieces of ceil(size / chunks); fewer when they run
 * out, as torch. */
static int
chunk_plan(TensorObject *t, PyObject **a, pygpu_pieces *p)
{
    int64_t chunks;
    if (need_dims(t, "chunk") < 0 ||
        int_arg(a[0], "chunk", "chunks", &chunks) < 0 ||
        (a[1] != NULL && pygpu_parse_dim(a[1], t->ndim, &p->dim) < 0)) {
        return -1;
    }
    if (chunks <= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "chunk expects `chunks` to be greater than 0, got: %lld",
                     (long long)chunks);
        return -1;
    }
    int64_t size = t->shape[p->dim];
    /* ceil(size / chunks), which size + chunks - 1 could overflow */
    p->step = size / chunks + (size % chunks != 0);
    /* an empty dim: `chunks` empty pieces */
    p->n = p->step == 0 ? (Py_ssize_t)chunks
                        : (Py_ssize_t)(size / p->step +
                                       (size % p->step != 0));
    return 0;
}

/* a: dim.  The views t.select(dim, i). */
static int
unbind_plan(TensorObject *t, PyObject **a, pygpu_pieces *p)
{
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_IndexError,
                        "Dimension specified as 0 but tensor has no "
                        "dimensions");
        return -1;
    }
    if (a[0] != NULL && pygpu_parse_dim(a[0], t->ndim, &p->dim) < 0) {
        return -1;
    }
    p->select = 1;
    p->n = (Py_ssize_t)t->shape[p->dim];
    return 0;
}

/* a: dim, start, length.  One piece. */
static int
narrow_plan(TensorObject *t, PyObject **a, pygpu_pieces *p)
{
    int64_t start, length;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "narrow() cannot be applied to a 0-dim tensor.");
        return -1;
    }
    if (pygpu_parse_dim(a[0], t->ndim, &p->dim) < 0 ||
        int_arg(a[1], "narrow", "start", &start) < 0 ||
        int_arg(a[2], "narrow", "length", &length) < 0) {
        return -1;
    }
    if (length < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "narrow(): length must be non-negative.");
        return -1;
    }
    int64_t size = t->shape[p->dim];
    if (start < -size || start > size) {
        PyErr_Format(PyExc_IndexError,
                     "start out of range (expected to be in range of "
                     "[%lld, %lld], but got %lld)", (long long)-size,
                     (long long)size, (long long)start);
        return -1;
    }
    if (start < 0) {
        start += size;
    }
    if (length > size - start) { /* start + length could overflow */
        PyErr_Format(PyExc_RuntimeError,
                     "start (%lld) + length (%lld) exceeds dimension size "
                     "(%lld).", (long long)start, (long long)length,
                     (long long)size);
        return -1;
    }
    p->n = 1;
    p->start = start;
    p->step = length;
    return 0;
}

int
pygpu_pieces_plan(int op, TensorObject *t, PyObject **a, pygpu_pieces *p)
{
    memset(p, 0, sizeof(*p));
    switch (op) {
    case PYGPU_SPLIT:
        return split_plan(t, a, p);
    case PYGPU_CHUNK:
        return chunk_plan(t, a, p);
    case PYGPU_UNBIND:
        return unbind_plan(t, a, p);
    default:
        return narrow_plan(t, a, p);
    }
}
