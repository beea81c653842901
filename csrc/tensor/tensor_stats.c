/* tensor_stats.c - the Python entries of var, std and norm (functions and
 * Tensor methods): they parse their arguments and call autograd's wrappers
 * (autograd_stats.c), which call the ops of ops/ops_stats.c. */
#include "tensor/tensor_reduce.h"

/* var / std (self, dim=None, unbiased=None, keepdim=False, *,
 * correction=None): unbiased (True: correction 1, False: 0) and correction
 * are two ways to say the same; both given is an error.  A bool in dim's
 * place is unbiased, as torch's var(input, unbiased) form. */
static PyObject *
var_std_method(int take_sqrt, PyObject *self, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "unbiased", "keepdim",
                                        "correction"};
    const char *name = take_sqrt ? "std" : "var";
    PyObject *a[4];
    int keepdim, unbiased = 1;
    double correction = 1.0;
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 4, 3, 0, a) < 0) {
        return NULL;
    }
    if (a[0] != NULL && PyBool_Check(a[0]) && a[1] == NULL) {
        a[1] = a[0];
        a[0] = NULL;
    }
    if (pygpu_parse_bool(a[2], 0, &keepdim) < 0) {
        return NULL;
    }
    if (a[1] != NULL && a[1] != Py_None) {
        if (a[3] != NULL && a[3] != Py_None) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s(): cannot specify both unbiased and correction",
                         name);
            return NULL;
        }
        if (pygpu_parse_bool(a[1], 1, &unbiased) < 0) {
            return NULL;
        }
        correction = unbiased ? 1.0 : 0.0;
    }
    else if (a[3] != NULL && a[3] != Py_None) {
        correction = PyFloat_AsDouble(a[3]);
        if (correction == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    return pygpu_ag_var_std((TensorObject *)self, a[0], correction, keepdim,
                            take_sqrt, name);
}

/* norm(self, p='fro', dim=None, keepdim=False, dtype=None) */
static PyObject *
norm_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    static const char *const names[] = {"p", "dim", "keepdim", "dtype"};
    PyObject *a[4];
    int keepdim, dtype;
    double p = 2.0;
    if (pygpu_parse_args("norm", args, nargs, kwnames, names, 4, 4, 0, a) <
            0 ||
        pygpu_parse_bool(a[2], 0, &keepdim) < 0) {
        return NULL;
    }
    if (a[0] != NULL && PyUnicode_Check(a[0])) {
        if (PyUnicode_CompareWithASCIIString(a[0], "fro") != 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "norm(): p=%R is not supported (only 'fro' and "
                         "numbers)", a[0]);
            return NULL;
        }
    }
    else if (a[0] != NULL && a[0] != Py_None) {
        p = PyFloat_AsDouble(a[0]);
        if (p == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    if (pygpu_parse_dtype_opt(a[3], -1, &dtype) < 0) {
        return NULL;
    }
    return pygpu_ag_norm((TensorObject *)self, p, a[1], keepdim, dtype);
}

static PyObject *
t_var(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return var_std_method(0, self, args, nargs, kw);
}

static PyObject *
t_std(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return var_std_method(1, self, args, nargs, kw);
}

#define STATS_FN(name, method)                                              \
    static PyObject *name##_fn(PyObject *m, PyObject *const *args,           \
                               Py_ssize_t nargs, PyObject *kw)               \
    {                                                                        \
        return pygpu_function_form(#name, method, args, nargs, kw);          \
    }

STATS_FN(var, t_var)
STATS_FN(std, t_std)
STATS_FN(norm, norm_method)

#define DOC_VAR(what)                                                        \
    "The " what " over dim (None: every element; an int or a tuple),\n"     \
    "dividing by N - correction (correction=1 by default; unbiased=False\n" \
    "means 0); computed in two passes, float16 in float32."
#define DOC_NORM                                                             \
    "The vector p-norm over dim (None: every element; an int or a\n"        \
    "tuple): p = 'fro' or 2 (default), 1, inf, -inf, 0 or another number."

PyMethodDef pygpu_stats_functions[] = {
    {"var", FASTKW(var_fn),
     "var($module, input, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("variance")},
    {"std", FASTKW(std_fn),
     "std($module, input, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("standard deviation")},
    {"norm", FASTKW(norm_fn),
     "norm($module, input, /, p='fro', dim=None, keepdim=False,\n"
     "     dtype=None)\n--\n\n" DOC_NORM},
    {NULL},
};

PyMethodDef pygpu_stats_methods[] = {
    {"var", FASTKW(t_var),
     "var($self, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("variance")},
    {"std", FASTKW(t_std),
     "std($self, /, dim=None, unbiased=None, keepdim=False, *,\n"
     "    correction=None)\n--\n\n" DOC_VAR("standard deviation")},
    {"norm", FASTKW(norm_method),
     "norm($self, /, p='fro', dim=None, keepdim=False, dtype=None)\n--\n\n"
     DOC_NORM},
    {NULL},
};
