/* autograd_sort.c - the values of sort, topk, kthvalue, median and mode
 * recorded: t gathered along dim at the indices the sort chose (ops/
 * ops_sort.c gives them, pygpu/_sorting.py picks among them), squeezed
 * at dim when the op removes it.  The gradient goes back to the index
 * each value came from: g (with dim put back) added into zeros at the
 * saved indices, torch's rule for these ops (as max along a dim,
 * autograd_extrema.c).
 */
#include "autograd/autograd.h"

static const char *const node_names[PYGPU_NSORTED] = {
    [PYGPU_SORTED_SORT] = "SortBackward0",
    [PYGPU_SORTED_TOPK] = "TopkBackward0",
    [PYGPU_SORTED_KTHVALUE] = "KthvalueBackward0",
    [PYGPU_SORTED_MEDIAN_ALL] = "MedianBackward0",
    [PYGPU_SORTED_MEDIAN] = "MedianBackward1",
    [PYGPU_SORTED_MODE] = "ModeBackward0",
};

/* op: the dim; flag: squeezed; slot 0: the indices (dim kept). */
static int
sorted_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *ix = pygpu_ag_saved(n, 0), *g1 = NULL, *z = NULL;
    if (ix == NULL) {
        return -1;
    }
    g1 = n->flag ? pygpu_ag_insert_dim(g, n->op)
                 : (TensorObject *)Py_NewRef(g);
    z = g1 ? pygpu_ag_zeros(n->in_ndim[0], n->in_shape[0], g->dtype,
                            g->device)
           : NULL;
    if (z != NULL && pygpu_scatter_add_into(z, n->op, ix, g1) < 0) {
        Py_CLEAR(z);
    }
    Py_XDECREF(g1);
    grads[0] = z;
    return z == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_sorted_values(int which, TensorObject *t, int dim, TensorObject *ix,
                       int squeeze)
{
    int64_t shape[PYGPU_MAX_DIMS];
    PyObject *res = pygpu_op_gather(t, dim, (PyObject *)ix);
    if (res != NULL && squeeze) {
        TensorObject *r = (TensorObject *)res;
        if (r->shape[dim] != 1) {
            PyErr_Format(PyExc_RuntimeError,
                         "_sorted_values(): squeezing dim %d of size %lld",
                         dim, (long long)r->shape[dim]);
            Py_DECREF(res);
            return NULL;
        }
        for (int d = 0, k = 0; d < r->ndim; d++) {
            if (d != dim) {
                shape[k++] = r->shape[d];
            }
        }
        Py_SETREF(res, (PyObject *)pygpu_ag_reshaped(r, r->ndim - 1, shape));
    }
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node(node_names[which], sorted_backward, 1, &t);
    if (n != NULL) {
        n->op = dim;
        n->flag = squeeze;
        if (pygpu_ag_save(n, 0, ix) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}
