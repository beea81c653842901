/* tensor_scan.c - the Python entries of cumsum and cumprod (functions and
 * Tensor methods): they parse their arguments and call autograd's wrapper
 * (autograd_reduce.c), which calls the op of ops/ops_scan.c. */
#include "tensor/tensor_reduce.h"

static const char *const scan_names[] = {"cumsum", "cumprod"};

/* t.cumsum(dim, *, dtype=None) */
static PyObject *
scan_method(int op, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"dim", "dtype"};
    PyObject *a[2];
    TensorObject *t = (TensorObject *)self;
    int dim, dtype;
    if (pygpu_parse_args(scan_names[op], args, nargs, kwnames, names, 2, 1, 1,
                         a) < 0 ||
        pygpu_parse_dim(a[0], t->ndim, &dim) < 0 ||
        pygpu_parse_dtype_opt(a[1], -1, &dtype) < 0) {
        return NULL;
    }
    return pygpu_ag_scan(op, t, dim, dtype);
}

PYGPU_OP_METHOD(t_cumsum, scan_method, PYGPU_CUMSUM)
PYGPU_OP_METHOD(t_cumprod, scan_method, PYGPU_CUMPROD)

static PyObject *
cumsum_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return pygpu_function_form("cumsum", t_cumsum, args, nargs, kw);
}

static PyObject *
cumprod_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kw)
{
    return pygpu_function_form("cumprod", t_cumprod, args, nargs, kw);
}

#define DOC_CUMSUM                                                           \
    "Running sums along dim (same shape); integers give int64, dtype\n"     \
    "converts the input first."
#define DOC_CUMPROD                                                          \
    "Running products along dim (same shape); integers give int64, dtype\n" \
    "converts the input first."

PyMethodDef pygpu_scan_functions[] = {
    {"cumsum", FASTKW(cumsum_fn),
     "cumsum($module, input, /, dim, *, dtype=None)\n--\n\n" DOC_CUMSUM},
    {"cumprod", FASTKW(cumprod_fn),
     "cumprod($module, input, /, dim, *, dtype=None)\n--\n\n" DOC_CUMPROD},
    {NULL},
};

PyMethodDef pygpu_scan_methods[] = {
    {"cumsum", FASTKW(t_cumsum),
     "cumsum($self, /, dim, *, dtype=None)\n--\n\n" DOC_CUMSUM},
    {"cumprod", FASTKW(t_cumprod),
     "cumprod($self, /, dim, *, dtype=None)\n--\n\n" DOC_CUMPROD},
    {NULL},
};
