/* ops_optim.c - _foreach_adam_ and _foreach_sgd_: one optimizer step over
 * lists of tensors (parameters, gradients, states), for pygpu.optim.
 *
 * The front end checks every list (lengths, tensors, devices, dtypes,
 * shapes, contiguity, in torch's words where torch has them), bumps the
 * version counter of every tensor it writes as an in-place op does, and
 * records nothing for autograd (a step runs under no_grad; with grad mode
 * on, a parameter that requires grad is refused as by any in-place op).
 * The tensors are then grouped by device and dtype, and each group is one
 * OPTIM row of the dispatch table: one pass over each tensor on the CPU
 * (cpu/cpu_optim.c), one kernel launch for the whole group on CUDA
 * (kernels/optim.cu).
 */
#include "ops/ops.h"
#include "kernels/optim.h"

#include <math.h>
#include <string.h>

/* One call: its lists as tuples (NULL where not used), by list index. */
typedef struct {
    const char *fname;
    int op;
    Py_ssize_t n;
    PyObject *lists[PYGPU_OPT_NLISTS];
    const char *names[PYGPU_OPT_NLISTS];
    pygpu_optim_hyper h;
} optim_call;

static TensorObject *
item(const optim_call *c, int list, Py_ssize_t i)
{
    return (TensorObject *)PyTuple_GET_ITEM(c->lists[list], i);
}

/* obj, a list or tuple of tensors, as a new tuple (so that its items stay
 * alive while the step runs without the GIL); n >= 0: its length must be
 * n, the number of parameters. */
static PyObject *
tensor_list(const char *fname, const char *arg, PyObject *obj, Py_ssize_t n)
{
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' must be a list of Tensors, not %s",
                     fname, arg, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *t = PySequence_Tuple(obj);
    if (t == NULL) {
        return NULL;
    }
    if (n >= 0 && PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_RuntimeError,
                     "Tensor lists must have the same number of tensors, "
                     "got %zd and %zd", n, PyTuple_GET_SIZE(t));
        Py_DECREF(t);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (!Tensor_Check(x)) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): argument '%s' must be a list of Tensors, but "
                         "item %zd is %s", fname, arg, i,
                         Py_TYPE(x)->tp_name);
            Py_DECREF(t);
            return NULL;
        }
    }
    return t;
}

/* Tensor i of list j against params[i]: device, dtype, shape, layout. */
static int
check_item(const optim_call *c, int j, Py_ssize_t i)
{
    TensorObject *p = item(c, PYGPU_OPT_PARAM, i), *t = item(c, j, i);
    const char *what = c->names[j];
    char sp[128], st[128];
    if (j == PYGPU_OPT_PARAM &&
        !pygpu_dtype_table[p->dtype].is_floating_point) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: expected floating point parameters, but params[%zd] "
                     "has dtype %s", c->fname, i,
                     pygpu_dtype_table[p->dtype].scalar_name);
        return -1;
    }
    if (pygpu_check_same_device(p, t) < 0) {
        return -1;
    }
    if (t->dtype != p->dtype) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: expected %s[%zd] to have the dtype of params[%zd], "
                     "%s, but got %s", c->fname, what, i, i,
                     pygpu_dtype_table[p->dtype].scalar_name,
                     pygpu_dtype_table[t->dtype].scalar_name);
        return -1;
    }
    if (t->ndim != p->ndim ||
        memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim) != 0) {
        pygpu_format_shape(sp, sizeof(sp), p->ndim, p->shape);
        pygpu_format_shape(st, sizeof(st), t->ndim, t->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "%s: expected %s[%zd] to have the shape of params[%zd], "
                     "[%s], but got [%s]", c->fname, what, i, i, sp, st);
        return -1;
    }
    if (!pygpu_is_contiguous(t)) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: expected contiguous tensors, but %s[%zd] is not "
                     "contiguous", c->fname, what, i);
        return -1;
    }
    return 0;
}

/* The tensors of parameter i share no memory (the loops take them as
 * restrict pointers). */
static int
check_apart(const optim_call *c, Py_ssize_t i)
{
    for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
        for (int l = j + 1; l < PYGPU_OPT_NLISTS; l++) {
            if (c->lists[j] == NULL || c->lists[l] == NULL ||
                pygpu_get_overlap(item(c, j, i), item(c, l, i)) ==
                    PYGPU_ALIAS_NONE) {
                continue;
            }
            PyErr_Format(PyExc_RuntimeError,
                         "%s: %s[%zd] and %s[%zd] share memory; each tensor "
                         "of a parameter needs its own", c->fname,
                         c->names[j], i, c->names[l], i);
            return -1;
        }
    }
    return 0;
}

/* Checks every list, then bumps the written tensors' versions. */
static int
check_all(const optim_call *c)
{
    for (Py_ssize_t i = 0; i < c->n; i++) {
        for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
            if (c->lists[j] != NULL && check_item(c, j, i) < 0) {
                return -1;
            }
        }
        if (check_apart(c, i) < 0) {
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < c->n; i++) {
        for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
            if (c->lists[j] != NULL && j != PYGPU_OPT_GRAD &&
                pygpu_check_writable(item(c, j, i)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* One OPTIM row per (device, dtype) group, in the order of their first
 * parameter.  ptrs holds the lists of a group, numel its sizes; done marks
 * the parameters already run. */
static int
run_groups(const optim_call *c)
{
    Py_ssize_t n = c->n;
    void **ptrs = PyMem_Malloc(sizeof(void *) * (size_t)n *
                               PYGPU_OPT_NLISTS);
    int64_t *numel = PyMem_Malloc(sizeof(int64_t) * (size_t)n);
    char *done = PyMem_Calloc((size_t)n, 1);
    int rc = -1;
    if (ptrs == NULL || numel == NULL || done == NULL) {
        pygpu_raise_no_memory("a fused step's parameter lists",
                              (sizeof(void *) * PYGPU_OPT_NLISTS +
                               sizeof(int64_t) + 1) * (size_t)n);
        goto fail;
    }
    for (Py_ssize_t i0 = 0; i0 < n; i0++) {
        TensorObject *p0 = item(c, PYGPU_OPT_PARAM, i0);
        int64_t ng = 0, total = 0;
        if (done[i0]) {
            continue;
        }
        for (Py_ssize_t i = i0; i < n; i++) {
            TensorObject *p = item(c, PYGPU_OPT_PARAM, i);
            if (done[i] || p->dtype != p0->dtype ||
                !pygpu_device_equal(&p->device, &p0->device)) {
                continue;
            }
            done[i] = 1;
            for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
                if (c->lists[j] != NULL) {
                    ptrs[j * n + ng] = item(c, j, i)->data;
                }
            }
            numel[ng] = pygpu_numel(p->ndim, p->shape);
            total += numel[ng];
            ng++;
        }
        pygpu_optim_step s = {.h = c->h, .n = ng, .numel = numel};
        for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
            s.lists[j] = c->lists[j] != NULL ? ptrs + j * n : NULL;
        }
        pygpu_kargs k = {.op = c->op, .optim = &s, .numel = total};
        if (pygpu_dispatch(PYGPU_K_OPTIM, p0->device, p0->dtype, &k,
                           c->fname) < 0) {
            goto fail;
        }
    }
    rc = 0;
fail:
    PyMem_Free(ptrs);
    PyMem_Free(numel);
    PyMem_Free(done);
    return rc;
}

/* Reads the lists args[0..nlists) (args[j] None: list j unused) into c,
 * then checks and runs the step.  None or NULL. */
static PyObject *
optim_run(optim_call *c, PyObject *const *args, int nlists)
{
    PyObject *res = NULL;
    for (int j = 0; j < nlists; j++) {
        if (args[j] == Py_None && j > PYGPU_OPT_GRAD) {
            continue;
        }
        c->lists[j] = tensor_list(c->fname, c->names[j], args[j],
                                  j == 0 ? -1 : c->n);
        if (c->lists[j] == NULL) {
            goto fail;
        }
        if (j == 0) {
            c->n = PyTuple_GET_SIZE(c->lists[0]);
        }
    }
    if (check_all(c) < 0 || run_groups(c) < 0) {
        goto fail;
    }
    res = Py_NewRef(Py_None);
fail:
    for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
        Py_XDECREF(c->lists[j]);
    }
    return res;
}

/* args[0..n) as doubles into out. */
static int
read_doubles(PyObject *const *args, int n, double *const *out)
{
    for (int i = 0; i < n; i++) {
        *out[i] = PyFloat_AsDouble(args[i]);
        if (*out[i] == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

static const char *const adam_names[] = {
    "params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "step",
    "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "decoupled",
    "maximize"};

static PyObject *
foreach_adam(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    PyObject *a[14] = {NULL};
    optim_call c = {.fname = "_foreach_adam_", .op = PYGPU_OPTIM_ADAM,
                    .names = {"params", "grads", "exp_avgs", "exp_avg_sqs",
                              "max_exp_avg_sqs"}};
    pygpu_optim_hyper *h = &c.h;
    double *const hyper[] = {&h->lr, &h->beta1, &h->beta2, &h->eps,
                             &h->weight_decay};
    if (pygpu_parse_args(c.fname, args, nargs, kwnames, adam_names, 14, 14,
                         14, a) < 0 ||
        read_doubles(a + 6, 5, hyper) < 0 ||
        pygpu_parse_bool(a[11], 0, &h->amsgrad) < 0 ||
        pygpu_parse_bool(a[12], 0, &h->decoupled) < 0 ||
        pygpu_parse_bool(a[13], 0, &h->maximize) < 0) {
        return NULL;
    }
    long long step = PyLong_AsLongLong(a[5]);
    if (step == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (step < 1) {
        PyErr_Format(PyExc_ValueError, "%s: step must be at least 1, got %lld",
                     c.fname, step);
        return NULL;
    }
    if (h->amsgrad && a[4] == Py_None) {
        PyErr_Format(PyExc_ValueError,
                     "%s: amsgrad needs max_exp_avg_sqs", c.fname);
        return NULL;
    }
    if (!h->amsgrad) {
        a[4] = Py_None;
    }
    h->step_size = h->lr / (1 - pow(h->beta1, (double)step));
    h->bias2_sqrt = sqrt(1 - pow(h->beta2, (double)step));
    return optim_run(&c, a, 5);
}

static const char *const sgd_names[] = {
    "params", "grads", "momentum_buffers", "lr", "momentum", "dampening",
    "weight_decay", "nesterov", "maximize", "first_step"};

static PyObject *
foreach_sgd(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    PyObject *a[10] = {NULL};
    optim_call c = {.fname = "_foreach_sgd_", .op = PYGPU_OPTIM_SGD,
                    .names = {"params", "grads", "momentum_buffers"}};
    pygpu_optim_hyper *h = &c.h;
    double *const hyper[] = {&h->lr, &h->momentum, &h->dampening,
                             &h->weight_decay};
    if (pygpu_parse_args(c.fname, args, nargs, kwnames, sgd_names, 10, 10,
                         10, a) < 0 ||
        read_doubles(a + 3, 4, hyper) < 0 ||
        pygpu_parse_bool(a[7], 0, &h->nesterov) < 0 ||
        pygpu_parse_bool(a[8], 0, &h->maximize) < 0 ||
        pygpu_parse_bool(a[9], 0, &h->first) < 0) {
        return NULL;
    }
    if (h->momentum != 0 && a[2] == Py_None) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a momentum needs momentum_buffers", c.fname);
        return NULL;
    }
    if (h->momentum == 0) {
        a[2] = Py_None;
    }
    return optim_run(&c, a, 3);
}

PyMethodDef pygpu_optim_functions[] = {
    {"_foreach_adam_", FASTKW(foreach_adam),
     "_foreach_adam_($module, params, grads, exp_avgs, exp_avg_sqs,\n"
     "               max_exp_avg_sqs, step, lr, beta1, beta2, eps,\n"
     "               weight_decay, amsgrad, decoupled, maximize)\n--\n\n"
     "One Adam step (AdamW's with decoupled=True) over lists of tensors,\n"
     "in place: params, exp_avgs, exp_avg_sqs and, with amsgrad,\n"
     "max_exp_avg_sqs (else None) are updated; step (>= 1) is the step\n"
     "number the bias corrections use.  The tensors of a parameter share\n"
     "its device, dtype (floating) and shape and are contiguous.  One\n"
     "kernel launch per device and dtype on CUDA."},
    {"_foreach_sgd_", FASTKW(foreach_sgd),
     "_foreach_sgd_($module, params, grads, momentum_buffers, lr,\n"
     "              momentum, dampening, weight_decay, nesterov, maximize,\n"
     "              first_step)\n--\n\n"
     "One SGD step over lists of tensors, in place: params and, with a\n"
     "momentum, momentum_buffers (else None), which first_step sets to the\n"
     "step's direction.  The tensors of a parameter share its device,\n"
     "dtype (floating) and shape and are contiguous.  One kernel launch\n"
     "per device and dtype on CUDA."},
    {NULL, NULL, 0, NULL},
};
