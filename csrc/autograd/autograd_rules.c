/* autograd_rules.c - what each recorded op saves and its backward rule.
 *
 * The Python-facing functions (tensor/) call pygpu_ag_<family> here: an
 * unrecorded call (pygpu_ag_wanted false) goes straight to the op
 * (ops/, which knows nothing of autograd); a recorded one runs the op,
 * then gives the result its Node.  An in-place write runs with grad mode
 * off, below autograd, so that the ops' write check lets it through.
 * Rules state the math only, calling ops downward: the engine sums a
 * gradient down to its input's shape and converts it to the input's dtype
 * and device.
 */
#include "autograd/autograd.h"

#include <string.h>

/* ------------------------------------------------------------- helpers */

/* a * b * c, any may be NULL for "absent" (then the product of the
 * others). */
static TensorObject *
mul3(TensorObject *a, TensorObject *b, TensorObject *c)
{
    TensorObject *ab = b ? pygpu_ag_bin(PYGPU_MUL, a, (PyObject *)b)
                         : (TensorObject *)Py_NewRef(a);
    if (ab == NULL || c == NULL) {
        return ab;
    }
    Py_SETREF(ab, pygpu_ag_bin(PYGPU_MUL, ab, (PyObject *)c));
    return ab;
}

/* Zeros of input i's shape, dtype and device. */
static TensorObject *
zeros_of(pygpu_node *n, int i)
{
    TensorObject *z = pygpu_tensor_empty(n->in_ndim[i], n->in_shape[i],
                                         n->in_dtype[i], n->in_device[i]);
    if (z != NULL && pygpu_op_fill(z, 0.0) < 0) {
        Py_CLEAR(z);
    }
    return z;
}

static PyObject *
out_refused(PyObject *res, const char *name)
{
    Py_XDECREF(res);
    PyErr_Format(PyExc_RuntimeError,
                 "%s(): functions with out=... arguments don't support "
                 "automatic differentiation, but one of the arguments "
                 "requires grad.", name);
    return NULL;
}

/* ------------------------------------------------------------- binary */

static const char *const binary_names[PYGPU_NBINOPS] = {
    [PYGPU_ADD] = "AddBackward0", [PYGPU_SUB] = "SubBackward0",
    [PYGPU_MUL] = "MulBackward0", [PYGPU_DIV] = "DivBackward0",
    [PYGPU_POW] = "PowBackward0", [PYGPU_MAXIMUM] = "MaximumBackward0",
    [PYGPU_MINIMUM] = "MinimumBackward0", [PYGPU_FMOD] = "FmodBackward0",
    [PYGPU_REMAINDER] = "RemainderBackward0",
    [PYGPU_FLOOR_DIVIDE] = "FloorDivideBackward0"};

/* Ops whose rule reads both operands (saved). */
static int
reads_operands(int op)
{
    return op != PYGPU_ADD && op != PYGPU_SUB && op != PYGPU_FLOOR_DIVIDE;
}

/* flag: bit 0 a is a scalar (in node->scalar), bit 1 b is. */
static int
binary_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *a = NULL, *b = NULL, *t = NULL;
    double s = n->scalar;
    if (n->op == PYGPU_MUL || n->op == PYGPU_DIV) {
        /* a is read for b's gradient; b for a's, and for its own in a
         * quotient. */
        int need_a = n->next[1] != NULL && !(n->flag & 1);
        int need_b = !(n->flag & 2) &&
                     (n->next[0] != NULL ||
                      (n->op == PYGPU_DIV && n->next[1] != NULL));
        if ((need_a && (a = pygpu_ag_saved(n, 0)) == NULL) ||
            (need_b && (b = pygpu_ag_saved(n, 1)) == NULL)) {
            return -1;
        }
    }
    switch (n->op) {
    case PYGPU_ADD:
        grads[0] = n->next[0] ? (TensorObject *)Py_NewRef(g) : NULL;
        grads[1] = n->next[1] ? (TensorObject *)Py_NewRef(g) : NULL;
        break;
    case PYGPU_SUB:
        grads[0] = n->next[0] ? (TensorObject *)Py_NewRef(g) : NULL;
        if (n->next[1] && (grads[1] = pygpu_ag_un(PYGPU_NEG, g)) == NULL) {
            return -1;
        }
        break;
    case PYGPU_MUL:
        if (n->next[0] && (grads[0] = b ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)b)
                                        : pygpu_ag_bin_s(PYGPU_MUL, g, s)) == NULL) {
            return -1;
        }
        if (n->next[1] && (grads[1] = a ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)a)
                                        : pygpu_ag_bin_s(PYGPU_MUL, g, s)) == NULL) {
            return -1;
        }
        break;
    case PYGPU_DIV:
        if (n->next[0] && (grads[0] = b ? pygpu_ag_bin(PYGPU_DIV, g, (PyObject *)b)
                                        : pygpu_ag_bin_s(PYGPU_DIV, g, s)) == NULL) {
            return -1;
        }
        if (n->next[1]) { /* -g * a / b^2 */
            t = a ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)a) : pygpu_ag_bin_s(PYGPU_MUL, g, -s);
            if (t != NULL && a != NULL) {
                Py_SETREF(t, pygpu_ag_un(PYGPU_NEG, t));
            }
            if (t != NULL) {
                Py_SETREF(t, pygpu_ag_bin(PYGPU_DIV, t, (PyObject *)b));
            }
            if (t != NULL) {
                Py_SETREF(t, pygpu_ag_bin(PYGPU_DIV, t, (PyObject *)b));
            }
            if (t == NULL) {
                return -1;
            }
            grads[1] = t;
        }
        break;
    }
    return 0;
}

/* The Node of a binary op over a and b (either may be a number). */
static pygpu_node *
binary_node(int op, PyObject *a, PyObject *b)
{
    TensorObject *in[2] = {Tensor_Check(a) ? (TensorObject *)a : NULL,
                           Tensor_Check(b) ? (TensorObject *)b : NULL};
    if (binary_names[op] == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "the derivative of %s is not implemented in pygpu's "
                     "autograd yet", pygpu_binop_names[op]);
        return NULL;
    }
    pygpu_node *n = pygpu_ag_node(binary_names[op],
                                  op <= PYGPU_DIV ? binary_backward
                                                  : pygpu_ag_math_backward,
                                  2, in);
    if (n == NULL) {
        return NULL;
    }
    n->op = op;
    for (int i = 0; i < 2; i++) {
        if (in[i] == NULL) {
            n->flag |= 1 << i;
            n->scalar = PyFloat_AsDouble(i == 0 ? a : b);
            if (n->scalar == -1.0 && PyErr_Occurred()) {
                Py_DECREF(n);
                return NULL;
            }
        }
        else if (reads_operands(op) && pygpu_ag_save(n, i, in[i]) < 0) {
            Py_DECREF(n);
            return NULL;
        }
    }
    return n;
}

PyObject *
pygpu_ag_binary(int op, PyObject *a, PyObject *b, TensorObject *out)
{
    PyObject *res;
    TensorObject *in[3] = {Tensor_Check(a) ? (TensorObject *)a : NULL,
                           Tensor_Check(b) ? (TensorObject *)b : NULL, out};
    if (!pygpu_ag_wanted(3, in)) {
        return pygpu_op_binary(op, a, b, out);
    }
    if (out != NULL && (PyObject *)out != a) {
        return out_refused(NULL, pygpu_binop_names[op]);
    }
    if (out != NULL) {
        return pygpu_ag_binary_inplace(op, out, b);
    }
    res = pygpu_op_binary(op, a, b, NULL);
    if (res == NULL || res == Py_NotImplemented) {
        return res;
    }
    pygpu_node *n = binary_node(op, a, b);
    /* a number to a tensor power: the exponent's gradient reads out */
    if (n != NULL && op == PYGPU_POW && (n->flag & 1) &&
        pygpu_ag_save(n, 2, (TensorObject *)res) < 0) {
        Py_CLEAR(n);
    }
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------------ in place */

static int
leaf_refused(TensorObject *t)
{
    if (t->grad_fn == NULL && t->requires_grad) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a leaf Variable that requires grad is being used "
                        "in an in-place operation.");
        return -1;
    }
    return 0;
}

PyObject *
pygpu_ag_binary_inplace(int op, TensorObject *a, PyObject *b)
{
    PyObject *res;
    TensorObject *tb = Tensor_Check(b) ? (TensorObject *)b : NULL;
    if (leaf_refused(a) < 0) {
        return NULL;
    }
    /* a's old value is gone after the op: products whose other operand
     * needs a gradient would need it. */
    if (reads_operands(op) && (op > PYGPU_DIV || pygpu_requires_grad(tb) ||
                               tb == a)) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu's autograd does not record in-place %s_ here "
                     "(its derivative needs the value it overwrites); use "
                     "the out-of-place form", pygpu_binop_names[op]);
        return NULL;
    }
    pygpu_node *n = binary_node(op, (PyObject *)a, b);
    if (n == NULL) {
        return NULL;
    }
    /* The rule for a needs b only, which is saved; a's slot holds its
     * pre-op value in no rule. */
    Py_CLEAR(n->saved[0]);
    PYGPU_BELOW_AUTOGRAD(res, pygpu_op_binary(op, (PyObject *)a, b, a));
    return pygpu_ag_finish(res, n);
}

/* ------------------------------------------------------------- unary */

/* Which value the rule reads: 1 the output, 2 the input, 0 neither. */
static int
unary_reads(int op)
{
    switch (op) {
    case PYGPU_RELU: case PYGPU_EXP: case PYGPU_EXPM1: case PYGPU_SQRT:
    case PYGPU_RSQRT: case PYGPU_TANH: case PYGPU_SIGMOID:
    case PYGPU_RECIPROCAL:
        return 1;
    case PYGPU_ABS: case PYGPU_LOG: case PYGPU_LOG1P: case PYGPU_SIN:
    case PYGPU_COS: case PYGPU_SILU: case PYGPU_GELU: case PYGPU_GELU_TANH:
        return 2;
    default:
        return 0;
    }
}

static const char *const unary_names[PYGPU_NUNOPS] = {
    [PYGPU_NEG] = "NegBackward0", [PYGPU_RELU] = "ReluBackward0",
    [PYGPU_ABS] = "AbsBackward0", [PYGPU_FLOOR] = "FloorBackward0",
    [PYGPU_CEIL] = "CeilBackward0", [PYGPU_ROUND] = "RoundBackward0",
    [PYGPU_SIGN] = "SignBackward0", [PYGPU_EXP] = "ExpBackward0",
    [PYGPU_LOG] = "LogBackward0", [PYGPU_LOG1P] = "Log1PBackward0",
    [PYGPU_EXPM1] = "Expm1Backward0", [PYGPU_SQRT] = "SqrtBackward0",
    [PYGPU_RSQRT] = "RsqrtBackward0", [PYGPU_SIN] = "SinBackward0",
    [PYGPU_COS] = "CosBackward0", [PYGPU_TANH] = "TanhBackward0",
    [PYGPU_SIGMOID] = "SigmoidBackward0",
    [PYGPU_RECIPROCAL] = "ReciprocalBackward0",
    [PYGPU_GELU] = "GeluBackward0", [PYGPU_GELU_TANH] = "GeluBackward0",
    [PYGPU_SILU] = "SiluBackward0"};

static int
unary_backward(pygpu_node *n, TensorObject *g, TensorObject **grads)
{
    TensorObject *v = NULL, *t = NULL, *u = NULL, *r = NULL;
    if (unary_reads(n->op) && (v = pygpu_ag_saved(n, 0)) == NULL) {
        return -1;
    }
    switch (n->op) {
    case PYGPU_NEG:
        r = pygpu_ag_un(PYGPU_NEG, g);
        break;
    case PYGPU_RELU: /* sign(relu(x)) is the 0/1 mask */
    case PYGPU_ABS:
        t = pygpu_ag_un(PYGPU_SIGN, v);
        r = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        break;
    case PYGPU_FLOOR: case PYGPU_CEIL: case PYGPU_ROUND: case PYGPU_SIGN:
        r = zeros_of(n, 0);
        break;
    case PYGPU_EXP:
        r = pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)v);
        break;
    case PYGPU_LOG:
        r = pygpu_ag_bin(PYGPU_DIV, g, (PyObject *)v);
        break;
    case PYGPU_LOG1P:
        t = pygpu_ag_bin_s(PYGPU_ADD, v, 1.0);
        r = t ? pygpu_ag_bin(PYGPU_DIV, g, (PyObject *)t) : NULL;
        break;
    case PYGPU_EXPM1:
        t = pygpu_ag_bin_s(PYGPU_ADD, v, 1.0);
        r = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        break;
    case PYGPU_SQRT:
        t = pygpu_ag_bin_s(PYGPU_MUL, g, 0.5);
        r = t ? pygpu_ag_bin(PYGPU_DIV, t, (PyObject *)v) : NULL;
        break;
    case PYGPU_RSQRT: /* -0.5 g y^3 */
        t = pygpu_ag_bin_s(PYGPU_MUL, g, -0.5);
        r = t ? mul3(t, v, v) : NULL;
        Py_XSETREF(r, r ? pygpu_ag_bin(PYGPU_MUL, r, (PyObject *)v) : NULL);
        break;
    case PYGPU_SIN:
        t = pygpu_ag_un(PYGPU_COS, v);
        r = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        break;
    case PYGPU_COS:
        t = pygpu_ag_un(PYGPU_SIN, v);
        u = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        r = u ? pygpu_ag_un(PYGPU_NEG, u) : NULL;
        break;
    case PYGPU_TANH: /* g (1 - y^2) */
        t = pygpu_ag_bin(PYGPU_MUL, v, (PyObject *)v);
        u = t ? pygpu_ag_bin_s(PYGPU_MUL, t, -1.0) : NULL;
        Py_XSETREF(u, u ? pygpu_ag_bin_s(PYGPU_ADD, u, 1.0) : NULL);
        r = u ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)u) : NULL;
        break;
    case PYGPU_SIGMOID: /* g y (1 - y) */
        t = pygpu_ag_bin_s(PYGPU_MUL, v, -1.0);
        Py_XSETREF(t, t ? pygpu_ag_bin_s(PYGPU_ADD, t, 1.0) : NULL);
        r = t ? mul3(g, v, t) : NULL;
        break;
    case PYGPU_RECIPROCAL: /* -g y^2 */
        t = pygpu_ag_un(PYGPU_NEG, g);
        r = t ? mul3(t, v, v) : NULL;
        break;
    case PYGPU_SILU: /* g s (1 + x (1 - s)) */
        t = pygpu_ag_un(PYGPU_SIGMOID, v);
        u = t ? pygpu_ag_bin_s(PYGPU_MUL, t, -1.0) : NULL;
        Py_XSETREF(u, u ? pygpu_ag_bin_s(PYGPU_ADD, u, 1.0) : NULL);
        Py_XSETREF(u, u ? pygpu_ag_bin(PYGPU_MUL, u, (PyObject *)v) : NULL);
        Py_XSETREF(u, u ? pygpu_ag_bin_s(PYGPU_ADD, u, 1.0) : NULL);
        r = u ? mul3(g, t, u) : NULL;
        break;
    case PYGPU_GELU: /* g gelu'(x), the derivative a rule of its own */
    case PYGPU_GELU_TANH:
        t = pygpu_ag_un(n->op == PYGPU_GELU ? PYGPU_GELU_GRAD
                                            : PYGPU_GELU_TANH_GRAD, v);
        r = t ? pygpu_ag_bin(PYGPU_MUL, g, (PyObject *)t) : NULL;
        break;
    default:
        PyErr_SetString(PyExc_RuntimeError, "autograd: no rule");
    }
    Py_XDECREF(t);
    Py_XDECREF(u);
    if (r == NULL) {
        return -1;
    }
    grads[0] = r;
    return 0;
}

static pygpu_node *
unary_node(int op, TensorObject *a)
{
    if (op >= PYGPU_NUNOPS || unary_names[op] == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "the derivative of %s is not implemented in pygpu's "
                     "autograd yet", pygpu_unop_names[op]);
        return NULL;
    }
    return pygpu_ag_node(unary_names[op], unary_backward, 1, &a);
}

PyObject *
pygpu_ag_unary(int op, TensorObject *a, TensorObject *out, int inplace)
{
    PyObject *res;
    TensorObject *in[2] = {a, out};
    if (!pygpu_ag_wanted(2, in)) {
        return pygpu_op_unary_out(op, a, out, inplace);
    }
    int reads = unary_reads(op);
    if (out != NULL && !inplace) {
        return out_refused(NULL, pygpu_unop_names[op]);
    }
    if (inplace && (leaf_refused(a) < 0)) {
        return NULL;
    }
    if (inplace && reads == 2) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu's autograd does not record in-place %s_ (its "
                     "derivative needs the input it overwrites); use the "
                     "out-of-place form", pygpu_unop_names[op]);
        return NULL;
    }
    pygpu_node *n = unary_node(op, a);
    if (n == NULL) {
        return NULL;
    }
    if (reads == 2 && pygpu_ag_save(n, 0, a) < 0) {
        Py_DECREF(n);
        return NULL;
    }
    n->op = op;
    if (inplace) {
        PYGPU_BELOW_AUTOGRAD(res, pygpu_op_unary(op, a, 1));
    }
    else {
        res = pygpu_op_unary(op, a, 0);
    }
    if (res != NULL && reads == 1 &&
        pygpu_ag_save(n, 0, (TensorObject *)res) < 0) {
        Py_CLEAR(res);
    }
    if (res == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    return pygpu_ag_finish(res, n);
}
