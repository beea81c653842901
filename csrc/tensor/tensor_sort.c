/* tensor_sort.c - _C._sorted_values(input, dim, indices, squeeze, which):
 * the values of sort, topk, kthvalue, median and mode (pygpu/_sorting.py)
 * from the indices the sort chose, recorded by autograd_sort.c with the
 * op's Node (which: 0 sort, 1 topk, 2 kthvalue, 3 median of all, 4 median
 * along dim, 5 mode). */
#include "tensor/tensor.h"

static PyObject *
sorted_values_py(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    static const char *const names[] = {"input", "dim", "indices",
                                        "squeeze", "which"};
    PyObject *a[5];
    int dim, squeeze;
    if (pygpu_parse_args("_sorted_values", args, nargs, kwnames, names, 5,
                         5, 5, a) < 0) {
        return NULL;
    }
    if (!Tensor_Check(a[0]) || !Tensor_Check(a[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "_sorted_values(): input and indices must be "
                        "Tensors");
        return NULL;
    }
    TensorObject *t = (TensorObject *)a[0], *ix = (TensorObject *)a[2];
    long which = PyLong_AsLong(a[4]);
    if (which == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (which < 0 || which >= PYGPU_NSORTED) {
        PyErr_Format(PyExc_ValueError, "_sorted_values(): which %ld is not "
                     "in [0, %d)", which, PYGPU_NSORTED);
        return NULL;
    }
    if (pygpu_parse_dim(a[1], t->ndim, &dim) < 0 ||
        pygpu_parse_bool(a[3], 0, &squeeze) < 0) {
        return NULL;
    }
    if (ix->ndim != t->ndim || ix->dtype != PYGPU_INT64) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_sorted_values(): indices must be int64 with "
                        "input's number of dims");
        return NULL;
    }
    return pygpu_ag_sorted_values((int)which, t, dim, ix, squeeze);
}

PyMethodDef pygpu_sorted_functions[] = {
    {"_sorted_values", FASTKW(sorted_values_py),
     "_sorted_values($module, input, dim, indices, squeeze, which)\n--\n\n"
     "input gathered along dim at indices (squeezed at dim when asked),\n"
     "recorded with the Node of sort, topk, kthvalue, median or mode."},
    {NULL},
};
