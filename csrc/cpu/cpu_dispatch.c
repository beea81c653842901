/* cpu_dispatch.c - the CPU rows of the dispatch table: each row hands the
 * prepared arguments to a CPU loop (cpu_elementwise.c, cpu_reduce.c,
 * cpu_scan.c, cpu_softmax.c, cpu_xent.c, cpu_random.c, cpu_linear.c,
 * cpu_optim.c) or, for products, to the BLAS (cpu_gemm.c) or NumPy's
 * matmul.  Large loops run without the GIL, and larger ones split over the
 * thread pool (cpu_split.c, cpu_split_reduce.c, cpu_parallel.c). */
#include "memory/memory.h"
#include "core/dispatch.h"
#include "cpu/cpu_dispatch.h"
#include "cpu/cpu_blas.h"
#include "cpu/cpu_malloc.h"
#include "cpu/cpu_matmul_small.h"
#include "cpu/simd.h"
#include "cpu/cpu_parallel.h"
#include "cpu/cpu_split.h"
#include "kernels/optim.h"
#include "kernels/norm.h"

/* Loops of this much work or more run without the GIL, and of the second
 * amount on the thread pool.  Work is counted in elements of a cheap loop
 * (an add or a relu: ~0.3 ns each); random numbers count as several.
 * Splitting costs a hand-off to the workers and a join: a few
 * microseconds while the workers still poll after their last job
 * (cpu_parallel.c), a thread wake-up (tens to hundreds of microseconds)
 * once they sleep.
 * Measured on the quiet 2-core test machine, 2 threads against 1: copy_,
 * sum, relu_ and add of 2^17 float32 elements 1.7-2.1x faster, of 2^16
 * 1.0-2.0x; with the AVX2 loops, add of 2^16 float32 took 6.0 us on two
 * threads (torch 9.7 us, which splits it too) against 13-17 us on one.
 * On a machine whose other cores are busy a split gains nothing and can
 * wait for a worker that was preempted inside its task, for loops of
 * 10-20 us and more. */
#define CPU_NOGIL_THRESHOLD (1 << 16)
#define CPU_PARALLEL_THRESHOLD (1 << 16)
/* Elements' worth of work of one uniform / normal number, and of one
 * element of a softmax-family or cross-entropy line (an exponential and
 * three passes: 2048x1000 float32 softmax ran at 0.7 ns an element,
 * 8192x10 cross-entropy at 6.7). */
#define CPU_UNIFORM_WORK 4
#define CPU_NORMAL_WORK 16
#define CPU_LINE_WORK 4
/* Tasks per thread at most: many, so that a thread slowed by other work
 * on the machine holds up the job by one short task at most while the
 * others take its share. */
#define CPU_TASKS_PER_THREAD 16

/* Inputs of the result's dtype take the same-dtype loops; others are
 * converted inside the loop (cpu_mixed.c). */
static int
binary(pygpu_kargs *k)
{
    if (k->in_dtypes[0] == k->dtype && k->in_dtypes[1] == k->dtype) {
        pygpu_cpu_binary(k->op, k->dtype, k->out, k->in[0], k->in[1], k->g);
    }
    else {
        pygpu_cpu_binary_mixed(k->op, k->dtype, k->out, k->in_dtypes[0],
                               k->in[0], k->in_dtypes[1], k->in[1], k->g);
    }
    return 0;
}

static int
binary_scalar(pygpu_kargs *k)
{
    if (k->in_dtypes[0] == k->dtype) {
        pygpu_cpu_binary_scalar(k->op, k->dtype, k->out, k->in[0], k->s,
                                k->flag, k->g);
    }
    else {
        pygpu_cpu_binary_scalar_mixed(k->op, k->dtype, k->out,
                                      k->in_dtypes[0], k->in[0], k->s,
                                      k->flag, k->g);
    }
    return 0;
}

static int
unary(pygpu_kargs *k)
{
    pygpu_cpu_unary(k->op, k->dtype, k->out, k->in[0], k->g);
    return 0;
}

static int
compare(pygpu_kargs *k)
{
    pygpu_cpu_compare(k->op, k->dtype, k->out, k->in_dtypes[0], k->in[0],
                      k->in_dtypes[1], k->in[1], k->g);
    return 0;
}

static int
masked_copy(pygpu_kargs *k)
{
    pygpu_cpu_masked_copy(k->dtype, k->out, k->in[0], k->in_dtypes[1],
                          k->in[1], k->g);
    return 0;
}

static int
index_rows(pygpu_kargs *k)
{
    pygpu_cpu_index_rows(k->dtype, k->out, k->in[0], k->indices, k->n,
                         k->inner, k->flag);
    return 0;
}

static int
copy(pygpu_kargs *k)
{
    /* numel is the whole copy's also in a task of a split one. */
    pygpu_cpu_copy(k->dtype, k->out, k->in_dtypes[0], k->in[0], k->g,
                   k->numel);
    return 0;
}

static int
fill(pygpu_kargs *k)
{
    pygpu_cpu_fill(k->dtype, k->out, k->s, k->numel);
    return 0;
}

static int
reduce(pygpu_kargs *k)
{
    pygpu_cpu_reduce(k->op, k->dtype, k->flag, k->out, k->indices,
                     k->in[0], k->outer, k->n, k->inner);
    return 0;
}

static int
scan(pygpu_kargs *k)
{
    pygpu_cpu_scan(k->op, k->dtype, k->out, k->in[0], k->outer, k->n,
                   k->inner);
    return 0;
}

static int
softmax(pygpu_kargs *k)
{
    pygpu_cpu_softmax(k->op, k->dtype, k->out, k->in[0], k->outer, k->n,
                      k->inner);
    return 0;
}

static int
random_numbers(pygpu_kargs *k)
{
    if (k->flag > PYGPU_DIST_NORMAL) {
        pygpu_cpu_sample(k->dtype, k->out, k->numel, k->flag, &k->rnd,
                         k->philox);
    }
    else {
        pygpu_cpu_random(k->dtype, k->out, k->numel, k->flag, k->philox);
    }
    return 0;
}

/* The loop stops at the first index out of range and leaves it in k->ix
 * for the front end to raise (in torch's words, which differ by op). */
static int
gather(pygpu_kargs *k)
{
    int scatter = pygpu_gather_writes_indexed(k->flag);
    void *dense = scatter ? (void *)k->in[0] : k->out;
    void *indexed = scatter ? k->out : (void *)k->in[0];
    k->ix.failed = pygpu_cpu_gather(
        pygpu_dtype_table[k->dtype].itemsize, dense, indexed, k->in[1],
        pygpu_dtype_table[k->in_dtypes[1]].itemsize, k->g, k->ix.stride,
        k->ix.size, k->flag, &k->ix.bad);
    return 0;
}

/* A target out of range is left in k->ix for the front end to raise. */
static int
xent(pygpu_kargs *k)
{
    k->ix.failed = pygpu_cpu_xent(k->op, k->dtype, k->xent, &k->ix.bad);
    return 0;
}

/* Layer / RMS norm over rows; the loop splits its parts over the pool
 * itself (cpu_norm.c). */
static int
norm(pygpu_kargs *k)
{
    if (k->op >= PYGPU_NORM_CHANNELS_FORWARD) {
        pygpu_cpu_norm_channels(k->op, k->dtype, k->norm);
    }
    else {
        pygpu_cpu_norm(k->op, k->dtype, k->norm);
    }
    return 0;
}

/* One optimizer step over a group of tensors (cpu_optim.c). */
static int
optim(pygpu_kargs *k)
{
    pygpu_cpu_optim(k->op, k->dtype, k->optim);
    return 0;
}

/* The indices that sort each line (cpu_sort.c). */
static int
sort_rows(pygpu_kargs *k)
{
    pygpu_cpu_sort(k->dtype, (int64_t *)k->out, k->in[0], k->outer, k->n,
                   k->inner, k->flag);
    return 0;
}

/* The columns of an image batch, or the image summed from them
 * (cpu_im2col.c), or the direct convolution (flag 2, cpu_conv.c); each
 * splits over the pool itself. */
static int
im2col(pygpu_kargs *k)
{
    if (k->flag == 2) {
        pygpu_cpu_conv2d(k->dtype, k->out, k->in[0], k->in[1], k->im2col);
    }
    else if (k->flag) {
        pygpu_cpu_col2im(k->dtype, k->out, k->in[0], k->im2col);
    }
    else {
        pygpu_cpu_im2col(k->dtype, k->out, k->in[0], k->im2col);
    }
    return 0;
}

/* A float32 copy of t (NumPy has no BLAS for float16). */
static TensorObject *
to_float32(TensorObject *t)
{
    TensorObject *c = pygpu_tensor_empty(t->ndim, t->shape, PYGPU_FLOAT32,
                                         t->device);
    if (c != NULL && pygpu_op_copy_same_device(c, t) < 0) {
        Py_CLEAR(c);
    }
    return c;
}

/* out = numpy.matmul(a, b, out=out) over views of the tensors' memory.
 * float16 and bfloat16 go through float32 (NumPy has no BLAS for them,
 * and no bfloat16 at all). */
static int
cpu_matmul(TensorObject *out, TensorObject *a, TensorObject *b)
{
    PyObject *aa = NULL, *ba = NULL, *oa = NULL, *r = NULL;
    TensorObject *a32 = NULL, *b32 = NULL, *o32 = NULL;
    int rc = -1;
    if (out->dtype == PYGPU_FLOAT16 || out->dtype == PYGPU_BFLOAT16) {
        a32 = to_float32(a);
        b32 = a32 ? to_float32(b) : NULL;
        o32 = b32 ? pygpu_tensor_empty(out->ndim, out->shape, PYGPU_FLOAT32,
                                       out->device)
                  : NULL;
        if (o32 == NULL) {
            goto fail;
        }
        rc = cpu_matmul(o32, a32, b32);
        if (rc == 0) {
            rc = pygpu_op_copy_same_device(out, o32);
        }
        goto fail;
    }
    aa = pygpu_tensor_to_ndarray(a);
    ba = pygpu_tensor_to_ndarray(b);
    oa = pygpu_tensor_to_ndarray(out);
    if (aa == NULL || ba == NULL || oa == NULL) {
        goto fail;
    }
    PyObject *args[3] = {aa, ba, oa};
    r = PyObject_Vectorcall(pygpu_state->np_matmul, args, 2,
                            pygpu_state->out_kwnames);
    rc = r ? 0 : -1;
fail:
    Py_XDECREF(aa);
    Py_XDECREF(ba);
    Py_XDECREF(oa);
    Py_XDECREF(r);
    Py_XDECREF(a32);
    Py_XDECREF(b32);
    Py_XDECREF(o32);
    return rc;
}

/* Small 2-D products by the loop of cpu_matmul_small.c (out is new and
 * contiguous: rows of n elements), float32 and float64 by the BLAS
 * (cpu_gemm.c), others (and all when the BLAS is off) by NumPy. */
static int
matmul(pygpu_kargs *k)
{
    TensorObject *b2 = k->t[4];
    if (k->mm.nb == 0 &&
        pygpu_cpu_matmul_small(k->t[0]->data, b2->shape[b2->ndim - 1],
                               k->t[3], b2)) {
        return 0;
    }
    int rc = pygpu_cpu_gemm(k->t[0], k->t[3], b2, 0, k->mm.nb, k->mm.bshape,
                            NULL, 0);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    return cpu_matmul(k->t[0], k->t[1], k->t[2]);
}

/* float32 and float64: bias, gemm and relu in one pass per block by the
 * BLAS (cpu_gemm.c).  Others (and all when the BLAS is off): out = x @ w.T
 * by NumPy into out seen as rows x out_f, then one pass of bias and relu. */
static int
linear(pygpu_kargs *k)
{
    TensorObject *out = k->t[0], *x2 = k->t[1], *bias = k->t[3];
    int64_t rows = x2->shape[0], out_f = k->t[2]->shape[0];
    TensorObject *w = k->t[2];
    int rc = pygpu_cpu_gemm(out, x2, w, 1, 0, NULL, bias, k->flag);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    int64_t o2[2] = {rows, out_f}, os2[2] = {out_f, 1};
    int64_t wt_shape[2] = {w->shape[1], w->shape[0]};
    int64_t wt_strides[2] = {w->strides[1], w->strides[0]};
    TensorObject *wt = pygpu_tensor_view(w, 2, wt_shape, wt_strides, 0);
    TensorObject *out2 = pygpu_tensor_view(out, 2, o2, os2, 0);
    rc = (wt && out2) ? cpu_matmul(out2, x2, wt) : -1;
    Py_XDECREF(wt);
    Py_XDECREF(out2);
    if (rc < 0) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    if (bias != NULL) {
        pygpu_cpu_bias_act(out->dtype, out->data, bias->data, rows, out_f,
                           k->flag);
    }
    else if (k->flag) {
        pygpu_cpu_relu_contig(out->dtype, out->data, out->data,
                              rows * out_f);
    }
    Py_END_ALLOW_THREADS
    return 0;
}

/* fn(k) for a large loop: split over the pool when there is more than one
 * thread and the row splits (a reduction with one thread runs unsplit,
 * which is what the split reductions reproduce). */
static void
run_large(int kind, pygpu_kernel_fn fn, pygpu_kargs *k, int64_t work)
{
    int threads = work >= CPU_PARALLEL_THRESHOLD ? pygpu_get_num_threads()
                                                 : 1;
    if (threads > 1) {
        int64_t parts = work / PYGPU_TASK_MIN;
        if (parts > (int64_t)threads * CPU_TASKS_PER_THREAD) {
            parts = (int64_t)threads * CPU_TASKS_PER_THREAD;
        }
        int rc = kind == PYGPU_K_REDUCE
                     ? pygpu_cpu_split_reduce(fn, k, parts)
                     : pygpu_cpu_split_rows(kind, fn, k, parts);
        if (rc == 0) {
            return;
        }
    }
    fn(k);
}

/* Loops past the small ones: without the GIL, split when large enough.
 * Out of line, so that run's path for small loops stays a compare and a
 * call. */
static __attribute__((noinline)) void
run_sized(int kind, pygpu_kernel_fn fn, pygpu_kargs *k)
{
    int64_t work = k->numel;
    if (kind == PYGPU_K_RANDOM) {
        work *= k->flag ? CPU_NORMAL_WORK : CPU_UNIFORM_WORK;
    }
    else if (kind == PYGPU_K_SOFTMAX || kind == PYGPU_K_XENT ||
             kind == PYGPU_K_NORM) {
        work *= CPU_LINE_WORK;
    }
    if (work >= CPU_NOGIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        run_large(kind, fn, k, work);
        Py_END_ALLOW_THREADS
    }
    else {
        fn(k);
    }
}

static int
run(int kind, pygpu_kernel_fn fn, pygpu_kargs *k, const char *what)
{
    (void)what;
    if (kind >= PYGPU_K_FIRST_CALL) {
        return fn(k);
    }
    if (k->numel < CPU_NOGIL_THRESHOLD / CPU_NORMAL_WORK) {
        fn(k);
    }
    else {
        run_sized(kind, fn, k);
    }
    return 0;
}

static const pygpu_backend cpu_backend = {
    .run = run,
    .rows = PYGPU_ROWS_BY_KIND,
};

int
pygpu_cpu_init(void)
{
    const char *bad;
    if (pygpu_cpu_isa_init(&bad) < 0) {
        PyErr_Format(PyExc_ImportError,
                     "PYGPU_CPU_CAPABILITY must be default, avx2 or avx512, "
                     "not '%s'", bad);
        return -1;
    }
    pygpu_cpu_malloc_init();
    return pygpu_dispatch_register(PYGPU_CPU, &cpu_backend);
}
