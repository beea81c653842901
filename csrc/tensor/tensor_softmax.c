/* tensor_softmax.c - the Python entries of softmax, log_softmax and
 * logsumexp (functions and Tensor methods): they parse their arguments and
 * call autograd's wrappers (autograd_reduce.c), which call the ops of
 * ops/ops_softmax.c. */
#include "tensor/tensor_reduce.h"

static const char *const soft_names[] = {"softmax", "log_softmax"};

/* t.softmax(dim, dtype=None), t.log_softmax(dim, dtype=None) */
static PyObject *
softmax_method(int op, PyObject *self, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "dtype"};
    PyObject *a[2];
    TensorObject *t = (TensorObject *)self;
    int dim, dtype;
    if (pygpu_parse_args(soft_names[op], args, nargs, kwnames, names, 2, 2,
                         1, a) < 0 ||
        pygpu_parse_dim(a[0], t->ndim, &dim) < 0 ||
        pygpu_parse_dtype_opt(a[1], -1, &dtype) < 0) {
        return NULL;
    }
    return pygpu_ag_softmax(op, t, dim, dtype);
}

/* t.logsumexp(dim, keepdim=False) */
static PyObject *
t_logsumexp(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"dim", "keepdim"};
    PyObject *a[2];
    int keepdim;
    if (pygpu_parse_args("logsumexp", args, nargs, kwnames, names, 2, 2, 1,
                         a) < 0 ||
        pygpu_parse_bool(a[1], 0, &keepdim) < 0) {
        return NULL;
    }
    return pygpu_ag_logsumexp((TensorObject *)self, a[0], keepdim);
}

PYGPU_OP_METHOD(t_softmax, softmax_method, PYGPU_SOFTMAX)
PYGPU_OP_METHOD(t_log_softmax, softmax_method, PYGPU_LOG_SOFTMAX)

#define SOFTMAX_FN(name)                                                     \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return pygpu_function_form(#name, t_##name, args, nargs, kw);        \
    }

SOFTMAX_FN(softmax)
SOFTMAX_FN(log_softmax)
SOFTMAX_FN(logsumexp)

#define DOC_SOFTMAX                                                          \
    "exp(x) / sum(exp(x)) along dim, with the maximum subtracted first;\n"  \
    "dtype converts the input first (float16 computes in float32)."
#define DOC_LOG_SOFTMAX                                                      \
    "x - logsumexp(x) along dim, with the maximum subtracted first;\n"      \
    "dtype converts the input first (float16 computes in float32)."
#define DOC_LOGSUMEXP                                                        \
    "log(sum(exp(x))) over dim (an int or a tuple), with the maximum\n"     \
    "subtracted first; integers give float32."

PyMethodDef pygpu_softmax_functions[] = {
    {"softmax", FASTKW(softmax_fn),
     "softmax($module, input, /, dim, dtype=None)\n--\n\n" DOC_SOFTMAX},
    {"log_softmax", FASTKW(log_softmax_fn),
     "log_softmax($module, input, /, dim, dtype=None)\n--\n\n"
     DOC_LOG_SOFTMAX},
    {"logsumexp", FASTKW(logsumexp_fn),
     "logsumexp($module, input, /, dim, keepdim=False)\n--\n\n"
     DOC_LOGSUMEXP},
    {NULL},
};

PyMethodDef pygpu_softmax_methods[] = {
    {"softmax", FASTKW(t_softmax),
     "softmax($self, /, dim, dtype=None)\n--\n\n" DOC_SOFTMAX},
    {"log_softmax", FASTKW(t_log_softmax),
     "log_softmax($self, /, dim, dtype=None)\n--\n\n" DOC_LOG_SOFTMAX},
    {"logsumexp", FASTKW(t_logsumexp),
     "logsumexp($self, /, dim, keepdim=False)\n--\n\n" DOC_LOGSUMEXP},
    {NULL},
};
