/* module_types.c - the one way a registration hook makes one of the
 * module's types: created from its spec, bound to the module, and added
 * to it under its public name. */
#include "core/pygpu.h"

PyObject *
pygpu_add_type(PyObject *m, PyType_Spec *spec, PyObject *bases,
               const char *name)
{
    PyObject *type = PyType_FromModuleAndSpec(m, spec, bases);
    if (type == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, name, type) < 0) {
        Py_DECREF(type);
        return NULL;
    }
    return type;
}
