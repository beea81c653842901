/* state.c - the module-wide state every layer reads: the types and
 * exceptions (pygpu_state) and NumPy's C API table.
 *
 * The extension keeps process-wide state (the CUDA context, per-device
 * allocators and handles), so, as NumPy does, it refuses a second
 * initialisation in the same process (a second interpreter, or a reload):
 * the state is written once, under the GIL, by the module's init, and only
 * read afterwards.  This file defines NumPy's API table
 * (PY_ARRAY_UNIQUE_SYMBOL); every other file sees it as extern.
 */
#define PYGPU_IMPORT_ARRAY
#include "core/pygpu.h"

static pygpu_module_state the_state;
pygpu_module_state *pygpu_state = NULL;

/* A RuntimeError subclass pygpu.<name>, with class attributes `attrs`
 * (NULL or a dict). */
static int
add_exception(PyObject *m, const char *name, const char *doc,
              PyObject *attrs, PyObject **out)
{
    char full[128];
    PyOS_snprintf(full, sizeof(full), "pygpu.%s", name);
    *out = PyErr_NewExceptionWithDoc(full, doc, PyExc_RuntimeError, attrs);
    if (*out == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(m, name, *out);
}

int
pygpu_state_init(PyObject *m)
{
    if (pygpu_state != NULL) {
        PyErr_SetString(PyExc_ImportError,
                        "pygpu._C cannot be initialised more than once per "
                        "process (it holds process-wide CUDA state)");
        return -1;
    }
    if (PyArray_ImportNumPyAPI() < 0) {
        return -1;
    }
    /* Set before anything can fail: a half-initialised extension must not
     * be initialised again in this process either. */
    pygpu_state = &the_state;
    /* CudaError carries the failing status (code) and its name, as
     * CuPy's errors do; None where there is none. */
    PyObject *status = Py_BuildValue("{s:O,s:O}", "code", Py_None, "name",
                                     Py_None);
    int bad = status == NULL ||
              add_exception(m, "OutOfMemoryError",
                            "Raised when CUDA memory runs out.", NULL,
                            &the_state.OutOfMemoryError) < 0 ||
              add_exception(m, "CudaError",
                            "A CUDA, cuBLAS or cuRAND call failed; code and "
                            "name are the failing status.",
                            status, &the_state.CudaError) < 0;
    Py_XDECREF(status);
    return bad ? -1 : 0;
}
