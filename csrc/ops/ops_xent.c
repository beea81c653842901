/* ops_xent.c - cross-entropy over class indices as one op: the front end
 * of the XENT kind.  torch's checks in torch's words; the logits seen as
 * [outer, n, inner] with the classes along n (dim 1 of an (N, C, d1, ...)
 * input stays in place: no permuted copy); one forward launch that writes
 * each sample's loss, w[t] and log-sum-exp (as m and ls, kernels.h) into
 * a buffer of the accumulator's dtype ("stats"); then the reduction: one
 * SUM launch over the losses and the weights together, and for the mean
 * their quotient.
 * The buffer is what the backward rule reads (autograd_xent.c). */
#include "ops/ops.h"
#include "ops/reduce.h"
#include "ops/xent.h"

#include <string.h>

void *
pygpu_xent_stat(TensorObject *stats, int64_t i)
{
    return (char *)stats->data +
           i * (int64_t)pygpu_dtype_table[stats->dtype].itemsize;
}

void
pygpu_xent_args_for(pygpu_xent_args *a, TensorObject *x, TensorObject *target,
                    TensorObject *weight, TensorObject *stats,
                    int64_t ignore_index, double smoothing)
{
    memset(a, 0, sizeof(*a));
    /* classes along dim 1 ([N, C, d1, ...]), or dim 0 of one sample */
    pygpu_dim_split(x->ndim, x->shape, x->ndim == 1 ? 0 : 1, &a->outer,
                    &a->n, &a->inner);
    a->x = x->data;
    a->target = (const int64_t *)target->data;
    a->weight = weight ? weight->data : NULL;
    a->ignore_index = ignore_index;
    a->smoothing = smoothing;
    a->stats = stats->data;
    a->wsum = pygpu_xent_stat(stats,
                              PYGPU_XENT_ROWS * a->outer * a->inner + 2);
}

/* ------------------------------------------------------------- checks */

/* The target's shape against x's, as torch checks it. */
static int
check_target_shape(const TensorObject *x, const TensorObject *t)
{
    char want[256], got[256];
    if (x->ndim >= 2) {
        int64_t tb = t->ndim == 0 ? 0 : t->shape[0];
        if (tb != x->shape[0]) {
            PyErr_Format(PyExc_ValueError,
                         "Expected input batch_size (%lld) to match target "
                         "batch_size (%lld).", (long long)x->shape[0],
                         (long long)tb);
            return -1;
        }
    }
    if (x->ndim <= 2 && t->ndim > 1) {
        PyErr_SetString(PyExc_RuntimeError, "0D or 1D target tensor "
                        "expected, multi-target not supported");
        return -1;
    }
    if (x->ndim == 1) {
        if (t->ndim == 1 && t->shape[0] != 1) {
            PyErr_Format(PyExc_ValueError,
                         "For 1D input, 1D target must have size 1, but got "
                         "target size: %lld", (long long)t->shape[0]);
            return -1;
        }
        return 0;
    }
    int ok = t->ndim == x->ndim - 1;
    for (int d = 0; ok && d < t->ndim; d++) {
        ok = t->shape[d] == x->shape[d == 0 ? 0 : d + 1];
    }
    if (!ok) {
        int64_t shape[PYGPU_MAX_DIMS];
        for (int d = 0; d < x->ndim - 1; d++) {
            shape[d] = x->shape[d == 0 ? 0 : d + 1];
        }
        pygpu_format_shape(want, sizeof(want), x->ndim - 1, shape);
        pygpu_format_shape(got, sizeof(got), t->ndim, t->shape);
        PyErr_Format(PyExc_RuntimeError, "Expected target size [%s], got "
                     "[%s]", want, got);
        return -1;
    }
    return 0;
}

int
pygpu_xent_check_args(TensorObject *x, TensorObject *t, TensorObject *w,
           double smoothing, PyObject *smoothing_obj)
{
    if (!(smoothing >= 0.0 && smoothing <= 1.0)) {
        PyErr_Format(PyExc_ValueError, "label_smoothing must be between 0.0 "
                     "and 1.0. Got: %R", smoothing_obj);
        return -1;
    }
    if (x->ndim == 0) { /* torch takes a target of x's shape as classes */
        PyErr_Format(PyExc_RuntimeError, "Expected floating point type for "
                     "target with class probabilities, got %s",
                     pygpu_dtype_torch_name(t->dtype));
        return -1;
    }
    if (!pygpu_dtype_table[x->dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"log_softmax\" not implemented for '%s'",
                     pygpu_dtype_table[x->dtype].scalar_name);
        return -1;
    }
    if (pygpu_dtype_category(t->dtype) != PYGPU_CAT_INT) {
        PyErr_Format(PyExc_RuntimeError, "expected target dtype to be Long "
                     "or Byte, but got %s", pygpu_dtype_torch_name(t->dtype));
        return -1;
    }
    if (pygpu_check_same_device(x, t) < 0 ||
        (w != NULL && pygpu_check_same_device(x, w) < 0) ||
        check_target_shape(x, t) < 0) {
        return -1;
    }
    int64_t n = x->ndim == 1 ? x->shape[0] : x->shape[1];
    if (w != NULL && (w->ndim != 1 || w->shape[0] != n)) {
        char got[256];
        pygpu_format_shape(got, sizeof(got), w->ndim, w->shape);
        PyErr_Format(PyExc_RuntimeError, "weight tensor should be defined "
                     "either for all %lld classes or no classes but got "
                     "weight tensor of shape: [%s]", (long long)n, got);
        return -1;
    }
    if (w != NULL && pygpu_grad_enabled() && pygpu_requires_grad(w)) {
        PyErr_SetString(PyExc_RuntimeError, "The function 'nll_loss_forward' "
                        "is not differentiable with respect to argument "
                        "'weight'. This input cannot have requires_grad "
                        "True.");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ forward */

/* The reduced result from the stats of S samples: the losses in the
 * target's shape ('none'; 0-d for a 1-d x), or their sum over the SUM launch, divided by
 * the sum of w[t] for the mean; in x's dtype. */
static PyObject *
reduce_losses(TensorObject *x, TensorObject *target, TensorObject *stats,
              int64_t S, int reduction)
{
    TensorObject *out = NULL, *v0 = NULL, *v1 = NULL, *q = NULL;
    int64_t strides[PYGPU_MAX_DIMS];
    if (reduction == PYGPU_XENT_NONE) { /* a 1-d x: 0-d, as torch */
        int nd = x->ndim == 1 ? 0 : target->ndim;
        pygpu_contiguous_strides(nd, target->shape, strides);
        q = pygpu_tensor_view(stats, nd, target->shape, strides, 0);
    }
    else {
        int64_t at = PYGPU_XENT_ROWS * S;
        pygpu_kargs k = {.op = PYGPU_SUM, .out = pygpu_xent_stat(stats, at),
                         .in = {stats->data}, .outer = 2, .n = S,
                         .inner = 1, .numel = 2 * S};
        if (pygpu_dispatch(PYGPU_K_REDUCE, stats->device, stats->dtype, &k,
                           "cross_entropy") < 0) {
            return NULL;
        }
        v0 = pygpu_tensor_view(stats, 0, strides, strides, at);
        v1 = v0 ? pygpu_tensor_view(stats, 0, strides, strides, at + 1)
                : NULL;
        if (v1 != NULL && reduction == PYGPU_XENT_MEAN) {
            q = (TensorObject *)pygpu_op_binary(PYGPU_DIV, (PyObject *)v0,
                                                (PyObject *)v1, NULL);
        }
        else if (v1 != NULL) {
            q = (TensorObject *)Py_NewRef(v0);
        }
    }
    if (q != NULL && reduction == PYGPU_XENT_MEAN && q->dtype == x->dtype) {
        out = (TensorObject *)Py_NewRef(q);
    }
    else if (q != NULL) {
        out = pygpu_tensor_empty(q->ndim, q->shape, x->dtype, x->device);
        if (out != NULL && pygpu_op_copy_same_device(out, q) < 0) {
            Py_CLEAR(out);
        }
    }
    Py_XDECREF(v0);
    Py_XDECREF(v1);
    Py_XDECREF(q);
    return (PyObject *)out;
}

PyObject *
pygpu_op_cross_entropy(TensorObject *input, TensorObject *target,
                       TensorObject *weight, int64_t ignore_index,
                       int reduction, double smoothing,
                       pygpu_xent_saved *saved)
{
    TensorObject *x = NULL, *t = NULL, *w = NULL, *stats = NULL;
    PyObject *res = NULL;
    pygpu_xent_args a;
    x = pygpu_tensor_contiguous(input);
    t = x ? pygpu_as_dtype(target, PYGPU_INT64) : NULL;
    Py_XSETREF(t, t ? pygpu_tensor_contiguous(t) : NULL);
    if (t != NULL && weight != NULL) {
        w = pygpu_as_dtype(weight, x->dtype);
        Py_XSETREF(w, w ? pygpu_tensor_contiguous(w) : NULL);
    }
    if (t == NULL || (weight != NULL && w == NULL)) {
        goto fail;
    }
    int64_t S = pygpu_numel(t->ndim, t->shape);
    int64_t size = PYGPU_XENT_ROWS * S + 3;
    stats = pygpu_tensor_empty(1, &size, pygpu_reduce_acc_dtype(x->dtype),
                               x->device);
    if (stats == NULL) {
        goto fail;
    }
    pygpu_xent_args_for(&a, x, t, w, stats, ignore_index, smoothing);
    pygpu_kargs k = {.op = PYGPU_XENT_FORWARD, .xent = &a,
                     .numel = S * a.n};
    if (pygpu_dispatch(PYGPU_K_XENT, x->device, x->dtype, &k,
                       "cross_entropy") < 0) {
        goto fail;
    }
    if (k.ix.failed) {
        PyErr_Format(PyExc_IndexError, "Target %lld is out of bounds.",
                     (long long)k.ix.bad);
        goto fail;
    }
    res = reduce_losses(x, t, stats, S, reduction);
    if (res != NULL && saved != NULL) { /* handed over */
        *saved = (pygpu_xent_saved){x, t, w, stats};
        return res;
    }
fail:
    Py_XDECREF(x);
    Py_XDECREF(t);
    Py_XDECREF(w);
    Py_XDECREF(stats);
    return res;
}
