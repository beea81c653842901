/* autograd_function.c - the Node of a custom autograd.Function
 * (pygpu/autograd/function.py), with torch's semantics.
 *
 * Function.apply runs forward with grad mode off, then hands the call to
 * _function_record: when grad mode is on and a tensor input requires
 * grad, one Node is made (its edges to the tensor inputs' Nodes; a
 * non-tensor input has none and in_dtype -1), the outputs are given it as
 * their grad_fn (an input returned as it is becomes an alias first, an
 * input marked dirty is rebased onto it, a non-differentiable or integer
 * output gets none), and ctx's saved tensors are kept on the Node with
 * their versions.  An output saved is kept as an alias without history,
 * so that nothing makes a cycle through the Node.
 *
 * In backward the engine hands the Node a gradient for each output (NULL:
 * none reached it); the Node calls ctx._pygpu_backward(grads), which runs
 * the class's backward, and checks what comes back as torch does: one
 * gradient per input (trailing Nones beyond them dropped), None for a
 * non-tensor input, a tensor whose shape the input's expands to (the
 * engine sums it down and converts its dtype), on the input's device.
 */
#include "autograd/autograd.h"

#include <limits.h>
#include <string.h>

/* ---------------------------------------------------- output numbers */

int
pygpu_ag_output_nr(const TensorObject *t)
{
    pygpu_node *n = (pygpu_node *)t->grad_fn;
    if (n == NULL || n->nout <= 1 || n->fn_outputs == NULL) {
        return 0;
    }
    for (int k = 0; k < n->nout; k++) {
        PyObject *ref = PyTuple_GET_ITEM(n->fn_outputs, k);
        if (ref != Py_None && PyWeakref_GetObject(ref) == (PyObject *)t) {
            return k;
        }
    }
    return 0;
}

PyObject *
pygpu_ag_none_list(int n)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l != NULL && i < n; i++) {
        PyList_SET_ITEM(l, i, Py_NewRef(Py_None));
    }
    return l;
}

/* ---------------------------------------------------------- backward */

/* Whether shape (the input's) expands to g's shape: torch's
 * is_expandable_to. */
static int
expandable(int ndim, const int64_t *shape, const TensorObject *g)
{
    if (ndim > g->ndim) {
        return 0;
    }
    for (int i = 1; i <= ndim; i++) {
        int64_t s = shape[ndim - i], t = g->shape[g->ndim - i];
        if (s != t && s != 1) {
            return 0;
        }
    }
    return 1;
}

/* Gradient i as returned (borrowed), checked against input i. */
static int
check_grad(pygpu_node *n, int i, PyObject *gi)
{
    if (n->in_dtype[i] < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "function %s returned a gradient different than None "
                     "at position %d, but the corresponding forward input "
                     "was not a Variable", n->name, i + 1);
        return -1;
    }
    if (!Tensor_Check(gi)) {
        PyErr_Format(PyExc_RuntimeError,
                     "expected Variable or None (got %.100s)",
                     Py_TYPE(gi)->tp_name);
        return -1;
    }
    TensorObject *g = (TensorObject *)gi;
    if (n->next[i] == NULL) {
        return 0; /* not wanted: dropped, as torch drops it */
    }
    if (!expandable(n->in_ndim[i], n->in_shape[i], g)) {
        char a[256], b[256];
        pygpu_format_shape(a, sizeof(a), g->ndim, g->shape);
        pygpu_format_shape(b, sizeof(b), n->in_ndim[i], n->in_shape[i]);
        PyErr_Format(PyExc_RuntimeError,
                     "Function %s returned an invalid gradient at index %d "
                     "- got [%s] but expected shape compatible with [%s]",
                     n->name, i, a, b);
        return -1;
    }
    if (g->ndim > 0 && !pygpu_device_equal(&g->device, &n->in_device[i])) {
        char a[64], b[64];
        pygpu_device_str(&n->in_device[i], a, sizeof(a));
        pygpu_device_str(&g->device, b, sizeof(b));
        PyErr_Format(PyExc_RuntimeError,
                     "Function %s returned an invalid gradient at index %d "
                     "- expected device %s but got %s", n->name, i, a, b);
        return -1;
    }
    return 0;
}

/* The gradients backward returned (r, borrowed) as grads[0..nin). */
static int
take_grads(pygpu_node *n, PyObject *r, TensorObject **grads)
{
    PyObject *t = PyTuple_Check(r) ? Py_NewRef(r) : PyTuple_Pack(1, r);
    int rc = -1;
    if (t == NULL) {
        return -1;
    }
    Py_ssize_t got = PyTuple_GET_SIZE(t);
    if (got > n->nin) {
        int all_none = 1;
        for (Py_ssize_t i = n->nin; i < got; i++) {
            all_none &= PyTuple_GET_ITEM(t, i) == Py_None;
        }
        if (all_none) {
            got = n->nin;
        }
    }
    if (got != n->nin) {
        PyErr_Format(PyExc_RuntimeError,
                     "function %s returned an incorrect number of gradients "
                     "(expected %d, got %zd)", n->name, n->nin, got);
        goto fail;
    }
    for (int i = 0; i < n->nin; i++) {
        PyObject *gi = PyTuple_GET_ITEM(t, i);
        if (gi == Py_None) {
            continue;
        }
        if (check_grad(n, i, gi) < 0) {
            goto fail;
        }
        if (n->next[i] != NULL) {
            grads[i] = (TensorObject *)Py_NewRef(gi);
        }
    }
    rc = 0;
fail:
    if (rc < 0) {
        for (int i = 0; i < n->nin; i++) {
            Py_CLEAR(grads[i]);
        }
    }
    Py_DECREF(t);
    return rc;
}

int
pygpu_ag_function_backward(pygpu_node *n, TensorObject *const *gs,
                           TensorObject **grads)
{
    int nout = n->nout > 1 ? n->nout : 1, rc = -1;
    PyObject *ctx = Py_XNewRef(n->fn_ctx), *args = NULL, *run = NULL;
    PyObject *r = NULL;
    if (ctx == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: its context was cleared",
                     n->name);
        return -1;
    }
    args = PyTuple_New(nout);
    if (args == NULL) {
        goto fail;
    }
    for (int k = 0; k < nout; k++) {
        PyObject *g = gs[k] != NULL ? (PyObject *)gs[k] : Py_None;
        PyTuple_SET_ITEM(args, k, Py_NewRef(g));
    }
    run = PyObject_GetAttrString(ctx, "_pygpu_backward");
    if (run == NULL) {
        goto fail;
    }
    r = PyObject_CallOneArg(run, args);
    if (r == NULL) {
        goto fail;
    }
    rc = take_grads(n, r, grads);
fail:
    Py_XDECREF(r);
    Py_XDECREF(run);
    Py_XDECREF(args);
    Py_DECREF(ctx);
    return rc;
}

/* The rule of a Function of one output. */
static int
backward_one(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    return pygpu_ag_function_backward(n, &g, grads);
}

/* ------------------------------------------------------- recording */

static int
has(PyObject *tuple, PyObject *o)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        if (PyTuple_GET_ITEM(tuple, i) == o) {
            return 1;
        }
    }
    return 0;
}

/* A new tensor over t's memory, without history (new ref). */
static TensorObject *
alias(TensorObject *t)
{
    return pygpu_tensor_view(t, t->ndim, t->shape, t->strides, 0);
}

/* Output o as the caller gets it (new ref), node its grad_fn where it is
 * differentiable; node NULL: nothing is recorded. */
static PyObject *
wrap_output(pygpu_node *node, TensorObject *o, PyObject *inputs,
            PyObject *dirty, PyObject *nondiff)
{
    int is_input = has(inputs, (PyObject *)o);
    int is_dirty = has(dirty, (PyObject *)o);
    int diff = node != NULL && !has(nondiff, (PyObject *)o) &&
               pygpu_dtype_table[o->dtype].is_floating_point;
    if (is_dirty && diff) {
        /* Rebased: the write continues o's history through the Node. */
        pygpu_ag_set_grad_fn(o, (pygpu_node *)Py_NewRef(node));
        return Py_NewRef(o);
    }
    if (!diff && !pygpu_requires_grad(o) && !(is_input && !is_dirty)) {
        return Py_NewRef(o);
    }
    if (diff && !is_input && !pygpu_requires_grad(o)) {
        /* Made by forward: the Node's own. */
        pygpu_ag_set_grad_fn(o, (pygpu_node *)Py_NewRef(node));
        return Py_NewRef(o);
    }
    /* An input returned as it is, or a tensor with a history of its own:
     * an alias (with the Node when differentiable, else detached), so
     * that the caller's tensor keeps its own history. */
    TensorObject *a = alias(o);
    if (a != NULL && diff) {
        pygpu_ag_set_grad_fn(a, (pygpu_node *)Py_NewRef(node));
    }
    return (PyObject *)a;
}

/* The dirty tensors checked as torch checks them; recording: also that
 * none is a leaf that requires grad, or a view in a graph. */
static int
check_dirty(PyObject *dirty, PyObject *outputs, int recording)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dirty); i++) {
        PyObject *d = PyTuple_GET_ITEM(dirty, i);
        if (!has(outputs, d)) {
            PyErr_SetString(PyExc_RuntimeError,
                            "Some elements marked as dirty during the "
                            "forward method were not returned as output. "
                            "The inputs that are modified inplace must all "
                            "be outputs of the Function.");
            return -1;
        }
        TensorObject *t = (TensorObject *)d;
        if (!recording || !Tensor_Check(d)) {
            continue;
        }
        if (t->grad_fn == NULL && t->requires_grad) {
            PyErr_SetString(PyExc_RuntimeError,
                            "a leaf Variable that requires grad has been "
                            "used in an in-place operation.");
            return -1;
        }
        if (t->grad_fn != NULL && ((pygpu_node *)t->grad_fn)->is_view) {
            PyErr_SetString(PyExc_NotImplementedError,
                            "mark_dirty() of a view of a tensor that "
                            "requires grad is not supported; write to the "
                            "base tensor");
            return -1;
        }
    }
    return 0;
}

/* saved (None: nothing) holds only tensors and None: torch's TypeError
 * otherwise, before anything is recorded. */
static int
check_saved(PyObject *saved)
{
    if (saved == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(saved)) {
        PyErr_SetString(PyExc_TypeError, "saved must be a tuple or None");
        return -1;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(saved); j++) {
        PyObject *s = PyTuple_GET_ITEM(saved, j);
        if (s != Py_None && !Tensor_Check(s)) {
            PyErr_Format(PyExc_TypeError,
                         "save_for_backward can only save variables, but "
                         "argument %zd is of type %.100s", j,
                         Py_TYPE(s)->tp_name);
            return -1;
        }
    }
    return 0;
}

/* ctx's saved tensors (checked; None: none) kept on node as (tensor,
 * version, is_output) triples; an output as an alias without history. */
static int
save_all(pygpu_node *node, PyObject *saved)
{
    if (saved == Py_None) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(saved);
    PyObject *kept = PyTuple_New(n);
    if (kept == NULL) {
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *s = PyTuple_GET_ITEM(saved, j), *entry;
        if (s == Py_None) {
            entry = Py_NewRef(Py_None);
        }
        else {
            TensorObject *t = (TensorObject *)s;
            int is_output = t->grad_fn == (PyObject *)node;
            PyObject *keep = is_output ? (PyObject *)alias(t) : Py_NewRef(s);
            entry = keep == NULL ? NULL
                                 : Py_BuildValue("(NkO)", keep,
                                                 (unsigned long)
                                                     *pygpu_version_counter(t),
                                                 is_output ? Py_True
                                                           : Py_False);
        }
        if (entry == NULL) {
            Py_DECREF(kept);
            return -1;
        }
        PyTuple_SET_ITEM(kept, j, entry);
    }
    node->fn_saved = kept;
    node->had_saved = n > 0;
    return 0;
}

/* The Node of a call that records (new ref); its outputs come later. */
static pygpu_node *
make_node(PyObject *ctx, PyObject *name, PyObject *inputs,
          TensorObject **in, int nout)
{
    const char *cname = PyUnicode_AsUTF8(name);
    if (cname == NULL) {
        return NULL;
    }
    int n = (int)PyTuple_GET_SIZE(inputs);
    pygpu_node *node =
        pygpu_ag_node(cname, backward_one, n, (TensorObject *const *)in);
    if (node == NULL) {
        return NULL;
    }
    node->fn_name = Py_NewRef(name);
    node->fn_ctx = Py_NewRef(ctx);
    node->nout = nout;
    for (int i = 0; i < n; i++) {
        if (in[i] == NULL) {
            node->in_dtype[i] = -1;
        }
    }
    return node;
}

PyObject *
pygpu_function_record(PyObject *self, PyObject *args)
{
    PyObject *ctx, *name, *inputs, *outputs, *dirty, *nondiff, *saved;
    PyObject *res = NULL, *refs = NULL, *result = NULL;
    TensorObject **in = NULL;
    pygpu_node *node = NULL;
    if (!PyArg_ParseTuple(args, "OUO!O!O!O!O:_function_record", &ctx, &name,
                          &PyTuple_Type, &inputs, &PyTuple_Type, &outputs,
                          &PyTuple_Type, &dirty, &PyTuple_Type, &nondiff,
                          &saved)) {
        return NULL;
    }
    if (check_saved(saved) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(inputs), nout = PyTuple_GET_SIZE(outputs);
    if (n > INT_MAX || nout > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many inputs or outputs");
        return NULL;
    }
    in = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*in));
    if (in == NULL) {
        pygpu_raise_no_memory("a Function's inputs", sizeof(*in) * (size_t)n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(inputs, i);
        in[i] = Tensor_Check(x) ? (TensorObject *)x : NULL;
    }
    int recording = pygpu_ag_wanted((int)n, (TensorObject *const *)in);
    if (check_dirty(dirty, outputs, recording) < 0) {
        goto fail;
    }
    if (recording &&
        (node = make_node(ctx, name, inputs, in, (int)nout)) == NULL) {
        goto fail;
    }
    res = PyTuple_New(nout);
    if (res == NULL ||
        (node != NULL && nout > 1 && (refs = PyTuple_New(nout)) == NULL)) {
        goto fail;
    }
    for (Py_ssize_t k = 0; k < nout; k++) {
        PyObject *o = PyTuple_GET_ITEM(outputs, k), *w;
        w = !Tensor_Check(o) ? Py_NewRef(o)
                             : wrap_output(node, (TensorObject *)o, inputs,
                                           dirty, nondiff);
        if (w == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(res, k, w);
        if (refs == NULL) {
            continue;
        }
        int mine = node != NULL && Tensor_Check(w) &&
                   ((TensorObject *)w)->grad_fn == (PyObject *)node;
        PyObject *ref = mine ? PyWeakref_NewRef(w, NULL) : Py_NewRef(Py_None);
        if (ref == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(refs, k, ref);
    }
    if (node != NULL) {
        node->fn_outputs = refs;
        refs = NULL;
        if (save_all(node, saved) < 0) {
            goto fail;
        }
    }
    result = Py_BuildValue("(OO)", res,
                           node != NULL ? (PyObject *)node : Py_None);
fail:
    Py_XDECREF(refs);
    Py_XDECREF(res);
    Py_XDECREF(node);
    PyMem_Free(in);
    return result;
}

/* ------------------------------------------------- saved_tensors */

PyObject *
pygpu_function_saved(PyObject *self, PyObject *arg)
{
    if (!pygpu_ag_is_node(arg) || ((pygpu_node *)arg)->fn_name == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "_function_saved: expected a custom Function's node");
        return NULL;
    }
    pygpu_node *node = (pygpu_node *)arg;
    if (node->released) {
        /* Freed by a backward pass: torch's error, as for any node. */
        return (PyObject *)pygpu_ag_saved(node, 0);
    }
    PyObject *kept = node->fn_saved, *r = NULL;
    if (kept == NULL) {
        return PyTuple_New(0);
    }
    Py_INCREF(kept);
    Py_ssize_t n = PyTuple_GET_SIZE(kept);
    r = PyTuple_New(n);
    for (Py_ssize_t j = 0; r != NULL && j < n; j++) {
        PyObject *e = PyTuple_GET_ITEM(kept, j), *item;
        if (e == Py_None) {
            PyTuple_SET_ITEM(r, j, Py_NewRef(Py_None));
            continue;
        }
        TensorObject *t = (TensorObject *)PyTuple_GET_ITEM(e, 0);
        unsigned long was = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(e, 1));
        uint32_t now = *pygpu_version_counter(t);
        if (now != was) {
            char shape[256];
            pygpu_format_shape(shape, sizeof(shape), t->ndim, t->shape);
            PyErr_Format(PyExc_RuntimeError,
                         "one of the variables needed for gradient "
                         "computation has been modified by an inplace "
                         "operation: [%s [%s]], which is needed by %s, is at "
                         "version %u; expected version %lu instead.",
                         pygpu_dtype_table[t->dtype].name, shape, node->name,
                         (unsigned)now, was);
            Py_CLEAR(r);
            break;
        }
        if (PyTuple_GET_ITEM(e, 2) == Py_True) {
            /* An output: with its history again, as torch unpacks it. */
            TensorObject *a = alias(t);
            if (a != NULL) {
                pygpu_ag_set_grad_fn(a, (pygpu_node *)Py_NewRef(node));
            }
            item = (PyObject *)a;
        }
        else {
            item = Py_NewRef(t);
        }
        if (item == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, j, item);
    }
    Py_DECREF(kept);
    return r;
}
