/* tensor_select.c - the Python-facing index_select, gather, scatter_add(_)
 * and index_add(_) (module functions and Tensor methods): arguments parsed
 * and checked (ops_index.c, ops_scatter.c), then autograd_select.c's
 * recording wrappers, which compute with those ops. */
#include "tensor/tensor.h"

/* ------------------------------------------------- index_select, gather */

/* a: dim, index (, sparse_grad: accepted and ignored). */
static PyObject *
index_select_impl(TensorObject *t, PyObject **a)
{
    int dim;
    if (pygpu_parse_dim(a[0], t->ndim, &dim) < 0) {
        return NULL;
    }
    return pygpu_ag_select(t, dim, a[1], 0);
}

static PyObject *
gather_impl(TensorObject *t, PyObject **a)
{
    int dim;
    if (pygpu_parse_dim(a[0], t->ndim, &dim) < 0) {
        return NULL;
    }
    return pygpu_ag_select(t, dim, a[1], 1);
}

/* fname(input, dim, index, ...) and t.fname(dim, index, ...), the names
 * after index keyword-only. */
static const char *const index_select_names[] = {"input", "dim", "index"};
static const char *const gather_names[] = {"input", "dim", "index",
                                           "sparse_grad"};

PYGPU_FUNCTION_AND_METHOD(index_select, 2, 2)
PYGPU_FUNCTION_AND_METHOD(gather, 2, 2)

PyMethodDef pygpu_index_functions[] = {
    {"index_select", FASTKW(index_select_fn),
     "index_select($module, input, dim, index)\n--\n\n"
     "The entries index (a 1-d int32/int64 tensor) of input along dim, as\n"
     "a new tensor; every index lies in [0, input.size(dim))."},
    {"gather", FASTKW(gather_fn),
     "gather($module, input, dim, index, *, sparse_grad=False)\n--\n\n"
     "out[i][j][k] = input[index[i][j][k]][j][k] (dim 0; likewise for the\n"
     "others): index has input's number of dims and no larger sizes\n"
     "outside dim, and its entries lie in [0, input.size(dim)).\n"
     "sparse_grad is accepted and ignored (the gradient is dense)."},
    {NULL},
};

/* ------------------------------------------- scatter_add, index_add */

/* Into self (in place) or into a copy of self, src scaled by alpha (NULL:
 * 1) first. */
static PyObject *
scatter_call(const char *fname, TensorObject *self, PyObject *dimobj,
             PyObject *index, PyObject *src, PyObject *alpha, int index_add,
             int inplace)
{
    int dim;
    if (pygpu_scatter_check(fname, self, dimobj, index, src, index_add,
                            &dim) < 0) {
        return NULL;
    }
    return pygpu_ag_scatter(self, dim, (TensorObject *)index,
                            (TensorObject *)src, alpha, index_add, inplace);
}

static const char *const fn_names[] = {"input", "dim", "index", "src",
                                       "alpha"};
static const char *const fn_names_ia[] = {"input", "dim", "index", "source",
                                          "alpha"};

/* fname(input, dim, index, src) / t.fname(dim, index, src); index_add
 * takes source and a keyword-only alpha. */
#define SCATTER_ENTRIES(fname, index_add, inplace)                           \
    static PyObject *fname##_fn(PyObject *self, PyObject *const *args,       \
                                Py_ssize_t nargs, PyObject *kwnames)         \
    {                                                                        \
        PyObject *a[5] = {NULL, NULL, NULL, NULL, NULL};                     \
        if (pygpu_parse_args(#fname, args, nargs, kwnames,                   \
                             index_add ? fn_names_ia : fn_names,             \
                             index_add ? 5 : 4, 4, 4, a) < 0 ||              \
            pygpu_tensor_arg(a[0], #fname, "input") < 0) {                   \
            return NULL;                                                     \
        }                                                                    \
        return scatter_call(#fname, (TensorObject *)a[0], a[1], a[2], a[3],  \
                            a[4], index_add, inplace);                       \
    }                                                                        \
    static PyObject *t_##fname(PyObject *op, PyObject *const *args,          \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        PyObject *a[4] = {NULL, NULL, NULL, NULL};                           \
        if (pygpu_parse_args(#fname, args, nargs, kwnames,                   \
                             (index_add ? fn_names_ia : fn_names) + 1,       \
                             index_add ? 4 : 3, 3, 3, a) < 0) {              \
            return NULL;                                                     \
        }                                                                    \
        return scatter_call(#fname, (TensorObject *)op, a[0], a[1], a[2],    \
                            a[3], index_add, inplace);                       \
    }

SCATTER_ENTRIES(scatter_add, 0, 0)
SCATTER_ENTRIES(scatter_add_, 0, 1)
SCATTER_ENTRIES(index_add, 1, 0)
SCATTER_ENTRIES(index_add_, 1, 1)

#define SCATTER_DOC                                                          \
    "self[index[i][j][k]][j][k] += src[i][j][k] for dim 0 (likewise for\n"  \
    "the others) over the positions of index, which has self's number of\n" \
    "dims and sizes no larger than src's (nor self's outside dim);\n"       \
    "repeated indices accumulate."
#define INDEX_ADD_DOC                                                        \
    "self[..., index[i], ...] += alpha * source[..., i, ...] along dim,\n"  \
    "index a 1-d int32/int64 tensor of source.size(dim) entries; repeated\n" \
    "indices accumulate."

static PyMethodDef scatter_functions[] = {
    {"scatter_add", FASTKW(scatter_add_fn),
     "scatter_add($module, input, dim, index, src)\n--\n\n"
     "A copy of input with src added at index: " SCATTER_DOC},
    {"index_add", FASTKW(index_add_fn),
     "index_add($module, input, dim, index, source, *, alpha=1)\n--\n\n"
     "A copy of input with: " INDEX_ADD_DOC},
    {NULL},
};

PyMethodDef pygpu_scatter_methods[] = {
    {"scatter_add", FASTKW(t_scatter_add),
     "scatter_add($self, dim, index, src)\n--\n\n"
     "Out-of-place scatter_add_: " SCATTER_DOC},
    {"scatter_add_", FASTKW(t_scatter_add_),
     "scatter_add_($self, dim, index, src)\n--\n\n"
     "In place: " SCATTER_DOC},
    {"index_add", FASTKW(t_index_add),
     "index_add($self, dim, index, source, *, alpha=1)\n--\n\n"
     "Out-of-place index_add_: " INDEX_ADD_DOC},
    {"index_add_", FASTKW(t_index_add_),
     "index_add_($self, dim, index, source, *, alpha=1)\n--\n\n"
     "In place: " INDEX_ADD_DOC},
    {NULL},
};

int
pygpu_scatter_register(PyObject *m)
{
    return PyModule_AddFunctions(m, scatter_functions);
}
