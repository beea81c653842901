/* autograd_reduce.c - the reductions recorded: the wrappers of sum, mean
 * (with dtype=), logsumexp, softmax, log_softmax and the scans over the
 * ops of ops/reduce.h, and the backward rules of sum, mean, logsumexp,
 * softmax, log_softmax and cumsum (max, min, prod and cumprod are in
 * autograd_extrema.c, var, std and norm in autograd_stats.c).  A wrapper
 * runs the op alone when autograd does not record its input; a dtype=
 * that converts first is a recorded conversion.  A reduced gradient goes
 * back to the input's shape as a view with stride 0 along the reduced
 * dims. */
#include "autograd/autograd.h"
#include "ops/reduce.h"

TensorObject *
pygpu_ag_spread(pygpu_node *n, TensorObject *r)
{
    int64_t strides[PYGPU_MAX_DIMS];
    int nd = n->in_ndim[0], keepdim = n->flag;
    for (int d = 0, j = 0; d < nd; d++) {
        if (n->perm[d]) {
            strides[d] = 0;
            j += keepdim;
        }
        else {
            strides[d] = r->strides[j++];
        }
    }
    return pygpu_tensor_view(r, nd, n->in_shape[0], strides, 0);
}

/* -------------------------------------------------------- sum and mean */

static int
reduce_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *r = pygpu_ag_spread(n, g);
    if (r != NULL && n->op == PYGPU_MEAN) {
        PyObject *c = PyFloat_FromDouble(n->scalar);
        PyObject *q = c ? pygpu_op_binary(PYGPU_DIV, (PyObject *)r, c, NULL)
                        : NULL;
        Py_XDECREF(c);
        Py_SETREF(r, (TensorObject *)q);
    }
    grads[0] = r;
    return r == NULL ? -1 : 0;
}

/* Marks the reduced dims of t in n->perm and counts their elements. */
static int
mark(pygpu_node *n, TensorObject *t, PyObject *dimobj, int keepdim,
     const char *name)
{
    int all;
    int64_t count = pygpu_reduce_mark_dims(t, dimobj, name, n->perm, &all);
    if (count < 0) {
        return -1;
    }
    n->flag = keepdim;
    n->scalar = (double)count;
    return 0;
}

TensorObject *
pygpu_ag_to_dtype(TensorObject *t, int dtype)
{
    if (t->dtype == dtype) {
        return (TensorObject *)Py_NewRef((PyObject *)t);
    }
    return pygpu_ag_to(t, t->device, dtype, 0);
}

PyObject *
pygpu_ag_reduce(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                int pair, const char *name)
{
    if (!pygpu_ag_wanted(1, &t)) {
        return pygpu_reduce_over(op, t, dimobj, keepdim, pair, name);
    }
    if (op == PYGPU_MAX || op == PYGPU_MIN) {
        return pygpu_ag_extreme(op, t, dimobj, keepdim, pair, name);
    }
    if (op == PYGPU_PROD) {
        return pygpu_ag_prod(t, dimobj, keepdim, pair, name);
    }
    if (op != PYGPU_SUM && op != PYGPU_MEAN) {
        return pygpu_ag_no_rule(NULL, name);
    }
    PyObject *res = pygpu_reduce_over(op, t, dimobj, keepdim, pair, name);
    if (res == NULL) {
        return NULL;
    }
    int all = dimobj == NULL || dimobj == Py_None;
    const char *node_name = op == PYGPU_SUM
                                ? (all ? "SumBackward0" : "SumBackward1")
                                : (all ? "MeanBackward0" : "MeanBackward1");
    pygpu_node *n = pygpu_ag_node(node_name, reduce_backward, 1, &t);
    if (n != NULL) {
        n->op = op;
        if (mark(n, t, dimobj, keepdim, name) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

/* Recorded, the input is converted to dtype= first (unless it already has
 * it): the op's accumulator form reads it unconverted, out of autograd's
 * sight. */
PyObject *
pygpu_ag_reduce_as(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                   int dtype, const char *name)
{
    if (!pygpu_ag_wanted(1, &t)) {
        return pygpu_op_reduce_as(op, t, dimobj, keepdim, dtype, name);
    }
    TensorObject *x = pygpu_ag_to_dtype(t, dtype < 0 ? t->dtype : dtype);
    PyObject *res = x ? pygpu_ag_reduce(op, x, dimobj, keepdim, 0, name)
                      : NULL;
    Py_XDECREF(x);
    return res;
}

/* ---------------------------------------------------------- logsumexp */

/* g * exp(x - out), out and g spread over x's shape. */
static int
logsumexp_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *out = pygpu_ag_saved(n, 1);
    TensorObject *gs = NULL, *os = NULL, *e = NULL;
    if (x == NULL || out == NULL) {
        return -1;
    }
    gs = pygpu_ag_spread(n, g);
    os = gs ? pygpu_ag_spread(n, out) : NULL;
    e = os ? pygpu_ag_bin(PYGPU_SUB, x, (PyObject *)os) : NULL;
    if (e != NULL) {
        Py_SETREF(e, (TensorObject *)pygpu_op_unary(PYGPU_EXP, e, 0));
    }
    grads[0] = e ? pygpu_ag_bin(PYGPU_MUL, gs, (PyObject *)e) : NULL;
    Py_XDECREF(gs);
    Py_XDECREF(os);
    Py_XDECREF(e);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_logsumexp(TensorObject *t, PyObject *dimobj, int keepdim)
{
    PyObject *res = pygpu_op_logsumexp(t, dimobj, keepdim);
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node("LogsumexpBackward0", logsumexp_backward,
                                  1, &t);
    if (n != NULL && (mark(n, t, dimobj, keepdim, "logsumexp") < 0 ||
                      pygpu_ag_save(n, 0, t) < 0 ||
                      pygpu_ag_save(n, 1, (TensorObject *)res) < 0)) {
        Py_CLEAR(n);
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------- softmax, log_softmax */

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g); sums along
 * dim (perm[0]), kept. */
static int
softmax_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *y = pygpu_ag_saved(n, 0), *t = NULL, *s = NULL;
    PyObject *dim = NULL;
    if (y == NULL || (dim = PyLong_FromLong(n->perm[0])) == NULL) {
        return -1;
    }
    if (n->op == PYGPU_SOFTMAX) {
        t = pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)y);
        s = t ? (TensorObject *)pygpu_op_reduce(PYGPU_SUM, t, dim, 1) : NULL;
        Py_XSETREF(t, s ? pygpu_ag_bin(PYGPU_SUB, g, (PyObject *)s) : NULL);
        grads[0] = t ? pygpu_ag_bin(PYGPU_MUL, y, (PyObject *)t) : NULL;
    }
    else {
        s = (TensorObject *)pygpu_op_reduce(PYGPU_SUM, g, dim, 1);
        t = s ? (TensorObject *)pygpu_op_unary(PYGPU_EXP, y, 0) : NULL;
        Py_XSETREF(t, t ? pygpu_ag_bin(PYGPU_MUL, t, (PyObject *)s) : NULL);
        grads[0] = t ? pygpu_ag_bin(PYGPU_SUB, g, (PyObject *)t) : NULL;
    }
    Py_DECREF(dim);
    Py_XDECREF(t);
    Py_XDECREF(s);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_softmax(int op, TensorObject *t, int dim, int dtype)
{
    if (!pygpu_ag_wanted(1, &t) ||
        (dtype >= 0 && !pygpu_dtype_table[dtype].is_floating_point)) {
        return pygpu_op_softmax(op, t, dim, dtype); /* (or its refusal) */
    }
    TensorObject *x = pygpu_ag_to_dtype(t, dtype < 0 ? t->dtype : dtype);
    PyObject *res = x ? pygpu_op_softmax(op, x, dim, -1) : NULL;
    if (res != NULL) {
        pygpu_node *n = pygpu_ag_node(
            op == PYGPU_SOFTMAX ? "SoftmaxBackward0" : "LogSoftmaxBackward0",
            softmax_backward, 1, &x);
        if (n != NULL) {
            n->op = op;
            n->perm[0] = x->ndim ? dim : 0;
            if (pygpu_ag_save(n, 0, (TensorObject *)res) < 0) {
                Py_CLEAR(n);
            }
        }
        res = pygpu_ag_finish(res, n);
    }
    Py_XDECREF(x);
    return res;
}

/* --------------------------------------------------------------- scans */

/* cumsum: gx_i = sum over j >= i of g_j = total - cumsum(g)_i + g_i. */
static int
cumsum_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    PyObject *dim = PyLong_FromLong(n->perm[0]), *cs = NULL;
    TensorObject *total = NULL, *t = NULL;
    if (dim == NULL) {
        return -1;
    }
    total = (TensorObject *)pygpu_op_reduce(PYGPU_SUM, g, dim, 1);
    cs = total ? pygpu_op_scan(PYGPU_CUMSUM, g, n->perm[0], -1) : NULL;
    t = cs ? pygpu_ag_bin(PYGPU_SUB, total, cs) : NULL;
    grads[0] = t ? pygpu_ag_bin(PYGPU_ADD, t, (PyObject *)g) : NULL;
    Py_DECREF(dim);
    Py_XDECREF(cs);
    Py_XDECREF(total);
    Py_XDECREF(t);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_scan(int op, TensorObject *t, int dim, int dtype)
{
    if (!pygpu_ag_wanted(1, &t)) {
        return pygpu_op_scan(op, t, dim, dtype);
    }
    TensorObject *x = pygpu_ag_to_dtype(t, dtype < 0 ? t->dtype : dtype);
    PyObject *res = x ? pygpu_op_scan(op, x, dim, -1) : NULL;
    int along = t->ndim ? dim : 0;
    /* (a conversion to an integer dtype= leaves nothing to record) */
    if (res != NULL && pygpu_ag_wanted(1, &x) && op != PYGPU_CUMSUM) {
        res = pygpu_ag_cumprod(x, along, res);
    }
    else if (res != NULL && pygpu_ag_wanted(1, &x)) {
        pygpu_node *n = pygpu_ag_node("CumsumBackward0", cumsum_backward, 1,
                                      &x);
        if (n != NULL) {
            n->perm[0] = along;
        }
        res = pygpu_ag_finish(res, n);
    }
    Py_XDECREF(x);
    return res;
}
