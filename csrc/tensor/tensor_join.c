/* tensor_join.c - the Python-facing cat (concat, concatenate), stack,
 * flip and repeat: their arguments parsed, then autograd_layout.c's
 * recording wrappers, which compute with ops_join.c and ops_flip.c. */
#include "tensor/tensor.h"

/* ------------------------------------------------------------ cat, stack */

static PyObject *
join_call(const char *fname, int stack, PyObject *const *args,
          Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensors", "dim", "out"};
    PyObject *a[3], *r;
    pygpu_tensor_list l;
    if (pygpu_parse_args(fname, args, nargs, kwnames, names, 3, 2, 1, a) <
            0 ||
        pygpu_tensor_list_parse(fname, a[0], &l) < 0) {
        return NULL;
    }
    r = pygpu_ag_join(fname, &l, a[1], a[2], stack);
    Py_DECREF(l.seq);
    return r;
}

#define JOIN_FN(name, stack)                                                 \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return join_call(#name, stack, args, nargs, kwnames);                \
    }

JOIN_FN(cat, 0)
JOIN_FN(concat, 0)
JOIN_FN(concatenate, 0)
JOIN_FN(stack, 1)

PyMethodDef pygpu_join_functions[] = {
    {"cat", FASTKW(cat_fn),
     "cat($module, tensors, dim=0, *, out=None)\n--\n\n"
     "The tensors joined along dim (promoted to a common dtype, on one\n"
     "device; 1-d tensors with no elements are skipped, as in torch)."},
    {"concat", FASTKW(concat_fn),
     "concat($module, tensors, dim=0, *, out=None)\n--\n\n"
     "An alias of cat."},
    {"concatenate", FASTKW(concatenate_fn),
     "concatenate($module, tensors, dim=0, *, out=None)\n--\n\n"
     "An alias of cat."},
    {"stack", FASTKW(stack_fn),
     "stack($module, tensors, dim=0, *, out=None)\n--\n\n"
     "The tensors (all of one shape) joined along a new dim."},
    {NULL},
};

/* ----------------------------------------------------------------- flip */

static PyObject *
flip_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"input", "dims"};
    PyObject *a[2], *seq = NULL, *r = NULL;
    PyObject *const *items;
    Py_ssize_t n;
    if (pygpu_parse_args("flip", args, nargs, kwnames, names, 2, 2, 2, a) <
            0 ||
        pygpu_tensor_arg(a[0], "flip", "input") < 0 ||
        pygpu_unpack_dims(&a[1], 1, &seq, &items, &n) < 0) {
        return NULL;
    }
    r = pygpu_ag_flip((TensorObject *)a[0], items, n);
    Py_XDECREF(seq);
    return r;
}

PyObject *
pygpu_t_flip(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq = NULL, *r;
    PyObject *const *items;
    Py_ssize_t n;
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "flip() missing 1 required positional arguments: "
                        "\"dims\"");
        return NULL;
    }
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    r = pygpu_ag_flip((TensorObject *)op, items, n);
    Py_XDECREF(seq);
    return r;
}

PyMethodDef pygpu_flip_functions[] = {
    {"flip", FASTKW(flip_fn),
     "flip($module, input, dims)\n--\n\n"
     "A copy of input with the order of elements reversed along dims."},
    {NULL},
};

/* --------------------------------------------------------------- repeat */

PyObject *
pygpu_t_repeat(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t reps[PYGPU_MAX_DIMS];
    PyObject *seq = NULL, *r = NULL;
    PyObject *const *items;
    Py_ssize_t n;
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "repeat() missing 1 required positional arguments: "
                        "\"repeats\"");
        return NULL;
    }
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return NULL;
    }
    if (pygpu_parse_sizes("repeats", items, n, reps) == 0) {
        r = pygpu_ag_repeat((TensorObject *)op, reps, (int)n);
    }
    Py_XDECREF(seq);
    return r;
}
