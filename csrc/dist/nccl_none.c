/* nccl_none.c - the NCCL layer of a build without it (CPU-only, or a CUDA
 * toolkit without nccl.h): the same names as nccl_*.c, where the queries
 * say why NCCL cannot be used and everything else raises RuntimeError
 * saying so. */
#include "core/pygpu.h"
#include "dist/nccl_docs.h"

/* setup.py names what is missing when a CUDA build has no nccl.h. */
#ifndef PYGPU_NO_NCCL_MESSAGE
#define PYGPU_NO_NCCL_MESSAGE PYGPU_NO_CUDA_MESSAGE
#endif

static int
refuse(void)
{
    PyErr_SetString(PyExc_RuntimeError, PYGPU_NO_NCCL_MESSAGE);
    return -1;
}

static PyObject *
refuse_noargs(PyObject *self, PyObject *noargs)
{
    refuse();
    return NULL;
}

static PyObject *
refuse_fastkw(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    refuse();
    return NULL;
}

static PyObject *
refuse_getter(PyObject *self, void *closure)
{
    refuse();
    return NULL;
}

static PyObject *
refuse_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    refuse();
    return NULL;
}

static PyObject *
none_noargs(PyObject *m, PyObject *noargs)
{
    Py_RETURN_NONE;
}

static PyObject *
reason_noargs(PyObject *m, PyObject *noargs)
{
    return PyUnicode_FromString(PYGPU_NO_NCCL_MESSAGE);
}

static PyObject *
reason_fast(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError,
                     "_nccl_load() takes at most 1 argument (%zd given)",
                     nargs);
        return NULL;
    }
    return PyUnicode_FromString(PYGPU_NO_NCCL_MESSAGE);
}

static PyObject *
false_noargs(PyObject *m, PyObject *noargs)
{
    Py_RETURN_FALSE;
}

PyMethodDef pygpu_nccl_module_functions[] = {
    {"_nccl_is_built", false_noargs, METH_NOARGS, PYGPU_DOC_NCCL_IS_BUILT},
    {"_nccl_version", none_noargs, METH_NOARGS, PYGPU_DOC_NCCL_VERSION},
    {"_nccl_capabilities", refuse_noargs, METH_NOARGS,
     PYGPU_DOC_NCCL_CAPABILITIES},
    {"_nccl_load_error", reason_noargs, METH_NOARGS,
     PYGPU_DOC_NCCL_LOAD_ERROR},
    {"_nccl_load", FAST(reason_fast), PYGPU_DOC_NCCL_LOAD},
    {"_nccl_unique_id", refuse_noargs, METH_NOARGS,
     PYGPU_DOC_NCCL_UNIQUE_ID},
    {NULL},
};

#define FUNC_NOARGS refuse_noargs, METH_NOARGS
#define FUNC_FASTKW FASTKW(refuse_fastkw)
#define METHOD_ROW(name, KIND, doc) {#name, FUNC_##KIND, doc},
static PyMethodDef NcclComm_methods[] = {
    PYGPU_NCCL_COMM_METHODS(METHOD_ROW)
    {NULL},
};
#undef METHOD_ROW

#define GETTER_ROW(name, doc) {#name, refuse_getter, NULL, doc, NULL},
static PyGetSetDef NcclComm_getset[] = {
    PYGPU_NCCL_COMM_GETTERS(GETTER_ROW)
    {NULL},
};
#undef GETTER_ROW

static PyType_Slot NcclComm_slots[] = {
    {Py_tp_new, (void *)refuse_new},
    {Py_tp_methods, NcclComm_methods},
    {Py_tp_getset, NcclComm_getset},
    {Py_tp_doc, (void *)PYGPU_DOC_NCCL_COMM},
    {0, NULL},
};

PyType_Spec pygpu_nccl_comm_spec = {"pygpu._C.NcclComm", sizeof(PyObject),
                                    0, Py_TPFLAGS_DEFAULT, NcclComm_slots};
