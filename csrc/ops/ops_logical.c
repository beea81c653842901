/* ops_logical.c - logical_not/and/or/xor, bitwise_not/and/or/xor and the
 * & | ^ ~ operators, any and all.
 *
 * The bitwise ops are binary rows of the table (bool and integers); the
 * logical ones compare with 0 first and combine bools (and is *, or is +,
 * xor is !=); any and all count (sum) the nonzero or zero elements. */
#include "ops/ops.h"
#include "ops/logical_methods.h"
#include "ops/reduce.h"

static PyObject *
zero(void)
{
    return PyLong_FromLong(0);
}

/* t != 0 (t itself when bool), or t == 0 (negate). */
static PyObject *
truth(PyObject *t, int negate)
{
    if (!negate && ((TensorObject *)t)->dtype == PYGPU_BOOL) {
        return Py_NewRef(t);
    }
    PyObject *z = zero();
    PyObject *r = z ? pygpu_op_compare(negate ? PYGPU_EQ : PYGPU_NE, t, z,
                                       NULL)
                    : NULL;
    Py_XDECREF(z);
    return r;
}

/* ---------------------------------------------------- logical_* */

enum { L_AND, L_OR, L_XOR };

static PyObject *
logical(int which, PyObject *a, PyObject *b, const char *name)
{
    if (pygpu_tensor_arg(a, name, "input") < 0 ||
        pygpu_tensor_arg(b, name, "other") < 0) {
        return NULL;
    }
    PyObject *x = truth(a, 0), *y = x ? truth(b, 0) : NULL, *r = NULL;
    if (y != NULL) {
        r = which == L_XOR ? pygpu_op_compare(PYGPU_NE, x, y, NULL)
                           : pygpu_op_binary(which == L_AND ? PYGPU_MUL
                                                            : PYGPU_ADD,
                                             x, y, NULL);
    }
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

PyObject *
pygpu_t_logical_not(PyObject *op, PyObject *noargs)
{
    return truth(op, 1);
}

PyObject *
pygpu_t_logical_and(PyObject *op, PyObject *other)
{
    return logical(L_AND, op, other, "logical_and");
}

PyObject *
pygpu_t_logical_or(PyObject *op, PyObject *other)
{
    return logical(L_OR, op, other, "logical_or");
}

PyObject *
pygpu_t_logical_xor(PyObject *op, PyObject *other)
{
    return logical(L_XOR, op, other, "logical_xor");
}

/* ---------------------------------------------------- bitwise_*, & | ^ ~ */

/* a <op> b for the operators: tensors and Python numbers (NumPy scalars
 * as the numbers they hold; NumPy arrays were made tensors by the slot,
 * tensor/tensor_operand.c); anything else is not ours. */
static PyObject *
bitwise(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    PyObject *num = NULL, *r;
    PyObject **other = Tensor_Check(a) ? &b : &a;
    if (PyArray_IsScalar(*other, Bool)) {
        num = PyBool_FromLong(PyObject_IsTrue(*other));
    }
    else if (PyArray_IsScalar(*other, Integer)) {
        num = PyNumber_Long(*other);
    }
    if (num != NULL) {
        *other = num;
    }
    else if (PyErr_Occurred()) {
        return NULL;
    }
    r = pygpu_op_binary(op, a, b, out);
    Py_XDECREF(num);
    return r;
}

#define BITWISE_SLOTS(OP, name, sym)                                         \
    PyObject *pygpu_t_##name(PyObject *a, PyObject *b)                       \
    {                                                                        \
        return bitwise(PYGPU_##OP, a, b, NULL);                              \
    }                                                                        \
    PyObject *pygpu_t_i##name(PyObject *a, PyObject *b)                      \
    {                                                                        \
        return bitwise(PYGPU_##OP, a, b, (TensorObject *)a);                 \
    }
BITWISE_SLOTS(AND, and, "&")
BITWISE_SLOTS(OR, or, "|")
BITWISE_SLOTS(XOR, xor, "^")

static PyObject *
bitwise_call(int op, const char *name, PyObject *a, PyObject *b)
{
    if (pygpu_tensor_arg(a, name, "input") < 0) {
        return NULL;
    }
    PyObject *r = bitwise(op, a, b, NULL);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'other' must be Tensor or Number, not "
                     "%.100s", name, Py_TYPE(b)->tp_name);
        return NULL;
    }
    return r;
}

PyObject *
pygpu_t_bitwise_and(PyObject *op, PyObject *other)
{
    return bitwise_call(PYGPU_AND, "bitwise_and", op, other);
}

PyObject *
pygpu_t_bitwise_or(PyObject *op, PyObject *other)
{
    return bitwise_call(PYGPU_OR, "bitwise_or", op, other);
}

PyObject *
pygpu_t_bitwise_xor(PyObject *op, PyObject *other)
{
    return bitwise_call(PYGPU_XOR, "bitwise_xor", op, other);
}

/* ~t: logical not of bool, x ^ -1 of the integers (-1 wraps to the
 * dtype), refused for floats as torch does. */
PyObject *
pygpu_t_invert(PyObject *op)
{
    TensorObject *t = (TensorObject *)op;
    if (t->dtype == PYGPU_BOOL) {
        return truth(op, 1);
    }
    if (pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_Format(PyExc_RuntimeError,
                     "\"bitwise_not_cpu\" not implemented for '%s'",
                     pygpu_dtype_table[t->dtype].scalar_name);
        return NULL;
    }
    PyObject *m1 = PyLong_FromLong(-1);
    PyObject *r = m1 ? pygpu_op_binary(PYGPU_XOR, op, m1, NULL) : NULL;
    Py_XDECREF(m1);
    return r;
}

PyObject *
pygpu_t_bitwise_not(PyObject *op, PyObject *noargs)
{
    return pygpu_t_invert(op);
}

/* ------------------------------------------------------------ any, all */

/* any: the count of nonzero elements is > 0; all: the count of zero ones
 * is 0.  uint8 gives uint8, as in torch; everything else bool. */
static PyObject *
any_all(int all, PyObject *t, PyObject *dim, PyObject *keepdim)
{
    int keep;
    if (pygpu_parse_bool(keepdim, 0, &keep) < 0) {
        return NULL;
    }
    PyObject *bits = truth(t, all), *z = NULL, *r = NULL;
    PyObject *count = bits ? pygpu_reduce_over(PYGPU_SUM, (TensorObject *)bits,
                                               dim, keep, 0,
                                               all ? "all" : "any")
                           : NULL;
    if (count != NULL && (z = zero()) != NULL) {
        r = pygpu_op_compare(all ? PYGPU_EQ : PYGPU_GT, count, z, NULL);
    }
    if (r != NULL && ((TensorObject *)t)->dtype == PYGPU_UINT8) {
        TensorObject *rt = (TensorObject *)r;
        Py_SETREF(r, (PyObject *)pygpu_tensor_to(rt, rt->device,
                                                 PYGPU_UINT8));
    }
    Py_XDECREF(bits);
    Py_XDECREF(count);
    Py_XDECREF(z);
    return r;
}

static PyObject *
any_all_method(int all, PyObject *op, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"dim", "keepdim"};
    PyObject *a[2];
    if (pygpu_parse_args(all ? "all" : "any", args, nargs, kwnames, names, 2,
                         2, 0, a) < 0) {
        return NULL;
    }
    return any_all(all, op, a[0], a[1]);
}

PyObject *
pygpu_t_any(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return any_all_method(0, op, args, nargs, kwnames);
}

PyObject *
pygpu_t_all(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return any_all_method(1, op, args, nargs, kwnames);
}

/* ---------------------------------------------------------- functions */

static PyObject *
two_tensor_args(const char *name, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames, PyObject **a)
{
    static const char *const names[] = {"input", "other"};
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 2, 2, 2, a) < 0 ||
        pygpu_tensor_arg(a[0], name, "input") < 0) {
        return NULL;
    }
    return Py_None; /* borrowed: success */
}

#define TWO_ARG_FN(name)                                                     \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        PyObject *a[2];                                                      \
        if (two_tensor_args(#name, args, nargs, kwnames, a) == NULL) {       \
            return NULL;                                                     \
        }                                                                    \
        return pygpu_t_##name(a[0], a[1]);                                   \
    }
TWO_ARG_FN(logical_and)
TWO_ARG_FN(logical_or)
TWO_ARG_FN(logical_xor)
TWO_ARG_FN(bitwise_and)
TWO_ARG_FN(bitwise_or)
TWO_ARG_FN(bitwise_xor)

#define ONE_ARG_FN(name)                                                     \
    static PyObject *name##_fn(PyObject *self, PyObject *arg)                \
    {                                                                        \
        if (pygpu_tensor_arg(arg, #name, "input") < 0) {                     \
            return NULL;                                                     \
        }                                                                    \
        return pygpu_t_##name(arg, NULL);                                    \
    }
ONE_ARG_FN(logical_not)
ONE_ARG_FN(bitwise_not)

static PyObject *
any_all_fn(int all, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    static const char *const names[] = {"input", "dim", "keepdim"};
    const char *name = all ? "all" : "any";
    PyObject *a[3];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 3, 3, 1, a) < 0 ||
        pygpu_tensor_arg(a[0], name, "input") < 0) {
        return NULL;
    }
    return any_all(all, a[0], a[1], a[2]);
}

static PyObject *
any_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
       PyObject *kwnames)
{
    return any_all_fn(0, args, nargs, kwnames);
}

static PyObject *
all_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
       PyObject *kwnames)
{
    return any_all_fn(1, args, nargs, kwnames);
}

#define TWO_ARG_ENTRY(name, doc)                                             \
    {#name, FASTKW(name##_fn),                                               \
     #name "($module, input, other)\n--\n\n" doc},

PyMethodDef pygpu_logical_functions[] = {
    {"logical_not", logical_not_fn, METH_O,
     "logical_not($module, input, /)\n--\n\ninput == 0, as a bool tensor."},
    TWO_ARG_ENTRY(logical_and, "(input != 0) and (other != 0), as bool.")
    TWO_ARG_ENTRY(logical_or, "(input != 0) or (other != 0), as bool.")
    TWO_ARG_ENTRY(logical_xor, "(input != 0) xor (other != 0), as bool.")
    {"bitwise_not", bitwise_not_fn, METH_O,
     "bitwise_not($module, input, /)\n--\n\n"
     "~input: logical not of bool, the bits of integers flipped."},
    TWO_ARG_ENTRY(bitwise_and, "input & other (bool and integer dtypes).")
    TWO_ARG_ENTRY(bitwise_or, "input | other (bool and integer dtypes).")
    TWO_ARG_ENTRY(bitwise_xor, "input ^ other (bool and integer dtypes).")
    {"any", FASTKW(any_fn),
     "any($module, input, dim=None, keepdim=False)\n--\n\n"
     "Whether any element (over dim: an int or a tuple) is nonzero."},
    {"all", FASTKW(all_fn),
     "all($module, input, dim=None, keepdim=False)\n--\n\n"
     "Whether every element (over dim: an int or a tuple) is nonzero."},
    {NULL},
};

#define PYGPU_LOGICAL_METHOD_O(name, doc)                                    \
    {#name, pygpu_t_##name, METH_O, #name "($self, other, /)\n--\n\n" doc},
#define PYGPU_LOGICAL_METHODS                                                \
    {"logical_not", pygpu_t_logical_not, METH_NOARGS,                        \
     "logical_not($self, /)\n--\n\nself == 0, as a bool tensor."},           \
    PYGPU_LOGICAL_METHOD_O(logical_and, "(self != 0) and (other != 0).")     \
    PYGPU_LOGICAL_METHOD_O(logical_or, "(self != 0) or (other != 0).")       \
    PYGPU_LOGICAL_METHOD_O(logical_xor, "(self != 0) xor (other != 0).")     \
    {"bitwise_not", pygpu_t_bitwise_not, METH_NOARGS,                        \
     "bitwise_not($self, /)\n--\n\n~self (bool and integer dtypes)."},       \
    PYGPU_LOGICAL_METHOD_O(bitwise_and, "self & other (bool and integers).") \
    PYGPU_LOGICAL_METHOD_O(bitwise_or, "self | other (bool and integers).")  \
    PYGPU_LOGICAL_METHOD_O(bitwise_xor, "self ^ other (bool and integers).") \
    {"any", FASTKW(pygpu_t_any),                                             \
     "any($self, /, dim=None, keepdim=False)\n--\n\n"                        \
     "Whether any element (over dim: an int or a tuple) is nonzero."},       \
    {"all", FASTKW(pygpu_t_all),                                             \
     "all($self, /, dim=None, keepdim=False)\n--\n\n"                        \
     "Whether every element (over dim: an int or a tuple) is nonzero."},

PyMethodDef pygpu_logical_methods[] = {
    PYGPU_LOGICAL_METHODS
    {NULL},
};
