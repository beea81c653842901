/* nccl_ops.c - NcclComm's collectives and point-to-point calls: the
 * tensor checks (contiguous CUDA tensors on the communicator's device, in
 * torch's words), pygpu's dtypes and reduce ops as NCCL's, and one place
 * that launches a call on the device's current stream and checks it. */
#include "dist/nccl_api.h"
#include "cuda/cuda_runtime.h"
#include "ops/ops.h"

enum call_kind {
    ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND, RECV
};

/* One NCCL call; count is in elements (per rank for the gathers). */
typedef struct {
    enum call_kind kind;
    const char *name;    /* the NCCL function, for errors */
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;
    int peer;            /* root or peer rank */
    TensorObject *written; /* its version counter is bumped at launch */
} nccl_call;

static ncclResult_t
issue(const NcclCommObject *self, const nccl_call *c, cudaStream_t s)
{
    const pygpu_nccl_api *api = self->api;
    ncclComm_t comm = self->comm;

    switch (c->kind) {
    case ALL_REDUCE:
        return api->ncclAllReduce(c->send, c->recv, c->count, c->dtype,
                                  c->op, comm, s);
    case BROADCAST:
        return api->ncclBroadcast(c->send, c->recv, c->count, c->dtype,
                                  c->peer, comm, s);
    case REDUCE:
        return api->ncclReduce(c->send, c->recv, c->count, c->dtype, c->op,
                               c->peer, comm, s);
    case ALL_GATHER:
        return api->ncclAllGather(c->send, c->recv, c->count, c->dtype,
                                  comm, s);
    case REDUCE_SCATTER:
        return api->ncclReduceScatter(c->send, c->recv, c->count, c->dtype,
                                      c->op, comm, s);
    case SEND:
        return api->ncclSend(c->send, c->count, c->dtype, c->peer, comm, s);
    case RECV:
        return api->ncclRecv(c->recv, c->count, c->dtype, c->peer, comm, s);
    }
    return ncclInvalidArgument;
}

/* Launch c on the communicator's device and its current stream; with a
 * nonblocking communicator, wait until NCCL has queued it. */
static PyObject *
run(NcclCommObject *self, const nccl_call *c)
{
    ncclResult_t rc;
    cudaStream_t stream;
    int prev;

    if (c->written != NULL) {
        (*pygpu_version_counter(c->written))++;
    }
    if (c->count == 0) {
        Py_RETURN_NONE;  /* every rank has nothing: nothing to exchange */
    }
    prev = pygpu_cuda_device_guard(self->device);
    if (prev < 0) {
        return NULL;
    }
    stream = (cudaStream_t)pygpu_cuda_current_stream(self->device);
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = pygpu_nccl_settle(self, issue(self, c, stream));
    Py_END_ALLOW_THREADS
    self->busy = 0;
    pygpu_cuda_device_restore(self->device, prev);
    if (pygpu_nccl_check(self, rc, c->name) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* A tensor NCCL reads (and writes, if `write`: not read-only memory): a
 * contiguous CUDA tensor on self's device. */
static int
check_tensor(NcclCommObject *self, const char *fname, const char *argname,
             PyObject *obj, int write, TensorObject **out)
{
    TensorObject *t;
    char where[32];

    if (!Tensor_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' must be Tensor, not %.100s", fname,
                     argname, Py_TYPE(obj)->tp_name);
        return -1;
    }
    t = (TensorObject *)obj;
    if (t->device.type != PYGPU_CUDA) {
        pygpu_device_str(&t->device, where, sizeof(where));
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): the NCCL backend serves CUDA tensors, but "
                     "argument '%s' is on %s", fname, argname, where);
        return -1;
    }
    if (t->device.index != self->device) {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected all tensors to be on the same device, but "
                     "found at least two devices, cuda:%d and cuda:%d! (%s(): "
                     "argument '%s' and the communicator)", t->device.index,
                     self->device, fname, argname);
        return -1;
    }
    if (!pygpu_is_contiguous(t)) {
        PyErr_Format(PyExc_ValueError, "Tensors must be contiguous (%s(): "
                     "argument '%s')", fname, argname);
        return -1;
    }
    if (write && pygpu_check_readonly(t) < 0) {
        return -1;
    }
    *out = t;
    return 0;
}

/* pygpu's dtypes as NCCL's; bool as bytes holding 0 or 1.  bfloat16 only
 * where the library is NCCL 2.10 or later (nccl_api.h). */
static const int nccl_dtypes[PYGPU_NDTYPES] = {
    [PYGPU_FLOAT32] = ncclFloat32, [PYGPU_FLOAT16] = ncclFloat16,
    [PYGPU_FLOAT64] = ncclFloat64, [PYGPU_INT64] = ncclInt64,
    [PYGPU_BOOL] = ncclUint8,      [PYGPU_UINT8] = ncclUint8,
    [PYGPU_INT32] = ncclInt32,     [PYGPU_BFLOAT16] = PYGPU_NCCL_BFLOAT16,
};

/* Nonzero when the library serves pygpu's dtype. */
static int
dtype_supported(const pygpu_nccl_api *api, int dtype)
{
    return dtype != PYGPU_BFLOAT16 ||
           pygpu_nccl_at_least(api, PYGPU_NCCL_AVG_BF16_MAJOR,
                               PYGPU_NCCL_AVG_BF16_MINOR);
}

/* TypeError naming what `what` (a dtype or reduce op) needs. */
static int
raise_too_old(const pygpu_nccl_api *api, const char *fname,
              const char *what)
{
    int major, minor, patch;

    pygpu_nccl_version_split(api->version, &major, &minor, &patch);
    PyErr_Format(PyExc_TypeError, "%s(): %s needs NCCL %d.%d or later; "
                 "this is NCCL %d.%d.%d", fname, what,
                 PYGPU_NCCL_AVG_BF16_MAJOR, PYGPU_NCCL_AVG_BF16_MINOR, major,
                 minor, patch);
    return -1;
}

static int
nccl_dtype(const NcclCommObject *self, const char *fname,
           const TensorObject *t, ncclDataType_t *out)
{
    char what[64];

    if (!dtype_supported(self->api, t->dtype)) {
        snprintf(what, sizeof(what), "dtype %s",
                 pygpu_dtype_table[t->dtype].name);
        return raise_too_old(self->api, fname, what);
    }
    *out = (ncclDataType_t)nccl_dtypes[t->dtype];
    return 0;
}

/* op ('SUM', 'PRODUCT', 'MAX', 'MIN', 'AVG', any case) for a tensor of
 * `dtype`.  Bool tensors as torch has them: SUM is a logical or (MAX),
 * PRODUCT a logical and (MIN), AVG refused. */
static const struct { const char *name; ncclRedOp_t op; } nccl_ops[] = {
    {"SUM", ncclSum}, {"PRODUCT", ncclProd}, {"MAX", ncclMax},
    {"MIN", ncclMin}, {"AVG", PYGPU_NCCL_AVG},
};
#define N_OPS (sizeof(nccl_ops) / sizeof(nccl_ops[0]))

/* Nonzero when the library has reduce op `op` (AVG: NCCL 2.10). */
static int
op_supported(const pygpu_nccl_api *api, ncclRedOp_t op)
{
    return op != PYGPU_NCCL_AVG ||
           pygpu_nccl_at_least(api, PYGPU_NCCL_AVG_BF16_MAJOR,
                               PYGPU_NCCL_AVG_BF16_MINOR);
}

static int
parse_op(const NcclCommObject *self, const char *fname, PyObject *obj,
         int dtype, ncclRedOp_t *out)
{
    const char *name;

    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'op' must be str (a "
                     "ReduceOp name), not %.100s", fname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    name = PyUnicode_AsUTF8(obj);
    if (name == NULL) {
        return -1;
    }
    for (size_t i = 0; i < N_OPS; i++) {
        ncclRedOp_t op = nccl_ops[i].op;
        if (PyOS_stricmp(name, nccl_ops[i].name) != 0) {
            continue;
        }
        if (dtype != PYGPU_BOOL && !op_supported(self->api, op)) {
            return raise_too_old(self->api, fname, "ReduceOp.AVG");
        }
        *out = op;
        if (dtype != PYGPU_BOOL) {
            return 0;
        }
        if (op == ncclSum || op == ncclProd) {
            *out = op == ncclSum ? ncclMax : ncclMin;
            return 0;
        }
        if (op == ncclMax || op == ncclMin) {
            return 0;
        }
        PyErr_SetString(PyExc_ValueError,
                        "Cannot use ReduceOp.AVG with boolean inputs");
        return -1;
    }
    PyErr_Format(PyExc_ValueError, "%s(): unknown reduce op %R; expected "
                 "one of SUM, PRODUCT, MAX, MIN, AVG", fname, obj);
    return -1;
}

static int
parse_rank(NcclCommObject *self, const char *fname, const char *argname,
           PyObject *obj, int *out)
{
    long r;

    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not "
                     "%.100s", fname, argname, Py_TYPE(obj)->tp_name);
        return -1;
    }
    r = PyLong_AsLong(obj);
    if (r == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (r < 0 || r >= self->world_size) {
        PyErr_Format(PyExc_ValueError, "%s(): %s rank %ld is out of range "
                     "for world_size %d", fname, argname, r,
                     self->world_size);
        return -1;
    }
    *out = (int)r;
    return 0;
}

static int64_t
numel(const TensorObject *t)
{
    return pygpu_numel(t->ndim, t->shape);
}

/* The checks every one-tensor call shares: open communicator, arguments
 * parsed into argv, the tensor, its dtype. */
static int
one_tensor(NcclCommObject *self, const char *fname, PyObject *const *args,
           Py_ssize_t nargs, PyObject *kwnames, const char *const *names,
           int nnames, PyObject **argv, int write, nccl_call *c)
{
    TensorObject *t;

    if (pygpu_nccl_check_open(self, fname) < 0 ||
        pygpu_parse_args(fname, args, nargs, kwnames, names, nnames, nnames,
                         nnames, argv) < 0 ||
        check_tensor(self, fname, names[0], argv[0], write, &t) < 0 ||
        nccl_dtype(self, fname, t, &c->dtype) < 0) {
        return -1;
    }
    c->send = t->data;
    c->recv = t->data;
    c->count = (size_t)numel(t);
    c->written = write ? t : NULL;
    return 0;
}

PyObject *
pygpu_nccl_all_reduce(NcclCommObject *self, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensor", "op"};
    nccl_call c = {ALL_REDUCE, "ncclAllReduce"};
    PyObject *argv[2];

    if (one_tensor(self, "all_reduce", args, nargs, kwnames, names, 2, argv,
                   1, &c) < 0 ||
        parse_op(self, "all_reduce", argv[1],
                 ((TensorObject *)argv[0])->dtype, &c.op) < 0) {
        return NULL;
    }
    return run(self, &c);
}

PyObject *
pygpu_nccl_broadcast(NcclCommObject *self, PyObject *const *args,
                     Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensor", "root"};
    nccl_call c = {BROADCAST, "ncclBroadcast"};
    PyObject *argv[2];

    if (one_tensor(self, "broadcast", args, nargs, kwnames, names, 2, argv,
                   1, &c) < 0 ||
        parse_rank(self, "broadcast", "root", argv[1], &c.peer) < 0) {
        return NULL;
    }
    return run(self, &c);
}

PyObject *
pygpu_nccl_reduce(NcclCommObject *self, PyObject *const *args,
                  Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensor", "op", "root"};
    nccl_call c = {REDUCE, "ncclReduce"};
    PyObject *argv[3];

    if (one_tensor(self, "reduce", args, nargs, kwnames, names, 3, argv, 1,
                   &c) < 0 ||
        parse_op(self, "reduce", argv[1], ((TensorObject *)argv[0])->dtype,
                 &c.op) < 0 ||
        parse_rank(self, "reduce", "root", argv[2], &c.peer) < 0) {
        return NULL;
    }
    return run(self, &c);
}

PyObject *
pygpu_nccl_send(NcclCommObject *self, PyObject *const *args,
                Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensor", "peer"};
    nccl_call c = {SEND, "ncclSend"};
    PyObject *argv[2];

    if (one_tensor(self, "send", args, nargs, kwnames, names, 2, argv, 0,
                   &c) < 0 ||
        parse_rank(self, "send", "peer", argv[1], &c.peer) < 0) {
        return NULL;
    }
    return run(self, &c);
}

PyObject *
pygpu_nccl_recv(NcclCommObject *self, PyObject *const *args,
                Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"tensor", "peer"};
    nccl_call c = {RECV, "ncclRecv"};
    PyObject *argv[2];

    if (one_tensor(self, "recv", args, nargs, kwnames, names, 2, argv, 1,
                   &c) < 0 ||
        parse_rank(self, "recv", "peer", argv[1], &c.peer) < 0) {
        return NULL;
    }
    return run(self, &c);
}

/* output and input of the gathering calls: same dtype, and `big` holds
 * world_size times as many elements as `small`. */
static int
two_tensors(NcclCommObject *self, const char *fname, PyObject *const *args,
            Py_ssize_t nargs, PyObject *kwnames, const char *const *names,
            int nnames, PyObject **argv, int gather, nccl_call *c)
{
    TensorObject *out, *in, *small;
    ncclDataType_t in_dtype;

    if (pygpu_nccl_check_open(self, fname) < 0 ||
        pygpu_parse_args(fname, args, nargs, kwnames, names, nnames, nnames,
                         nnames, argv) < 0 ||
        check_tensor(self, fname, names[1], argv[1], 0, &in) < 0 ||
        check_tensor(self, fname, names[0], argv[0], 1, &out) < 0 ||
        nccl_dtype(self, fname, out, &c->dtype) < 0 ||
        nccl_dtype(self, fname, in, &in_dtype) < 0) {
        return -1;
    }
    if (out->dtype != in->dtype) {
        PyErr_Format(PyExc_TypeError, "%s(): output tensor must have the "
                     "same type as input tensor (%s and %s)", fname,
                     pygpu_dtype_table[out->dtype].name,
                     pygpu_dtype_table[in->dtype].name);
        return -1;
    }
    small = gather ? in : out;
    if (numel(gather ? out : in) != numel(small) * self->world_size) {
        PyErr_Format(PyExc_ValueError,
                     gather ? "%s(): output tensor size must be equal to "
                              "world_size times input tensor size (%lld, "
                              "%lld and world_size %d)"
                            : "%s(): input tensor must be the same size as "
                              "output size times world size (%lld, %lld and "
                              "world_size %d)",
                     fname, (long long)numel(out), (long long)numel(in),
                     self->world_size);
        return -1;
    }
    c->send = in->data;
    c->recv = out->data;
    c->written = out;
    c->count = (size_t)numel(small);
    return 0;
}

PyObject *
pygpu_nccl_all_gather_into_tensor(NcclCommObject *self,
                                  PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    static const char *const names[] = {"output", "input"};
    nccl_call c = {ALL_GATHER, "ncclAllGather"};
    PyObject *argv[2];

    if (two_tensors(self, "all_gather_into_tensor", args, nargs, kwnames,
                    names, 2, argv, 1, &c) < 0) {
        return NULL;
    }
    return run(self, &c);
}

PyObject *
pygpu_nccl_reduce_scatter_tensor(NcclCommObject *self,
                                 PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    static const char *const names[] = {"output", "input", "op"};
    nccl_call c = {REDUCE_SCATTER, "ncclReduceScatter"};
    PyObject *argv[3];

    if (two_tensors(self, "reduce_scatter_tensor", args, nargs, kwnames,
                    names, 3, argv, 0, &c) < 0 ||
        parse_op(self, "reduce_scatter_tensor", argv[2],
                 ((TensorObject *)argv[0])->dtype, &c.op) < 0) {
        return NULL;
    }
    return run(self, &c);
}

/* {"dtypes": [...], "ops": [...]}: what the library serves. */
PyObject *
pygpu_nccl_capabilities(const pygpu_nccl_api *api)
{
    PyObject *dtypes = NULL, *ops = NULL, *r = NULL, *name;

    dtypes = PyList_New(0);
    ops = PyList_New(0);
    if (dtypes == NULL || ops == NULL) {
        goto fail;
    }
    for (int d = 0; d < PYGPU_NDTYPES; d++) {
        if (!dtype_supported(api, d)) {
            continue;
        }
        name = PyUnicode_FromString(pygpu_dtype_table[d].name);
        if (name == NULL || PyList_Append(dtypes, name) < 0) {
            Py_XDECREF(name);
            goto fail;
        }
        Py_DECREF(name);
    }
    for (size_t i = 0; i < N_OPS; i++) {
        if (!op_supported(api, nccl_ops[i].op)) {
            continue;
        }
        name = PyUnicode_FromString(nccl_ops[i].name);
        if (name == NULL || PyList_Append(ops, name) < 0) {
            Py_XDECREF(name);
            goto fail;
        }
        Py_DECREF(name);
    }
    r = Py_BuildValue("{s:O,s:O}", "dtypes", dtypes, "ops", ops);
fail:
    Py_XDECREF(dtypes);
    Py_XDECREF(ops);
    return r;
}
