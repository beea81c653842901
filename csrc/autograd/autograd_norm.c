/* autograd_norm.c - the backward rule of layer norm and RMS norm
 * (ops_norm.c): one NORM backward, which reads x, the weight and the
 * rows' mean and 1/std the forward kept, and writes the gradients of x,
 * the weight and the bias that are needed.
 *
 * Batch norm's training step (pygpu_op_channel_norm) has the same rule
 * over channels.
 *
 * The Node is named as torch names it (NativeLayerNormBackward0,
 * FusedRmsNormBackward0, NativeBatchNormBackward0); its edges go to x,
 * the weight and the bias.  Saved: x as the kernel read it (slot 0), the
 * weight in the compute type (1, when given), the means (2, all but RMS)
 * and the 1/std (3); flag: the mode (PYGPU_ROW_NORM_*); key: n, the
 * elements of a row, as a Python int (0 for channels).  The parameters'
 * gradients come in the compute type; the engine converts them to the
 * parameters' dtype. */
#include "autograd/autograd.h"
#include "ops/norm.h"

static int
norm_backward(pygpu_node *node, TensorObject *g, TensorObject **grads)
{
    pygpu_row_norm_saved s = {NULL, NULL, NULL, NULL};
    int rms = node->flag;
    int want[3] = {node->next[0] != NULL, node->next[1] != NULL,
                   node->nin > 2 && node->next[2] != NULL};
    TensorObject *out[3];
    int64_t n = PyLong_AsLongLong(node->key);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if ((s.x = pygpu_ag_saved(node, 0)) == NULL ||
        (node->saved[1] != NULL && (s.w = pygpu_ag_saved(node, 1)) == NULL) ||
        (rms != PYGPU_ROW_NORM_RMS &&
         (s.mean = pygpu_ag_saved(node, 2)) == NULL) ||
        (s.rstd = pygpu_ag_saved(node, 3)) == NULL) {
        return -1;
    }
    if (pygpu_op_row_norm_backward(g, &s, n, rms, want, out) < 0) {
        return -1;
    }
    /* the parameters' gradients come flat: in their shape */
    for (int i = 1; i < 3; i++) {
        if (out[i] != NULL && i < node->nin) {
            Py_SETREF(out[i], pygpu_ag_reshaped(out[i], node->in_ndim[i],
                                                node->in_shape[i]));
            if (out[i] == NULL) {
                Py_XDECREF(out[0]);
                Py_XDECREF(out[3 - i]);
                return -1;
            }
        }
    }
    for (int i = 0; i < node->nin; i++) {
        grads[i] = out[i];
    }
    return 0;
}

/* res with its Node (saved: what the forward handed over).  Steals res. */
static PyObject *
record(PyObject *res, TensorObject *const in[3], const pygpu_row_norm_saved *sv,
       int64_t n, int rms)
{
    static const char *const names[] = {"NativeLayerNormBackward0",
                                        "FusedRmsNormBackward0",
                                        "NativeBatchNormBackward0"};
    pygpu_node *node = pygpu_ag_node(names[rms], norm_backward,
                                     rms == PYGPU_ROW_NORM_RMS ? 2 : 3, in);
    if (node == NULL) {
        return pygpu_ag_finish(res, NULL);
    }
    node->flag = rms;
    node->key = PyLong_FromLongLong(n);
    if (node->key == NULL || pygpu_ag_save(node, 0, sv->x) < 0 ||
        (sv->w != NULL && pygpu_ag_save(node, 1, sv->w) < 0) ||
        (sv->mean != NULL && pygpu_ag_save(node, 2, sv->mean) < 0) ||
        pygpu_ag_save(node, 3, sv->rstd) < 0) {
        Py_CLEAR(node);
    }
    return pygpu_ag_finish(res, node);
}

PyObject *
pygpu_ag_row_norm(TensorObject *x, TensorObject *w, TensorObject *b, int64_t n,
              double eps, int rms)
{
    TensorObject *in[3] = {x, w, rms ? NULL : b};
    if (!pygpu_ag_wanted(3, in)) {
        return pygpu_op_row_norm(x, w, b, n, eps, rms, NULL);
    }
    pygpu_row_norm_saved sv = {NULL, NULL, NULL, NULL};
    PyObject *res = pygpu_op_row_norm(x, w, b, n, eps, rms, &sv);
    if (res == NULL) {
        return NULL;
    }
    res = record(res, in, &sv, n, rms);
    Py_DECREF(sv.x);
    Py_XDECREF(sv.w);
    Py_XDECREF(sv.mean);
    Py_DECREF(sv.rstd);
    return res;
}

PyObject *
pygpu_ag_channel_norm(TensorObject *x, TensorObject *w, TensorObject *b,
                      double eps, TensorObject **mean, TensorObject **var)
{
    TensorObject *in[3] = {x, w, b};
    if (!pygpu_ag_wanted(3, in)) {
        return pygpu_op_channel_norm(x, w, b, eps, mean, var, NULL);
    }
    pygpu_row_norm_saved sv = {NULL, NULL, NULL, NULL};
    PyObject *res = pygpu_op_channel_norm(x, w, b, eps, mean, var, &sv);
    if (res == NULL) {
        return NULL;
    }
    res = record(res, in, &sv, 0, PYGPU_ROW_NORM_CHANNELS);
    Py_DECREF(sv.x);
    Py_XDECREF(sv.w);
    Py_DECREF(sv.mean);
    Py_DECREF(sv.rstd);
    if (res == NULL) {
        Py_CLEAR(*mean);
        Py_CLEAR(*var);
    }
    return res;
}
