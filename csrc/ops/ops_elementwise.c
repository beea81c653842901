/* ops_elementwise.c - add, sub, mul, div and the unary ops:
 * argument checking (devices, dtypes, shapes, in torch's words),
 * broadcasting, type promotion, output allocation, then one lookup in the
 * dispatch table.  Inputs of another dtype than the result's are read as
 * they are and converted inside the loop. */
#include "ops/ops.h"

int
pygpu_check_same_device(const TensorObject *a, const TensorObject *b)
{
    if (pygpu_device_equal(&a->device, &b->device)) {
        return 0;
    }
    char da[32], db[32];
    pygpu_device_str(&a->device, da, sizeof(da));
    pygpu_device_str(&b->device, db, sizeof(db));
    PyErr_Format(PyExc_RuntimeError,
                 "Expected all tensors to be on the same device, but found "
                 "at least two devices, %s and %s!", da, db);
    return -1;
}

int
pygpu_broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb,
                       int *nout, int64_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = i < na ? sa[na - 1 - i] : 1;
        int64_t y = i < nb ? sb[nb - 1 - i] : 1;
        if (x != y && x != 1 && y != 1) {
            PyErr_Format(PyExc_RuntimeError,
                         "The size of tensor a (%lld) must match the size of "
                         "tensor b (%lld) at non-singleton dimension %d",
                         (long long)x, (long long)y, n - 1 - i);
            return -1;
        }
        out[n - 1 - i] = x == 1 ? y : x;
    }
    *nout = n;
    int64_t numel;
    return pygpu_shape_numel(n, out, &numel);
}

/* ------------------------------------------------------------ dispatch */

void
pygpu_binary_kargs(pygpu_kargs *k, int op, TensorObject *out,
                   TensorObject *a, TensorObject *b, const pygpu_geom *g,
                   int64_t numel)
{
    k->op = op;
    k->out = out->data;
    k->in[0] = a->data;
    k->in[1] = b->data;
    k->in_dtypes[0] = a->dtype;
    k->in_dtypes[1] = b->dtype;
    k->g = g;
    k->numel = numel;
}

static int
run_binary(int op, TensorObject *out, TensorObject *a, TensorObject *b,
           const pygpu_geom *g, int64_t numel)
{
    pygpu_kargs k;
    pygpu_binary_kargs(&k, op, out, a, b, g, numel);
    return pygpu_dispatch(PYGPU_K_BINARY, out->device, out->dtype, &k,
                          pygpu_binop_names[op]);
}

static int
run_binary_scalar(int op, TensorObject *out, TensorObject *a,
                  pygpu_scalar_value s, int scalar_first, const pygpu_geom *g,
                  int64_t numel)
{
    pygpu_kargs k;
    k.op = op;
    k.out = out->data;
    k.in[0] = a->data;
    k.in_dtypes[0] = a->dtype;
    k.g = g;
    k.s = s;
    k.flag = scalar_first;
    k.numel = numel;
    return pygpu_dispatch(PYGPU_K_BINARY_SCALAR, out->device, out->dtype, &k,
                          pygpu_binop_names[op]);
}

static int
run_unary(int op, TensorObject *out, TensorObject *a, const pygpu_geom *g,
          int64_t numel)
{
    pygpu_kargs k;
    k.op = op;
    k.out = out->data;
    k.in[0] = a->data;
    k.g = g;
    k.numel = numel;
    return pygpu_dispatch(PYGPU_K_UNARY, out->device, out->dtype, &k,
                          pygpu_unop_names[op]);
}

/* ----------------------------------------------------- type promotion */

#define CAT_BOOL PYGPU_CAT_BOOL
#define CAT_INT PYGPU_CAT_INT
#define CAT_FLOAT PYGPU_CAT_FLOAT

static int
category(int dtype)
{
    return pygpu_dtype_category(dtype);
}

/* torch's result type of tensor a with tensor b: a zero-dim tensor only
 * decides the type when it is of a higher category (bool < int < float). */
int
pygpu_result_type_tt(const TensorObject *a, const TensorObject *b)
{
    int za = a->ndim == 0, zb = b->ndim == 0;
    if (za == zb) {
        return pygpu_promote(a->dtype, b->dtype);
    }
    const TensorObject *dim = za ? b : a, *zero = za ? a : b;
    return category(zero->dtype) > category(dim->dtype) ? zero->dtype
                                                        : dim->dtype;
}

/* The result dtype of a tensor of `dtype` with a Python number of
 * category scat: the number decides only when of a higher category, a
 * float giving the default dtype, an int int64. */
int
pygpu_result_type_ts(int dtype, int scat)
{
    if (scat <= category(dtype)) {
        return dtype;
    }
    return scat == CAT_FLOAT ? pygpu_default_dtype() : PYGPU_INT64;
}

/* The dtype an op computes in for result type `dtype`: true division of
 * bools and integers gives the default dtype, as in torch. */
static int
compute_dtype(int op, int dtype)
{
    return op == PYGPU_DIV && category(dtype) != CAT_FLOAT
               ? pygpu_default_dtype()
               : dtype;
}

/* The bitwise ops take bool and integers only; pow, fmod, remainder and
 * floor_divide refuse bool.  In torch's words (its CPU kernel names). */
static int
check_int_only(int op, int dtype)
{
    const char *kernel = NULL;
    if (pygpu_binop_is_bitwise(op) && category(dtype) == CAT_FLOAT) {
        kernel = pygpu_binop_names[op];
    }
    else if (dtype == PYGPU_BOOL) {
        kernel = op == PYGPU_POW            ? "pow"
                 : op == PYGPU_FMOD         ? "fmod"
                 : op == PYGPU_REMAINDER    ? "remainder"
                 : op == PYGPU_FLOOR_DIVIDE ? "div_floor"
                                            : NULL;
    }
    if (kernel == NULL) {
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "\"%s_cpu\" not implemented for '%s'",
                 kernel, pygpu_dtype_table[dtype].scalar_name);
    return -1;
}

/* torch refuses - on bool operands (a Python bool counts as one). */
static int
check_bool_sub(int op, int a_bool, int b_bool)
{
    if (op != PYGPU_SUB || (!a_bool && !b_bool)) {
        return 0;
    }
    PyErr_SetString(PyExc_RuntimeError,
                    a_bool && b_bool
                        ? "Subtraction, the `-` operator, with two bool "
                          "tensors is not supported. Use the `^` or "
                          "`logical_xor()` operator instead."
                        : "Subtraction, the `-` operator, with a bool tensor "
                          "is not supported. If you are trying to invert a "
                          "mask, use the `~` or `logical_not()` operator "
                          "instead.");
    return -1;
}

/* A Python number as an operand: its value and category; 0 if obj is not
 * a number we take, -1 with an exception. */
int
pygpu_scalar_operand(PyObject *obj, pygpu_scalar_value *v, int *cat)
{
    if (PyFloat_Check(obj)) {
        v->f = PyFloat_AS_DOUBLE(obj);
        v->i = (int64_t)v->f;
        *cat = CAT_FLOAT;
        return 1;
    }
    if (PyBool_Check(obj)) {
        v->i = obj == Py_True;
        v->f = (double)v->i;
        *cat = CAT_BOOL;
        return 1;
    }
    if (PyLong_Check(obj)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_RuntimeError,
                            "Overflow when unpacking long");
            return -1;
        }
        if (x == -1 && PyErr_Occurred()) {
            return -1;
        }
        v->i = x;
        v->f = (double)x;
        *cat = CAT_INT;
        return 1;
    }
    return 0;
}

/* --------------------------------------------------------------- binary */

/* What torch refuses of a Python number operand before computing: an
 * integer tensor to a negative integer power, an integer division by an
 * integer zero (torch's CPU words). */
static int
check_scalar_operand(int op, int tensor_dtype, pygpu_scalar_value s,
                     int scat, int scalar_first)
{
    if (scalar_first || scat != CAT_INT || category(tensor_dtype) != CAT_INT) {
        return 0;
    }
    if (op == PYGPU_POW && s.i < 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Integers to negative integer powers are not "
                        "allowed.");
        return -1;
    }
    if ((op == PYGPU_FMOD || op == PYGPU_REMAINDER ||
         op == PYGPU_FLOOR_DIVIDE) && s.i == 0) {
        PyErr_SetString(PyExc_RuntimeError, "ZeroDivisionError");
        return -1;
    }
    return 0;
}

/* The tensor the result goes into: out (resized, or a temporary of the
 * result's dtype, by pygpu_out_prepare) or a new one. */
static TensorObject *
result_tensor(TensorObject *out, int inplace, int ndim, const int64_t *shape,
              int dtype, pygpu_device dev, const TensorObject *a,
              const TensorObject *b)
{
    if (out != NULL) {
        return pygpu_out_prepare(out, ndim, shape, dtype, dev, inplace, a, b);
    }
    return pygpu_tensor_empty(ndim, shape, dtype, dev);
}

static PyObject *
binary_scalar(int op, TensorObject *t, pygpu_scalar_value s, int scat,
              int scalar_first, TensorObject *out, int inplace)
{
    pygpu_geom g;
    if (check_bool_sub(op, t->dtype == PYGPU_BOOL, scat == CAT_BOOL) < 0) {
        return NULL;
    }
    int dtype = compute_dtype(op, pygpu_result_type_ts(t->dtype, scat));
    if (check_int_only(op, dtype) < 0 ||
        check_scalar_operand(op, t->dtype, s, scat, scalar_first) < 0) {
        return NULL;
    }
    if (op == PYGPU_POW && !scalar_first && scat == CAT_FLOAT &&
        (s.f == 0.5 || s.f == -0.5)) {
        /* torch's x ** 0.5 is sqrt(x) (sqrt(-0.0) = -0.0, sqrt(-inf) =
         * NaN, where C's pow gives 0.0 and inf), x ** -0.5 rsqrt(x). */
        return pygpu_op_unary_out(s.f > 0 ? PYGPU_SQRT : PYGPU_RSQRT, t, out,
                                  inplace);
    }
    /* t is read in its own dtype and converted in the loop. */
    TensorObject *res = result_tensor(out, inplace, t->ndim, t->shape, dtype,
                                      t->device, t, NULL);
    if (res == NULL) {
        return NULL;
    }
    int64_t numel = pygpu_numel(res->ndim, res->shape);
    if (numel > 0) {
        pygpu_make_geom(&g, res->ndim, res->shape, res, t, NULL);
        if (run_binary_scalar(op, res, t, s, scalar_first, &g, numel) < 0) {
            Py_CLEAR(res);
        }
    }
    return out ? pygpu_out_finish(out, res) : (PyObject *)res;
}

static PyObject *
binary_tensors(int op, TensorObject *a, TensorObject *b, TensorObject *out,
               int inplace)
{
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    pygpu_geom g;
    if (pygpu_check_same_device(a, b) < 0 ||
        pygpu_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &ndim,
                               shape) < 0) {
        return NULL;
    }
    if (check_bool_sub(op, a->dtype == PYGPU_BOOL, b->dtype == PYGPU_BOOL) <
        0) {
        return NULL;
    }
    int dtype = compute_dtype(op, pygpu_result_type_tt(a, b));
    if (check_int_only(op, dtype) < 0) {
        return NULL;
    }
    /* Each input is read in its own dtype and converted in the loop. */
    TensorObject *res =
        result_tensor(out, inplace, ndim, shape, dtype, a->device, a, b);
    if (res == NULL) {
        return NULL;
    }
    int64_t numel = pygpu_numel(ndim, shape);
    if (numel > 0) {
        pygpu_make_geom(&g, ndim, shape, res, a, b);
        if (run_binary(op, res, a, b, &g, numel) < 0) {
            Py_CLEAR(res);
        }
    }
    return out ? pygpu_out_finish(out, res) : (PyObject *)res;
}

/* A 0-d CPU tensor next to a CUDA tensor acts as a scalar, as in torch. */
int
pygpu_is_cpu_scalar_tensor(PyObject *x, PyObject *other)
{
    return Tensor_Check(x) && Tensor_Check(other) &&
           ((TensorObject *)x)->ndim == 0 &&
           ((TensorObject *)x)->device.type == PYGPU_CPU &&
           ((TensorObject *)other)->device.type == PYGPU_CUDA;
}

PyObject *
pygpu_op_binary(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    pygpu_scalar_value s;
    int cat, r;
    PyObject *item = NULL, *res;
    /* Written into the first operand: in place, its shape must be the
     * result's; another out= is resized (pygpu_out_prepare). */
    int inplace = out != NULL && (PyObject *)out == a;
    if (pygpu_is_cpu_scalar_tensor(b, a) || pygpu_is_cpu_scalar_tensor(a, b)) {
        /* Moved next to the other operand (one element), it keeps its
         * standing as a 0-d tensor in type promotion, as in torch. */
        PyObject **which = pygpu_is_cpu_scalar_tensor(b, a) ? &b : &a;
        TensorObject *other = (TensorObject *)(which == &b ? a : b);
        item = *which == (PyObject *)out
                   ? Py_NewRef(*which) /* written to: the device check */
                   : (PyObject *)pygpu_tensor_to((TensorObject *)*which,
                                           other->device,
                                           ((TensorObject *)*which)->dtype);
        if (item == NULL) {
            return NULL;
        }
        *which = item;
    }
    if (Tensor_Check(a) && Tensor_Check(b)) {
        res = binary_tensors(op, (TensorObject *)a, (TensorObject *)b, out,
                             inplace);
    }
    else if (Tensor_Check(a) && (r = pygpu_scalar_operand(b, &s, &cat)) != 0) {
        res = r < 0 ? NULL
                    : binary_scalar(op, (TensorObject *)a, s, cat, 0, out,
                                    inplace);
    }
    else if (Tensor_Check(b) && (r = pygpu_scalar_operand(a, &s, &cat)) != 0) {
        res = r < 0 ? NULL
                    : binary_scalar(op, (TensorObject *)b, s, cat, 1, out,
                                    inplace);
    }
    else if (PyErr_Occurred()) {
        res = NULL;
    }
    else {
        res = Py_NewRef(Py_NotImplemented);
    }
    Py_XDECREF(item);
    return res;
}

/* ---------------------------------------------------------------- unary */

/* The unary ops torch refuses on bool tensors, in its words. */
static int
check_bool_unary(int op, const TensorObject *a)
{
    if (a->dtype != PYGPU_BOOL) {
        return 0;
    }
    switch (op) {
    case PYGPU_NEG:
        PyErr_SetString(PyExc_RuntimeError,
                        "Negation, the `-` operator, on a bool tensor is not "
                        "supported. If you are trying to invert a mask, use "
                        "the `~` or `logical_not()` operator instead.");
        return -1;
    case PYGPU_RELU:
        PyErr_SetString(PyExc_RuntimeError,
                        "Boolean inputs not supported for relu");
        return -1;
    case PYGPU_ABS:
    case PYGPU_FLOOR:
    case PYGPU_CEIL:
    case PYGPU_ROUND:
        PyErr_Format(PyExc_RuntimeError, "\"%s\" not implemented for 'Bool'",
                     pygpu_unop_names[op]);
        return -1;
    default:
        return 0;
    }
}

PyObject *
pygpu_op_unary_out(int op, TensorObject *a, TensorObject *out, int inplace)
{
    pygpu_geom g;
    TensorObject *res, *src = a;
    if (check_bool_unary(op, a) < 0) {
        return NULL;
    }
    if (inplace) {
        out = a;
    }
    /* A floating function of a bool or integer tensor: the result has the
     * default dtype, as in torch; the input is converted into the result
     * first and the op runs in place there.  In place, a Float result
     * cannot go back to an integer (pygpu_out_prepare says so). */
    int promote =
        pygpu_unop_promotes_int(op) && category(a->dtype) != CAT_FLOAT;
    int dtype = promote ? pygpu_default_dtype() : a->dtype;
    res = result_tensor(out, inplace, a->ndim, a->shape, dtype, a->device, a,
                        NULL);
    if (res == NULL) {
        return NULL;
    }
    int64_t numel = pygpu_numel(a->ndim, a->shape);
    if (promote && numel > 0) {
        if (pygpu_op_copy_same_device(res, a) < 0) {
            Py_CLEAR(res);
        }
        src = res;
    }
    if (res != NULL && numel > 0) {
        pygpu_make_geom(&g, a->ndim, a->shape, res, src, NULL);
        if (run_unary(op, res, src, &g, numel) < 0) {
            Py_CLEAR(res);
        }
    }
    return out ? pygpu_out_finish(out, res) : (PyObject *)res;
}

PyObject *
pygpu_op_unary(int op, TensorObject *a, int inplace)
{
    return pygpu_op_unary_out(op, a, NULL, inplace);
}
