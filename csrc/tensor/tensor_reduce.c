/* tensor_reduce.c - the Python entries of the reductions (functions and
 * Tensor methods: sum, mean, prod, max, min, amax, amin, argmax, argmin):
 * they parse their arguments and call autograd's wrappers
 * (autograd_reduce.c), which call the ops of ops/ops_reduce.c. */
#include "tensor/tensor_reduce.h"

/* How an entry reads its arguments and what it gives. */
enum { E_DTYPE, E_PAIR, E_VALUES, E_INDEX };

typedef struct {
    const char *name;
    int op;
    int form;
} entry;

enum { SUM, MEAN, PROD, MAX, MIN, AMAX, AMIN, ARGMAX, ARGMIN };
static const entry entries[] = {
    [SUM] = {"sum", PYGPU_SUM, E_DTYPE},
    [MEAN] = {"mean", PYGPU_MEAN, E_DTYPE},
    [PROD] = {"prod", PYGPU_PROD, E_DTYPE},
    [MAX] = {"max", PYGPU_MAX, E_PAIR},
    [MIN] = {"min", PYGPU_MIN, E_PAIR},
    [AMAX] = {"amax", PYGPU_MAX, E_VALUES},
    [AMIN] = {"amin", PYGPU_MIN, E_VALUES},
    [ARGMAX] = {"argmax", PYGPU_MAX, E_INDEX},
    [ARGMIN] = {"argmin", PYGPU_MIN, E_INDEX},
};

/* max(input, other) and min(input, other), Tensor other given by position
 * or as other=: the Tensor, else NULL (a borrowed reference). */
static PyObject *
elementwise_other(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs == 1 && nkw == 0 && Tensor_Check(args[0])) {
        return args[0];
    }
    if (nargs == 0 && nkw == 1 && Tensor_Check(args[0]) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0),
                                         "other") == 0) {
        return args[0];
    }
    return NULL;
}

/* method form: t.sum(dim=None, keepdim=False, *, dtype=None) and the
 * others without dtype. */
static PyObject *
reduce_method(int which, PyObject *self, PyObject *const *args,
              Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "keepdim", "dtype"};
    const entry *e = &entries[which];
    PyObject *a[3];
    int keepdim, dtype;
    TensorObject *t = (TensorObject *)self;
    if (e->form == E_PAIR) {
        PyObject *other = elementwise_other(args, nargs, kwnames);
        if (other != NULL) { /* max(input, other): maximum, as torch */
            return PyObject_CallMethod(self, e->op == PYGPU_MAX ? "maximum"
                                                                : "minimum",
                                       "O", other);
        }
    }
    if (pygpu_parse_args(e->name, args, nargs, kwnames, names,
                         e->form == E_DTYPE ? 3 : 2, 2, 0, a) < 0 ||
        pygpu_parse_bool(a[1], 0, &keepdim) < 0) {
        return NULL;
    }
    if (e->form == E_INDEX) { /* (int64 indices: never recorded) */
        return pygpu_reduce_arg(e->op, t, a[0], keepdim, e->name);
    }
    if (e->form != E_DTYPE) {
        return pygpu_ag_reduce(e->op, t, a[0], keepdim, e->form == E_PAIR,
                               e->name);
    }
    if (pygpu_parse_dtype_opt(a[2], -1, &dtype) < 0) {
        return NULL;
    }
    return pygpu_ag_reduce_as(e->op, t, a[0], keepdim, dtype, e->name);
}

PyObject *
pygpu_function_form(const char *name, pygpu_method_fn method,
                    PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    if (nargs < 1 || !Tensor_Check(args[0])) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'input' must be Tensor, not %.100s",
                     name, nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    return method(args[0], args + 1, nargs - 1, kwnames);
}

/* sum and mean as functions also take out=, as torch's: the result is
 * copied in (out_arg.c's rules). */
static PyObject *
with_out(const char *name, pygpu_method_fn method, PyObject *const *args,
         Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *argv[8], *rest, *r;
    TensorObject *out;
    if (pygpu_split_out_kwarg(name, args, nargs, kwnames, argv, 8, &rest,
                              &out) < 0) {
        return NULL;
    }
    r = pygpu_function_form(name, method, argv, nargs, rest);
    Py_XDECREF(rest);
    if (out == NULL) {
        return r;
    }
    return pygpu_out_assign(out, r, (TensorObject *)argv[0]);
}

/* The method pygpu_t_<name> (tensor_methods.c names sum, mean, max) or
 * t_<name>, and the function <name>_fn. */
#define REDUCE_ENTRY(WHICH, name, linkage, mname)                            \
    linkage PyObject *mname(PyObject *self, PyObject *const *args,           \
                            Py_ssize_t nargs, PyObject *kw)                  \
    {                                                                        \
        return reduce_method(WHICH, self, args, nargs, kw);                  \
    }                                                                        \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return pygpu_function_form(#name, mname, args, nargs, kw);           \
    }

#define REDUCE_ENTRY_OUT(WHICH, name, mname)                                 \
    PyObject *mname(PyObject *self, PyObject *const *args, Py_ssize_t nargs, \
                    PyObject *kw)                                            \
    {                                                                        \
        return reduce_method(WHICH, self, args, nargs, kw);                  \
    }                                                                        \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return with_out(#name, mname, args, nargs, kw);                      \
    }

REDUCE_ENTRY_OUT(SUM, sum, pygpu_t_sum)
REDUCE_ENTRY_OUT(MEAN, mean, pygpu_t_mean)
REDUCE_ENTRY(MAX, max, , pygpu_t_max)
REDUCE_ENTRY(PROD, prod, static, t_prod)
REDUCE_ENTRY(MIN, min, static, t_min)
REDUCE_ENTRY(AMAX, amax, static, t_amax)
REDUCE_ENTRY(AMIN, amin, static, t_amin)
REDUCE_ENTRY(ARGMAX, argmax, static, t_argmax)
REDUCE_ENTRY(ARGMIN, argmin, static, t_argmin)

#define DOC_PROD                                                             \
    "The product of all elements, or over dim (an int or a tuple); with\n"  \
    "dtype the input is converted first (integers multiply in int64)."
#define DOC_MIN                                                              \
    "The minimum of all elements, or a (values, indices) pair over dim\n"   \
    "(the first minimum; a NaN counts as the minimum)."
#define DOC_AMAX                                                             \
    "The maximum over dim (an int or a tuple; () or None: every dim),\n"    \
    "without indices; NaN propagates."
#define DOC_AMIN                                                             \
    "The minimum over dim (an int or a tuple; () or None: every dim),\n"    \
    "without indices; NaN propagates."
#define DOC_ARGMAX                                                           \
    "The int64 index of the first maximum of input flattened, or over\n"    \
    "dim; a NaN counts as the maximum."
#define DOC_ARGMIN                                                           \
    "The int64 index of the first minimum of input flattened, or over\n"    \
    "dim; a NaN counts as the minimum."

PyMethodDef pygpu_reduce_functions[] = {
    {"sum", FASTKW(sum_fn),
     "sum($module, input, /, dim=None, keepdim=False, *, dtype=None,\n"
     "    out=None)\n--\n\n"
     "Sum of all elements, or over dim (an int or a tuple); with dtype the\n"
     "input is converted first; into out when given."},
    {"mean", FASTKW(mean_fn),
     "mean($module, input, /, dim=None, keepdim=False, *, dtype=None,\n"
     "     out=None)\n--\n\n"
     "Mean of all elements, or over dim (floating dtypes); with dtype the\n"
     "input is converted first; into out when given."},
    {"max", FASTKW(max_fn),
     "max($module, input, /, dim=None, keepdim=False)\n--\n\n"
     "The maximum of all elements, or a (values, indices) pair over dim."},
    {"prod", FASTKW(prod_fn),
     "prod($module, input, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     DOC_PROD},
    {"min", FASTKW(min_fn),
     "min($module, input, /, dim=None, keepdim=False)\n--\n\n" DOC_MIN},
    {"amax", FASTKW(amax_fn),
     "amax($module, input, /, dim=(), keepdim=False)\n--\n\n" DOC_AMAX},
    {"amin", FASTKW(amin_fn),
     "amin($module, input, /, dim=(), keepdim=False)\n--\n\n" DOC_AMIN},
    {"argmax", FASTKW(argmax_fn),
     "argmax($module, input, /, dim=None, keepdim=False)\n--\n\n" DOC_ARGMAX},
    {"argmin", FASTKW(argmin_fn),
     "argmin($module, input, /, dim=None, keepdim=False)\n--\n\n" DOC_ARGMIN},
    {NULL},
};

/* Tensor methods added to the type at registration (sum, mean and max are
 * in tensor_methods.c). */
PyMethodDef pygpu_reduce_methods[] = {
    {"prod", FASTKW(t_prod),
     "prod($self, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     DOC_PROD},
    {"min", FASTKW(t_min),
     "min($self, /, dim=None, keepdim=False)\n--\n\n" DOC_MIN},
    {"amax", FASTKW(t_amax),
     "amax($self, /, dim=(), keepdim=False)\n--\n\n" DOC_AMAX},
    {"amin", FASTKW(t_amin),
     "amin($self, /, dim=(), keepdim=False)\n--\n\n" DOC_AMIN},
    {"argmax", FASTKW(t_argmax),
     "argmax($self, /, dim=None, keepdim=False)\n--\n\n" DOC_ARGMAX},
    {"argmin", FASTKW(t_argmin),
     "argmin($self, /, dim=None, keepdim=False)\n--\n\n" DOC_ARGMIN},
    {NULL},
};
