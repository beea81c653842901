/* op_list.h - the unary ops that Python sees through the generic front
 * end, one row each: X(ENUM, name, doc).
 *
 * A row gives pygpu.<name>(input), Tensor.<name>() and, in place,
 * Tensor.<name>_(), and puts <name> in pygpu._C._unary_ops, which
 * pygpu/__init__.py re-exports.  ENUM names the op's row in
 * PYGPU_UNARY_OPS (kernels/kernels.h), whose scalar rules are in
 * kernels/rules.h; int64 inputs of the floating ops (PYGPU_UNARY_FLOAT_OPS)
 * give float32.  neg and relu predate the list and have signatures of
 * their own (tensor/tensor_functions.c, tensor/tensor_methods.c).
 */
#ifndef PYGPU_OP_LIST_H
#define PYGPU_OP_LIST_H

#define PYGPU_PY_UNARY_OPS(X)                                                \
    X(ABS, abs, "|input|, elementwise; -0.0 gives 0.0, NaN stays NaN.")      \
    X(FLOOR, floor, "The largest integer <= input, elementwise.")            \
    X(CEIL, ceil, "The smallest integer >= input, elementwise.")             \
    X(ROUND, round, "input rounded to the nearest integer, half to even.")   \
    X(SIGN, sign, "-1, 0 or 1 by the sign of input; NaN stays NaN.")         \
    X(EXP, exp, "e ** input, elementwise.")                                  \
    X(LOG, log, "The natural logarithm of input, elementwise.")              \
    X(LOG1P, log1p, "log(1 + input), accurate for small input.")             \
    X(EXPM1, expm1, "exp(input) - 1, accurate for small input.")             \
    X(SQRT, sqrt, "The square root of input, elementwise.")                  \
    X(RSQRT, rsqrt, "1 / sqrt(input), elementwise.")                         \
    X(SIN, sin, "The sine of input (radians), elementwise.")                 \
    X(COS, cos, "The cosine of input (radians), elementwise.")               \
    X(TANH, tanh, "The hyperbolic tangent of input, elementwise.")           \
    X(SIGMOID, sigmoid, "1 / (1 + exp(-input)), elementwise.")               \
    X(RECIPROCAL, reciprocal, "1 / input, elementwise.")                     \
    X(SILU, silu, "input * sigmoid(input), elementwise.")                    \
    X(GELU, gelu, "input * Phi(input) (exact, erf-based), elementwise.")

#endif /* PYGPU_OP_LIST_H */
