/* autograd_node.c - the Node type (a tensor's grad_fn) and the recording
 * helpers every op's rule uses: which ops are recorded, a Node's edges and
 * input metadata, saved tensors with their versions, a leaf's
 * AccumulateGrad node. */
#include "autograd/autograd.h"

#include <string.h>

#include <structmember.h>

static PyTypeObject *Node_Type;

int
pygpu_ag_is_node(PyObject *o)
{
    return Py_IS_TYPE(o, Node_Type);
}

int
pygpu_ag_wanted(int n, TensorObject *const *in)
{
    if (!pygpu_grad_enabled()) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (pygpu_requires_grad(in[i])) {
            return 1;
        }
    }
    return 0;
}

static pygpu_node *
node_new(const char *name, pygpu_backward_fn fn)
{
    pygpu_node *node = PyObject_GC_New(pygpu_node, Node_Type);
    if (node == NULL) {
        return NULL;
    }
    /* Everything after the header starts zeroed. */
    memset((char *)node + sizeof(PyObject), 0,
           sizeof(pygpu_node) - sizeof(PyObject));
    node->name = name;
    node->backward = fn;
    PyObject_GC_Track(node);
    return node;
}

PyObject *
pygpu_ag_accumulator(TensorObject *leaf)
{
    if (leaf->grad_acc != NULL) {
        PyObject *node = PyWeakref_GetObject(leaf->grad_acc); /* borrowed */
        if (node == NULL) {
            return NULL;
        }
        if (node != Py_None) {
            return Py_NewRef(node);
        }
    }
    pygpu_node *acc = node_new("AccumulateGrad", NULL);
    if (acc == NULL) {
        return NULL;
    }
    acc->variable = Py_NewRef((PyObject *)leaf);
    PyObject *ref = PyWeakref_NewRef((PyObject *)acc, NULL);
    if (ref == NULL) {
        Py_DECREF(acc);
        return NULL;
    }
    Py_XSETREF(leaf->grad_acc, ref);
    return (PyObject *)acc;
}

pygpu_node *
pygpu_ag_node(const char *name, pygpu_backward_fn fn, int n,
              TensorObject *const *in)
{
    pygpu_node *node = node_new(name, fn);
    if (node == NULL) {
        return NULL;
    }
    /* One block: the shapes first (int64), then the pointers, devices and
     * ints, each part aligned for what follows it. */
    size_t shapes = sizeof(int64_t) * PYGPU_MAX_DIMS * (size_t)n;
    size_t nexts = sizeof(PyObject *) * (size_t)n;
    size_t devices = sizeof(pygpu_device) * (size_t)n;
    char *block = PyMem_Calloc(1, shapes + nexts + devices +
                                      3 * sizeof(int) * (size_t)n + 1);
    if (block == NULL) {
        Py_DECREF(node);
        pygpu_raise_no_memory("an autograd node's inputs", 0);
        return NULL;
    }
    node->in_shape = (int64_t(*)[PYGPU_MAX_DIMS])block;
    node->next = (PyObject **)(block + shapes);
    node->in_device = (pygpu_device *)(block + shapes + nexts);
    node->in_ndim = (int *)(block + shapes + nexts + devices);
    node->in_dtype = node->in_ndim + n;
    node->next_nr = node->in_dtype + n;
    node->nin = n;
    for (int i = 0; i < n; i++) {
        TensorObject *t = in[i];
        if (t == NULL) {
            continue;
        }
        node->in_ndim[i] = t->ndim;
        memcpy(node->in_shape[i], t->shape, sizeof(int64_t) * (size_t)t->ndim);
        node->in_dtype[i] = t->dtype;
        node->in_device[i] = t->device;
        if (t->grad_fn != NULL) {
            node->next[i] = Py_NewRef(t->grad_fn);
            node->next_nr[i] = pygpu_ag_output_nr(t);
        }
        else if (t->requires_grad) {
            node->next[i] = pygpu_ag_accumulator(t);
            if (node->next[i] == NULL) {
                Py_DECREF(node);
                return NULL;
            }
        }
    }
    return node;
}

int
pygpu_ag_save(pygpu_node *node, int i, TensorObject *t)
{
    /* A view without history: saving an output must not make a cycle
     * through its grad_fn. */
    TensorObject *alias = pygpu_tensor_view(t, t->ndim, t->shape, t->strides,
                                            0);
    if (alias == NULL) {
        return -1;
    }
    Py_XSETREF(node->saved[i], (PyObject *)alias);
    node->saved_version[i] = *pygpu_version_counter(t);
    node->had_saved = 1;
    return 0;
}

TensorObject *
pygpu_ag_saved(pygpu_node *node, int i)
{
    TensorObject *t = (TensorObject *)node->saved[i];
    if (node->released || t == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Trying to backward through the graph a second time "
                        "(or directly access saved tensors after they have "
                        "already been freed). Saved intermediate values of "
                        "the graph are freed when you call .backward() or "
                        "autograd.grad(). Specify retain_graph=True if you "
                        "need to backward through the graph a second time or "
                        "if you need to access saved tensors after calling "
                        "backward.");
        return NULL;
    }
    uint32_t now = *pygpu_version_counter(t);
    if (now != node->saved_version[i]) {
        char shape[256];
        pygpu_format_shape(shape, sizeof(shape), t->ndim, t->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "one of the variables needed for gradient computation "
                     "has been modified by an inplace operation: [%s [%s]], "
                     "which is needed by %s, is at version %u; expected "
                     "version %u instead.",
                     pygpu_dtype_table[t->dtype].name, shape, node->name,
                     (unsigned)now, (unsigned)node->saved_version[i]);
        return NULL;
    }
    return t;
}

int
pygpu_ag_set_grad_fn(TensorObject *out, pygpu_node *node)
{
    Py_XSETREF(out->grad_fn, (PyObject *)node);
    out->requires_grad = 0;
    return 0;
}

/* ------------------------------------------------------ the Node type */

static int
node_traverse(PyObject *self, visitproc visit, void *arg)
{
    pygpu_node *n = (pygpu_node *)self;
    Py_VISIT(Py_TYPE(self));
    for (int i = 0; i < n->nin; i++) {
        Py_VISIT(n->next[i]);
    }
    for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
        Py_VISIT(n->saved[i]);
    }
    Py_VISIT(n->key);
    Py_VISIT(n->variable);
    Py_VISIT(n->retained);
    Py_VISIT(n->pre_hooks);
    Py_VISIT(n->fn_ctx);
    Py_VISIT(n->fn_outputs);
    Py_VISIT(n->fn_saved);
    return 0;
}

static int
node_clear(PyObject *self)
{
    pygpu_node *n = (pygpu_node *)self;
    for (int i = 0; i < n->nin; i++) {
        Py_CLEAR(n->next[i]);
    }
    for (int i = 0; i < PYGPU_NODE_MAX_SAVED; i++) {
        Py_CLEAR(n->saved[i]);
    }
    Py_CLEAR(n->key);
    Py_CLEAR(n->variable);
    Py_CLEAR(n->retained);
    Py_CLEAR(n->pre_hooks);
    Py_CLEAR(n->fn_ctx);
    Py_CLEAR(n->fn_outputs);
    Py_CLEAR(n->fn_saved);
    return 0;
}

/* Freeing a Node frees the Nodes only it held, and so on down the graph.
 * That must not recurse as deep as the graph (a chain of a million Nodes,
 * freed on a thread with a small stack): the outermost node_dealloc of a
 * thread frees its Node, and any Node whose last reference goes meanwhile
 * is queued on the thread's list and freed by the same loop.  (CPython's
 * trashcan is not enough: from 3.13 it lets the nesting reach the C
 * recursion limit, thousands of levels.)  Thread-local, so no lock; the
 * list is given back when the loop ends.  If the list cannot grow, that
 * one Node is freed where it is, nested. */
static _Thread_local PyObject **dealloc_pending;
static _Thread_local size_t dealloc_count, dealloc_cap;
static _Thread_local int dealloc_running;

static void
node_free(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (((pygpu_node *)self)->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    node_clear(self);
    /* The str its name points into: never cleared before (a str holds
     * nothing, so it is in no cycle). */
    Py_CLEAR(((pygpu_node *)self)->fn_name);
    PyMem_Free(((pygpu_node *)self)->in_shape); /* the inputs' block */
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int
dealloc_defer(PyObject *self)
{
    if (dealloc_count == dealloc_cap) {
        size_t cap = dealloc_cap ? 2 * dealloc_cap : 64;
        PyObject **grown =
            PyMem_Realloc(dealloc_pending, cap * sizeof(*dealloc_pending));
        if (grown == NULL) {
            return -1;
        }
        dealloc_pending = grown;
        dealloc_cap = cap;
    }
    dealloc_pending[dealloc_count++] = self;
    return 0;
}

static void
node_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    if (dealloc_running) {
        if (dealloc_defer(self) < 0) {
            node_free(self);
        }
        return;
    }
    dealloc_running = 1;
    node_free(self);
    while (dealloc_count > 0) {
        node_free(dealloc_pending[--dealloc_count]);
    }
    PyMem_Free(dealloc_pending);
    dealloc_pending = NULL;
    dealloc_cap = 0;
    dealloc_running = 0;
}

static PyObject *
node_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<%s object at %p>",
                                ((pygpu_node *)self)->name, self);
}

static PyObject *
node_name(PyObject *self, PyObject *noargs)
{
    return PyUnicode_FromString(((pygpu_node *)self)->name);
}

static PyObject *
node_next_functions(PyObject *self, void *closure)
{
    pygpu_node *n = (pygpu_node *)self;
    PyObject *r = PyTuple_New(n->nin);
    if (r == NULL) {
        return NULL;
    }
    for (int i = 0; i < n->nin; i++) {
        PyObject *item = Py_BuildValue(
            "(Oi)", n->next[i] != NULL ? n->next[i] : Py_None,
            n->next[i] != NULL && n->next_nr != NULL ? n->next_nr[i] : 0);
        if (item == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, i, item);
    }
    return r;
}

static PyObject *
node_variable(PyObject *self, void *closure)
{
    pygpu_node *n = (pygpu_node *)self;
    if (n->variable == NULL) {
        PyErr_Format(PyExc_AttributeError,
                     "'%s' object has no attribute 'variable'", n->name);
        return NULL;
    }
    return Py_NewRef(n->variable);
}

/* A custom Function's Node also shows its ctx's attributes (torch's
 * grad_fn is the ctx): y.grad_fn.saved_tensors, y.grad_fn.constant. */
static PyObject *
node_getattro(PyObject *self, PyObject *name)
{
    PyObject *ctx = ((pygpu_node *)self)->fn_ctx;
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r != NULL || ctx == NULL ||
        !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return r;
    }
    PyErr_Clear();
    return PyObject_GetAttr(ctx, name);
}

static PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS,
     "name($self, /)\n--\n\n"
     "The node's name, as torch's: 'AddBackward0', 'AccumulateGrad'."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, NULL,
     "The Nodes of the inputs, as (node, 0) pairs; None where an input\n"
     "needs no gradient.", NULL},
    {"variable", node_variable, NULL,
     "AccumulateGrad: the leaf tensor it accumulates into.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef node_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(pygpu_node, weakreflist),
     READONLY},
    {NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_traverse, node_traverse},
    {Py_tp_clear, node_clear},
    {Py_tp_repr, node_repr},
    {Py_tp_getattro, node_getattro},
    {Py_tp_methods, node_methods},
    {Py_tp_getset, node_getset},
    {Py_tp_members, node_members},
    {Py_tp_doc, "A step of the recorded graph: a tensor's grad_fn."},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "pygpu._C.Node",
    .basicsize = sizeof(pygpu_node),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = node_slots,
};

/* Why a write the ops did not see recorded is refused (the module
 * state's write_refusal): t takes part in autograd. */
static const char *
write_refusal(const TensorObject *t)
{
    pygpu_node *n = (pygpu_node *)t->grad_fn;
    int of_leaf = n != NULL && n->is_view && n->next[0] != NULL &&
                  ((pygpu_node *)n->next[0])->backward == NULL;
    return n == NULL ? "a leaf Variable that requires grad is being used "
                       "in an in-place operation."
           : of_leaf ? "a view of a leaf Variable that requires grad is "
                       "being used in an in-place operation."
                     : "pygpu's autograd does not record this in-place "
                       "write (copy_, fill_, zero_, t[k] = v, out=) to a "
                       "tensor that requires grad; write to a copy, or "
                       "under pygpu.no_grad()";
}

int
pygpu_autograd_register(PyObject *m)
{
    pygpu_state->write_refusal = write_refusal;
    PyObject *type = pygpu_add_type(m, &node_spec, NULL, "Node");
    if (type == NULL) {
        return -1;
    }
    Node_Type = (PyTypeObject *)type; /* kept for the process */
    return pygpu_autograd_hooks_register(m);
}
