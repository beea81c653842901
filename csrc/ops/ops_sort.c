/* ops_sort.c - _C._sort_indices(input, dim, descending): the int64
 * indices that sort input along dim (the SORT kind, one table call).
 * Every line is sorted in kernels/sort_key.h's order: NaN the largest,
 * ties in the order of their index (stable, ascending or descending).
 * sort, argsort, topk, kthvalue, median, mode and unique (pygpu/_sorting.py)
 * are built on it: their values are a gather along dim with these
 * indices, so their gradients are gather's (scattered back through the
 * indices).  Nothing here is recorded: the indices have no gradient.
 */
#include "ops/reduce.h"

/* The indices that sort t along dim (parsed): int64, t's shape. */
static TensorObject *
sort_indices(TensorObject *t, int dim, int descending)
{
    TensorObject *in = NULL, *out = NULL;
    int64_t outer, n, inner;
    pygpu_dim_split(t->ndim, t->shape, dim, &outer, &n, &inner);
    in = pygpu_tensor_contiguous(t);
    out = in ? pygpu_tensor_empty(t->ndim, t->shape, PYGPU_INT64, t->device)
             : NULL;
    if (out != NULL && outer * n * inner > 0) {
        pygpu_kargs k = {.out = out->data, .in = {in->data},
                         .flag = descending, .outer = outer, .n = n,
                         .inner = inner, .numel = outer * n * inner};
        if (pygpu_dispatch(PYGPU_K_SORT, t->device, t->dtype, &k, "sort") <
            0) {
            Py_CLEAR(out);
        }
    }
    Py_XDECREF(in);
    return out;
}

static PyObject *
sort_indices_py(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    static const char *const names[] = {"input", "dim", "descending"};
    PyObject *a[3];
    int dim, descending;
    if (pygpu_parse_args("_sort_indices", args, nargs, kwnames, names, 3, 3,
                         3, a) < 0) {
        return NULL;
    }
    if (!Tensor_Check(a[0])) {
        PyErr_Format(PyExc_TypeError,
                     "_sort_indices(): argument 'input' must be Tensor, not "
                     "%.100s", Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    TensorObject *t = (TensorObject *)a[0];
    if (pygpu_parse_dim(a[1], t->ndim, &dim) < 0 ||
        pygpu_parse_bool(a[2], 0, &descending) < 0) {
        return NULL;
    }
    return (PyObject *)sort_indices(t, dim, descending);
}

PyMethodDef pygpu_sort_functions[] = {
    {"_sort_indices", (PyCFunction)(void (*)(void))sort_indices_py,
     METH_FASTCALL | METH_KEYWORDS,
     "_sort_indices($module, input, dim, descending)\n--\n\n"
     "The int64 indices that sort input along dim: NaN the largest, ties\n"
     "in the order of their index (a stable sort), descending when asked."},
    {NULL},
};
