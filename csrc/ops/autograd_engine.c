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

typedef struct {
    int ntargets;            /* autograd.grad: the inputs' Nodes */
    pygpu_node **targets;
    TensorObject **results;  /* their gradients (new refs) */
    int retain_graph;
} pass_args;

/* Runs one Node with the gradient that reached it (may be NULL: zero). */
static int
run_node(pygpu_node *n, TensorObject *g, const pass_args *pa,
         node_stack *ready)
{
    TensorObject *grads[PYGPU_NODE_MAX_IN] = {NULL};
    int rc = -1;
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
            return accumulate((TensorObject *)n->variable, g);
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
    for (int i = 0; i < PYGPU_NODE_MAX_IN; i++) {
        Py_XDECREF(grads[i]);
    }
    return rc;
}

/* The pass itself, under the engine lock; grads[r] is root r's gradient
 * (borrowed). */
static int
run_pass(int nroots, pygpu_node *const *roots, TensorObject *const *grads,
         const pass_args *pa)
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
        int r = run_node(n, g, pa, &ready);
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

/* -------------------------------------------------------- entry points */

/* Root r: its Node (new ref) and gradient (new ref; ones when none was
 * given for a one-element output). */
static int
root_of(PyObject *t_obj, PyObject *g_obj, int r, pygpu_node **node,
        TensorObject **grad)
{
    TensorObject *t = (TensorObject *)t_obj;
    if (!Tensor_Check(t_obj)) {
        PyErr_SetString(PyExc_TypeError, "backward: expected Tensors");
        return -1;
    }
    if (!pygpu_requires_grad(t)) {
        PyErr_Format(PyExc_RuntimeError,
                     "element %d of tensors does not require grad and does "
                     "not have a grad_fn", r);
        return -1;
    }
    if (g_obj == NULL || g_obj == Py_None) {
        if (pygpu_numel(t->ndim, t->shape) != 1) {
            PyErr_SetString(PyExc_RuntimeError,
                            "grad can be implicitly created only for scalar "
                            "outputs");
            return -1;
        }
        *grad = pygpu_tensor_empty(t->ndim, t->shape, t->dtype, t->device);
        if (*grad == NULL || pygpu_op_fill(*grad, 1.0) < 0) {
            Py_CLEAR(*grad);
            return -1;
        }
    }
    else if (!Tensor_Check(g_obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "backward: gradients must be Tensors or None");
        return -1;
    }
    else {
        TensorObject *g = (TensorObject *)g_obj;
        if (g->ndim != t->ndim ||
            memcmp(g->shape, t->shape, sizeof(int64_t) * t->ndim) != 0) {
            char a[256], b[256];
            pygpu_format_shape(a, sizeof(a), g->ndim, g->shape);
            pygpu_format_shape(b, sizeof(b), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "Mismatch in shape: grad_output[%d] has a shape of "
                         "torch.Size([%s]) and output[%d] has a shape of "
                         "torch.Size([%s]).", r, a, r, b);
            return -1;
        }
        *grad = (TensorObject *)Py_NewRef(g_obj);
    }
    *node = t->grad_fn != NULL ? (pygpu_node *)Py_NewRef(t->grad_fn)
                               : (pygpu_node *)pygpu_ag_accumulator(t);
    if (*node == NULL) {
        Py_CLEAR(*grad);
        return -1;
    }
    return 0;
}

/* The common part of backward and grad: roots from the sequences, the
 * pass under the lock with grad mode off. */
static int
engine_run(PyObject *tensors, PyObject *grad_tensors, pass_args *pa)
{
    PyObject *ts = PySequence_Tuple(tensors), *gs = NULL;
    pygpu_node **roots = NULL;
    TensorObject **grads = NULL;
    Py_ssize_t n = 0;
    int rc = -1, made = 0;
    if (ts == NULL) {
        return -1;
    }
    n = PyTuple_GET_SIZE(ts);
    if (grad_tensors != Py_None) {
        gs = PySequence_Tuple(grad_tensors);
        if (gs == NULL) {
            goto fail;
        }
        if (PyTuple_GET_SIZE(gs) != n) {
            PyErr_Format(PyExc_RuntimeError,
                         "got %zd tensors and %zd gradients", n,
                         PyTuple_GET_SIZE(gs));
            goto fail;
        }
    }
    roots = PyMem_Calloc(n ? n : 1, sizeof(*roots));
    grads = PyMem_Calloc(n ? n : 1, sizeof(*grads));
    if (roots == NULL || grads == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (; made < n; made++) {
        if (root_of(PyTuple_GET_ITEM(ts, made),
                    gs ? PyTuple_GET_ITEM(gs, made) : NULL, (int)made,
                    &roots[made], &grads[made]) < 0) {
            goto fail;
        }
    }
    if (!PyThread_acquire_lock(engine_lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(engine_lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    int was = pygpu_set_grad_enabled(0);
    rc = run_pass((int)n, roots, grads, pa);
    pygpu_set_grad_enabled(was);
    PyThread_release_lock(engine_lock);
fail:
    for (Py_ssize_t i = 0; i < made; i++) {
        Py_XDECREF(roots[i]);
        Py_XDECREF(grads[i]);
    }
    PyMem_Free(roots);
    PyMem_Free(grads);
    Py_XDECREF(gs);
    Py_DECREF(ts);
    return rc;
}

PyObject *
pygpu_autograd_backward_args(PyObject *args)
{
    PyObject *tensors, *grads;
    int retain;
    if (!PyArg_ParseTuple(args, "OOp:_backward", &tensors, &grads,
                          &retain)) {
        return NULL;
    }
    pass_args pa = {0, NULL, NULL, retain};
    if (engine_run(tensors, grads, &pa) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
backward_py(PyObject *self, PyObject *args)
{
    return pygpu_autograd_backward_args(args);
}

static PyObject *
grad_py(PyObject *self, PyObject *args)
{
    PyObject *outputs, *inputs, *grads, *ins = NULL, *result = NULL;
    int retain, allow_unused;
    pass_args pa = {0, NULL, NULL, 0};
    if (!PyArg_ParseTuple(args, "OOOpp:_grad", &outputs, &inputs, &grads,
                          &retain, &allow_unused)) {
        return NULL;
    }
    pa.retain_graph = retain;
    ins = PySequence_Tuple(inputs);
    if (ins == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(ins);
    pa.targets = PyMem_Calloc(n ? n : 1, sizeof(*pa.targets));
    pa.results = PyMem_Calloc(n ? n : 1, sizeof(*pa.results));
    if (pa.targets == NULL || pa.results == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++, pa.ntargets++) {
        PyObject *x = PyTuple_GET_ITEM(ins, i);
        if (!Tensor_Check(x)) {
            PyErr_SetString(PyExc_TypeError, "grad: inputs must be Tensors");
            goto fail;
        }
        TensorObject *t = (TensorObject *)x;
        if (!pygpu_requires_grad(t)) {
            PyErr_SetString(PyExc_RuntimeError,
                            "One of the differentiated Tensors does not "
                            "require grad");
            goto fail;
        }
        pa.targets[i] = t->grad_fn != NULL
                            ? (pygpu_node *)Py_NewRef(t->grad_fn)
                            : (pygpu_node *)pygpu_ag_accumulator(t);
        if (pa.targets[i] == NULL) {
            goto fail;
        }
    }
    if (engine_run(outputs, grads, &pa) < 0) {
        goto fail;
    }
    result = PyTuple_New(n);
    if (result == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pa.results[i] == NULL && !allow_unused) {
            PyErr_SetString(PyExc_RuntimeError,
                            "One of the differentiated Tensors appears to not "
                            "have been used in the graph. Set "
                            "allow_unused=True if this is the desired "
                            "behavior.");
            Py_CLEAR(result);
            goto fail;
        }
        PyObject *r = pa.results[i] ? (PyObject *)pa.results[i] : Py_None;
        PyTuple_SET_ITEM(result, i, Py_NewRef(r));
    }
fail:
    for (int i = 0; i < pa.ntargets; i++) {
        Py_XDECREF(pa.targets[i]);
        Py_XDECREF(pa.results[i]);
    }
    PyMem_Free(pa.targets);
    PyMem_Free(pa.results);
    Py_DECREF(ins);
    return result;
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

PyMethodDef pygpu_autograd_functions[] = {
    {"_backward", backward_py, METH_VARARGS,
     "_backward($module, tensors, grad_tensors, retain_graph, /)\n--\n\n"
     "Run the backward pass from tensors (grad_tensors: a sequence with\n"
     "None for ones, or None), accumulating into the leaves' .grad."},
    {"_grad", grad_py, METH_VARARGS,
     "_grad($module, outputs, inputs, grad_outputs, retain_graph,\n"
     "      allow_unused, /)\n--\n\n"
     "The gradients of outputs with respect to inputs, as a tuple."},
    {NULL, NULL, 0, NULL},
};
