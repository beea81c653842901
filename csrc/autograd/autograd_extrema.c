/* autograd_extrema.c - max, min, amax, amin and prod recorded (reached
 * through pygpu_ag_reduce, autograd_reduce.c) and cumprod's Node, with
 * their backward rules.
 *
 * max/min over all elements and amax/amin share the gradient evenly among
 * the elements equal to the result (torch's rule for ties); max/min along
 * a dim give it to the index they return.  prod's gradient at x_i is the
 * product of the other elements, formed from products before and after i
 * (two cumprods), so zeros need no division: one zero gets the product of
 * the rest, two or more give zeros everywhere.  cumprod divides by the
 * input only before its first zero (see cumprod_backward).
 */
#include "autograd/autograd.h"
#include "ops/reduce.h"

#include <string.h>

/* The dims marked in n->perm as a tuple. */
static PyObject *
marked_dims(pygpu_node *n)
{
    PyObject *dims = PyList_New(0);
    for (int d = 0; dims != NULL && d < n->in_ndim[0]; d++) {
        PyObject *v = n->perm[d] ? PyLong_FromLong(d) : NULL;
        if (n->perm[d] && (v == NULL || PyList_Append(dims, v) < 0)) {
            Py_CLEAR(dims);
        }
        Py_XDECREF(v);
    }
    if (dims != NULL) {
        Py_SETREF(dims, PyList_AsTuple(dims));
    }
    return dims;
}

/* ------------------------------------------- max, min, amax, amin: ties */

/* g spread over x, times mask / count: mask = (x == out) (max/min of all
 * elements, op: or both NaN, as torch), count its sum over the reduced
 * dims. */
static int
evenly_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *out = pygpu_ag_saved(n, 1);
    TensorObject *os = NULL, *mask = NULL, *count = NULL, *gs = NULL;
    PyObject *dims = NULL;
    int rc = -1;
    if (x == NULL || out == NULL) {
        return -1;
    }
    os = pygpu_ag_spread(n, out);
    mask = os ? (TensorObject *)pygpu_op_compare(
                    PYGPU_EQ, (PyObject *)x, (PyObject *)os, NULL)
              : NULL;
    if (mask != NULL && n->op) { /* max/min of all: NaNs are the result */
        TensorObject *xn = (TensorObject *)pygpu_op_compare(
            PYGPU_NE, (PyObject *)x, (PyObject *)x, NULL);
        TensorObject *on = xn ? (TensorObject *)pygpu_op_compare(
                                    PYGPU_NE, (PyObject *)os,
                                    (PyObject *)os, NULL)
                              : NULL;
        Py_XSETREF(xn, on ? (TensorObject *)pygpu_op_binary(
                                PYGPU_AND, (PyObject *)xn, (PyObject *)on,
                                NULL)
                          : NULL);
        Py_SETREF(mask, xn ? (TensorObject *)pygpu_op_binary(
                                 PYGPU_OR, (PyObject *)mask, (PyObject *)xn,
                                 NULL)
                           : NULL);
        Py_XDECREF(xn);
        Py_XDECREF(on);
    }
    if (mask != NULL) {
        Py_SETREF(mask, pygpu_ag_as_dtype(mask, g->dtype));
    }
    dims = mask ? marked_dims(n) : NULL;
    count = dims ? (PyTuple_GET_SIZE(dims) == 0
                        ? (TensorObject *)Py_NewRef(mask)
                        : (TensorObject *)pygpu_reduce_over(
                              PYGPU_SUM, mask, dims, 1, 0, "sum"))
                 : NULL;
    if (count == NULL) {
        goto fail;
    }
    Py_SETREF(mask, pygpu_ag_bin(PYGPU_DIV, mask, (PyObject *)count));
    gs = mask ? pygpu_ag_spread(n, g) : NULL;
    grads[0] = gs ? pygpu_ag_bin(PYGPU_MUL, gs, (PyObject *)mask) : NULL;
    rc = grads[0] == NULL ? -1 : 0;
fail:
    Py_XDECREF(os);
    Py_XDECREF(mask);
    Py_XDECREF(count);
    Py_XDECREF(gs);
    Py_XDECREF(dims);
    return rc;
}

/* ---------------------------------------- max, min along a dim: indices */

/* g (and the saved indices) with the reduced dim put back (keepdim), then
 * added into zeros at the indices along it (op: the dim). */
static int
indices_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *ix = pygpu_ag_saved(n, 0), *g1 = NULL, *ix1 = NULL;
    if (ix == NULL) {
        return -1;
    }
    if (n->in_ndim[0] == 0) { /* a 0-d input is its own max */
        grads[0] = (TensorObject *)Py_NewRef(g);
        return 0;
    }
    g1 = n->flag ? (TensorObject *)Py_NewRef(g)
                 : pygpu_ag_insert_dim(g, n->op);
    ix1 = n->flag ? (TensorObject *)Py_NewRef(ix)
                  : pygpu_ag_insert_dim(ix, n->op);
    TensorObject *z = g1 && ix1 ? pygpu_ag_zeros(n->in_ndim[0],
                                                 n->in_shape[0], g->dtype,
                                                 g->device)
                                : NULL;
    if (z != NULL && pygpu_scatter_add_into(z, n->op, ix1, g1) < 0) {
        Py_CLEAR(z);
    }
    Py_XDECREF(g1);
    Py_XDECREF(ix1);
    grads[0] = z;
    return z == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_extreme(int op, TensorObject *t, PyObject *dimobj, int keepdim,
                 int pair, const char *name)
{
    int all;
    PyObject *res = pygpu_reduce_over(op, t, dimobj, keepdim, pair, name);
    if (res == NULL) {
        return NULL;
    }
    if (!Tensor_Check(res)) { /* (values, indices) along one dim */
        TensorObject *values = (TensorObject *)PyStructSequence_GetItem(res,
                                                                        0);
        TensorObject *ix = (TensorObject *)PyStructSequence_GetItem(res, 1);
        pygpu_node *n = pygpu_ag_node(op == PYGPU_MAX ? "MaxBackward0"
                                                      : "MinBackward0",
                                      indices_backward, 1, &t);
        if (n != NULL && (pygpu_parse_dim(dimobj, t->ndim, &n->op) < 0 ||
                          pygpu_ag_save(n, 0, ix) < 0)) {
            Py_CLEAR(n);
        }
        if (n == NULL) {
            Py_DECREF(res);
            return NULL;
        }
        n->flag = keepdim;
        pygpu_ag_set_grad_fn(values, n);
        return res;
    }
    const char *node_name = pair ? (op == PYGPU_MAX ? "MaxBackward1"
                                                    : "MinBackward1")
                                 : (op == PYGPU_MAX ? "AmaxBackward0"
                                                    : "AminBackward0");
    pygpu_node *n = pygpu_ag_node(node_name, evenly_backward, 1, &t);
    if (n != NULL) {
        n->flag = keepdim;
        n->op = pair; /* max/min of all elements: a NaN result counts */
        if (pygpu_reduce_mark_dims(t, dimobj, name, n->perm, &all) < 0 ||
            pygpu_ag_save(n, 0, t) < 0 ||
            pygpu_ag_save(n, 1, (TensorObject *)res) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

/* --------------------------------------------------------------- prod */

/* r (a new tensor of t's shape): r_i = the product of t_j over j before i
 * along dim (after: the j after i), 1 for the first (last); cp is t's
 * cumprod along dim (after: of t flipped, flipped back: the products from
 * i to the end). */
static TensorObject *
shifted(TensorObject *cp, int dim, int after)
{
    int64_t shape[PYGPU_MAX_DIMS];
    TensorObject *r = pygpu_tensor_empty(cp->ndim, cp->shape, cp->dtype,
                                         cp->device);
    if (r == NULL || pygpu_op_fill(r, 1.0) < 0) {
        Py_XDECREF(r);
        return NULL;
    }
    if (cp->shape[dim] <= 1) {
        return r;
    }
    memcpy(shape, cp->shape, sizeof(int64_t) * (size_t)cp->ndim);
    shape[dim] -= 1;
    TensorObject *dst = pygpu_tensor_view(r, r->ndim, shape, r->strides,
                                          after ? 0 : r->strides[dim]);
    TensorObject *src = dst ? pygpu_tensor_view(cp, cp->ndim, shape,
                                                cp->strides,
                                                after ? cp->strides[dim] : 0)
                            : NULL;
    int rc = src ? pygpu_tensor_copy_into(dst, src) : -1;
    Py_XDECREF(dst);
    Py_XDECREF(src);
    if (rc < 0) {
        Py_CLEAR(r);
    }
    return r;
}

/* The product of the elements of x other than i, along dim, for every i. */
static TensorObject *
others_product(TensorObject *x, int dim)
{
    TensorObject *cp = (TensorObject *)pygpu_op_scan(PYGPU_CUMPROD, x, dim,
                                                     -1);
    TensorObject *before = cp ? shifted(cp, dim, 0) : NULL;
    TensorObject *xf = before ? pygpu_ag_flip_dim(x, dim) : NULL;
    TensorObject *rcp = xf ? (TensorObject *)pygpu_op_scan(PYGPU_CUMPROD, xf,
                                                           dim, -1)
                           : NULL;
    Py_XSETREF(rcp, rcp ? pygpu_ag_flip_dim(rcp, dim) : NULL);
    TensorObject *after = rcp ? shifted(rcp, dim, 1) : NULL;
    TensorObject *r = after ? pygpu_ag_bin(PYGPU_MUL, before,
                                           (PyObject *)after)
                            : NULL;
    Py_XDECREF(cp);
    Py_XDECREF(before);
    Py_XDECREF(xf);
    Py_XDECREF(rcp);
    Py_XDECREF(after);
    return r;
}

/* x's reduced dims (marked in n->perm) moved last and merged into one,
 * the products of the others along it, then back in x's shape (a view). */
static TensorObject *
others_over_marked(pygpu_node *n, TensorObject *x)
{
    int nd = x->ndim, order[PYGPU_MAX_DIMS], k = 0;
    int64_t ps[PYGPU_MAX_DIMS], pst[PYGPU_MAX_DIMS], rs[PYGPU_MAX_DIMS];
    int64_t shape[PYGPU_MAX_DIMS], st[PYGPU_MAX_DIMS], m = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int d = 0; d < nd; d++) {
            if (!n->perm[d] == !pass) {
                order[k++] = d;
            }
        }
    }
    int kept = 0;
    for (int i = 0; i < nd; i++) {
        ps[i] = x->shape[order[i]];
        pst[i] = x->strides[order[i]];
        if (!n->perm[order[i]]) {
            rs[kept++] = ps[i];
        }
        else {
            m *= ps[i];
        }
    }
    rs[kept] = m;
    TensorObject *v = pygpu_tensor_view(x, nd, ps, pst, 0);
    TensorObject *r = v ? pygpu_ag_reshaped(v, kept + 1, rs) : NULL;
    Py_XDECREF(v);
    Py_XSETREF(r, r ? others_product(r, kept) : NULL);
    Py_XSETREF(r, r ? pygpu_ag_reshaped(r, nd, ps) : NULL);
    if (r == NULL) {
        return NULL;
    }
    for (int i = 0; i < nd; i++) {
        shape[order[i]] = ps[i];
        st[order[i]] = r->strides[i];
    }
    Py_SETREF(r, pygpu_tensor_view(r, nd, shape, st, 0));
    return r;
}

/* flag: keepdim; perm: the reduced dims. */
static int
prod_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *xc = NULL, *p = NULL;
    TensorObject *gs = NULL;
    if (x == NULL) {
        return -1;
    }
    if (x->ndim == 0) { /* the product of one element */
        grads[0] = (TensorObject *)Py_NewRef(g);
        return 0;
    }
    xc = pygpu_ag_as_dtype(x, g->dtype);
    p = xc ? others_over_marked(n, xc) : NULL;
    gs = p ? pygpu_ag_spread(n, g) : NULL;
    grads[0] = gs ? pygpu_ag_bin(PYGPU_MUL, gs, (PyObject *)p) : NULL;
    Py_XDECREF(xc);
    Py_XDECREF(p);
    Py_XDECREF(gs);
    return grads[0] == NULL ? -1 : 0;
}

PyObject *
pygpu_ag_prod(TensorObject *t, PyObject *dimobj, int keepdim, int pair,
              const char *name)
{
    int all;
    PyObject *res = pygpu_reduce_over(PYGPU_PROD, t, dimobj, keepdim, pair,
                                      name);
    if (res == NULL) {
        return NULL;
    }
    all = dimobj == NULL || dimobj == Py_None;
    pygpu_node *n = pygpu_ag_node(all ? "ProdBackward0" : "ProdBackward1",
                                  prod_backward, 1, &t);
    if (n != NULL) {
        n->flag = keepdim;
        if (pygpu_reduce_mark_dims(t, dimobj, name, n->perm, &all) < 0 ||
            pygpu_ag_save(n, 0, t) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------------ cumprod */

/* The sums from each i to the end along dim. */
static TensorObject *
reverse_cumsum(TensorObject *v, int dim)
{
    TensorObject *f = pygpu_ag_flip_dim(v, dim);
    TensorObject *c = f ? (TensorObject *)pygpu_op_scan(PYGPU_CUMSUM, f, dim,
                                                        -1)
                        : NULL;
    Py_XDECREF(f);
    Py_XSETREF(c, c ? pygpu_ag_flip_dim(c, dim) : NULL);
    return c;
}

/* a (op) the number v, as a bool tensor. */
static TensorObject *
cmp(int op, TensorObject *a, long v)
{
    PyObject *n = PyLong_FromLong(v);
    PyObject *r = n ? pygpu_op_compare(op, (PyObject *)a, n, NULL) : NULL;
    Py_XDECREF(n);
    return (TensorObject *)r;
}

/* v with zeros where mask is true. */
static TensorObject *
zero_where(TensorObject *v, TensorObject *mask)
{
    PyObject *zero = v ? PyFloat_FromDouble(0.0) : NULL;
    PyObject *r = zero ? pygpu_op_masked_fill(v, mask, zero) : NULL;
    Py_XDECREF(zero);
    return (TensorObject *)r;
}

/* With z the first zero of x along dim (in each line): before z, the sum
 * over k >= i of g_k y_k divided by x_i (y = cumprod(x), zero from z on);
 * at z, the sum over k >= z of g_k y'_k, y' the cumprod of x with x_z set
 * to 1 (the products that skip x_z); after z, zero. */
static int
cumprod_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *x = pygpu_ag_saved(n, 0), *y = pygpu_ag_saved(n, 1);
    TensorObject *zero = NULL, *count = NULL, *after = NULL, *at = NULL;
    TensorObject *a = NULL, *b = NULL, *t = NULL;
    int dim = n->perm[0], rc = -1;
    if (x == NULL || y == NULL) {
        return -1;
    }
    if (n->in_ndim[0] == 0) { /* a 0-d input is its own cumprod */
        grads[0] = (TensorObject *)Py_NewRef(g);
        return 0;
    }
    zero = cmp(PYGPU_EQ, x, 0);
    count = zero ? (TensorObject *)pygpu_op_scan(PYGPU_CUMSUM, zero, dim, -1)
                 : NULL;
    after = count ? cmp(PYGPU_NE, count, 0) : NULL;  /* from z on */
    at = after ? cmp(PYGPU_EQ, count, 1) : NULL;
    Py_XSETREF(at, at ? (TensorObject *)pygpu_op_binary(
                            PYGPU_AND, (PyObject *)at, (PyObject *)zero,
                            NULL)
                      : NULL);
    /* before z */
    t = at ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)y) : NULL;
    a = t ? reverse_cumsum(t, dim) : NULL;
    Py_XSETREF(a, a ? pygpu_ag_bin(PYGPU_DIV, a, (PyObject *)x) : NULL);
    Py_XSETREF(a, zero_where(a, after));
    /* at z */
    Py_XSETREF(t, a ? pygpu_ag_as_dtype(at, x->dtype) : NULL);
    Py_XSETREF(t, t ? pygpu_ag_bin(PYGPU_ADD, x, (PyObject *)t) : NULL);
    Py_XSETREF(t, t ? (TensorObject *)pygpu_op_scan(PYGPU_CUMPROD, t, dim,
                                                    -1)
                    : NULL);
    Py_XSETREF(t, t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL);
    b = t ? reverse_cumsum(t, dim) : NULL;
    Py_XSETREF(at, b ? cmp(PYGPU_EQ, at, 0) : NULL); /* not at z */
    Py_XSETREF(b, at ? zero_where(b, at) : NULL);
    grads[0] = b ? pygpu_ag_bin(PYGPU_ADD, a, (PyObject *)b) : NULL;
    rc = grads[0] == NULL ? -1 : 0;
    Py_XDECREF(zero);
    Py_XDECREF(count);
    Py_XDECREF(after);
    Py_XDECREF(at);
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(t);
    return rc;
}

PyObject *
pygpu_ag_cumprod(TensorObject *t, int dim, PyObject *res)
{
    pygpu_node *n = pygpu_ag_node("CumprodBackward0", cumprod_backward, 1,
                                  &t);
    if (n != NULL) {
        n->perm[0] = dim;
        if (pygpu_ag_save(n, 0, t) < 0 ||
            pygpu_ag_save(n, 1, (TensorObject *)res) < 0) {
            Py_CLEAR(n);
        }
    }
    return pygpu_ag_finish(res, n);
}
