/* ops_scan.c - cumsum and cumprod along a dim: the front end of the SCAN
 * kind.  The row of the input's dtype reads it as it is; bool and integer
 * inputs give int64, as in torch; another dtype= converts the input
 * first. */
#include "autograd/autograd.h"
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

/* t.cumsum(dim, *, dtype=None) */
static PyObject *
scan_method(int op, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"dim", "dtype"};
    PyObject *a[2], *r;
    TensorObject *t = (TensorObject *)self;
    int dim;
    if (pygpu_parse_args(scan_names[op], args, nargs, kwnames, names, 2, 1, 1,
                         a) < 0 ||
        pygpu_parse_dim(a[0], t->ndim, &dim) < 0) {
        return NULL;
    }
    int to_acc; /* (no accumulator form: dtype= float32 converts) */
    t = pygpu_reduce_read_as(t, a[1], pygpu_scan_out_dtype(t->dtype), -1,
                             &to_acc);
    if (t == NULL) {
        return NULL;
    }
    r = pygpu_ag_scan(op, t, t->ndim ? dim : 0, scan(op, t, dim));
    Py_DECREF(t);
    return r;
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
