/* autograd_im2col.c - im2col and col2im (torch's unfold and fold)
 * recorded.  The two are adjoint: the gradient of im2col is col2im of the
 * gradient (each image element gets the sum of the column elements that
 * copied it) and the gradient of col2im is im2col of the gradient.  The
 * Node keeps the eight parameters in perm[0..8) and the image's height
 * and width in perm[8..10).  The direct convolution has no gradient of
 * its own: it refuses a call that would be recorded.
 */
#include "autograd/autograd.h"

static void
load(const pygpu_node *n, int64_t p[8], int64_t hw[2])
{
    for (int i = 0; i < 8; i++) {
        p[i] = n->perm[i];
    }
    hw[0] = n->perm[8];
    hw[1] = n->perm[9];
}

static int
im2col_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    int64_t p[8], hw[2];
    load(n, p, hw);
    grads[0] = (TensorObject *)pygpu_op_col2im(g, hw, p);
    return grads[0] == NULL ? -1 : 0;
}

static int
col2im_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    int64_t p[8], hw[2];
    load(n, p, hw);
    grads[0] = (TensorObject *)pygpu_op_im2col(g, p);
    return grads[0] == NULL ? -1 : 0;
}

/* res's Node when t takes part (the parameters fit an int: the op
 * checked them against real sizes, or the call fails first). */
static PyObject *
record(const char *name, pygpu_backward_fn fn, TensorObject *t,
       const int64_t hw[2], const int64_t p[8], PyObject *res)
{
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    for (int i = 0; i < 8; i++) {
        if (p[i] > INT32_MAX || hw[i % 2] > INT32_MAX) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_OverflowError,
                            "unfold/fold: a size past 2^31 cannot be "
                            "recorded for autograd");
            return NULL;
        }
    }
    pygpu_node *n = pygpu_ag_node(name, fn, 1, &t);
    if (n != NULL) {
        for (int i = 0; i < 8; i++) {
            n->perm[i] = (int)p[i];
        }
        n->perm[8] = (int)hw[0];
        n->perm[9] = (int)hw[1];
    }
    return pygpu_ag_finish(res, n);
}

PyObject *
pygpu_ag_im2col(TensorObject *t, const int64_t p[8])
{
    PyObject *res = pygpu_op_im2col(t, p);
    int64_t hw[2] = {0, 0};
    if (res != NULL) {
        hw[0] = t->shape[t->ndim - 2];
        hw[1] = t->shape[t->ndim - 1];
    }
    return record("Im2ColBackward0", im2col_backward, t, hw, p, res);
}

PyObject *
pygpu_ag_col2im(TensorObject *t, const int64_t out_hw[2], const int64_t p[8])
{
    return record("Col2ImBackward0", col2im_backward, t, out_hw, p,
                  pygpu_op_col2im(t, out_hw, p));
}

PyObject *
pygpu_ag_conv2d_direct(TensorObject *x, TensorObject *w, TensorObject *bias,
                       const int64_t p[8], int64_t groups)
{
    TensorObject *in[3] = {x, w, bias};
    if (pygpu_ag_wanted(3, in)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_conv2d_direct records no gradient: call it under "
                        "no_grad or on tensors that do not require grad");
        return NULL;
    }
    return pygpu_op_conv2d_direct(x, w, bias, p, groups);
}
