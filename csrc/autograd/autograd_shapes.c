/* autograd_shapes.c - the backward rules of products (matmul, linear),
 * views and copies: the ops whose gradients move between shapes.
 * Recording works as in autograd_rules.c. */
#include "autograd/autograd.h"

#include <string.h>

/* A view of t: shape and strides given. */
static TensorObject *
view(TensorObject *t, int ndim, const int64_t *shape, const int64_t *strides)
{
    return pygpu_tensor_view(t, ndim, shape, strides, 0);
}

static TensorObject *
mm(TensorObject *a, TensorObject *b)
{
    return (TensorObject *)pygpu_op_matmul((PyObject *)a, (PyObject *)b);
}

/* ------------------------------------------------------------ matmul */

/* a @ b with 1-D operands promoted to matrices (a: [1, k], b: [k, 1]) and
 * g shaped like their product: ga = g @ b^T, gb = a^T @ g, each reduced
 * to its operand's (promoted) shape by the engine, then given back the
 * operand's own shape. */
static int
matmul_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *a = pygpu_ag_saved(n, 0), *b = pygpu_ag_saved(n, 1);
    TensorObject *a1 = NULL, *b1 = NULL, *g1 = NULL, *t = NULL, *r = NULL;
    int rc = -1;
    if (a == NULL || b == NULL) {
        return -1;
    }
    /* Under autocast the operands may differ in dtype: the products run
     * in the wider one (the engine converts each result back). */
    int dt = pygpu_promote(a->dtype, b->dtype);
    a1 = pygpu_ag_as_dtype(a, dt);
    b1 = pygpu_ag_as_dtype(b, dt);
    g1 = pygpu_ag_as_dtype(g, dt);
    if (a1 != NULL && a->ndim == 1) {
        Py_SETREF(a1, pygpu_ag_insert_dim(a1, 0));
    }
    if (b1 != NULL && b->ndim == 1) {
        Py_SETREF(b1, pygpu_ag_insert_dim(b1, 1));
    }
    if (a1 == NULL || b1 == NULL || g1 == NULL) {
        goto fail;
    }
    if (a->ndim == 1) {
        Py_SETREF(g1, pygpu_ag_insert_dim(g1, g1->ndim - (b->ndim == 1 ? 0 : 1)));
    }
    if (g1 != NULL && b->ndim == 1) {
        Py_SETREF(g1, pygpu_ag_insert_dim(g1, g1->ndim));
    }
    if (g1 == NULL) {
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        TensorObject *op = i == 0 ? a : b, *op1 = i == 0 ? a1 : b1;
        if (n->next[i] == NULL) {
            continue;
        }
        t = i == 0 ? pygpu_ag_mT(b1) : pygpu_ag_mT(a1);
        r = t == NULL ? NULL : i == 0 ? mm(g1, t) : mm(t, g1);
        Py_CLEAR(t);
        if (r != NULL) {
            Py_SETREF(r, pygpu_sum_to(r, op1->ndim, op1->shape));
        }
        if (r != NULL && op->ndim == 1) {
            Py_SETREF(r, pygpu_ag_reshaped(r, 1, op->shape));
        }
        if (r == NULL) {
            goto fail;
        }
        grads[i] = r;
    }
    rc = 0;
fail:
    Py_XDECREF(a1);
    Py_XDECREF(b1);
    Py_XDECREF(g1);
    return rc;
}

PyObject *
pygpu_ag_matmul(TensorObject *a, TensorObject *b, TensorObject *out)
{
    TensorObject *in[2] = {a, b};
    if (!pygpu_ag_wanted(2, in)) {
        return pygpu_op_matmul_out((PyObject *)a, (PyObject *)b, out);
    }
    if (out != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "matmul(): functions with out=... arguments don't "
                        "support automatic differentiation, but one of the "
                        "arguments requires grad.");
        return NULL;
    }
    PyObject *res = pygpu_op_matmul((PyObject *)a, (PyObject *)b);
    if (res == NULL) {
        return NULL;
    }
    const char *name = a->ndim == 2 && b->ndim == 2 ? "MmBackward0"
                       : a->ndim == 1 && b->ndim == 1 ? "DotBackward0"
                       : a->ndim <= 2 && b->ndim <= 2 ? "MvBackward0"
                                                      : "BmmBackward0";
    pygpu_node *n = pygpu_ag_node(name, matmul_backward, 2, in);
    if (n != NULL &&
        (pygpu_ag_save(n, 0, a) < 0 || pygpu_ag_save(n, 1, b) < 0)) {
        Py_CLEAR(n);
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------------ linear */

/* y = x @ w^T + b, relu(y) when flag: gy = g (masked by y > 0), then
 * gx = gy @ w, gw = gy^T @ x (batches summed by the engine), gb = gy
 * (summed to b's shape by the engine). */
static int
linear_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *w = pygpu_ag_saved(n, 1);
    TensorObject *gy = NULL, *t = NULL, *u = NULL, *xc = NULL;
    int rc = -1;
    if (x == NULL || w == NULL) {
        return -1;
    }
    /* Under autocast x and w may differ in dtype: the products run in w's
     * (the engine converts each result back to its input's dtype). */
    gy = pygpu_ag_as_dtype(g, w->dtype);
    xc = pygpu_ag_as_dtype(x, w->dtype);
    if (xc == NULL) {
        goto fail;
    }
    x = xc;
    if (gy != NULL && n->flag) {
        TensorObject *y = pygpu_ag_saved(n, 2);
        TensorObject *mask = y ? (TensorObject *)pygpu_op_unary(PYGPU_SIGN,
                                                                y, 0)
                               : NULL;
        Py_SETREF(gy, mask ? (TensorObject *)pygpu_op_binary(
                                 PYGPU_MUL, (PyObject *)gy,
                                 (PyObject *)mask, NULL)
                           : NULL);
        Py_XDECREF(mask);
    }
    if (gy == NULL) {
        goto fail;
    }
    if (n->next[0] && (grads[0] = mm(gy, w)) == NULL) {
        goto fail;
    }
    if (n->next[1]) {
        if (x->ndim == 1) { /* the outer product gy x^T */
            t = pygpu_ag_insert_dim(gy, 1);
            u = t ? pygpu_ag_insert_dim(x, 0) : NULL;
        }
        else {
            t = pygpu_ag_mT(gy);
            u = (TensorObject *)Py_NewRef(x);
        }
        grads[1] = t && u ? mm(t, u) : NULL;
        if (grads[1] == NULL) {
            goto fail;
        }
    }
    if (n->next[2]) {
        grads[2] = (TensorObject *)Py_NewRef(gy);
    }
    rc = 0;
fail:
    Py_XDECREF(gy);
    Py_XDECREF(t);
    Py_XDECREF(u);
    Py_XDECREF(xc);
    return rc;
}

PyObject *
pygpu_ag_linear(TensorObject *x, TensorObject *w, TensorObject *bias,
                int relu)
{
    TensorObject *in[3] = {x, w, bias};
    if (!pygpu_ag_wanted(3, in)) {
        return pygpu_op_linear(x, w, bias, relu);
    }
    PyObject *res = pygpu_op_linear(x, w, bias, relu);
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node(
        relu ? "AddmmReluBackward0" : bias ? "AddmmBackward0" : "MmBackward0",
        linear_backward, 3, in);
    if (n != NULL) {
        n->flag = relu;
        if (pygpu_ag_save(n, 0, x) < 0 || pygpu_ag_save(n, 1, w) < 0 ||
            (relu && pygpu_ag_save(n, 2, (TensorObject *)res) < 0)) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------ views, copies */

static int
view_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    TensorObject *r = NULL;
    switch (n->op) {
    case PYGPU_AG_RESHAPE:
        r = pygpu_ag_reshaped(g, n->in_ndim[0], n->in_shape[0]);
        break;
    case PYGPU_AG_PERMUTE: /* output dim i was input dim perm[i] */
        for (int i = 0; i < g->ndim; i++) {
            shape[n->perm[i]] = g->shape[i];
            strides[n->perm[i]] = g->strides[i];
        }
        r = view(g, g->ndim, shape, strides);
        break;
    case PYGPU_AG_INDEX: {
        r = pygpu_tensor_empty(n->in_ndim[0], n->in_shape[0], g->dtype,
                               g->device);
        if (r != NULL && (pygpu_op_fill(r, 0.0) < 0 ||
                          pygpu_op_setitem(r, n->key, g) < 0)) {
            Py_CLEAR(r);
        }
        break;
    }
    default: /* EXPAND, COPY: the engine reduces and converts */
        r = (TensorObject *)Py_NewRef(g);
    }
    grads[0] = r;
    return r == NULL ? -1 : 0;
}

static const char *const view_names[] = {
    [PYGPU_AG_RESHAPE] = "ViewBackward0",
    [PYGPU_AG_PERMUTE] = "PermuteBackward0",
    [PYGPU_AG_EXPAND] = "ExpandBackward0",
    [PYGPU_AG_COPY] = "ToCopyBackward0",
    [PYGPU_AG_INDEX] = "SliceBackward0"};

PyObject *
pygpu_ag_view(int kind, TensorObject *in, const int *perm, PyObject *key,
              PyObject *res)
{
    if (res == NULL || res == (PyObject *)in ||
        !pygpu_ag_wanted(1, &in)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node(view_names[kind], view_backward, 1, &in);
    if (n != NULL) {
        n->op = kind;
        n->is_view = kind != PYGPU_AG_COPY;
        if (perm != NULL) {
            memcpy(n->perm, perm, sizeof(int) * (size_t)in->ndim);
        }
        n->key = Py_XNewRef(key);
    }
    return pygpu_ag_finish(res, n);
}

TensorObject *
pygpu_ag_to(TensorObject *src, pygpu_device dev, int dtype,
            int non_blocking)
{
    PyObject *res = (PyObject *)pygpu_tensor_to_async(src, dev, dtype,
                                                      non_blocking);
    if (!pygpu_ag_wanted(1, &src)) {
        return (TensorObject *)res;
    }
    return (TensorObject *)pygpu_ag_view(PYGPU_AG_COPY, src, NULL, NULL,
                                         res);
}

PyObject *
pygpu_ag_view_along(TensorObject *in, int dim, int64_t start, int64_t stop,
                    int select, PyObject *res)
{
    if (res == NULL || !pygpu_ag_wanted(1, &in)) {
        return res;
    }
    PyObject *key = PyTuple_New(dim + 1);
    for (int d = 0; key != NULL && d <= dim; d++) {
        PyObject *k = d < dim   ? PySlice_New(NULL, NULL, NULL)
                      : select ? PyLong_FromLongLong(start)
                               : NULL;
        if (d == dim && !select) {
            PyObject *a = PyLong_FromLongLong(start);
            PyObject *b = a ? PyLong_FromLongLong(stop) : NULL;
            k = b ? PySlice_New(a, b, NULL) : NULL;
            Py_XDECREF(a);
            Py_XDECREF(b);
        }
        if (k == NULL) {
            Py_CLEAR(key);
            break;
        }
        PyTuple_SET_ITEM(key, d, k);
    }
    if (key == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    res = pygpu_ag_view(PYGPU_AG_INDEX, in, NULL, key, res);
    Py_DECREF(key);
    return res;
}

int
pygpu_ag_refuse(const char *name, int n, TensorObject *const *in)
{
    if (!pygpu_ag_wanted(n, in)) {
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError,
                 "the derivative of %s is not implemented in pygpu's "
                 "autograd yet", name);
    return -1;
}

/* ------------------------------------------------------------ cat, stack */

/* cat (flag 0): input i's gradient is g's slice along dim (op) at its
 * offset; stack (flag 1): g's index i along dim, the dim dropped. */
static int
cat_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS], at = 0;
    int dim = n->op;
    for (int i = 0; i < n->nin; i++) {
        int64_t len = n->flag ? 1 : n->in_shape[i][dim];
        if (!n->flag && n->in_ndim[i] != g->ndim) {
            continue; /* a legacy empty (0,) input: skipped by cat */
        }
        if (n->next[i] != NULL) {
            int k = 0;
            for (int d = 0; d < g->ndim; d++) {
                if (n->flag && d == dim) {
                    continue;
                }
                shape[k] = d == dim ? len : g->shape[d];
                strides[k++] = g->strides[d];
            }
            grads[i] = pygpu_tensor_view(g, k, shape, strides,
                                         at * g->strides[dim]);
            if (grads[i] == NULL) {
                return -1;
            }
        }
        at += len;
    }
    return 0;
}

PyObject *
pygpu_ag_cat(PyObject *const *items, int n, int dim, int stack,
             PyObject *res)
{
    if (res == NULL) {
        return NULL;
    }
    pygpu_node *node = pygpu_ag_node(stack ? "StackBackward0"
                                           : "CatBackward0",
                                     cat_backward, n,
                                     (TensorObject *const *)items);
    if (node != NULL) {
        node->op = dim;
        node->flag = stack;
    }
    return pygpu_ag_finish(res, node);
}
