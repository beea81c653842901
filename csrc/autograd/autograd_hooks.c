/* autograd_hooks.c - tensor hooks, with torch's names and semantics.
 *
 * Tensor.register_hook(hook): hook(grad) runs when the gradient with
 * respect to the tensor has been computed, before it is used (a leaf's
 * before it is accumulated into .grad); a returned tensor replaces it.
 * A non-leaf's hooks live on its grad_fn (so they outlive the tensor, as
 * torch's do), a leaf's on the tensor (its AccumulateGrad node reads them).
 * Tensor.register_post_accumulate_grad_hook(hook), leaves only:
 * hook(tensor) after backward has accumulated into tensor.grad.
 *
 * Each list of hooks is a dict {id: hook} (insertion ordered: hooks run in
 * the order registered); the RemovableHandle returned holds the dict and
 * the id, and remove() deletes the entry, as torch.utils.hooks does.  The
 * engine calls the hooks over a snapshot of the dict, so a hook may add or
 * remove hooks.
 */
#include "autograd/autograd.h"

#include <stdatomic.h>
#include <string.h>

#define SELF ((TensorObject *)op)

static PyTypeObject *Handle_Type;
static atomic_llong next_hook_id; /* ids shared by every hook dict */

/* ------------------------------------------------------ the handle */

typedef struct {
    PyObject_HEAD
    PyObject *hooks;  /* the dict the hook was added to */
    long long id;
} HandleObject;

static int
handle_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((HandleObject *)self)->hooks);
    return 0;
}

static int
handle_clear(PyObject *self)
{
    Py_CLEAR(((HandleObject *)self)->hooks);
    return 0;
}

static void
handle_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    handle_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
handle_remove(PyObject *self, PyObject *noargs)
{
    HandleObject *h = (HandleObject *)self;
    if (h->hooks != NULL) {
        PyObject *key = PyLong_FromLongLong(h->id);
        if (key == NULL) {
            return NULL;
        }
        int rc = PyDict_DelItem(h->hooks, key);
        Py_DECREF(key);
        if (rc < 0) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
                return NULL;
            }
            PyErr_Clear(); /* removed twice: nothing to do, as torch */
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
handle_enter(PyObject *self, PyObject *noargs)
{
    return Py_NewRef(self);
}

static PyObject *
handle_exit(PyObject *self, PyObject *args)
{
    return handle_remove(self, NULL);
}

static PyObject *
handle_id(PyObject *self, void *closure)
{
    return PyLong_FromLongLong(((HandleObject *)self)->id);
}

static PyMethodDef handle_methods[] = {
    {"remove", handle_remove, METH_NOARGS,
     "remove($self, /)\n--\n\n"
     "Remove the hook (a second call does nothing)."},
    {"__enter__", handle_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\nThe handle itself."},
    {"__exit__", handle_exit, METH_VARARGS,
     "__exit__($self, *exc_info, /)\n--\n\nRemove the hook."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"id", handle_id, NULL, "The hook's key in its list of hooks.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_methods, handle_methods},
    {Py_tp_getset, handle_getset},
    {Py_tp_doc, "A registered hook; remove() unregisters it (as torch's "
                "torch.utils.hooks.RemovableHandle)."},
    {0, NULL},
};

static PyType_Spec handle_spec = {
    .name = "pygpu._C.RemovableHandle",
    .basicsize = sizeof(HandleObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = handle_slots,
};

/* hook added to *dict (made when NULL); its handle. */
static PyObject *
add_hook(PyObject **dict, PyObject *hook)
{
    if (!PyCallable_Check(hook)) {
        PyErr_Format(PyExc_TypeError, "hook must be callable, not %.100s",
                     Py_TYPE(hook)->tp_name);
        return NULL;
    }
    if (*dict == NULL && (*dict = PyDict_New()) == NULL) {
        return NULL;
    }
    HandleObject *h = PyObject_GC_New(HandleObject, Handle_Type);
    if (h == NULL) {
        return NULL;
    }
    h->hooks = Py_NewRef(*dict);
    h->id = atomic_fetch_add(&next_hook_id, 1);
    PyObject_GC_Track(h);
    PyObject *key = PyLong_FromLongLong(h->id);
    if (key == NULL || PyDict_SetItem(*dict, key, hook) < 0) {
        Py_XDECREF(key);
        Py_DECREF(h);
        return NULL;
    }
    Py_DECREF(key);
    return (PyObject *)h;
}

/* hook added to the dict of output k of n, a Node of several outputs
 * (its pre_hooks: a list of dicts, None for an output without hooks). */
static PyObject *
add_output_hook(pygpu_node *n, int k, PyObject *hook)
{
    PyObject *dict = NULL, *h = NULL;
    if (n->pre_hooks == NULL &&
        (n->pre_hooks = pygpu_ag_none_list(n->nout)) == NULL) {
        return NULL;
    }
    PyObject *d = PyList_GET_ITEM(n->pre_hooks, k);
    dict = d == Py_None ? NULL : Py_NewRef(d);
    h = add_hook(&dict, hook);
    if (h != NULL && d == Py_None &&
        PyList_SetItem(n->pre_hooks, k, Py_NewRef(dict)) < 0) {
        Py_CLEAR(h);
    }
    Py_XDECREF(dict);
    return h;
}

/* ------------------------------------------------------ registering */

static int
check_requires_grad(TensorObject *t)
{
    if (!pygpu_requires_grad(t)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cannot register a hook on a tensor that doesn't "
                        "require gradient");
        return -1;
    }
    return 0;
}

static PyObject *
t_register_hook(PyObject *op, PyObject *hook)
{
    if (check_requires_grad(SELF) < 0) {
        return NULL;
    }
    if (SELF->grad_fn != NULL) {
        pygpu_node *n = (pygpu_node *)SELF->grad_fn;
        if (n->nout > 1) {
            return add_output_hook(n, pygpu_ag_output_nr(SELF), hook);
        }
        return add_hook(&n->pre_hooks, hook);
    }
    return add_hook(&SELF->hooks, hook);
}

static PyObject *
t_register_post_accumulate_grad_hook(PyObject *op, PyObject *hook)
{
    if (check_requires_grad(SELF) < 0) {
        return NULL;
    }
    if (SELF->grad_fn != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "post accumulate grad hooks cannot be registered on "
                        "non-leaf tensors");
        return NULL;
    }
    return add_hook(&SELF->post_hooks, hook);
}

PyMethodDef pygpu_hook_methods[] = {
    {"register_hook", t_register_hook, METH_O,
     "register_hook($self, hook, /)\n--\n\n"
     "hook(grad) -> Tensor or None runs when the gradient with respect to\n"
     "this tensor has been computed (a leaf's before it is accumulated into\n"
     ".grad); a returned tensor replaces the gradient.  Hooks run in the\n"
     "order registered.  Returns a handle whose remove() unregisters it."},
    {"register_post_accumulate_grad_hook",
     t_register_post_accumulate_grad_hook, METH_O,
     "register_post_accumulate_grad_hook($self, hook, /)\n--\n\n"
     "Leaves only: hook(tensor) runs after backward has accumulated the\n"
     "gradient into tensor.grad (not for autograd.grad, which accumulates\n"
     "nothing).  Returns a handle whose remove() unregisters it."},
    {NULL, NULL, 0, NULL},
};

/* ---------------------------------------------------------- running */

/* The hook's result checked as torch checks it: None or a tensor like
 * the gradient it replaces. */
static int
check_result(PyObject *hook, PyObject *r, TensorObject *g)
{
    if (r == Py_None) {
        return 0;
    }
    if (!Tensor_Check(r)) {
        PyErr_Format(PyExc_TypeError,
                     "expected Tensor or None (got %.100s)",
                     Py_TYPE(r)->tp_name);
        return -1;
    }
    TensorObject *t = (TensorObject *)r;
    const char *what = NULL;
    if (t->ndim != g->ndim ||
        memcmp(t->shape, g->shape, sizeof(int64_t) * (size_t)g->ndim) != 0) {
        what = "size";
    }
    else if (t->dtype != g->dtype) {
        what = "type";
    }
    else if (!pygpu_device_equal(&t->device, &g->device)) {
        what = "device";
    }
    if (what != NULL) {
        PyObject *name = PyObject_GetAttrString(hook, "__name__");
        if (name == NULL) {
            PyErr_Clear();
        }
        PyErr_Format(PyExc_RuntimeError,
                     "hook '%S' has changed the %s of value",
                     name != NULL ? name : (PyObject *)Py_TYPE(hook), what);
        Py_XDECREF(name);
        return -1;
    }
    return 0;
}

int
pygpu_ag_run_hooks(PyObject *hooks, TensorObject **g)
{
    if (hooks == NULL || PyDict_GET_SIZE(hooks) == 0) {
        return 0;
    }
    PyObject *list = PyDict_Values(hooks); /* a snapshot */
    if (list == NULL) {
        return -1;
    }
    int rc = -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *hook = PyList_GET_ITEM(list, i);
        PyObject *r = PyObject_CallOneArg(hook, (PyObject *)*g);
        if (r == NULL) {
            goto fail;
        }
        if (check_result(hook, r, *g) < 0) {
            Py_DECREF(r);
            goto fail;
        }
        if (r == Py_None) {
            Py_DECREF(r);
        }
        else {
            Py_SETREF(*g, (TensorObject *)r);
        }
    }
    rc = 0;
fail:
    Py_DECREF(list);
    return rc;
}

int
pygpu_ag_run_post_hooks(TensorObject *leaf)
{
    PyObject *hooks = leaf->post_hooks;
    if (hooks == NULL || PyDict_GET_SIZE(hooks) == 0) {
        return 0;
    }
    PyObject *list = PyDict_Values(hooks);
    if (list == NULL) {
        return -1;
    }
    int rc = -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *r = PyObject_CallOneArg(PyList_GET_ITEM(list, i),
                                          (PyObject *)leaf);
        if (r == NULL) {
            goto fail;
        }
        int bad = r != Py_None;
        Py_DECREF(r);
        if (bad) {
            PyErr_SetString(PyExc_RuntimeError,
                            "Tensor post accumulate grad hooks should "
                            "return None.");
            goto fail;
        }
    }
    rc = 0;
fail:
    Py_DECREF(list);
    return rc;
}

int
pygpu_autograd_hooks_register(PyObject *m)
{
    PyObject *type =
        pygpu_add_type(m, &handle_spec, NULL, "RemovableHandle");
    if (type == NULL) {
        return -1;
    }
    Handle_Type = (PyTypeObject *)type; /* kept for the process */
    return 0;
}
