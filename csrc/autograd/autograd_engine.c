/* autograd_engine.c - the backward pass.
 *
 * One pass: (1) from the roots, find every Node reachable and count, for
 * each, the edges that lead into it; (2) give each root its gradient;
 * (3) run the Nodes whose count has reached zero, each once, in that
 * order: sum what has arrived, apply the rule, reduce and convert each
 * input's gradient to the input's shape, dtype and device, and send it
 * along its edge.  An AccumulateGrad node adds into its leaf's .grad
 * (backward, autograd_accumulate.c) or hands the gradient back
 * (autograd.grad).
 *
 * Rules run with grad mode off, as torch's do without create_graph.
 * Passes run concurrently, as torch's do: a pass keeps its bookkeeping
 * (the Nodes it reaches, the edges still to come into each, the gradient
 * summed so far) in a table of its own, never on the Nodes, so threads
 * run backward at once, and a hook may run a backward, or wait for
 * another thread's, while its own pass waits.  The GIL guards the Python
 * objects; what else two passes over the same Nodes share is made safe
 * here: a rule runs with references of its own to its Node's saved
 * tensors (another pass may free the Node's meanwhile, and a rule's large
 * CPU loops release the GIL), a Node's saved tensors are marked freed
 * before they go, and adding into a leaf's .grad is one pass at a time
 * for that leaf.  Nothing here is locked across a pass, so a fork's child
 * runs backward whatever the parent's threads were doing.
 */
#include "autograd/autograd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------ a pass's own table */

/* A Node the pass reaches (borrowed: the roots, which the caller holds,
 * hold the graph, whose edges never change). */
typedef struct {
    pygpu_node *node;
    TensorObject *buf;      /* the gradients summed so far; NULL: none */
    TensorObject **bufs;    /* a Node of several outputs: one for each */
    Py_ssize_t first_edge;  /* where its inputs' places start in edges */
    Py_ssize_t deps;        /* the edges into it not run yet */
} pass_node;

typedef struct {
    const pygpu_node *node; /* NULL: a free slot */
    Py_ssize_t place;
} index_slot;

/* The Nodes of a pass in the order found; an index by address (open
 * addressing, at most half full); and for each Node the places of its
 * inputs' Nodes (those not NULL, in order), found once by collect. */
typedef struct {
    pass_node *nodes;
    Py_ssize_t n, cap;
    index_slot *index;
    size_t mask;            /* the index's size less one (a power of two) */
    Py_ssize_t *edges;
    Py_ssize_t nedges, edges_cap;
} pass_table;

/* A Node's first slot: its address by a multiplicative hash. */
static size_t
slot_of(const pygpu_node *node, size_t mask)
{
    uint64_t h = (uint64_t)(uintptr_t)node * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32)) & mask;
}

/* items, an array of *cap elements of `size` bytes holding n, grown when
 * full to twice as many (64 at first); NULL with an exception (items
 * left as it was). */
static void *
reserve(void *items, Py_ssize_t *cap, Py_ssize_t n, size_t size)
{
    if (n < *cap) {
        return items;
    }
    Py_ssize_t c = *cap ? 2 * *cap : 64;
    void *p = PyMem_Realloc(items, size * (size_t)c);
    if (p == NULL) {
        pygpu_raise_no_memory("backward()'s node table", size * (size_t)c);
        return NULL;
    }
    *cap = c;
    return p;
}

/* The index twice as large (64 slots at first), the Nodes put in again. */
static int
grow_index(pass_table *t)
{
    size_t size = t->index ? 2 * (t->mask + 1) : 64;
    index_slot *index = PyMem_Calloc(size, sizeof(*index));
    if (index == NULL) {
        pygpu_raise_no_memory("backward()'s node index",
                              size * sizeof(*index));
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->n; i++) {
        size_t s = slot_of(t->nodes[i].node, size - 1);
        while (index[s].node != NULL) {
            s = (s + 1) & (size - 1);
        }
        index[s] = (index_slot){t->nodes[i].node, i};
    }
    PyMem_Free(t->index);
    t->index = index;
    t->mask = size - 1;
    return 0;
}

/* The place of node in the table, added (*fresh set) when absent;
 * -1 with an exception. */
static Py_ssize_t
table_get(pass_table *t, pygpu_node *node, int *fresh)
{
    *fresh = 0;
    if ((size_t)(t->n + 1) * 2 > t->mask + 1 && grow_index(t) < 0) {
        return -1;
    }
    size_t s = slot_of(node, t->mask);
    for (; t->index[s].node != NULL; s = (s + 1) & t->mask) {
        if (t->index[s].node == node) {
            return t->index[s].place;
        }
    }
    pass_node *nodes = reserve(t->nodes, &t->cap, t->n, sizeof(*nodes));
    if (nodes == NULL) {
        return -1;
    }
    t->nodes = nodes;
    Py_ssize_t i = t->n++;
    t->nodes[i] = (pass_node){node, NULL, NULL, 0, 0};
    t->index[s] = (index_slot){node, i};
    *fresh = 1;
    return i;
}

/* A Node's gradients, one for each of its nout outputs, freed. */
static void
free_bufs(TensorObject **bufs, int nout)
{
    if (bufs == NULL) {
        return;
    }
    for (int k = 0; k < nout; k++) {
        Py_XDECREF(bufs[k]);
    }
    PyMem_Free(bufs);
}

/* Where the gradient of output nr of the Node at place p is summed: its
 * one buffer, or for a Node of several outputs that output's (the array
 * made at the first).  NULL with an exception. */
static TensorObject **
grad_slot(pass_table *t, Py_ssize_t p, int nr)
{
    pass_node *pn = &t->nodes[p];
    int nout = pn->node->nout;
    if (nout <= 1) {
        return &pn->buf;
    }
    if (pn->bufs == NULL) {
        pn->bufs = PyMem_Calloc((size_t)nout, sizeof(*pn->bufs));
        if (pn->bufs == NULL) {
            pygpu_raise_no_memory("a node's gradients",
                                  (size_t)nout * sizeof(*pn->bufs));
            return NULL;
        }
    }
    return &pn->bufs[nr];
}

static void
table_free(pass_table *t)
{
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_XDECREF(t->nodes[i].buf);
        free_bufs(t->nodes[i].bufs, t->nodes[i].node->nout);
    }
    PyMem_Free(t->nodes);
    PyMem_Free(t->index);
    PyMem_Free(t->edges);
}

/* A stack of places in the table. */
typedef struct {
    Py_ssize_t *items;
    Py_ssize_t n, cap;
} place_stack;

static int
push(place_stack *s, Py_ssize_t place)
{
    Py_ssize_t *items = reserve(s->items, &s->cap, s->n, sizeof(*items));
    if (items == NULL) {
        return -1;
    }
    s->items = items;
    s->items[s->n++] = place;
    return 0;
}

/* ------------------------------------------------------------ a pass */

/* Puts every Node reachable from roots in t, with the places of its
 * inputs' Nodes, and counts the edges into each (deps), with a stack of
 * its own. */
static int
collect(pass_table *t, pygpu_node *const *roots, int nroots)
{
    place_stack todo = {NULL, 0, 0};
    int rc = -1, fresh;
    for (int r = 0; r < nroots; r++) {
        Py_ssize_t i = table_get(t, roots[r], &fresh);
        if (i < 0 || (fresh && push(&todo, i) < 0)) {
            goto fail;
        }
    }
    while (todo.n > 0) {
        Py_ssize_t p = todo.items[--todo.n];
        pygpu_node *n = t->nodes[p].node;
        t->nodes[p].first_edge = t->nedges;
        for (int k = 0; k < n->nin; k++) {
            if (n->next[k] == NULL) {
                continue;
            }
            Py_ssize_t i = table_get(t, (pygpu_node *)n->next[k], &fresh);
            if (i < 0 || (fresh && push(&todo, i) < 0)) {
                goto fail;
            }
            Py_ssize_t *edges = reserve(t->edges, &t->edges_cap, t->nedges,
                                        sizeof(*edges));
            if (edges == NULL) {
                goto fail;
            }
            t->edges = edges;
            t->edges[t->nedges++] = i;
            t->nodes[i].deps++;
        }
    }
    rc = 0;
fail:
    PyMem_Free(todo.items);
    return rc;
}

/* n's rule over g, with references of its own to n's saved tensors: a
 * pass over the same Node in another thread may free the Node's while
 * the rule's loops run without the GIL. */
static int
apply_rule(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    PyObject *saved[PYGPU_NODE_MAX_SAVED];
    for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
        saved[i] = Py_XNewRef(n->saved[i]);
    }
    PyObject *fn_saved = Py_XNewRef(n->fn_saved);
    int rc = n->backward(n, g, grads);
    Py_XDECREF(fn_saved);
    for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
        Py_XDECREF(saved[i]);
    }
    return rc;
}

/* Frees n's saved tensors after its rule ran: marked freed first, so that
 * a rule of another pass that reads a slot meanwhile gets torch's error
 * rather than an empty slot. */
static void
release_saved(pygpu_node *n)
{
    n->released = n->had_saved;
    for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
        Py_CLEAR(n->saved[i]);
    }
    Py_CLEAR(n->fn_saved);
}

/* The output behind ref (a weakref; None: none), when alive, keeps a
 * copy of g as its .grad (retain_grad). */
static int
keep_grad(PyObject *ref, TensorObject *g)
{
    if (ref == Py_None) {
        return 0;
    }
    PyObject *out = PyWeakref_GetObject(ref);
    if (out == NULL) {
        return -1;
    }
    if (out != Py_None) {
        TensorObject *c = pygpu_ag_own_copy(g);
        if (c == NULL) {
            return -1;
        }
        Py_XSETREF(((TensorObject *)out)->grad, (PyObject *)c);
    }
    return 0;
}

/* A Node of several outputs: the hooks of each output (its pre_hooks, a
 * list with a dict or None per output) over that output's gradient. */
static int
output_hooks(pygpu_node *n, TensorObject **gs)
{
    for (int k = 0; n->pre_hooks != NULL && k < n->nout; k++) {
        PyObject *d = Py_NewRef(PyList_GET_ITEM(n->pre_hooks, k));
        int rc = d == Py_None || gs[k] == NULL
                     ? 0
                     : pygpu_ag_run_hooks(d, &gs[k]);
        Py_DECREF(d);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Runs the Node at place p of t with the gradient that reached it (*gp,
 * owned; may be NULL: zero), after its tensor's hooks, which may replace
 * *gp; pushes the inputs' Nodes whose last edge this was on ready.  A
 * Node of several outputs (a custom Function's) gets gs instead, a
 * gradient for each output (NULL: none reached it), which each output's
 * hooks may replace. */
static int
run_node(pass_table *t, Py_ssize_t p, TensorObject **gp,
         TensorObject **gs, const pygpu_pass *pa, place_stack *ready)
{
    pygpu_node *n = t->nodes[p].node;
    TensorObject *few[4] = {NULL}, **grads = few;
    int rc = -1, multi = n->nout > 1;
    PyObject *hooks = n->backward == NULL
                          ? ((TensorObject *)n->variable)->hooks
                          : n->pre_hooks;
    if (!multi && *gp != NULL && pygpu_ag_run_hooks(hooks, gp) < 0) {
        return -1;
    }
    if (multi && gs != NULL && output_hooks(n, gs) < 0) {
        return -1;
    }
    TensorObject *g = *gp;
    for (int i = 0; i < pa->ntargets; i++) {
        int nr = pa->target_nr != NULL ? pa->target_nr[i] : 0;
        TensorObject *tg = !multi ? g : gs != NULL ? gs[nr] : NULL;
        if (pa->targets[i] == n && tg != NULL) {
            Py_INCREF(tg);
            if (add_into(&pa->results[i], tg) < 0) {
                return -1;
            }
        }
    }
    if (n->backward == NULL) { /* AccumulateGrad */
        if (pa->ntargets == 0 && g != NULL) {
            return pygpu_ag_accumulate((TensorObject *)n->variable, g);
        }
        return 0;
    }
    if (n->retained != NULL && pa->ntargets == 0) {
        for (int k = 0; k < (multi ? n->nout : 1); k++) {
            TensorObject *gk = !multi ? g : gs != NULL ? gs[k] : NULL;
            PyObject *ref =
                multi ? PyList_GET_ITEM(n->retained, k) : n->retained;
            if (gk != NULL && keep_grad(ref, gk) < 0) {
                return -1;
            }
        }
    }
    if (n->nin > 4 &&
        (grads = PyMem_Calloc((size_t)n->nin, sizeof(*grads))) == NULL) {
        pygpu_raise_no_memory("a node's gradients",
                              (size_t)n->nin * sizeof(*grads));
        return -1;
    }
    if (multi ? gs != NULL && pygpu_ag_function_backward(n, gs, grads) < 0
              : g != NULL && apply_rule(n, g, grads) < 0) {
        goto fail;
    }
    for (int i = 0, e = 0; i < n->nin; i++) {
        if (n->next[i] == NULL) {
            continue;
        }
        Py_ssize_t c = t->edges[t->nodes[p].first_edge + e++];
        if (grads[i] != NULL) {
            int nr = n->next_nr != NULL ? n->next_nr[i] : 0;
            TensorObject *fit = fit_input(n, i, grads[i]), **slot;
            if (fit == NULL || (slot = grad_slot(t, c, nr)) == NULL) {
                Py_XDECREF(fit);
                goto fail;
            }
            if (add_into(slot, fit) < 0) {
                goto fail;
            }
        }
        if (--t->nodes[c].deps == 0 && push(ready, c) < 0) {
            goto fail;
        }
    }
    if (!pa->retain_graph) {
        release_saved(n);
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

/* The pass itself; grads[r] is root r's gradient (borrowed). */
static int
run_pass(int nroots, pygpu_node *const *roots, TensorObject *const *grads,
         const pygpu_pass *pa)
{
    pass_table t = {NULL, 0, 0, NULL, 0, NULL, 0, 0};
    place_stack ready = {NULL, 0, 0};
    int rc = -1;
    if (collect(&t, roots, nroots) < 0) {
        goto fail;
    }
    for (int r = 0; r < nroots; r++) {
        int fresh;
        Py_ssize_t p = table_get(&t, roots[r], &fresh);
        TensorObject **slot =
            p < 0 ? NULL
                  : grad_slot(&t, p, pa->root_nr != NULL ? pa->root_nr[r] : 0);
        if (slot == NULL ||
            add_into(slot, (TensorObject *)Py_NewRef(grads[r])) < 0) {
            goto fail;
        }
    }
    /* Only roots are without edges in; the first root runs first. */
    for (Py_ssize_t i = t.n - 1; i >= 0; i--) {
        if (t.nodes[i].deps == 0 && push(&ready, i) < 0) {
            goto fail;
        }
    }
    while (ready.n > 0) {
        Py_ssize_t p = ready.items[--ready.n];
        TensorObject *g = t.nodes[p].buf, **gs = t.nodes[p].bufs;
        t.nodes[p].buf = NULL;
        t.nodes[p].bufs = NULL;
        int r = run_node(&t, p, &g, gs, pa, &ready);
        Py_XDECREF(g);
        free_bufs(gs, t.nodes[p].node->nout);
        if (r < 0) {
            goto fail;
        }
    }
    rc = 0;
fail:
    table_free(&t);
    PyMem_Free(ready.items);
    return rc;
}

int
pygpu_autograd_run(int nroots, pygpu_node *const *roots,
                   TensorObject *const *grads, const pygpu_pass *pa)
{
    int was = pygpu_set_grad_enabled(0);
    int rc = run_pass(nroots, roots, grads, pa);
    pygpu_set_grad_enabled(was);
    return rc;
}
