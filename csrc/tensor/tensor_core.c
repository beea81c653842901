/* tensor_core.c - the Tensor type: lifetime, the legacy constructor, and
 * the type built from its slots (layout and views are in tensor_layout.c,
 * allocation in tensor_alloc.c).
 *
 * A tensor is (base, data, ndim, shape, strides, dtype, device).  `base`
 * owns the memory: a NumPy array for plain CPU tensors (so from_numpy and
 * .numpy() share memory), a Storage for CUDA and pinned tensors.  Views
 * share the base and differ in data/shape/strides.
 */
#include "tensor/tensor.h"
#include "tensor/tensor_reduce.h"

#include <string.h>

#include <structmember.h>

/* ------------------------------------------------------------- lifetime */

static int
tensor_traverse(PyObject *self, visitproc visit, void *arg)
{
    TensorObject *t = (TensorObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(t->base);
    Py_VISIT(t->dict);
    Py_VISIT(t->grad);
    Py_VISIT(t->grad_fn);
    Py_VISIT(t->grad_acc);
    Py_VISIT(t->hooks);
    Py_VISIT(t->post_hooks);
    return 0;
}

static int
tensor_clear(PyObject *self)
{
    TensorObject *t = (TensorObject *)self;
    Py_CLEAR(t->dict);
    Py_CLEAR(t->grad);
    Py_CLEAR(t->grad_fn);
    Py_CLEAR(t->grad_acc);
    Py_CLEAR(t->hooks);
    Py_CLEAR(t->post_hooks);
    /* base is kept until dealloc: data must stay valid while the object
     * can still be reached by other objects being cleared. */
    return 0;
}

static void
tensor_dealloc(PyObject *self)
{
    TensorObject *t = (TensorObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (t->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    Py_CLEAR(t->dict);
    Py_CLEAR(t->grad);
    Py_CLEAR(t->grad_fn);
    Py_CLEAR(t->grad_acc);
    Py_CLEAR(t->hooks);
    Py_CLEAR(t->post_hooks);
    pygpu_version_release(t);
    Py_CLEAR(t->base);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Tensor(*size) / Tensor(sequence) / Tensor(tensor): torch.Tensor's legacy
 * constructor, float32 on the CPU; subclasses (nn.Parameter) get a view of
 * the given tensor. */
static PyObject *
tensor_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    PyObject *made = NULL, *result = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Tensor() takes no keyword arguments; use "
                        "pygpu.tensor(data, dtype=..., device=...)");
        return NULL;
    }
    if (nargs == 1 && Tensor_Check(PyTuple_GET_ITEM(args, 0))) {
        made = Py_NewRef(PyTuple_GET_ITEM(args, 0));
    }
    else if (nargs == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)) &&
             !PyTuple_Check(PyTuple_GET_ITEM(args, 0))) {
        pygpu_device cpu = {PYGPU_CPU, -1};
        made = (PyObject *)pygpu_tensor_from_data(PyTuple_GET_ITEM(args, 0),
                                                  pygpu_default_dtype(), cpu);
    }
    else {
        int ndim = 1;
        int64_t shape[PYGPU_MAX_DIMS] = {0}; /* Tensor(): shape (0,) */
        pygpu_device cpu = {PYGPU_CPU, -1};
        if (nargs > 0 && pygpu_parse_shape(PySequence_Fast_ITEMS(args),
                                           nargs, &ndim, shape) < 0) {
            return NULL;
        }
        made = (PyObject *)pygpu_tensor_empty(ndim, shape,
                                              pygpu_default_dtype(), cpu);
    }
    if (made == NULL) {
        return NULL;
    }
    if (tp == pygpu_state->Tensor_Type) {
        return made;
    }
    TensorObject *m = (TensorObject *)made;
    result = (PyObject *)pygpu_tensor_view_as(tp, m, m->ndim, m->shape, m->strides,
                                      0);
    Py_DECREF(made);
    return result;
}

static PyMemberDef tensor_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(TensorObject, dict), READONLY},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TensorObject, weakreflist),
     READONLY},
    {NULL},
};

/* Every slot of the type, declared here; the protocol slots are in
 * tensor_number.c and tensor_index.c, the methods and attributes in
 * tensor_methods.c. */
static PyType_Slot tensor_slots[] = {
    {Py_tp_new, tensor_tp_new},
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_traverse, tensor_traverse},
    {Py_tp_clear, tensor_clear},
    {Py_tp_members, tensor_members},
    {Py_tp_methods, pygpu_tensor_methods},
    {Py_tp_getset, pygpu_tensor_getset},
    {Py_tp_doc,
     "Tensor(*args)\n--\n\n"
     "An n-dimensional array on the CPU or a CUDA device.  Create one with\n"
     "pygpu.tensor, zeros, ones, empty, full, rand, randn or from_numpy.\n\n"
     "The legacy constructor, as torch.Tensor (float32 on the CPU):\n\n"
     "    Tensor(*size)   uninitialised, of that shape (Tensor(): (0,))\n"
     "    Tensor(data)    a copy of data (nested lists, NumPy arrays)\n"
     "    Tensor(tensor)  that tensor (a subclass gets a view of it)"},
    {Py_nb_add, pygpu_t_add},
    {Py_nb_subtract, pygpu_t_sub},
    {Py_nb_multiply, pygpu_t_mul},
    {Py_nb_true_divide, pygpu_t_div},
    {Py_nb_inplace_add, pygpu_t_iadd},
    {Py_nb_inplace_subtract, pygpu_t_isub},
    {Py_nb_inplace_multiply, pygpu_t_imul},
    {Py_nb_inplace_true_divide, pygpu_t_idiv},
    {Py_nb_matrix_multiply, pygpu_t_matmul},
    {Py_nb_power, pygpu_t_pow},
    {Py_nb_inplace_power, pygpu_t_ipow},
    {Py_nb_floor_divide, pygpu_t_floordiv},
    {Py_nb_inplace_floor_divide, pygpu_t_ifloordiv},
    {Py_nb_remainder, pygpu_t_mod},
    {Py_nb_inplace_remainder, pygpu_t_imod},
    {Py_nb_negative, pygpu_t_neg},
    {Py_nb_and, pygpu_t_and_slot},
    {Py_nb_or, pygpu_t_or_slot},
    {Py_nb_xor, pygpu_t_xor_slot},
    {Py_nb_inplace_and, pygpu_t_iand_slot},
    {Py_nb_inplace_or, pygpu_t_ior_slot},
    {Py_nb_inplace_xor, pygpu_t_ixor_slot},
    {Py_nb_invert, pygpu_t_invert},
    {Py_nb_positive, pygpu_t_pos},
    {Py_nb_bool, pygpu_t_bool},
    {Py_nb_float, pygpu_t_nb_float},
    {Py_nb_int, pygpu_t_nb_int},
    {Py_nb_index, pygpu_t_index},
    {Py_mp_length, pygpu_t_len},
    {Py_mp_subscript, pygpu_t_getitem},
    {Py_mp_ass_subscript, pygpu_t_setitem},
    {Py_tp_iter, pygpu_t_iter},
    {Py_tp_repr, pygpu_t_repr},
    {Py_tp_richcompare, pygpu_t_compare_slot},
    {Py_tp_hash, pygpu_t_hash},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    .name = "pygpu.Tensor",
    .basicsize = sizeof(TensorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = tensor_slots,
};

int
pygpu_tensor_add_methods(PyMethodDef *defs)
{
    PyTypeObject *tp = pygpu_state->Tensor_Type;
    for (PyMethodDef *d = defs; d->ml_name != NULL; d++) {
        PyObject *descr = PyDescr_NewMethod(tp, d);
        int rc = descr ? PyObject_SetAttrString((PyObject *)tp, d->ml_name,
                                                descr)
                       : -1;
        Py_XDECREF(descr);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

int
pygpu_tensor_register(PyObject *m)
{
    PyObject *type = PyType_FromModuleAndSpec(m, &tensor_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    pygpu_state->Tensor_Type = (PyTypeObject *)type;
    /* Methods defined with their ops, beyond tensor_methods.c's table. */
    if (pygpu_tensor_add_methods(pygpu_binary_math_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_clamp_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_compare_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_logical_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_where_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_reduce_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_stats_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_scan_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_softmax_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_scatter_methods) < 0 ||
        pygpu_tensor_add_methods(pygpu_hook_methods) < 0) {
        return -1;
    }
    /* As torch's: array <op> tensor defers to the tensor's reflected
     * operator (a tensor results, tensor_operand.c), while NumPy's own
     * functions and in-place operators convert it with __array__. */
    PyObject *prio = PyLong_FromLong(1000);
    int rc = prio ? PyObject_SetAttrString(type, "__array_priority__", prio)
                  : -1;
    Py_XDECREF(prio);
    if (rc < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(m, "Tensor", type);
}
