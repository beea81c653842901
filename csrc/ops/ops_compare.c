/* ops_compare.c - comparisons: == != < <= > >= as operators (the
 * tensor's richcompare slot is here), eq ne lt le gt ge as functions
 * (out= of any dtype) and methods, isnan, isinf and isfinite.
 *
 * Operands follow the arithmetic's promotion (a Python number becomes a
 * 0-d tensor of the promoted dtype, rounded or wrapped to it as torch
 * does), broadcast, and the compare kind of the dispatch table computes
 * a bool result with both inputs converted to the promoted dtype in the
 * loop. */
#include "ops/ops.h"
#include "ops/compare_methods.h"

#include <math.h>
#include <string.h>

static const char *const cmp_names[PYGPU_NCMPOPS] = {
#define CMP_NAME(OP, name) [PYGPU_##OP] = #name,
    PYGPU_COMPARE_OPS(CMP_NAME)
};

static int
run_compare(int op, int dtype, TensorObject *out, TensorObject *a,
            TensorObject *b, int ndim, const int64_t *shape)
{
    pygpu_geom g;
    int64_t numel = pygpu_numel(ndim, shape);
    if (numel == 0) {
        return 0;
    }
    pygpu_make_geom(&g, ndim, shape, out, a, b);
    pygpu_kargs k;
    pygpu_binary_kargs(&k, op, out, a, b, &g, numel);
    return pygpu_dispatch(PYGPU_K_COMPARE, out->device, dtype, &k,
                          cmp_names[op]);
}

/* The two operands as tensors (new references) and the dtype they
 * compare in; 0 when they are not operands we take, -1 on error. */
static int
operands(PyObject *a, PyObject *b, TensorObject **ta, TensorObject **tb,
         int *dtype)
{
    pygpu_scalar_value v;
    int cat, r;
    *ta = *tb = NULL;
    if (Tensor_Check(a) && Tensor_Check(b)) {
        *ta = (TensorObject *)Py_NewRef(a);
        *tb = (TensorObject *)Py_NewRef(b);
        /* A 0-d CPU tensor next to a CUDA tensor moves next to it. */
        TensorObject **which = pygpu_is_cpu_scalar_tensor(b, a)   ? tb
                               : pygpu_is_cpu_scalar_tensor(a, b) ? ta
                                                                  : NULL;
        if (which != NULL) {
            TensorObject *other = which == tb ? *ta : *tb;
            Py_SETREF(*which, pygpu_tensor_to(*which, other->device,
                                              (*which)->dtype));
            if (*which == NULL) {
                return -1;
            }
        }
        *dtype = pygpu_result_type_tt(*ta, *tb);
        return 1;
    }
    PyObject *t = Tensor_Check(a) ? a : Tensor_Check(b) ? b : NULL;
    PyObject *n = t == a ? b : a;
    if (t == NULL || (r = pygpu_scalar_operand(n, &v, &cat)) == 0) {
        return 0;
    }
    if (r < 0) {
        return -1;
    }
    TensorObject *tt = (TensorObject *)t;
    *dtype = pygpu_result_type_ts(tt->dtype, cat);
    TensorObject *s = pygpu_scalar_tensor(v, *dtype, tt->device);
    if (s == NULL) {
        return -1;
    }
    *ta = (TensorObject *)Py_NewRef(t == a ? t : (PyObject *)s);
    *tb = (TensorObject *)Py_NewRef(t == a ? (PyObject *)s : t);
    Py_DECREF(s);
    return 1;
}

static int
check_out(TensorObject *out, TensorObject *a, TensorObject *b, int ndim,
          const int64_t *shape)
{
    if (pygpu_check_same_device(a, out) < 0 ||
        pygpu_check_write(out, a, b) < 0) {
        return -1;
    }
    if (ndim != out->ndim ||
        memcmp(shape, out->shape, sizeof(int64_t) * (size_t)ndim) != 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "output with the shape of the out= tensor doesn't "
                        "match the broadcast shape");
        return -1;
    }
    return 0;
}

PyObject *
pygpu_op_compare(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    TensorObject *ta = NULL, *tb = NULL, *res = NULL;
    PyObject *result = NULL;
    int ndim, dtype;
    int64_t shape[PYGPU_MAX_DIMS];
    int r = operands(a, b, &ta, &tb, &dtype);
    if (r <= 0) {
        return r == 0 ? Py_NewRef(Py_NotImplemented) : NULL;
    }
    if (pygpu_check_same_device(ta, tb) < 0 ||
        pygpu_broadcast_shapes(ta->ndim, ta->shape, tb->ndim, tb->shape,
                               &ndim, shape) < 0 ||
        (out != NULL && check_out(out, ta, tb, ndim, shape) < 0)) {
        goto fail;
    }
    /* out= of another dtype gets the bool result converted. */
    res = out != NULL && out->dtype == PYGPU_BOOL
              ? (TensorObject *)Py_NewRef(out)
              : pygpu_tensor_empty(ndim, shape, PYGPU_BOOL, ta->device);
    if (res == NULL || run_compare(op, dtype, res, ta, tb, ndim, shape) < 0) {
        goto fail;
    }
    if (out != NULL && res != out) {
        if (pygpu_tensor_copy_into(out, res) < 0) {
            goto fail;
        }
        Py_SETREF(res, (TensorObject *)Py_NewRef(out));
    }
    result = (PyObject *)res;
    res = NULL;
fail:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_XDECREF(res);
    return result;
}

/* ------------------------------------------------------ the operators */

/* == != < <= > >=: elementwise with tensors and numbers (a reflected
 * 2 < t arrives here as t > 2; a NumPy array was made a tensor by the
 * slot, tensor/tensor_operand.c); anything else (None, strings, lists)
 * gets Python's default, so x == None is False. */
PyObject *
pygpu_t_richcompare(PyObject *a, PyObject *b, int op)
{
    static const int ops[] = {[Py_LT] = PYGPU_LT, [Py_LE] = PYGPU_LE,
                              [Py_EQ] = PYGPU_EQ, [Py_NE] = PYGPU_NE,
                              [Py_GT] = PYGPU_GT, [Py_GE] = PYGPU_GE};
    PyObject *num = NULL;
    if (PyArray_IsScalar(b, Integer) || PyArray_IsScalar(b, Bool)) {
        num = PyArray_IsScalar(b, Bool) ? PyBool_FromLong(PyObject_IsTrue(b))
                                        : PyNumber_Long(b);
    }
    else if (PyArray_IsScalar(b, Floating)) {
        num = PyNumber_Float(b);
    }
    else {
        num = Py_NewRef(b);
    }
    if (num == NULL) {
        return NULL;
    }
    PyObject *r = pygpu_op_compare(ops[op], a, num, NULL);
    Py_DECREF(num);
    return r;
}

/* -------------------------------------------------- functions, methods */

static PyObject *
compare_call(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    PyObject *r = pygpu_op_compare(op, a, b, out);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'other' must be Tensor or Number, not "
                     "%.100s", cmp_names[op], Py_TYPE(b)->tp_name);
        return NULL;
    }
    return r;
}

static PyObject *
compare_fn(int op, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    static const char *const names[] = {"input", "other", "out"};
    PyObject *a[3];
    const char *name = cmp_names[op];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 3, 2, 2, a) < 0 ||
        pygpu_tensor_arg(a[0], name, "input") < 0) {
        return NULL;
    }
    int has_out = a[2] != NULL && a[2] != Py_None;
    if (has_out && pygpu_tensor_arg(a[2], name, "out") < 0) {
        return NULL;
    }
    return compare_call(op, a[0], a[1], has_out ? (TensorObject *)a[2] : NULL);
}

#define COMPARE_ENTRY_POINTS(OP, name)                                       \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return compare_fn(PYGPU_##OP, args, nargs, kwnames);                 \
    }                                                                        \
    PyObject *pygpu_t_##name(PyObject *op, PyObject *other)                  \
    {                                                                        \
        return compare_call(PYGPU_##OP, op, other, NULL);                    \
    }
PYGPU_COMPARE_OPS(COMPARE_ENTRY_POINTS)

/* ------------------------------------------------ isnan, isinf, isfinite */

enum { IS_NAN, IS_INF, IS_FINITE };

/* Integers and bool are never NaN or infinite.  For the floats: isnan is
 * x != x; isinf is |x| == inf, isfinite |x| < inf (false for NaN). */
static PyObject *
classify(int which, TensorObject *t)
{
    if (!pygpu_dtype_table[t->dtype].is_floating_point) {
        TensorObject *r = pygpu_tensor_empty(t->ndim, t->shape, PYGPU_BOOL,
                                             t->device);
        if (r != NULL && pygpu_op_fill(r, which == IS_FINITE) < 0) {
            Py_CLEAR(r);
        }
        return (PyObject *)r;
    }
    if (which == IS_NAN) {
        return pygpu_op_compare(PYGPU_NE, (PyObject *)t, (PyObject *)t, NULL);
    }
    PyObject *mag = pygpu_op_unary(PYGPU_ABS, t, 0);
    PyObject *inf = PyFloat_FromDouble(INFINITY), *r = NULL;
    if (mag != NULL && inf != NULL) {
        r = pygpu_op_compare(which == IS_INF ? PYGPU_EQ : PYGPU_LT, mag, inf,
                             NULL);
    }
    Py_XDECREF(mag);
    Py_XDECREF(inf);
    return r;
}

#define CLASSIFY_ENTRY_POINTS(WHICH, name)                                   \
    static PyObject *name##_fn(PyObject *self, PyObject *arg)                \
    {                                                                        \
        if (pygpu_tensor_arg(arg, #name, "input") < 0) {                     \
            return NULL;                                                     \
        }                                                                    \
        return classify(WHICH, (TensorObject *)arg);                         \
    }                                                                        \
    PyObject *pygpu_t_##name(PyObject *op, PyObject *noargs)                 \
    {                                                                        \
        return classify(WHICH, (TensorObject *)op);                          \
    }
CLASSIFY_ENTRY_POINTS(IS_NAN, isnan)
CLASSIFY_ENTRY_POINTS(IS_INF, isinf)
CLASSIFY_ENTRY_POINTS(IS_FINITE, isfinite)

#define COMPARE_FN_ENTRY(name, sym)                                          \
    {#name, FASTKW(name##_fn),                                               \
     #name "($module, input, other, *, out=None)\n--\n\n"                    \
     "input " sym " other elementwise (broadcast, in the promoted dtype),\n"  \
     "as a bool tensor; into out (any dtype) when given."},

PyMethodDef pygpu_compare_functions[] = {
    COMPARE_FN_ENTRY(eq, "==") COMPARE_FN_ENTRY(ne, "!=")
    COMPARE_FN_ENTRY(lt, "<") COMPARE_FN_ENTRY(le, "<=")
    COMPARE_FN_ENTRY(gt, ">") COMPARE_FN_ENTRY(ge, ">=")
    {"isnan", isnan_fn, METH_O, "isnan($module, input, /)\n--\n\n"
     "Where input is NaN, as a bool tensor."},
    {"isinf", isinf_fn, METH_O, "isinf($module, input, /)\n--\n\n"
     "Where input is +-inf, as a bool tensor."},
    {"isfinite", isfinite_fn, METH_O, "isfinite($module, input, /)\n--\n\n"
     "Where input is neither NaN nor +-inf, as a bool tensor."},
    {NULL},
};

#define PYGPU_COMPARE_METHOD(name, sym)                                      \
    {#name, pygpu_t_##name, METH_O,                                          \
     #name "($self, other, /)\n--\n\n"                                       \
     "self " sym " other elementwise, broadcast, as a bool tensor."},
#define PYGPU_COMPARE_METHODS                                                \
    PYGPU_COMPARE_METHOD(eq, "==") PYGPU_COMPARE_METHOD(ne, "!=")            \
    PYGPU_COMPARE_METHOD(lt, "<") PYGPU_COMPARE_METHOD(le, "<=")             \
    PYGPU_COMPARE_METHOD(gt, ">") PYGPU_COMPARE_METHOD(ge, ">=")             \
    {"isnan", pygpu_t_isnan, METH_NOARGS,                                    \
     "isnan($self, /)\n--\n\nWhere self is NaN, as a bool tensor."},         \
    {"isinf", pygpu_t_isinf, METH_NOARGS,                                    \
     "isinf($self, /)\n--\n\nWhere self is +-inf, as a bool tensor."},       \
    {"isfinite", pygpu_t_isfinite, METH_NOARGS,                              \
     "isfinite($self, /)\n--\n\nWhere self is neither NaN nor +-inf, as a\n" \
     "bool tensor."},

PyMethodDef pygpu_compare_methods[] = {
    PYGPU_COMPARE_METHODS
    {NULL},
};
