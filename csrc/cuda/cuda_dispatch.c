/* cuda_dispatch.c - the CUDA rows of the dispatch table (a CUDA build
 * only): each launch row calls a launcher of kernels/kernels.h on the
 * stream the runner chose; products go through cuBLAS / cuBLASLt. */
#include "memory/memory.h"
#include "core/dispatch.h"
#include "cuda/blas.h"
#include "cuda/cuda_runtime.h"
#include "kernels/optim.h"
#include "kernels/norm.h"

#include <stdio.h>
#include <string.h>

/* Inputs of the result's dtype take the same-dtype kernels; others are
 * converted as they are read. */
static int
binary(pygpu_kargs *k)
{
    if (k->in_dtypes[0] == k->dtype && k->in_dtypes[1] == k->dtype) {
        return pygpu_cuda_binary(k->op, k->dtype, k->out, k->in[0],
                                 k->in[1], k->g, k->stream);
    }
    return pygpu_cuda_binary_mixed(k->op, k->dtype, k->out, k->in_dtypes[0],
                                   k->in[0], k->in_dtypes[1], k->in[1], k->g,
                                   k->stream);
}

static int
binary_scalar(pygpu_kargs *k)
{
    if (k->in_dtypes[0] == k->dtype) {
        return pygpu_cuda_binary_scalar(k->op, k->dtype, k->out, k->in[0],
                                        k->s, k->flag, k->g, k->stream);
    }
    return pygpu_cuda_binary_scalar_mixed(k->op, k->dtype, k->out,
                                          k->in_dtypes[0], k->in[0], k->s,
                                          k->flag, k->g, k->stream);
}

/* Contiguous relu takes the 128-bit kernel. */
static int
unary(pygpu_kargs *k)
{
    const pygpu_geom *g = k->g;
    int contiguous = g->ndim == 0 || (g->ndim == 1 && g->stride[0][0] == 1 &&
                                      g->stride[1][0] == 1);
    if (k->op == PYGPU_RELU && contiguous) {
        return pygpu_cuda_relu_contig(k->dtype, k->out, k->in[0], k->numel,
                                      k->stream);
    }
    return pygpu_cuda_unary(k->op, k->dtype, k->out, k->in[0], g, k->stream);
}

static int
compare(pygpu_kargs *k)
{
    return pygpu_cuda_compare(k->op, k->dtype, k->out, k->in_dtypes[0],
                              k->in[0], k->in_dtypes[1], k->in[1], k->g,
                              k->stream);
}

static int
masked_copy(pygpu_kargs *k)
{
    return pygpu_cuda_masked_copy(k->dtype, k->out, k->in[0],
                                  k->in_dtypes[1], k->in[1], k->g, k->stream);
}

static int
index_rows(pygpu_kargs *k)
{
    return pygpu_cuda_index_rows(k->dtype, k->out, k->in[0], k->indices, k->n,
                                 k->inner, k->flag, k->stream);
}

static int
copy(pygpu_kargs *k)
{
    return pygpu_cuda_copy(k->dtype, k->out, k->in_dtypes[0], k->in[0], k->g,
                           k->stream);
}

static int
fill(pygpu_kargs *k)
{
    return pygpu_cuda_fill(k->dtype, k->out, k->s, k->numel, k->stream);
}

static int
reduce(pygpu_kargs *k)
{
    return pygpu_cuda_reduce(k->op, k->dtype, k->flag, k->out, k->indices,
                             k->in[0], k->outer, k->n, k->inner,
                             k->workspace, k->stream);
}

static int
scan(pygpu_kargs *k)
{
    return pygpu_cuda_scan(k->op, k->dtype, k->out, k->in[0], k->outer,
                           k->n, k->inner, k->workspace, k->stream);
}

static int
softmax(pygpu_kargs *k)
{
    return pygpu_cuda_softmax(k->op, k->dtype, k->out, k->in[0], k->outer,
                              k->n, k->inner, k->stream);
}

static int
random_numbers(pygpu_kargs *k)
{
    if (k->flag > PYGPU_DIST_NORMAL) {
        return pygpu_cuda_sample(k->dtype, k->out, k->numel, k->flag,
                                 &k->rnd, k->philox, k->stream);
    }
    return pygpu_cuda_random(k->dtype, k->out, k->numel, k->flag, k->philox,
                             k->stream);
}

static int
gather(pygpu_kargs *k)
{
    int scatter = pygpu_gather_writes_indexed(k->flag);
    void *dense = scatter ? (void *)k->in[0] : k->out;
    void *indexed = scatter ? k->out : (void *)k->in[0];
    return pygpu_cuda_gather(pygpu_dtype_table[k->dtype].itemsize, dense,
                             indexed, k->in[1],
                             pygpu_dtype_table[k->in_dtypes[1]].itemsize,
                             k->g, k->ix.stride, k->ix.size, k->flag,
                             (int64_t *)k->workspace, k->stream);
}

static int
sort_rows(pygpu_kargs *k)
{
    return pygpu_cuda_sort(k->dtype, (int64_t *)k->out, k->in[0], k->outer,
                           k->n, k->inner, k->flag, k->workspace, k->stream);
}

static int
xent(pygpu_kargs *k)
{
    return pygpu_cuda_xent(k->op, k->dtype, k->xent, (int64_t *)k->workspace,
                           k->stream);
}

static int
im2col(pygpu_kargs *k)
{
    if (k->flag == 2) {
        return pygpu_cuda_conv2d(k->dtype, k->out, k->in[0], k->in[1],
                                 k->im2col, k->stream);
    }
    if (k->flag) {
        return pygpu_cuda_col2im(k->dtype, k->out, k->in[0], k->im2col,
                                 k->stream);
    }
    return pygpu_cuda_im2col(k->dtype, k->out, k->in[0], k->im2col,
                             k->stream);
}

/* The two int64 a kernel leaves in its workspace (a flag and an index out
 * of range), read back: a small copy on the stream and a wait for it. */
static int
read_back_error(pygpu_kargs *k, const char *what, int64_t err[2])
{
    cudaError_t e;
    cudaStream_t stream = (cudaStream_t)k->stream;
    Py_BEGIN_ALLOW_THREADS
    e = cudaMemcpyAsync(err, k->workspace, 2 * sizeof(int64_t),
                        cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(stream);
    }
    Py_END_ALLOW_THREADS
    return e == cudaSuccess ? 0 : pygpu_cuda_check_launch((int)e, what);
}

/* One launch for the whole group; its chunk table goes to the workspace
 * run allocated. */
static int
optim(pygpu_kargs *k)
{
    return pygpu_cuda_optim(k->op, k->dtype, k->optim, k->workspace,
                            k->stream);
}

/* Layer / RMS norm over rows (kernels/norm.cu). */
static int
norm(pygpu_kargs *k)
{
    if (k->op >= PYGPU_NORM_CHANNELS_FORWARD) {
        return pygpu_cuda_norm_channels(k->op, k->dtype, k->norm,
                                        k->workspace, k->stream);
    }
    return pygpu_cuda_norm(k->op, k->dtype, k->norm, k->stream);
}

/* A gather's kernel records an index out of range in its workspace
 * instead of trapping (a device-side assert would leave the context
 * unusable), so every GATHER reads it back: a small copy on the stream
 * and a wait for it, after which the error names the op and the index
 * whether or not PYGPU_LAUNCH_BLOCKING is set. */
static int
check_gather(pygpu_kargs *k, const char *what)
{
    int64_t err[2] = {0, 0};
    if (read_back_error(k, what, err) < 0) {
        return -1;
    }
    if (err[0] != 0) {
        return pygpu_raise_cuda_error(
            (long)cudaErrorAssert, "cudaErrorAssert",
            "CUDA error: device-side assert triggered (cudaErrorAssert) in "
            "the %s kernel: index %lld is out of bounds for dimension %d "
            "with size %lld", what, (long long)err[1], k->ix.dim,
            (long long)k->ix.size);
    }
    return 0;
}

/* ------------------------------------------------------------ products */

/* Can cuBLAS read this rows x cols matrix (strides rs, cs) in place? */
static int
blas_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    if (cs == 1 && (rows <= 1 || rs >= cols) && rs >= 1) {
        return 1;
    }
    if (rs == 1 && (cols <= 1 || cs >= rows) && cs >= 1) {
        return 1;
    }
    return rows <= 1 && cols <= 1;
}

/* The single batch stride of the batch dims [0, nb) of t expanded to
 * bshape, or -1 when they cannot be walked with one stride. */
static int64_t
batch_stride(const TensorObject *t, int nb, const int64_t *bshape)
{
    int64_t st[PYGPU_MAX_DIMS];
    int off = nb - (t->ndim - 2);
    for (int d = 0; d < nb; d++) {
        int sd = d - off;
        st[d] = (sd >= 0 && t->shape[sd] == bshape[d]) ? t->strides[sd] : 0;
    }
    int64_t stride = -1, expected = -1;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] == 1) {
            continue;
        }
        if (stride < 0) {
            stride = st[d];
            expected = st[d] * bshape[d];
            continue;
        }
        if (st[d] != expected) {
            return -1;
        }
        expected = st[d] * bshape[d];
    }
    return stride < 0 ? 0 : stride;
}

/* Make a matrix operand usable by cuBLAS: itself; or, when only its matrix
 * strides are unusable, a contiguous copy of it (a broadcast batch keeps
 * stride 0, so a shared weight is copied once, not once per batch item);
 * or, when its batch dims cannot be walked with one stride, a contiguous
 * copy expanded to the batch shape.  *mat describes it. */
static TensorObject *
blas_operand(TensorObject *t, int nb, const int64_t *bshape, pygpu_mat *mat)
{
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    int64_t rs = t->strides[t->ndim - 2], cs = t->strides[t->ndim - 1];
    int64_t bs = batch_stride(t, nb, bshape);
    TensorObject *use;
    if (bs >= 0 && blas_ok(rows, cols, rs, cs)) {
        use = (TensorObject *)Py_NewRef(t);
    }
    else {
        int64_t shape[PYGPU_MAX_DIMS];
        int ndim = t->ndim;
        if (bs >= 0) {
            memcpy(shape, t->shape, sizeof(int64_t) * (size_t)ndim);
        }
        else { /* expand to (batch..., rows, cols) */
            if (nb > 0) {
                memcpy(shape, bshape, sizeof(int64_t) * (size_t)nb);
            }
            shape[nb] = rows;
            shape[nb + 1] = cols;
            ndim = nb + 2;
        }
        use = pygpu_tensor_empty(ndim, shape, t->dtype, t->device);
        if (use == NULL || pygpu_op_copy_same_device(use, t) < 0) {
            Py_XDECREF(use);
            return NULL;
        }
        rs = cols;
        cs = 1;
        bs = batch_stride(use, nb, bshape);
    }
    mat->ptr = use->data;
    mat->rows = rows;
    mat->cols = cols;
    mat->row_stride = rs;
    mat->col_stride = cs;
    mat->batch_stride = bs;
    return use;
}

static int
matmul(pygpu_kargs *k)
{
    pygpu_mat ma, mb;
    TensorObject *out = k->t[0];
    TensorObject *ua = blas_operand(k->t[3], k->mm.nb, k->mm.bshape,
                                          &ma);
    TensorObject *ub = ua ? blas_operand(k->t[4], k->mm.nb,
                                               k->mm.bshape, &mb)
                          : NULL;
    int rc = -1;
    if (ub != NULL) {
        rc = pygpu_cuda_matmul(out->dtype, out->device.index, out->data, &ma,
                               &mb, k->mm.batch, k->allow_tf32);
    }
    Py_XDECREF(ua);
    Py_XDECREF(ub);
    return rc;
}

static int
linear(pygpu_kargs *k)
{
    pygpu_mat mx, mw;
    TensorObject *out = k->t[0], *bias = k->t[3];
    TensorObject *ux = blas_operand(k->t[1], 0, NULL, &mx);
    TensorObject *uw = ux ? blas_operand(k->t[2], 0, NULL, &mw) : NULL;
    int rc = -1;
    if (uw != NULL) {
        rc = pygpu_cuda_linear(out->dtype, out->device.index, out->data, &mx,
                               &mw, bias ? bias->data : NULL, k->flag,
                               k->allow_tf32);
    }
    Py_XDECREF(ux);
    Py_XDECREF(uw);
    return rc;
}

/* Refuse, during a graph capture on this op's stream, the rows a graph
 * cannot hold: those that read a result back to the host (an index check:
 * the host waits), random numbers (the offset into the Philox stream is
 * chosen on the host: every replay would draw the same numbers) and the
 * optimizer step (its chunk table is copied from host memory).  0 or -1
 * with an exception. */
static int
refuse_in_capture(int kind, int flagged, pygpu_kargs *k, const char *what)
{
    char text[200];
    int wait = PYGPU_CAPTURE_ON_STREAM;
    if (pygpu_cuda_captures_underway() == 0) {
        return 0;
    }
    if (flagged) {
        snprintf(text, sizeof(text), "the index check of %s", what);
        wait = PYGPU_CAPTURE_WAITS;
    }
    else if (kind == PYGPU_K_RANDOM) {
        snprintf(text, sizeof(text),
                 "random number generation (every replay would draw the "
                 "same numbers)");
    }
    else if (kind == PYGPU_K_OPTIM) {
        snprintf(text, sizeof(text), "a fused optimizer step");
    }
    else {
        return 0;
    }
    return pygpu_cuda_capture_refuse(
        k->device, pygpu_cuda_current_stream(k->device), wait, text);
}

/* Launch rows run with their device current (restored afterwards), on its
 * current stream, launched once more when the launch ran out of memory the
 * cache can give back, and checked.  A reduction's or a scan's workspace
 * (the partials or chunk totals of lines cut in pieces; an optimizer
 * step's holds its chunk table; a sort's, the keys and indices of lines
 * too long for one block) is taken from the caching allocator first
 * and returned right after the launch: later work on the same stream is
 * ordered after the kernel; a gather's and a cross-entropy
 * forward's is two int64 for an index out of range, read back after the
 * kernel (the gather raises; cross-entropy leaves it in k->ix for its
 * front end, as the CPU row does). */
static int
run(int kind, pygpu_kernel_fn fn, pygpu_kargs *k, const char *what)
{
    StorageObject *ws = NULL;
    int rc, prev;
    if (kind >= PYGPU_K_FIRST_CALL) {
        return fn(k);
    }
    int flagged = kind == PYGPU_K_GATHER ||
                  (kind == PYGPU_K_XENT && k->op == PYGPU_XENT_FORWARD);
    if (refuse_in_capture(kind, flagged, k, what) < 0) {
        return -1;
    }
    if (flagged) {
        pygpu_device dev = {PYGPU_CUDA, k->device};
        ws = pygpu_storage_new(dev, 2 * sizeof(int64_t));
        if (ws == NULL) {
            return -1;
        }
        k->workspace = ws->ptr;
    }
    if (kind == PYGPU_K_REDUCE || kind == PYGPU_K_SCAN ||
        kind == PYGPU_K_OPTIM || kind == PYGPU_K_SORT ||
        kind == PYGPU_K_NORM) {
        size_t wsize =
            kind == PYGPU_K_NORM
                ? pygpu_cuda_norm_workspace(k->op, k->dtype, k->norm)
            : kind == PYGPU_K_SORT
                ? pygpu_cuda_sort_workspace(k->dtype, k->outer, k->n,
                                            k->inner)
            : kind == PYGPU_K_OPTIM
                ? (size_t)pygpu_optim_chunks(k->optim) *
                      sizeof(pygpu_optim_chunk)
            : kind == PYGPU_K_SCAN
                ? pygpu_cuda_scan_workspace(k->op, k->dtype, k->outer, k->n,
                                            k->inner)
                : pygpu_cuda_reduce_workspace(k->op, k->dtype, k->outer,
                                              k->n, k->inner);
        if (wsize > 0) {
            pygpu_device dev = {PYGPU_CUDA, k->device};
            ws = pygpu_storage_new(dev, wsize);
            if (ws == NULL) {
                return -1;
            }
            k->workspace = ws->ptr;
        }
    }
    prev = pygpu_cuda_device_guard(k->device);
    if (prev < 0) {
        Py_XDECREF(ws);
        return -1;
    }
    k->stream = pygpu_cuda_current_stream(k->device);
    PYGPU_CUDA_LAUNCH(rc, k->device, what, fn(k));
    if (rc == 0 && kind == PYGPU_K_GATHER) {
        rc = check_gather(k, what);
    }
    else if (rc == 0 && flagged) {
        int64_t err[2] = {0, 0};
        rc = read_back_error(k, what, err);
        k->ix.failed = rc == 0 && err[0] != 0;
        k->ix.bad = err[1];
    }
    pygpu_cuda_device_restore(k->device, prev);
    Py_XDECREF(ws);
    return rc;
}

static const pygpu_backend cuda_backend = {
    .run = run,
    .rows = PYGPU_ROWS_BY_KIND,
};

int
pygpu_cuda_dispatch_register(void)
{
    return pygpu_dispatch_register(PYGPU_CUDA, &cuda_backend);
}
