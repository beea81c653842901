/* autograd_select.c - the recording wrappers and backward rules of the
 * ops that pick elements by index: index_select, gather, scatter_add,
 * index_add, t[key] (a view for ints, slices, None and Ellipsis; a copy
 * for tensors, masks and keys mixing them with slices), and the writes
 * t[key] = v.  The wrappers compute with the ops (ops_index.c,
 * ops_scatter.c, ops_getitem.c) and give the result its Node.
 *
 * A picked gradient goes back by adding into zeros at the picked places
 * (index_add_, scatter_add_), so an index repeated sums its gradients.
 * For a general key the places are found by indexing the flat positions
 * 0..n-1 of the input, viewed in its shape, with the same key, kept as it
 * was: its index tensors checked against their versions, its NumPy arrays
 * and lists copied.
 */
#include "autograd/autograd.h"
#include "ops/reduce.h"

#include <string.h>

/* ------------------------------------------------ index_select, gather */

/* op: the dim; flag: gather (else index_select); slot 0: the index. */
static int
select_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *ix = pygpu_ag_saved(n, 0);
    if (ix == NULL) {
        return -1;
    }
    TensorObject *z = pygpu_ag_zeros(n->in_ndim[0], n->in_shape[0],
                                     g->dtype, g->device);
    if (z != NULL &&
        (n->flag ? pygpu_scatter_add_into(z, n->op, ix, g)
                 : pygpu_index_add_into(z, n->op, ix, g)) < 0) {
        Py_CLEAR(z);
    }
    grads[0] = z;
    return z == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_select(TensorObject *t, int dim, PyObject *index, int gather)
{
    PyObject *res = gather ? pygpu_op_gather(t, dim, index)
                           : pygpu_op_index_select(t, dim, index);
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node(gather ? "GatherBackward0"
                                         : "IndexSelectBackward0",
                                  select_backward, 1, &t);
    if (n != NULL) {
        n->op = dim;
        n->flag = gather;
        if (pygpu_ag_save(n, 0, (TensorObject *)index) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------- scatter_add, index_add */

/* input 0 (self): g; input 1 (src): g gathered at the index (index_add,
 * flag: selected along dim, times alpha), put into zeros of src's shape
 * where the index is smaller than src. */
static int
scatter_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *ix = pygpu_ag_saved(n, 0), *r = NULL;
    if (ix == NULL) {
        return -1;
    }
    if (n->next[0] != NULL) {
        grads[0] = (TensorObject *)Py_NewRef(g);
    }
    if (n->next[1] == NULL) {
        return 0;
    }
    r = (TensorObject *)(n->flag
                             ? pygpu_op_index_select(g, n->op, (PyObject *)ix)
                             : pygpu_op_gather(g, n->op, (PyObject *)ix));
    if (r != NULL && n->flag && n->scalar != 1.0) {
        Py_SETREF(r, pygpu_ag_bin_s(PYGPU_MUL, r, n->scalar));
    }
    if (r != NULL && n->flag && r->ndim != n->in_ndim[1]) { /* 0-d */
        Py_SETREF(r, pygpu_ag_reshaped(r, n->in_ndim[1], n->in_shape[1]));
    }
    if (r != NULL && !n->flag &&
        memcmp(r->shape, n->in_shape[1],
               sizeof(int64_t) * (size_t)r->ndim) != 0) {
        TensorObject *z = pygpu_ag_zeros(n->in_ndim[1], n->in_shape[1],
                                         r->dtype, r->device);
        TensorObject *v = z ? pygpu_tensor_view(z, r->ndim, r->shape,
                                                z->strides, 0)
                            : NULL;
        if (v == NULL || pygpu_tensor_copy_into(v, r) < 0) {
            Py_CLEAR(z);
        }
        Py_XDECREF(v);
        Py_SETREF(r, z);
    }
    grads[1] = r;
    return r == NULL ? -1 : 0;
}

static pygpu_node *
scatter_node(TensorObject *self, int dim, TensorObject *index,
             TensorObject *src, double alpha, int index_add)
{
    TensorObject *in[2] = {self, src};
    pygpu_node *n = pygpu_ag_node(index_add ? "IndexAddBackward0"
                                            : "ScatterAddBackward0",
                                  scatter_backward, 2, in);
    if (n != NULL) {
        n->op = dim;
        n->flag = index_add;
        n->scalar = alpha;
        if (pygpu_ag_save(n, 0, index) < 0) {
            Py_CLEAR(n);
        }
    }
    return n;
}

/* Whether an in-place write to t may be recorded by rebasing t (0), or
 * -1 with the error: a leaf that requires grad, a view of a tensor that
 * requires grad. */
static int
rebase_refused(TensorObject *t, const char *what)
{
    pygpu_node *g = (pygpu_node *)t->grad_fn;
    if (g == NULL && t->requires_grad) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a leaf Variable that requires grad is being used "
                        "in an in-place operation.");
        return -1;
    }
    if (g != NULL && g->is_view) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu's autograd does not record %s on a view of a "
                     "tensor that requires grad; write to the base tensor "
                     "or to a copy", what);
        return -1;
    }
    return 0;
}

PyObject *
pygpu_ag_scatter(TensorObject *self, int dim, TensorObject *index,
                 TensorObject *src, PyObject *alpha, int index_add,
                 int inplace)
{
    TensorObject *in[2] = {self, src};
    PyObject *res;
    if (!pygpu_ag_wanted(2, in)) {
        return pygpu_op_scatter(self, dim, index, src, alpha, index_add,
                                inplace);
    }
    double a = alpha && alpha != Py_None ? PyFloat_AsDouble(alpha) : 1.0;
    if (a == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!inplace) {
        res = pygpu_op_scatter(self, dim, index, src, alpha, index_add, 0);
        if (res == NULL) {
            return NULL;
        }
        return pygpu_ag_finish(res, scatter_node(self, dim, index, src, a,
                                                 index_add));
    }
    /* in place: self rebased onto the Node of (its history, src), the
     * write done with grad mode off (the ops' write check) */
    if (rebase_refused(self, index_add ? "index_add_" : "scatter_add_") <
        0) {
        return NULL;
    }
    pygpu_node *n = scatter_node(self, dim, index, src, a, index_add);
    if (n == NULL) {
        return NULL;
    }
    PYGPU_BELOW_AUTOGRAD(res, pygpu_op_scatter(self, dim, index, src, alpha,
                                           index_add, 1));
    if (res == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    pygpu_ag_set_grad_fn(self, n);
    return res;
}

/* ------------------------------------------ a key kept for backward */

/* k as the backward pass will read it: each index tensor as an alias (its
 * memory, its version counter) with (alias, version) appended to vers,
 * NumPy arrays copied, lists and tuples rebuilt of such items, so that
 * changing a NumPy array or a list after the op changes nothing, and an
 * index tensor changed in place is caught, as torch's saved indices.
 * New reference or NULL. */
static PyObject *
freeze(PyObject *k, PyObject *vers)
{
    if (Tensor_Check(k)) {
        TensorObject *t = (TensorObject *)k;
        TensorObject *alias = pygpu_tensor_view(t, t->ndim, t->shape,
                                                t->strides, 0);
        PyObject *item = alias ? Py_BuildValue(
                                     "(Ok)", (PyObject *)alias,
                                     (unsigned long)*pygpu_version_counter(t))
                               : NULL;
        if (item == NULL || PyList_Append(vers, item) < 0) {
            Py_CLEAR(alias);
        }
        Py_XDECREF(item);
        return (PyObject *)alias;
    }
    if (PyArray_Check(k)) {
        return PyArray_NewCopy((PyArrayObject *)k, NPY_KEEPORDER);
    }
    if (!PyList_Check(k) && !PyTuple_Check(k)) {
        return Py_NewRef(k);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(k);
    PyObject *r = PyList_Check(k) ? PyList_New(n) : PyTuple_New(n);
    for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
        PyObject *item = freeze(PySequence_Fast_GET_ITEM(k, i), vers);
        if (item == NULL) {
            Py_CLEAR(r);
            break;
        }
        if (PyList_Check(r)) {
            PyList_SET_ITEM(r, i, item);
        }
        else {
            PyTuple_SET_ITEM(r, i, item);
        }
    }
    return r;
}

/* n->key for key: (the frozen key, ((alias, version), ...)).  0 or -1. */
static int
keep_key(pygpu_node *n, PyObject *key)
{
    PyObject *vers = PyList_New(0), *frozen = NULL, *t = NULL;
    frozen = vers ? freeze(key, vers) : NULL;
    t = frozen ? PyList_AsTuple(vers) : NULL;
    n->key = t ? PyTuple_Pack(2, frozen, t) : NULL;
    Py_XDECREF(vers);
    Py_XDECREF(frozen);
    Py_XDECREF(t);
    return n->key == NULL ? -1 : 0;
}

/* The key of n (borrowed), once its index tensors are checked against the
 * versions they had: NULL with torch's error if one was changed in place
 * since. */
static PyObject *
kept_key(pygpu_node *n)
{
    PyObject *vers = PyTuple_GET_ITEM(n->key, 1);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(vers); i++) {
        PyObject *item = PyTuple_GET_ITEM(vers, i);
        TensorObject *t = (TensorObject *)PyTuple_GET_ITEM(item, 0);
        unsigned long was = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(item, 1));
        uint32_t now = *pygpu_version_counter(t);
        if (now != (uint32_t)was) {
            char shape[256];
            pygpu_format_shape(shape, sizeof(shape), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "one of the variables needed for gradient "
                         "computation has been modified by an inplace "
                         "operation: [%s [%s]], which is needed by %s, is "
                         "at version %u; expected version %u instead.",
                         pygpu_dtype_table[t->dtype].name, shape, n->name,
                         (unsigned)now, (unsigned)was);
            return NULL;
        }
    }
    return PyTuple_GET_ITEM(n->key, 0);
}

/* ------------------------------------------------------ t[key], any key */

/* The flat positions 0..numel-1 as an int64 tensor of shape, on dev. */
static TensorObject *
positions(int ndim, const int64_t *shape, pygpu_device dev)
{
    int64_t numel = pygpu_numel(ndim, shape);
    TensorObject *ones = pygpu_tensor_empty(1, &numel, PYGPU_INT64, dev);
    if (ones == NULL || pygpu_op_fill(ones, 1.0) < 0) {
        Py_XDECREF(ones);
        return NULL;
    }
    TensorObject *c = (TensorObject *)pygpu_op_scan(PYGPU_CUMSUM, ones, 0,
                                                     -1);
    Py_DECREF(ones);
    PyObject *one = c ? PyLong_FromLong(1) : NULL;
    Py_XSETREF(c, one ? pygpu_ag_bin(PYGPU_SUB, c, one) : NULL);
    Py_XDECREF(one);
    if (c != NULL) {
        Py_SETREF(c, pygpu_ag_reshaped(c, ndim, shape));
    }
    return c;
}

/* Zeros of input 0's shape with g added at the elements key picks. */
static TensorObject *
put_back(pygpu_node *n, TensorObject *g)
{
    int64_t numel = pygpu_numel(n->in_ndim[0], n->in_shape[0]);
    int64_t gnumel = pygpu_numel(g->ndim, g->shape);
    PyObject *key = kept_key(n);
    TensorObject *pos = key ? positions(n->in_ndim[0], n->in_shape[0],
                                        g->device)
                            : NULL;
    TensorObject *sel = pos ? (TensorObject *)pygpu_op_getitem(pos, key)
                            : NULL;
    TensorObject *sel1 = sel ? pygpu_ag_reshaped(sel, 1, &gnumel) : NULL;
    TensorObject *g1 = sel1 ? pygpu_ag_reshaped(g, 1, &gnumel) : NULL;
    TensorObject *z = g1 ? pygpu_ag_zeros(1, &numel, g->dtype, g->device)
                         : NULL;
    if (z != NULL && pygpu_index_add_into(z, 0, sel1, g1) < 0) {
        Py_CLEAR(z);
    }
    if (z != NULL) {
        Py_SETREF(z, pygpu_ag_reshaped(z, n->in_ndim[0], n->in_shape[0]));
    }
    Py_XDECREF(pos);
    Py_XDECREF(sel);
    Py_XDECREF(sel1);
    Py_XDECREF(g1);
    return z;
}

static int
index_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    grads[0] = put_back(n, g);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_getitem(TensorObject *t, PyObject *key)
{
    PyObject *res = pygpu_op_getitem(t, key);
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    if (pygpu_is_basic_key(key)) { /* a view */
        return pygpu_ag_view(PYGPU_AG_INDEX, t, NULL, key, res);
    }
    /* tensors, masks, lists: a copy, its gradient put back by index */
    pygpu_node *n = pygpu_ag_node("IndexBackward0", index_backward, 1, &t);
    if (n != NULL && keep_key(n, key) < 0) {
        Py_CLEAR(n);
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------- t[key] = value */

/* Input 0 (t before the write): g with zeros at key; input 1 (value): g
 * at key (the engine sums it to value's shape; value's leading size-1
 * dims, which the write drops, are put back here). */
static int
setitem_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    PyObject *key = kept_key(n);
    if (key == NULL) {
        return -1;
    }
    if (n->next[0] != NULL) {
        int64_t none[1] = {0};
        TensorObject *zero = pygpu_ag_zeros(0, none, g->dtype, g->device);
        TensorObject *c = zero ? pygpu_tensor_to(g, g->device, g->dtype)
                               : NULL;
        if (c != NULL && pygpu_op_setitem(c, key, zero) < 0) {
            Py_CLEAR(c);
        }
        Py_XDECREF(zero);
        if (c == NULL) {
            return -1;
        }
        grads[0] = c;
    }
    if (n->next[1] != NULL) {
        TensorObject *r = (TensorObject *)pygpu_op_getitem(g, key);
        if (r != NULL && r->ndim < n->in_ndim[1]) {
            Py_SETREF(r, pygpu_ag_reshaped(r, n->in_ndim[1],
                                           n->in_shape[1]));
        }
        if (r == NULL) {
            return -1;
        }
        grads[1] = r;
    }
    return 0;
}

/* value written to t: refused, unrecorded, when it requires grad. */
static int
refuse_source(TensorObject *value)
{
    return pygpu_ag_refuse("copy_ (or t[k] = v) from a tensor that requires "
                           "grad", 1, &value);
}

/* t[key] = value for t a leaf that requires grad, grad mode on: refused by
 * the write check of what the write goes to (torch's words): t itself
 * for a mask, else the view of t the key's basic part makes, recorded;
 * a value that requires grad is refused first, except by index_put_. */
static int
leaf_setitem(TensorObject *t, PyObject *key, TensorObject *value)
{
    int rc;
    if (pygpu_is_mask_index(key)) {
        return refuse_source(value) < 0 ? -1
                                        : pygpu_op_setitem(t, key, value);
    }
    int indices = pygpu_index_wants(key);
    PyObject *view = pygpu_ag_getitem(t, indices ? Py_Ellipsis : key);
    if (view == NULL) {
        return -1;
    }
    if (indices) {
        rc = pygpu_check_writable((TensorObject *)view) < 0
                 ? -1
                 : pygpu_op_setitem(t, key, value);
    }
    else {
        rc = refuse_source(value) < 0
                 ? -1
                 : pygpu_tensor_assign((TensorObject *)view, value);
    }
    Py_DECREF(view);
    return rc;
}

int
pygpu_ag_setitem(TensorObject *t, PyObject *key, TensorObject *value)
{
    TensorObject *in[2] = {t, value};
    int rc;
    if (!pygpu_ag_wanted(2, in)) {
        return pygpu_op_setitem(t, key, value);
    }
    if (t->grad_fn == NULL && t->requires_grad) {
        return leaf_setitem(t, key, value);
    }
    if (!pygpu_dtype_table[t->dtype].is_floating_point) {
        /* an integer or bool tensor takes no history (torch's rule) */
        PYGPU_BELOW_AUTOGRAD(rc, pygpu_op_setitem(t, key, value));
        return rc;
    }
    if (rebase_refused(t, "t[k] = v") < 0) {
        return -1;
    }
    pygpu_node *n = pygpu_ag_node("IndexPutBackward0", setitem_backward, 2,
                                  in);
    if (n == NULL || keep_key(n, key) < 0) {
        Py_XDECREF(n);
        return -1;
    }
    PYGPU_BELOW_AUTOGRAD(rc, pygpu_op_setitem(t, key, value));
    if (rc < 0) {
        Py_DECREF(n);
        return -1;
    }
    return pygpu_ag_set_grad_fn(t, n);
}
