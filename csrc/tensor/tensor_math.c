/* tensor_math.c - pow, maximum, minimum, fmod, remainder and
 * floor_divide as Python sees them: pygpu.<name>(..., out=None), the
 * Tensor methods and their in-place forms, and the **, // and % slots.
 * Each is a row of PYGPU_BINARY_OPS, recorded by autograd's
 * pygpu_ag_binary and run by pygpu_op_binary (ops/ops_elementwise.c). */
#include "tensor/tensor.h"

/* What an op takes besides two tensors, as torch: maximum and minimum
 * take tensors only, fmod a number only as `other`. */
enum { ANY_OPERANDS = 0, TENSOR_INPUT = 1, TENSORS_ONLY = 3 };

static int
check_operands(const char *name, int flags, PyObject *input, PyObject *other)
{
    if ((flags & TENSOR_INPUT) && pygpu_tensor_arg(input, name, "input") < 0) {
        return -1;
    }
    if (flags == TENSORS_ONLY && pygpu_tensor_arg(other, name, "other") < 0) {
        return -1;
    }
    return 0;
}

static PyObject *
math_fn(int op, const char *name, int flags, const char *other_name,
        PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const char *const names[] = {"input", other_name, "out"};
    PyObject *a[3];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 3, 2, 2, a) < 0 ||
        check_operands(name, flags, a[0], a[1]) < 0) {
        return NULL;
    }
    int has_out = a[2] != NULL && a[2] != Py_None;
    if (has_out && pygpu_tensor_arg(a[2], name, "out") < 0) {
        return NULL;
    }
    return pygpu_binary_call(op, name, a[0], a[1], NULL,
                             has_out ? (TensorObject *)a[2] : NULL);
}

#define MATH_FN(name, op, flags, other)                                      \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return math_fn(op, #name, flags, other, args, nargs, kwnames);       \
    }

MATH_FN(pow, PYGPU_POW, ANY_OPERANDS, "exponent")
MATH_FN(maximum, PYGPU_MAXIMUM, TENSORS_ONLY, "other")
MATH_FN(minimum, PYGPU_MINIMUM, TENSORS_ONLY, "other")
MATH_FN(fmod, PYGPU_FMOD, TENSOR_INPUT, "other")
MATH_FN(remainder, PYGPU_REMAINDER, ANY_OPERANDS, "other")
MATH_FN(floor_divide, PYGPU_FLOOR_DIVIDE, ANY_OPERANDS, "other")

/* ------------------------------------------------------------- methods */

static PyObject *
math_method(PyObject *self, int op, int inplace, const char *name,
            int flags, const char *other_name, PyObject *const *args,
            Py_ssize_t nargs, PyObject *kwnames)
{
    const char *const names[] = {other_name};
    PyObject *other;
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 1, 1, 1,
                         &other) < 0 ||
        check_operands(name, flags, self, other) < 0) {
        return NULL;
    }
    return pygpu_binary_call(op, name, self, other, NULL,
                             inplace ? (TensorObject *)self : NULL);
}

#define MATH_METHOD(name, op, flags, other)                                  \
    static PyObject *t_##name(PyObject *self, PyObject *const *args,         \
                              Py_ssize_t nargs, PyObject *kwnames)           \
    {                                                                        \
        return math_method(self, op, 0, #name, flags, other, args, nargs,    \
                           kwnames);                                         \
    }
#define MATH_METHODS(name, op, flags, other)                                 \
    MATH_METHOD(name, op, flags, other)                                      \
    static PyObject *t_##name##_(PyObject *self, PyObject *const *args,      \
                                 Py_ssize_t nargs, PyObject *kwnames)        \
    {                                                                        \
        return math_method(self, op, 1, #name "_", flags, other, args,       \
                           nargs, kwnames);                                  \
    }

MATH_METHODS(pow, PYGPU_POW, ANY_OPERANDS, "exponent")
MATH_METHOD(maximum, PYGPU_MAXIMUM, TENSORS_ONLY, "other")
MATH_METHOD(minimum, PYGPU_MINIMUM, TENSORS_ONLY, "other")
MATH_METHODS(fmod, PYGPU_FMOD, TENSOR_INPUT, "other")
MATH_METHODS(remainder, PYGPU_REMAINDER, ANY_OPERANDS, "other")
MATH_METHODS(floor_divide, PYGPU_FLOOR_DIVIDE, ANY_OPERANDS, "other")

/* --------------------------------------------------------------- slots */

PyObject *
pygpu_t_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        Py_RETURN_NOTIMPLEMENTED; /* pow(a, b, m): no modular power */
    }
    return pygpu_number_binary(PYGPU_POW, a, b, NULL);
}

PyObject *
pygpu_t_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return pygpu_number_binary(PYGPU_POW, a, b, (TensorObject *)a);
}

PyObject *
pygpu_t_floordiv(PyObject *a, PyObject *b)
{
    return pygpu_number_binary(PYGPU_FLOOR_DIVIDE, a, b, NULL);
}

PyObject *
pygpu_t_ifloordiv(PyObject *a, PyObject *b)
{
    return pygpu_number_binary(PYGPU_FLOOR_DIVIDE, a, b,
                               (TensorObject *)a);
}

PyObject *
pygpu_t_mod(PyObject *a, PyObject *b)
{
    return pygpu_number_binary(PYGPU_REMAINDER, a, b, NULL);
}

PyObject *
pygpu_t_imod(PyObject *a, PyObject *b)
{
    return pygpu_number_binary(PYGPU_REMAINDER, a, b,
                               (TensorObject *)a);
}

/* ---------------------------------------------------------- the tables */

#define FN_DOC(name, args, text)                                             \
    #name "($module, " args ", *, out=None)\n--\n\n" text
#define M_DOC(name, arg, text) #name "($self, /, " arg ")\n--\n\n" text

PyMethodDef pygpu_binary_math_functions[] = {
    {"pow", FASTKW(pow_fn),
     FN_DOC(pow, "input, exponent",
            "input ** exponent, broadcast; either may be a number.  Integer\n"
            "powers wrap around; an integer tensor to a negative integer\n"
            "number raises.")},
    {"maximum", FASTKW(maximum_fn),
     FN_DOC(maximum, "input, other",
            "The larger of two tensors, elementwise; NaN wins.")},
    {"minimum", FASTKW(minimum_fn),
     FN_DOC(minimum, "input, other",
            "The smaller of two tensors, elementwise; NaN wins.")},
    {"fmod", FASTKW(fmod_fn),
     FN_DOC(fmod, "input, other",
            "The remainder of input / other with the sign of input (C's\n"
            "fmod).")},
    {"remainder", FASTKW(remainder_fn),
     FN_DOC(remainder, "input, other",
            "input - floor_divide(input, other) * other: the sign of\n"
            "other, as Python's %.")},
    {"floor_divide", FASTKW(floor_divide_fn),
     FN_DOC(floor_divide, "input, other",
            "input / other rounded toward -inf, as Python's //.")},
    {NULL},
};

PyMethodDef pygpu_binary_math_methods[] = {
    {"pow", FASTKW(t_pow), M_DOC(pow, "exponent", "self ** exponent.")},
    {"pow_", FASTKW(t_pow_), M_DOC(pow_, "exponent", "In-place pow.")},
    {"maximum", FASTKW(t_maximum),
     M_DOC(maximum, "other", "pygpu.maximum(self, other).")},
    {"minimum", FASTKW(t_minimum),
     M_DOC(minimum, "other", "pygpu.minimum(self, other).")},
    {"fmod", FASTKW(t_fmod), M_DOC(fmod, "other", "pygpu.fmod(self, other).")},
    {"fmod_", FASTKW(t_fmod_), M_DOC(fmod_, "other", "In-place fmod.")},
    {"remainder", FASTKW(t_remainder),
     M_DOC(remainder, "other", "self % other (the sign of other).")},
    {"remainder_", FASTKW(t_remainder_),
     M_DOC(remainder_, "other", "In-place remainder.")},
    {"floor_divide", FASTKW(t_floor_divide),
     M_DOC(floor_divide, "other", "self // other.")},
    {"floor_divide_", FASTKW(t_floor_divide_),
     M_DOC(floor_divide_, "other", "In-place floor_divide.")},
    {"resize_", FAST(pygpu_t_resize_),
     "resize_($self, /, *sizes)\n--\n\n"
     "Give self the shape sizes (ints or one tuple), contiguous, in place:\n"
     "over its own memory when that holds the elements, else over new\n"
     "memory that starts with the old bytes.  Returns self."},
    {NULL},
};

/* ---------------------------------------------------------------- clamp */

static PyObject *
clamp_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"input", "min", "max", "out"};
    PyObject *a[4];
    if (pygpu_parse_args("clamp", args, nargs, kwnames, names, 4, 3, 1, a) <
            0 ||
        pygpu_tensor_arg(a[0], "clamp", "input") < 0) {
        return NULL;
    }
    int has_out = a[3] != NULL && a[3] != Py_None;
    if (has_out && pygpu_tensor_arg(a[3], "clamp", "out") < 0) {
        return NULL;
    }
    return pygpu_ag_clamp("clamp", (TensorObject *)a[0], a[1], a[2],
                 has_out ? (TensorObject *)a[3] : NULL, 0);
}

static PyObject *
clamp_method(PyObject *self, const char *name, int inplace,
             PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"min", "max"};
    PyObject *a[2];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 2, 2, 0, a) < 0) {
        return NULL;
    }
    return pygpu_ag_clamp(name, (TensorObject *)self, a[0], a[1], NULL, inplace);
}

static PyObject *
t_clamp(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    return clamp_method(self, "clamp", 0, args, nargs, kwnames);
}

static PyObject *
t_clamp_(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    return clamp_method(self, "clamp_", 1, args, nargs, kwnames);
}

#define CLAMP_DOC                                                            \
    "min(max(input, min), max), elementwise: min and max are numbers or\n"   \
    "tensors (broadcast), at least one given; NaN stays NaN, and min >\n"    \
    "max gives max.  The result type is torch's over all three."

PyMethodDef pygpu_clamp_functions[] = {
    {"clamp", FASTKW(clamp_fn),
     "clamp($module, input, min=None, max=None, *, out=None)\n--\n\n"
     CLAMP_DOC},
    {"clip", FASTKW(clamp_fn),
     "clip($module, input, min=None, max=None, *, out=None)\n--\n\n"
     "Alias of clamp."},
    {NULL},
};

PyMethodDef pygpu_clamp_methods[] = {
    {"clamp", FASTKW(t_clamp),
     "clamp($self, /, min=None, max=None)\n--\n\n" CLAMP_DOC},
    {"clamp_", FASTKW(t_clamp_),
     "clamp_($self, /, min=None, max=None)\n--\n\nIn-place clamp."},
    {"clip", FASTKW(t_clamp),
     "clip($self, /, min=None, max=None)\n--\n\nAlias of clamp."},
    {"clip_", FASTKW(t_clamp_),
     "clip_($self, /, min=None, max=None)\n--\n\nAlias of clamp_."},
    {NULL},
};
