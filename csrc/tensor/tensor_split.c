/* tensor_split.c - the Python-facing split, chunk, unbind and narrow
 * (module functions and Tensor methods): a plan of views checked by
 * ops_split.c, the views made and recorded by autograd_layout.c's
 * pygpu_ag_pieces; and expand_as. */
#include "tensor/tensor.h"

static PyObject *
pieces_call(int op, TensorObject *t, PyObject **a)
{
    pygpu_pieces p;
    PyObject *r = NULL;
    if (pygpu_pieces_plan(op, t, a, &p) == 0) {
        r = pygpu_ag_pieces(t, &p);
    }
    pygpu_pieces_clear(&p);
    if (r != NULL && op == PYGPU_NARROW) { /* its one view, no tuple */
        Py_SETREF(r, Py_NewRef(PyTuple_GET_ITEM(r, 0)));
    }
    return r;
}

/* fname's names after "input", the first `required` of them required;
 * all may come positionally. */
#define SPLIT_OP(fname, op, required, ...)                                   \
    static const char *const fname##_names[] = {"input", __VA_ARGS__};      \
    static PyObject *fname##_impl(TensorObject *t, PyObject **a)             \
    {                                                                        \
        return pieces_call(op, t, a);                                        \
    }                                                                        \
    PYGPU_FUNCTION_AND_METHOD(fname, fname##_n - 1, required)

SPLIT_OP(split, PYGPU_SPLIT, 1, "split_size_or_sections", "dim")
SPLIT_OP(chunk, PYGPU_CHUNK, 1, "chunks", "dim")
SPLIT_OP(unbind, PYGPU_UNBIND, 0, "dim")
SPLIT_OP(narrow, PYGPU_NARROW, 3, "dim", "start", "length")

PyMethodDef pygpu_split_functions[] = {
    {"split", FASTKW(split_fn),
     "split($module, input, split_size_or_sections, dim=0)\n--\n\n"
     "Views of input along dim: pieces of split_size_or_sections (an int;\n"
     "the last piece may be smaller) or of the sizes it lists."},
    {"chunk", FASTKW(chunk_fn),
     "chunk($module, input, chunks, dim=0)\n--\n\n"
     "At most `chunks` views of input along dim, of ceil(size / chunks)\n"
     "each (the last may be smaller)."},
    {"unbind", FASTKW(unbind_fn),
     "unbind($module, input, dim=0)\n--\n\n"
     "The views input.select(dim, i) for every i, as a tuple."},
    {"narrow", FASTKW(narrow_fn),
     "narrow($module, input, dim, start, length)\n--\n\n"
     "The view of input's elements start .. start + length - 1 along dim\n"
     "(a negative start counts from the end)."},
    {NULL},
};

PyObject *
pygpu_t_expand_as(PyObject *op, PyObject *other)
{
    if (pygpu_tensor_arg(other, "expand_as", "other") < 0) {
        return NULL;
    }
    TensorObject *o = (TensorObject *)other;
    PyObject *size = pygpu_size_new(o->ndim, o->shape);
    if (size == NULL) {
        return NULL;
    }
    PyObject *r = pygpu_t_expand(op, &size, 1);
    Py_DECREF(size);
    return r;
}
