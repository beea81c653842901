/* autograd_engine.c - the backward pass.
 *
 * One pass: (1) from the roots, find every Node reachable and count, for
 * each, the edges that lead into it; (2) give each root its gradient;
 * (3) run the Nodes whose count has reached zero, each once, in that
 * order: sum what has arrived, apply the rule, reduce and convert each
 * input's gradient to the input's shape, dtype and device, and send it
 * along its edge.  An AccumulateGrad node adds into its leaf's .grad
 * (backward) or hands the gradient back (autograd.grad).
 *
 * Rules run with grad mode off, as torch's do without create_graph.
 * Passes are serialised by one lock, taken with the GIL released, because
 * a rule's large CPU loops release the GIL and the Nodes carry the pass's
 * bookkeeping.
 */
#include "ops/autograd.h"

#include <stdlib.h>
#include <string.h>

static PyThread_type_lock engine_lock; /* made once at module exec */
static uint64_t passes;                /* under engine_lock */
static _Thread_local int in_pass;      /* this thread runs a pass */

/* ------------------------------------------------------------ helpers */

static PyObject *
sum_dim(TensorObject *t, int dim, int keepdim)
{
    PyObject *d = PyLong_FromLong(dim);
    if (d == NULL) {
        return NULL;
    }
    PyObject *r = pygpu_op_reduce(PYGPU_SUM, t, d, keepdim);
    Py_DECREF(d);
    return r;
}

TensorObject *
pygpu_sum_to(TensorObject *grad, int ndim, const int64_t *shape)
{
    TensorObject *r = (TensorObject *)Py_NewRef(grad);
    int lead = grad->ndim - ndim;
    if (lead < 0) {
        char a[256], b[256];
        pygpu_format_shape(a, sizeof(a), grad->ndim, grad->shape);
        pygpu_format_shape(b, sizeof(b), ndim, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "autograd: a gradient of shape [%s] cannot be reduced "
                     "to shape [%s]", a, b);
        Py_DECREF(r);
        return NULL;
    }
    for (int i = 0; i < lead; i++) {
        Py_SETREF(r, (TensorObject *)sum_dim(r, 0, 0));
        if (r == NULL) {
            return NULL;
        }
    }
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1 && r->shape[d] != 1) {
            Py_SETREF(r, (TensorObject *)sum_dim(r, d, 1));
            if (r == NULL) {
                return NULL;
            }
        }
    }
    return r;
}

/* g as input i of node expects it: its shape, dtype and device. */
static TensorObject *
fit_input(pygpu_node *n, int i, TensorObject *g)
{
    TensorObject *r = pygpu_sum_to(g, n->in_ndim[i], n->in_shape[i]);
    if (r != NULL && (r->dtype != n->in_dtype[i] ||
                      !pygpu_device_equal(&r->device, &n->in_device[i]))) {
        Py_SETREF(r, pygpu_tensor_to(r, n->in_device[i], n->in_dtype[i]));
    }
    return r;
}

/* *acc += g, or *acc = g when empty (steals g). */
static int
add_into(TensorObject **acc, TensorObject *g)
{
    if (*acc == NULL) {
        *acc = g;
        return 0;
    }
    PyObject *sum = pygpu_op_binary(PYGPU_ADD, (PyObject *)*acc,
                                    (PyObject *)g, NULL);
    Py_DECREF(g);
    if (sum == NULL) {
        return -1;
    }
    Py_SETREF(*acc, (TensorObject *)sum);
    return 0;
}

/* A tensor of its own holding g's values, for .grad. */
static TensorObject *
own_copy(TensorObject *g)
{
    if (Py_REFCNT(g) == 1 && g->shared == NULL && pygpu_is_contiguous(g)) {
        return (TensorObject *)Py_NewRef(g);
    }
    TensorObject *c = pygpu_tensor_empty(g->ndim, g->shape, g->dtype,
                                         g->device);
    if (c != NULL && pygpu_tensor_copy_into(c, g) < 0) {
        Py_CLEAR(c);
    }
    return c;
}

/* leaf.grad += g (torch accumulates in place when a .grad exists). */
static int
accumulate(TensorObject *leaf, TensorObject *g)
{
    if (leaf->grad == NULL) {
        TensorObject *c = own_copy(g);
        if (c == NULL) {
            return -1;
        }
        leaf->grad = (PyObject *)c;
        return 0;
    }
    PyObject *r = pygpu_op_binary(PYGPU_ADD, leaf->grad, (PyObject *)g,
                                  (TensorObject *)leaf->grad);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ------------------------------------------------------------ a pass */

typedef struct {
    pygpu_node **items;
    Py_ssize_t n, cap;
} node_stack;

static int
push(node_stack *s, pygpu_node *node)
{
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap ? 2 * s->cap : 64;
        pygpu_node **items = PyMem_Realloc(s->items, sizeof(*items) * cap);
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = node;
    return 0;
}

/* Marks every Node reachable from roots with pass and counts the edges
 * into each (deps); `all` gets them (borrowed: the roots' tensors hold the
 * graph during the pass). */
static int
collect(pygpu_node *const *roots, int nroots, uint64_t pass,
        node_stack *all)
{
    node_stack todo = {NULL, 0, 0};
    int rc = -1;
    for (int r = 0; r < nroots; r++) {
        pygpu_node *n = roots[r];
        if (n->pass != pass) {
            n->pass = pass;
            n->deps = 0;
            Py_CLEAR(n->buf);
            if (push(&todo, n) < 0) {
                goto fail;
            }
        }
    }
    while (todo.n > 0) {
        pygpu_node *n = todo.items[--todo.n];
        if (push(all, n) < 0) {
            goto fail;
        }
        for (int i = 0; i < n->nin; i++) {
            pygpu_node *c = (pygpu_node *)n->next[i];
            if (c == NULL) {
                continue;
            }
            if (c->pass != pass) {
                c->pass = pass;
                c->deps = 0;
                Py_CLEAR(c->buf);
                if (push(&todo, c) < 0) {
                    goto fail;
                }
            }
            c->deps++;
        }
    }
    rc = 0;
fail:
    PyMem_Free(todo.items);
    return rc;
}


/* Runs one Node with the gradient that reached it (*gp, owned; may be
 * NULL: zero), after its tensor's hooks, which may replace *gp. */
static int
run_node(pygpu_node *n, TensorObject **gp, const pygpu_pass *pa,
         node_stack *ready)
{
    TensorObject *few[4] = {NULL}, **grads = few;
    int rc = -1;
    PyObject *hooks = n->backward == NULL
                          ? ((TensorObject *)n->variable)->hooks
                          : n->pre_hooks;
    if (*gp != NULL && pygpu_ag_run_hooks(hooks, gp) < 0) {
        return -1;
    }
    TensorObject *g = *gp;
    for (int t = 0; t < pa->ntargets; t++) {
        if (pa->targets[t] == n && g != NULL) {
            Py_INCREF(g);
            if (add_into(&pa->results[t], g) < 0) {
                return -1;
            }
        }
    }
    if (n->backward == NULL) { /* AccumulateGrad */
        if (pa->ntargets == 0 && g != NULL) {
            TensorObject *leaf = (TensorObject *)n->variable;
            if (accumulate(leaf, g) < 0) {
                return -1;
            }
            return pygpu_ag_run_post_hooks(leaf);
        }
        return 0;
    }
    if (n->retained != NULL && pa->ntargets == 0 && g != NULL) {
        PyObject *out = PyWeakref_GetObject(n->retained);
        if (out == NULL) {
            return -1;
        }
        if (out != Py_None) {
            TensorObject *c = own_copy(g);
            if (c == NULL) {
                return -1;
            }
            Py_XSETREF(((TensorObject *)out)->grad, (PyObject *)c);
        }
    }
    if (n->nin > 4 &&
        (grads = PyMem_Calloc((size_t)n->nin, sizeof(*grads))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (g != NULL && n->backward(n, g, grads) < 0) {
        goto fail;
    }
    for (int i = 0; i < n->nin; i++) {
        pygpu_node *c = (pygpu_node *)n->next[i];
        if (c == NULL) {
            continue;
        }
        if (grads[i] != NULL) {
            TensorObject *fit = fit_input(n, i, grads[i]);
            if (fit == NULL || add_into(&c->buf, fit) < 0) {
                goto fail;
            }
        }
        if (--c->deps == 0 && push(ready, c) < 0) {
            goto fail;
        }
    }
    if (!pa->retain_graph) {
        for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
            Py_CLEAR(n->saved[i]);
        }
        n->released = n->had_saved;
    }
    rc = 0;
fail:
    for (int i = 0; i < n->nin; i++) {
        Py_XDECREF(grads[i]);
    }
    if (grads != few) {
        PyMem_Free(grads);
    }
    return rc;
}

/* The pass itself, under the engine lock; grads[r] is root r's gradient
 * (borrowed). */
static int
run_pass(int nroots, pygpu_node *const *roots, TensorObject *const *grads,
         const pygpu_pass *pa)
{
    node_stack all = {NULL, 0, 0}, ready = {NULL, 0, 0};
    uint64_t pass = ++passes;
    int rc = -1;
    if (collect(roots, nroots, pass, &all) < 0) {
        goto fail;
    }
    for (int r = 0; r < nroots; r++) {
        if (add_into(&roots[r]->buf,
                     (TensorObject *)Py_NewRef(grads[r])) < 0) {
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < all.n; i++) {
        if (all.items[i]->deps == 0 && push(&ready, all.items[i]) < 0) {
            goto fail;
        }
    }
    while (ready.n > 0) {
        pygpu_node *n = ready.items[--ready.n];
        TensorObject *g = n->buf;
        n->buf = NULL;
        int r = run_node(n, &g, pa, &ready);
        Py_XDECREF(g);
        if (r < 0) {
            goto fail;
        }
    }
    rc = 0;
fail:
    for (Py_ssize_t i = 0; i < all.n; i++) {
        Py_CLEAR(all.items[i]->buf);
    }
    PyMem_Free(all.items);
    PyMem_Free(ready.items);
    return rc;
}

/* ------------------------------------------------------- the lock */

int
pygpu_autograd_run(int nroots, pygpu_node *const *roots,
                   TensorObject *const *grads, const pygpu_pass *pa)
{
    if (in_pass) { /* from a hook: the lock is this thread's already */
        PyErr_SetString(PyExc_RuntimeError,
                        "pygpu's autograd cannot run backward() or "
                        "autograd.grad() from a hook during a backward "
                        "pass");
        return -1;
    }
    if (!PyThread_acquire_lock(engine_lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(engine_lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    int was = pygpu_set_grad_enabled(0);
    in_pass = 1;
    int rc = run_pass(nroots, roots, grads, pa);
    in_pass = 0;
    pygpu_set_grad_enabled(was);
    PyThread_release_lock(engine_lock);
    return rc;
}

int
pygpu_autograd_engine_init(void)
{
    engine_lock = PyThread_allocate_lock();
    if (engine_lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}
