/* tensor_where.c - where and masked_fill(_) as Python sees them: the
 * functions and the Tensor methods, recorded by autograd
 * (autograd_where.c) and computed by ops/ops_where.c. */
#include "tensor/tensor.h"

PyObject *
pygpu_t_where(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"condition", "other"};
    PyObject *a[2];
    if (pygpu_parse_args("where", args, nargs, kwnames, names, 2, 2, 2, a) <
        0) {
        return NULL;
    }
    return pygpu_ag_where(a[0], op, a[1]);
}

static int
masked_fill_args(const char *name, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, PyObject **a)
{
    static const char *const names[] = {"mask", "value"};
    return pygpu_parse_args(name, args, nargs, kwnames, names, 2, 2, 2, a);
}

PyObject *
pygpu_t_masked_fill_(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    PyObject *a[2];
    if (masked_fill_args("masked_fill_", args, nargs, kwnames, a) < 0) {
        return NULL;
    }
    return pygpu_ag_masked_fill_((TensorObject *)op, a[0], a[1]);
}

/* A copy of self (broadcast with the mask) filled where the mask is. */
PyObject *
pygpu_t_masked_fill(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    PyObject *a[2];
    if (masked_fill_args("masked_fill", args, nargs, kwnames, a) < 0 ||
        pygpu_tensor_arg(a[0], "masked_fill", "mask") < 0) {
        return NULL;
    }
    return pygpu_ag_masked_fill((TensorObject *)op, (TensorObject *)a[0],
                                a[1]);
}

static PyObject *
where_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"condition", "input", "other"};
    PyObject *a[3];
    if (pygpu_parse_args("where", args, nargs, kwnames, names, 3, 3, 3, a) <
        0) {
        return NULL;
    }
    return pygpu_ag_where(a[0], a[1], a[2]);
}

static PyObject *
masked_fill_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"input", "mask", "value"};
    PyObject *a[3];
    if (pygpu_parse_args("masked_fill", args, nargs, kwnames, names, 3, 3, 3,
                         a) < 0 ||
        pygpu_tensor_arg(a[0], "masked_fill", "input") < 0) {
        return NULL;
    }
    return pygpu_t_masked_fill(a[0], a + 1, 2, NULL);
}

PyMethodDef pygpu_where_functions[] = {
    {"where", FASTKW(where_fn),
     "where($module, condition, input, other)\n--\n\n"
     "input where the bool condition is true, else other (tensors or\n"
     "numbers; broadcast, promoted)."},
    {"masked_fill", FASTKW(masked_fill_fn),
     "masked_fill($module, input, mask, value)\n--\n\n"
     "A copy of input with value where the bool mask (broadcast) is true."},
    {NULL},
};

PyMethodDef pygpu_where_methods[] = {
    {"where", FASTKW(pygpu_t_where),
     "where($self, condition, other)\n--\n\n"
     "pygpu.where(condition, self, other)."},
    {"masked_fill", FASTKW(pygpu_t_masked_fill),
     "masked_fill($self, mask, value)\n--\n\n"
     "A copy of self with value where the bool mask (broadcast) is true."},
    {"masked_fill_", FASTKW(pygpu_t_masked_fill_),
     "masked_fill_($self, mask, value)\n--\n\n"
     "In-place masked_fill; returns self."},
    {NULL},
};
