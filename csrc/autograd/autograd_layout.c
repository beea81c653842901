/* autograd_layout.c - the backward rules of the copies that rearrange
 * elements: flip (the gradient flipped back) and repeat (the tiles'
 * gradients summed). */
#include "autograd/autograd.h"

#include <string.h>

/* ---------------------------------------------------------------- flip */

/* key: the dims the call was given, as its argument tuple. */
static int
flip_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    PyObject *m = PyObject_GetAttrString((PyObject *)g, "flip");
    PyObject *r = m ? PyObject_Call(m, n->key, NULL) : NULL;
    Py_XDECREF(m);
    grads[0] = (TensorObject *)r;
    return r == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_flip(TensorObject *t, PyObject *const *dims, Py_ssize_t ndims,
              PyObject *res)
{
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node("FlipBackward0", flip_backward, 1, &t);
    if (n != NULL && (n->key = PyTuple_New(ndims)) == NULL) {
        Py_CLEAR(n);
    }
    for (Py_ssize_t i = 0; n != NULL && i < ndims; i++) {
        PyTuple_SET_ITEM(n->key, i, Py_NewRef(dims[i]));
    }
    return pygpu_ag_finish(res, n);
}

/* -------------------------------------------------------------- repeat */

/* g has dims r_d * s_d (s_d: input 0's size, 1 for the leading new
 * dims): each dim is split in two, (r_d, s_d), and the r_d summed. */
static int
repeat_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    int64_t shape[PYGPU_MAX_DIMS];
    int lead = g->ndim - n->in_ndim[0];
    TensorObject *r = (TensorObject *)Py_NewRef(g);
    for (int d = 0; r != NULL && d < g->ndim; d++) {
        int64_t s = d < lead ? 1 : n->in_shape[0][d - lead];
        if (s == 0 || r->shape[d] == s) {
            continue; /* nothing repeated (or no elements at all) */
        }
        if (r->ndim + 1 > PYGPU_MAX_DIMS) {
            PyErr_SetString(PyExc_RuntimeError,
                            "repeat backward: too many dims");
            Py_CLEAR(r);
            break;
        }
        /* [.., r_d * s, ..] -> [.., r_d, s, ..], summed over r_d */
        for (int k = 0, j = 0; k < r->ndim; k++) {
            if (k == d) {
                shape[j++] = r->shape[k] / s;
                shape[j++] = s;
            }
            else {
                shape[j++] = r->shape[k];
            }
        }
        Py_SETREF(r, pygpu_ag_reshaped(r, r->ndim + 1, shape));
        PyObject *dim = r ? PyLong_FromLong(d) : NULL;
        Py_XSETREF(r, dim ? (TensorObject *)pygpu_op_reduce(PYGPU_SUM, r,
                                                            dim, 0)
                          : NULL);
        Py_XDECREF(dim);
    }
    if (r != NULL) {
        Py_SETREF(r, pygpu_ag_reshaped(r, n->in_ndim[0], n->in_shape[0]));
    }
    grads[0] = r;
    return r == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_repeat(TensorObject *t, PyObject *res)
{
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node("RepeatBackward0", repeat_backward, 1,
                                  &t);
    return pygpu_ag_finish(res, n);
}
