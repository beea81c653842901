/* ops_scan.c - cumsum and cumprod along a dim: the op of the SCAN kind.
 * The row of the input's dtype reads it as it is; bool and integer inputs
 * give int64, as in torch; another dtype= converts the input first.  It
 * never records: autograd_reduce.c wraps it, and its Python entries are in
 * tensor/tensor_scan.c. */
#include "ops/reduce.h"

static const char *const scan_names[PYGPU_NSCANOPS] = {"cumsum", "cumprod"};

static PyObject *
scan(int op, TensorObject *t, int dim)
{
    TensorObject *in = NULL, *out = NULL;
    int64_t outer, n, inner;
    pygpu_dim_split(t->ndim, t->shape, dim, &outer, &n, &inner);
    in = pygpu_tensor_contiguous(t);
    out = in ? pygpu_tensor_empty(t->ndim, t->shape,
                                  pygpu_scan_out_dtype(t->dtype), t->device)
             : NULL;
    if (out != NULL && outer * n * inner > 0) {
        pygpu_kargs k = {.op = op, .out = out->data, .in = {in->data},
                         .outer = outer, .n = n, .inner = inner,
                         .numel = outer * n * inner};
        if (pygpu_dispatch(PYGPU_K_SCAN, t->device, t->dtype, &k,
                           scan_names[op]) < 0) {
            Py_CLEAR(out);
        }
    }
    Py_XDECREF(in);
    return (PyObject *)out;
}

PyObject *
pygpu_op_scan(int op, TensorObject *t, int dim, int dtype)
{
    if (dtype < 0 || dtype == pygpu_scan_out_dtype(t->dtype)) {
        return scan(op, t, dim);
    }
    TensorObject *x = pygpu_as_dtype(t, dtype);
    PyObject *r = x ? scan(op, x, dim) : NULL;
    Py_XDECREF(x);
    return r;
}
