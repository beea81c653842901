/* dispatch.c - the table of backends by device type, filled by the
 * backends at the module's init, and the one lookup every op goes through
 * (see dispatch.h); the names of the ops, for messages. */
#include "core/dispatch.h"

#define PYGPU_OP_NAME_ROW(OP, name) #name,
const char *const pygpu_binop_names[PYGPU_NBINOPS] = {
    PYGPU_BINARY_OPS(PYGPU_OP_NAME_ROW) PYGPU_BITWISE_OPS(PYGPU_OP_NAME_ROW)};
const char *const pygpu_unop_names[PYGPU_NUNOPS] = {
    PYGPU_UNARY_OPS(PYGPU_OP_NAME_ROW)};

/* The rows by device type (NULL: none; a CPU-only build has no CUDA
 * rows).  Written once per backend by pygpu_dispatch_register at the
 * module's init, under the GIL and before any op can run; read-only
 * afterwards, so the lookup takes no lock. */
static const pygpu_backend *backends[PYGPU_NDEVICE_TYPES];

int
pygpu_dispatch_register(int device_type, const pygpu_backend *be)
{
    if (device_type < 0 || device_type >= PYGPU_NDEVICE_TYPES ||
        be == NULL || backends[device_type] != NULL) {
        PyErr_Format(PyExc_SystemError,
                     "pygpu: no backend can be registered for device type "
                     "%d", device_type);
        return -1;
    }
    backends[device_type] = be;
    return 0;
}

int
pygpu_dispatch(int kind, pygpu_device dev, int dtype, pygpu_kargs *k,
               const char *what)
{
    const pygpu_backend *be = NULL;
    if (dev.type >= 0 && dev.type < PYGPU_NDEVICE_TYPES) {
        be = backends[dev.type];
    }
    if (be == NULL) {
        if (dev.type == PYGPU_CUDA) {
            return pygpu_raise_no_cuda();
        }
        char name[32];
        pygpu_device_str(&dev, name, sizeof(name));
        PyErr_Format(PyExc_RuntimeError, "\"%s\" not implemented for %s",
                     what, name);
        return -1;
    }
    pygpu_kernel_fn fn = NULL;
    if (kind >= 0 && kind < PYGPU_NKINDS && dtype >= 0 &&
        dtype < PYGPU_NDTYPES) {
        fn = be->rows[kind][dtype];
    }
    if (fn == NULL) {
        PyErr_Format(PyExc_RuntimeError, "\"%s\" not implemented for '%s'",
                     what, dtype >= 0 && dtype < PYGPU_NDTYPES
                               ? pygpu_dtype_table[dtype].name : "?");
        return -1;
    }
    k->dtype = dtype;
    k->device = dev.index;
    k->stream = NULL;
    k->workspace = NULL;
    return be->run(kind, fn, k, what);
}
