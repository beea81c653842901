/* module.c - pygpu._C's init: the module-wide state first (core/state.c,
 * which refuses a second initialisation in one process), then each floor's
 * types and functions, from the bottom up.  Multi-phase init.
 */
#include "tensor/tensor.h"
#include "ops/autocast.h"
#include "autograd/autograd.h"
#include "ops/op_list.h"
#include "interop/dlpack.h"
#include "cpu/cpu_dispatch.h"
#include "cpu/cpu_blas.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "tensor/tensor_reduce.h"

static PyObject *
pygpu_cuda_available_py(PyObject *self, PyObject *noargs)
{
    return PyBool_FromLong(pygpu_cuda_device_count() > 0);
}

static PyObject *
pygpu_cuda_built_py(PyObject *self, PyObject *noargs)
{
    return PyBool_FromLong(pygpu_cuda_built());
}

static PyObject *
pygpu_cuda_device_count_py(PyObject *self, PyObject *noargs)
{
    return PyLong_FromLong(pygpu_cuda_device_count());
}

static PyObject *
pygpu_cuda_unavailable_reason_py(PyObject *self, PyObject *noargs)
{
    const char *why = pygpu_cuda_unavailable_reason();
    if (why == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(why);
}

static PyObject *
set_poison_py(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    pygpu_set_poison(on);
    Py_RETURN_NONE;
}

static PyObject *
fail_allocation_in_py(PyObject *self, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    pygpu_set_fail_allocation_in(n);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_set_poison", set_poison_py, METH_O,
     "_set_poison($module, flag, /)\n--\n\n"
     "Test aid: fill every new tensor with 0xFF bytes (NaN / -1)."},
    {"_fail_allocation_in", fail_allocation_in_py, METH_O,
     "_fail_allocation_in($module, n, /)\n--\n\n"
     "Test aid: the nth tensor allocation from now (1: the next) fails\n"
     "with the device's out-of-memory error; 0 turns it off."},
    {"_cuda_is_available", pygpu_cuda_available_py, METH_NOARGS,
     "_cuda_is_available($module, /)\n--\n\n"
     "True when a CUDA device can be used."},
    {"_cuda_is_built", pygpu_cuda_built_py, METH_NOARGS,
     "_cuda_is_built($module, /)\n--\n\n"
     "True when pygpu was built with CUDA."},
    {"_cuda_device_count", pygpu_cuda_device_count_py, METH_NOARGS,
     "_cuda_device_count($module, /)\n--\n\n"
     "Number of usable CUDA devices (0 without a driver or a device)."},
    {"_cuda_unavailable_reason", pygpu_cuda_unavailable_reason_py,
     METH_NOARGS,
     "_cuda_unavailable_reason($module, /)\n--\n\n"
     "Why CUDA cannot be used, or None."},
    {NULL, NULL, 0, NULL},
};

/* pygpu._C._unary_ops: the names of op_list.h, which the package
 * re-exports. */
#define UNARY_NAME(OP, name, doc) #name,
static const char *const unary_names[] = {PYGPU_PY_UNARY_OPS(UNARY_NAME)
                                          NULL};

/* NcclComm and the NCCL functions (their stand-ins without NCCL). */
static int
nccl_register(PyObject *m)
{
    PyObject *tp = pygpu_add_type(m, &pygpu_nccl_comm_spec, NULL, "NcclComm");
    if (tp == NULL) {
        return -1;
    }
    Py_DECREF(tp); /* the module holds it */
    return PyModule_AddFunctions(m, pygpu_nccl_module_functions);
}

static int
add_unary_ops(PyObject *m)
{
    Py_ssize_t n = 0;
    while (unary_names[n] != NULL) {
        n++;
    }
    PyObject *names = PyTuple_New(n);
    if (names == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(unary_names[i]);
        if (s == NULL) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    int rc = PyModule_AddObjectRef(m, "_unary_ops", names);
    Py_DECREF(names);
    return rc;
}

static int
pygpu_exec(PyObject *m)
{
    /* The module-wide state, then the dispatch table's rows (and, from
     * cuda/, the device runtime), before anything can run an op. */
    if (pygpu_state_init(m) < 0 || pygpu_cuda_init() < 0 ||
        pygpu_cpu_init() < 0) {
        goto fail;
    }
    if (pygpu_dtype_register(m) < 0 || pygpu_device_register(m) < 0 ||
        pygpu_size_register(m) < 0 || pygpu_tensor_register(m) < 0 ||
        pygpu_allocator_register(m) < 0 || pygpu_reduce_register(m) < 0 ||
        pygpu_matmul_register(m) < 0 || pygpu_autograd_register(m) < 0 ||
        pygpu_scatter_register(m) < 0 || pygpu_generator_register(m) < 0 ||
        pygpu_autograd_engine_init() < 0 || nccl_register(m) < 0) {
        goto fail;
    }
    if (PyModule_AddFunctions(m, pygpu_create_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_ops_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_reduce_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_stats_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_scan_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_softmax_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_matmul_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_linear_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_autocast_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_random_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_sample_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_compare_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_logical_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_where_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_xent_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_optim_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_strided_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_cuda_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_stream_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_dlpack_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_binary_math_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_clamp_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_default_dtype_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_default_device_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_range_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_join_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_split_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_flip_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_index_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_thread_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_sort_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_sorted_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_grad_mode_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_autograd_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_cpu_blas_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_im2col_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_row_norm_functions) < 0 ||
        PyModule_AddFunctions(m, pygpu_checksum_functions) < 0) {
        goto fail;
    }
    if (PyModule_AddStringConstant(m, "__version__", PYGPU_VERSION) < 0 ||
        add_unary_ops(m) < 0) {
        goto fail;
    }
    return 0;
fail:
    /* Leave the state set: a half-initialised extension must not be
     * initialised again in this process either. */
    return -1;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, pygpu_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pygpu._C",
    .m_doc = "pygpu's C core: devices, dtypes, tensors, allocators, ops.",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = module_slots,
};

PyMODINIT_FUNC
PyInit__C(void)
{
    return PyModuleDef_Init(&module_def);
}
