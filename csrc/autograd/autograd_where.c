/* autograd_where.c - the backward rules of where and masked_fill: the
 * gradient goes, unchanged, to whichever operand each element came from;
 * the other gets zeros there (one masked copy each). */
#include "autograd/autograd.h"

/* A 0-d zero of g's dtype and device. */
static TensorObject *
zero_of(TensorObject *g)
{
    TensorObject *z = pygpu_tensor_empty(0, NULL, g->dtype, g->device);
    if (z != NULL && pygpu_op_fill(z, 0.0) < 0) {
        Py_CLEAR(z);
    }
    return z;
}

/* g where cond is true (keep 1) or false (keep 0), zeros elsewhere. */
static TensorObject *
masked(TensorObject *g, TensorObject *cond, int keep)
{
    TensorObject *z = zero_of(g), *r = NULL;
    if (z == NULL) {
        return NULL;
    }
    r = pygpu_tensor_empty(g->ndim, g->shape, g->dtype, g->device);
    int ok = r != NULL &&
             (keep ? pygpu_op_fill(r, 0.0) == 0 &&
                         pygpu_op_masked_copy(r, cond, g, "where") == 0
                   : pygpu_tensor_copy_into(r, g) == 0 &&
                         pygpu_op_masked_copy(r, cond, z, "where") == 0);
    Py_DECREF(z);
    if (!ok) {
        Py_CLEAR(r);
    }
    return r;
}

/* where: input 0 keeps g where cond, input 1 where not; masked_fill
 * (flag): input 0 keeps g where the mask is not, a tensor value (input 1)
 * where it is (summed by the engine to the value's shape). */
static int
where_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *cond = pygpu_ag_saved(n, 0);
    if (cond == NULL) {
        return -1;
    }
    for (int i = 0; i < n->nin; i++) {
        if (n->next[i] != NULL) {
            grads[i] = masked(g, cond, (i == 0) != n->flag);
            if (grads[i] == NULL) {
                return -1;
            }
        }
    }
    return 0;
}

static PyObject *
record(TensorObject *cond, PyObject *x, PyObject *y, PyObject *res,
       int masked_fill)
{
    TensorObject *in[2] = {Tensor_Check(x) ? (TensorObject *)x : NULL,
                           y && Tensor_Check(y) ? (TensorObject *)y : NULL};
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node(masked_fill ? "MaskedFillBackward0"
                                              : "WhereBackward0",
                                  where_backward,
                                  masked_fill && in[1] == NULL ? 1 : 2, in);
    if (n != NULL) {
        n->flag = masked_fill;
        if (pygpu_ag_save(n, 0, cond) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

PyObject *
pygpu_ag_where(PyObject *cond, PyObject *x, PyObject *y)
{
    TensorObject *in[2] = {Tensor_Check(x) ? (TensorObject *)x : NULL,
                           Tensor_Check(y) ? (TensorObject *)y : NULL};
    PyObject *res = pygpu_op_where(cond, x, y);
    if (!Tensor_Check(cond) || !pygpu_ag_wanted(2, in)) {
        return res;
    }
    return record((TensorObject *)cond, x, y, res, 0);
}

PyObject *
pygpu_ag_masked_fill(TensorObject *self, TensorObject *mask, PyObject *value)
{
    TensorObject *in[2] = {self, Tensor_Check(value) ? (TensorObject *)value
                                                     : NULL};
    PyObject *res = pygpu_op_masked_fill(self, mask, value);
    if (!pygpu_ag_wanted(2, in)) {
        return res;
    }
    return record(mask, (PyObject *)self, value, res, 1);
}

PyObject *
pygpu_ag_masked_fill_(TensorObject *self, PyObject *mask, PyObject *value)
{
    TensorObject *vt = Tensor_Check(value) ? (TensorObject *)value : NULL;
    if (pygpu_ag_refuse("masked_fill_ with a value that requires grad (use "
                        "the out-of-place masked_fill)", 1, &vt) < 0) {
        return NULL;
    }
    return pygpu_op_masked_fill_(self, mask, value);
}
