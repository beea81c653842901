/* autograd_api.c - the entry points of the backward pass: the roots and
 * their gradients checked as torch checks them, then one pass of the
 * engine (autograd_engine.c); Tensor.backward, pygpu.autograd.backward
 * and pygpu.autograd.grad come here. */
#include "autograd/autograd.h"

#include <string.h>


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
 * pass (its own state; other threads' passes may run beside it) with grad
 * mode off. */
static int
engine_run(PyObject *tensors, PyObject *grad_tensors, pygpu_pass *pa)
{
    PyObject *ts = PySequence_Tuple(tensors), *gs = NULL;
    pygpu_node **roots = NULL;
    TensorObject **grads = NULL;
    int *root_nr = NULL;
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
    root_nr = PyMem_Calloc(n ? n : 1, sizeof(*root_nr));
    if (roots == NULL || grads == NULL || root_nr == NULL) {
        pygpu_raise_no_memory("backward()'s roots",
                              2 * sizeof(*roots) * (size_t)(n ? n : 1));
        goto fail;
    }
    for (; made < n; made++) {
        if (root_of(PyTuple_GET_ITEM(ts, made),
                    gs ? PyTuple_GET_ITEM(gs, made) : NULL, (int)made,
                    &roots[made], &grads[made]) < 0) {
            goto fail;
        }
        root_nr[made] =
            pygpu_ag_output_nr((TensorObject *)PyTuple_GET_ITEM(ts, made));
    }
    pa->root_nr = root_nr;
    rc = pygpu_autograd_run((int)n, roots, grads, pa);
    pa->root_nr = NULL;
fail:
    for (Py_ssize_t i = 0; i < made; i++) {
        Py_XDECREF(roots[i]);
        Py_XDECREF(grads[i]);
    }
    PyMem_Free(roots);
    PyMem_Free(grads);
    PyMem_Free(root_nr);
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
    pygpu_pass pa = {0, NULL, NULL, retain};
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
    pygpu_pass pa = {0, NULL, NULL, 0};
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
    int *target_nr = PyMem_Calloc(n ? n : 1, sizeof(*target_nr));
    pa.target_nr = target_nr;
    if (pa.targets == NULL || pa.results == NULL || target_nr == NULL) {
        pygpu_raise_no_memory("autograd.grad()'s inputs",
                              2 * sizeof(*pa.targets) * (size_t)(n ? n : 1));
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
        target_nr[i] = pygpu_ag_output_nr(t);
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
    PyMem_Free(target_nr);
    Py_DECREF(ins);
    return result;
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
    {"_function_record", pygpu_function_record, METH_VARARGS,
     "_function_record($module, ctx, name, inputs, outputs, dirty,\n"
     "                 non_differentiable, saved, /)\n--\n\n"
     "A custom Function's call recorded: (outputs, node or None); see\n"
     "pygpu/autograd/function.py."},
    {"_function_saved", pygpu_function_saved, METH_O,
     "_function_saved($module, node, /)\n--\n\n"
     "The tensors a custom Function's ctx saved, checked against their\n"
     "versions."},
    {NULL, NULL, 0, NULL},
};
