/* autograd_reduce.c - the backward rules of reductions over dims (sum,
 * mean, logsumexp, the vector norm), softmax and log_softmax, and cumsum.
 * A reduced gradient goes back to the input's shape as a view with stride
 * 0 along the reduced dims. */
#include "autograd/autograd.h"
#include "ops/reduce.h"

#include <math.h>
#include <string.h>

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

PyObject *
pygpu_ag_reduce(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                int pair, const char *name)
{
    PyObject *res;
    if (op == PYGPU_MAX || op == PYGPU_MIN) {
        return pygpu_ag_extreme(op, t, dimobj, keepdim, pair, name);
    }
    if (op == PYGPU_PROD) {
        return pygpu_ag_prod(t, dimobj, keepdim, pair, name);
    }
    if (op != PYGPU_SUM && op != PYGPU_MEAN) {
        return pygpu_ag_no_rule(NULL, name);
    }
    PYGPU_UNRECORDED(res, pygpu_reduce_over(op, t, dimobj, keepdim, pair, name));
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
pygpu_ag_logsumexp(TensorObject *t, PyObject *dimobj, int keepdim,
                   PyObject *res)
{
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
pygpu_ag_softmax(int op, TensorObject *t, int dim, PyObject *res)
{
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node(
        op == PYGPU_SOFTMAX ? "SoftmaxBackward0" : "LogSoftmaxBackward0",
        softmax_backward, 1, &t);
    if (n != NULL) {
        n->op = op;
        n->perm[0] = t->ndim ? dim : 0;
        if (pygpu_ag_save(n, 0, (TensorObject *)res) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
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
    cs = total ? PyObject_CallMethod((PyObject *)g, "cumsum", "O", dim)
               : NULL;
    t = cs ? pygpu_ag_bin(PYGPU_SUB, total, cs) : NULL;
    grads[0] = t ? pygpu_ag_bin(PYGPU_ADD, t, (PyObject *)g) : NULL;
    Py_DECREF(dim);
    Py_XDECREF(cs);
    Py_XDECREF(total);
    Py_XDECREF(t);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_scan(int op, TensorObject *t, int dim, PyObject *res)
{
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    if (op != PYGPU_CUMSUM) {
        return pygpu_ag_cumprod(t, dim, res);
    }
    pygpu_node *n = pygpu_ag_node("CumsumBackward0", cumsum_backward, 1, &t);
    if (n != NULL) {
        n->perm[0] = t->ndim ? dim : 0;
    }
    return pygpu_ag_finish(res, n);
}

/* ---------------------------------------------------------------- norm */

/* A new reference to t (NULL passes through). */
static TensorObject *
ref(TensorObject *t)
{
    return (TensorObject *)Py_XNewRef((PyObject *)t);
}

/* a <op> b for two tensors; steals both (either may be NULL after an
 * error: NULL). */
static TensorObject *
bin2(int op, TensorObject *a, TensorObject *b)
{
    TensorObject *r = a && b ? pygpu_ag_bin(op, a, (PyObject *)b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* a <cmp> b as a bool tensor (b a tensor or a number). */
static TensorObject *
cmp(int op, TensorObject *a, PyObject *b)
{
    return a && b ? (TensorObject *)pygpu_op_compare(op, (PyObject *)a, b,
                                                     NULL)
                  : NULL;
}

static TensorObject *
cmp_s(int op, TensorObject *a, double s)
{
    PyObject *v = PyFloat_FromDouble(s);
    TensorObject *r = cmp(op, a, v);
    Py_XDECREF(v);
    return r;
}

/* |x|^e. */
static TensorObject *
abs_pow(TensorObject *x, double e)
{
    TensorObject *a = pygpu_ag_un(PYGPU_ABS, x);
    TensorObject *r = a ? pygpu_ag_bin_s(PYGPU_POW, a, e) : NULL;
    Py_XDECREF(a);
    return r;
}

/* inf and -inf: sign(x) g / (the count of elements at the norm), where
 * |x| is the norm (or NaN); 0 elsewhere. */
static TensorObject *
extreme_norm_grad(pygpu_node *n, TensorObject *x, TensorObject *gs,
                  TensorObject *ns)
{
    TensorObject *a = pygpu_ag_un(PYGPU_ABS, x);
    TensorObject *m = bin2(PYGPU_OR, cmp(PYGPU_EQ, a, (PyObject *)ns),
                           cmp(PYGPU_NE, a, (PyObject *)a));
    TensorObject *mf = m ? pygpu_ag_as_dtype(m, gs->dtype) : NULL;
    TensorObject *c = mf ? (TensorObject *)pygpu_reduce_over(
                               PYGPU_SUM, mf, n->key, n->flag, 0, "norm")
                         : NULL;
    TensorObject *cs = c ? pygpu_ag_spread(n, c) : NULL;
    TensorObject *r = bin2(PYGPU_DIV, ref(gs), cs);
    r = bin2(PYGPU_MUL, r, mf);
    r = bin2(PYGPU_MUL, r, pygpu_ag_un(PYGPU_SIGN, x));
    Py_XDECREF(a);
    Py_XDECREF(m);
    Py_XDECREF(c);
    return r;
}

/* torch's norm_backward, with gs and ns the gradient and the norm spread
 * over x: p = 1: sign(x) gs; 2: x gs / ns; +-inf: extreme_norm_grad;
 * p < 1: sign(x) |x|^(p-1) gs ns^(1-p), |x|^(p-1) taken as 0 where x is
 * 0; other p: sign(x) |x|^(p-1) gs / ns^(p-1).  Where the norm is 0 the
 * gradient is 0 (a subgradient) rather than 0/0; p = 0 gives none. */
static int
norm_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *nrm = pygpu_ag_saved(n, 1);
    TensorObject *gs = NULL, *ns = NULL, *s = NULL, *v = NULL, *r = NULL;
    double p = n->scalar;
    if (x == NULL || nrm == NULL) {
        return -1;
    }
    if (p == 0.0) {
        return 0;
    }
    gs = pygpu_ag_spread(n, g);
    ns = gs ? pygpu_ag_spread(n, nrm) : NULL;
    if (ns == NULL) {
        goto done;
    }
    if (isinf(p)) {
        r = extreme_norm_grad(n, x, gs, ns);
        goto done;
    }
    if (p == 1.0) {
        r = bin2(PYGPU_MUL, pygpu_ag_un(PYGPU_SIGN, x), ref(gs));
        goto done;
    }
    if (p < 1.0) {
        s = pygpu_ag_zero_where(abs_pow(x, p - 1.0), cmp_s(PYGPU_EQ, x, 0.0));
        s = bin2(PYGPU_MUL, s, pygpu_ag_un(PYGPU_SIGN, x));
        s = bin2(PYGPU_MUL, s, ref(gs));
        r = bin2(PYGPU_MUL, s, pygpu_ag_bin_s(PYGPU_POW, ns, 1.0 - p));
        goto done;
    }
    s = p == 2.0 ? ref(x)
        : p < 2.0 ? bin2(PYGPU_MUL, pygpu_ag_un(PYGPU_SIGN, x),
                         abs_pow(x, p - 1.0))
                  : bin2(PYGPU_MUL, ref(x), abs_pow(x, p - 2.0));
    v = bin2(PYGPU_DIV, ref(gs),
             p == 2.0 ? ref(ns) : pygpu_ag_bin_s(PYGPU_POW, ns, p - 1.0));
    v = pygpu_ag_zero_where(v, cmp_s(PYGPU_EQ, ns, 0.0));
    r = bin2(PYGPU_MUL, s, v);
done:
    Py_XDECREF(gs);
    Py_XDECREF(ns);
    grads[0] = r;
    return r == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_norm(TensorObject *t, double p, PyObject *dimobj, int keepdim,
              PyObject *res)
{
    if (res == NULL || !pygpu_ag_wanted(1, &t)) {
        return res;
    }
    pygpu_node *n = pygpu_ag_node("LinalgVectorNormBackward0",
                                  norm_backward, 1, &t);
    if (n != NULL && (mark(n, t, dimobj, keepdim, "norm") < 0 ||
                      pygpu_ag_save(n, 0, t) < 0 ||
                      pygpu_ag_save(n, 1, (TensorObject *)res) < 0)) {
        Py_CLEAR(n);
    }
    if (n != NULL) {
        n->scalar = p; /* (mark set it to the count) */
        n->key = dimobj == Py_None ? NULL : Py_XNewRef(dimobj);
    }
    return pygpu_ag_finish(res, n);
}
