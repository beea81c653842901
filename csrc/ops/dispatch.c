/* dispatch.c - the table of backends by device type, and the one lookup
 * every op goes through (see dispatch.h). */
#include "ops/ops.h"

#define PYGPU_OP_NAME_ROW(OP, name) #name,
const char *const pygpu_binop_names[PYGPU_NBINOPS] = {
    PYGPU_BINARY_OPS(PYGPU_OP_NAME_ROW) PYGPU_BITWISE_OPS(PYGPU_OP_NAME_ROW)};
const char *const pygpu_unop_names[PYGPU_NUNOPS] = {
    PYGPU_UNARY_OPS(PYGPU_OP_NAME_ROW)};

/* The rows by device type.  A CPU-only build has no CUDA rows. */
static const pygpu_backend *const backends[] = {
    [PYGPU_CPU] = &pygpu_cpu_backend,
#ifdef PYGPU_WITH_CUDA
    [PYGPU_CUDA] = &pygpu_cuda_backend,
#endif
    [PYGPU_MPS] = NULL,
};

int
pygpu_dispatch(int kind, pygpu_device dev, int dtype, pygpu_kargs *k,
               const char *what)
{
    const pygpu_backend *be = NULL;
    if (dev.type >= 0 && dev.type < (int)(sizeof(backends) /
                                          sizeof(backends[0]))) {
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
