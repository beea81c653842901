/* ops_reduce_api.c - the reductions' result types: max and min over a dim
 * give pygpu.return_types.max / .min, (values, indices) pairs as torch's,
 * made at the module's registration.  (The Python entries of the family
 * are in tensor/.) */
#include "ops/reduce.h"

static PyStructSequence_Field max_fields[] = {
    {"values", "the maxima"},
    {"indices", "where they are (int64)"},
    {NULL, NULL},
};

static PyStructSequence_Field min_fields[] = {
    {"values", "the minima"},
    {"indices", "where they are (int64)"},
    {NULL, NULL},
};

static PyStructSequence_Desc max_desc = {
    "pygpu.return_types.max",
    "max(input, dim) result: (values, indices).",
    max_fields,
    2,
};

static PyStructSequence_Desc min_desc = {
    "pygpu.return_types.min",
    "min(input, dim) result: (values, indices).",
    min_fields,
    2,
};

int
pygpu_reduce_register(PyObject *m)
{
    pygpu_state->MaxResult_Type = PyStructSequence_NewType(&max_desc);
    if (pygpu_state->MaxResult_Type == NULL) {
        return -1;
    }
    pygpu_state->MinResult_Type = PyStructSequence_NewType(&min_desc);
    if (pygpu_state->MinResult_Type == NULL) {
        return -1;
    }
    return 0;
}
