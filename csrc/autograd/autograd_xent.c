/* autograd_xent.c - the backward rule of cross-entropy over class indices
 * (ops_xent.c): one launch of the XENT kind's BACKWARD, which reads the
 * logits, the targets, the weights and the forward's m and ls and writes
 * the logits' whole gradient, the incoming one (per sample for 'none',
 * else one value, over the sum of w[t] for the mean) applied.
 *
 * The Node is named as torch names cross_entropy's result without label
 * smoothing (NllLossBackward0; NllLoss2DBackward0 for inputs of 3 or more
 * dims); its one edge goes to the logits' history, where torch's goes
 * through LogSoftmaxBackward0 first.  The weights get no gradient (torch
 * refuses weights that require grad).  Saved: the logits as the kernel
 * read them (slot 0), the int64 targets (1), the stats buffer (2) and the
 * weights in the logits' dtype (3, when given); op: the reduction;
 * scalar: the label smoothing; key: ignore_index as a Python int. */
#include "autograd/autograd.h"
#include "ops/xent.h"

static int
xent_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *t = pygpu_ag_saved(n, 1);
    TensorObject *stats = pygpu_ag_saved(n, 2), *w = NULL, *gc = NULL;
    TensorObject *gx = NULL;
    pygpu_xent_args a;
    if (x == NULL || t == NULL || stats == NULL) {
        return -1;
    }
    if (n->saved[3] != NULL && (w = pygpu_ag_saved(n, 3)) == NULL) {
        return -1;
    }
    int64_t ignore = PyLong_AsLongLong(n->key);
    if (ignore == -1 && PyErr_Occurred()) {
        return -1;
    }
    gc = pygpu_ag_as_dtype(g, x->dtype);
    Py_XSETREF(gc, gc ? pygpu_tensor_contiguous(gc) : NULL);
    gx = gc ? pygpu_tensor_empty(x->ndim, x->shape, x->dtype, x->device)
            : NULL;
    if (gx == NULL) {
        goto fail;
    }
    pygpu_xent_args_for(&a, x, t, w, stats, ignore, n->scalar);
    int64_t S = a.outer * a.inner;
    a.grad_x = gx->data;
    a.grad = gc->data;
    a.grad_stride = n->op == PYGPU_XENT_NONE ? 1 : 0;
    a.denom = n->op == PYGPU_XENT_MEAN
                  ? pygpu_xent_stat(stats, PYGPU_XENT_ROWS * S + 1)
                  : NULL;
    pygpu_kargs k = {.op = PYGPU_XENT_BACKWARD, .xent = &a,
                     .numel = S * a.n};
    if (pygpu_dispatch(PYGPU_K_XENT, x->device, x->dtype, &k,
                       "cross_entropy_backward") < 0) {
        Py_CLEAR(gx);
    }
fail:
    Py_XDECREF(gc);
    grads[0] = gx;
    return gx == NULL ? -1 : 0;
}

/* res (the loss of input) with its Node: the rule reads x, the target,
 * the stats and the weight.  Steals res. */
static PyObject *
record(PyObject *res, TensorObject *input, TensorObject *x,
       TensorObject *target, TensorObject *weight, TensorObject *stats,
       int64_t ignore_index, int reduction, double smoothing)
{
    pygpu_node *n = pygpu_ag_node(input->ndim >= 3 ? "NllLoss2DBackward0"
                                                   : "NllLossBackward0",
                                  xent_backward, 1, &input);
    if (n == NULL) {
        return pygpu_ag_finish(res, NULL);
    }
    n->op = reduction;
    n->scalar = smoothing;
    n->key = PyLong_FromLongLong(ignore_index);
    if (n->key == NULL || pygpu_ag_save(n, 0, x) < 0 ||
        pygpu_ag_save(n, 1, target) < 0 || pygpu_ag_save(n, 2, stats) < 0 ||
        (weight != NULL && pygpu_ag_save(n, 3, weight) < 0)) {
        Py_CLEAR(n);
    }
    return pygpu_ag_finish(res, n);
}

PyObject *
pygpu_ag_cross_entropy(TensorObject *input, TensorObject *target,
                       TensorObject *weight, int64_t ignore_index,
                       int reduction, double smoothing)
{
    if (!pygpu_ag_wanted(1, &input)) {
        return pygpu_op_cross_entropy(input, target, weight, ignore_index,
                                      reduction, smoothing, NULL);
    }
    pygpu_xent_saved sv = {NULL, NULL, NULL, NULL};
    PyObject *res = pygpu_op_cross_entropy(input, target, weight,
                                           ignore_index, reduction,
                                           smoothing, &sv);
    if (res == NULL) {
        return NULL;
    }
    res = record(res, input, sv.x, sv.target, sv.weight, sv.stats,
                 ignore_index, reduction, smoothing);
    Py_DECREF(sv.x);
    Py_DECREF(sv.target);
    Py_XDECREF(sv.weight);
    Py_DECREF(sv.stats);
    return res;
}
