/* op_list.h - the unary ops that Python sees through the generic front
 * end, one row each: X(ENUM, name, doc).
 *
 * A row gives pygpu.<name>(input), Tensor.<name>() and, in place,
 * Tensor.<name>_(), and puts <name> in pygpu._C._unary_ops, which
 * pygpu/__init__.py re-exports.  ENUM names the op's row in
 * PYGPU_UNARY_OPS (kernels/kernels.h), whose scalar rules are in
 * kernels/rules.h.  neg and relu predate the list and have signatures of
 * their own (ops_functions.c, tensor_methods.c).
 */
#ifndef PYGPU_OP_LIST_H
#define PYGPU_OP_LIST_H

#define PYGPU_PY_UNARY_OPS(X)                                                \
    X(ABS, abs, "|input|, elementwise; -0.0 gives 0.0, NaN stays NaN.")

#endif /* PYGPU_OP_LIST_H */
