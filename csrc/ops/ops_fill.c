/* ops_fill.c - a tensor filled with one value (fill_, zeros, full and
 * the 0-d tensors that stand for Python numbers), through the FILL kind of
 * the dispatch table. */
#include "ops/ops.h"

int
pygpu_op_fill_value(TensorObject *t, pygpu_scalar_value value)
{
    int64_t n = pygpu_numel(t->ndim, t->shape);
    if (n == 0) {
        return 0;
    }
    pygpu_kargs k;
    k.out = t->data;
    k.s = value;
    if (t->dtype == PYGPU_BOOL) {
        k.s.i = value.f != 0 || value.i != 0;
    }
    k.numel = n;
    return pygpu_dispatch(PYGPU_K_FILL, t->device, t->dtype, &k, "fill");
}

TensorObject *
pygpu_scalar_tensor(pygpu_scalar_value v, int dtype, pygpu_device dev)
{
    int64_t none[1] = {1};
    TensorObject *t = pygpu_tensor_empty(0, none, dtype, dev);
    if (t != NULL && pygpu_op_fill_value(t, v) < 0) {
        Py_CLEAR(t);
    }
    return t;
}

int
pygpu_op_fill(TensorObject *t, double value)
{
    pygpu_scalar_value v;
    v.f = value;
    /* bool: any nonzero value is true (0.5 too); otherwise truncated. */
    v.i = t->dtype == PYGPU_BOOL ? value != 0 : (int64_t)value;
    return pygpu_op_fill_value(t, v);
}
