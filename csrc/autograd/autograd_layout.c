/* autograd_layout.c - the recording wrappers of the ops that rearrange or
 * join elements, computing with the ops (ops_flip.c, ops_join.c,
 * ops_split.c) and giving the result its Node: flip (the gradient flipped
 * back) and repeat (the tiles' gradients summed) with their rules here;
 * cat and stack (their rule in autograd_shapes.c); the views of split,
 * chunk, unbind and narrow (index views). */
#include "autograd/autograd.h"

#include <string.h>

/* ---------------------------------------------------------------- flip */

/* key: the dims the call was given, as a tuple. */
static int
flip_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    grads[0] = (TensorObject *)pygpu_op_flip(
        g, PySequence_Fast_ITEMS(n->key), PyTuple_GET_SIZE(n->key));
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_flip(TensorObject *t, PyObject *const *dims, Py_ssize_t ndims)
{
    PyObject *res = pygpu_op_flip(t, dims, ndims);
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
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
pygpu_ag_repeat(TensorObject *t, const int64_t *reps, int n)
{
    PyObject *res = pygpu_op_repeat(t, reps, n);
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    return pygpu_ag_finish(res, pygpu_ag_node("RepeatBackward0",
                                              repeat_backward, 1, &t));
}

/* ----------------------------------------------------------- cat, stack */

PyObject *
pygpu_ag_join(const char *fname, const pygpu_tensor_list *l, PyObject *dim,
              PyObject *out, int stack)
{
    int joined;
    if (!pygpu_ag_wanted((int)l->n, (TensorObject *const *)l->items)) {
        return pygpu_op_join(fname, l, dim, out, stack, NULL);
    }
    if (out != NULL && out != Py_None) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): functions with out=... arguments don't support "
                     "automatic differentiation, but one of the arguments "
                     "requires grad.", fname);
        return NULL;
    }
    PyObject *res = pygpu_op_join(fname, l, dim, NULL, stack, &joined);
    return pygpu_ag_cat(l->items, (int)l->n, joined, stack, res);
}

/* ------------------------------------- split, chunk, unbind, narrow */

/* Each view an index view of t along the plan's dim: piece i starts where
 * the ones before it end (select: at index i). */
PyObject *
pygpu_ag_pieces(TensorObject *t, const pygpu_pieces *p)
{
    PyObject *r = pygpu_op_pieces(t, p);
    int64_t at = p->start;
    if (r == NULL || !pygpu_ag_wanted(1, &t)) {
        return r;
    }
    for (Py_ssize_t i = 0; i < p->n; i++) {
        PyObject *v = PyTuple_GET_ITEM(r, i);
        int64_t start = p->select ? (int64_t)i : at;
        int64_t len = p->select ? 1 : ((TensorObject *)v)->shape[p->dim];
        v = pygpu_ag_view_along(t, p->dim, start, start + len, p->select,
                                Py_NewRef(v));
        if (v == NULL || PyTuple_SetItem(r, i, v) < 0) { /* r: ours alone */
            Py_DECREF(r);
            return NULL;
        }
        at += len;
    }
    return r;
}
