/* cuda_blaslt.c - linear on CUDA: out = x @ w^T (+ bias) in one cuBLASLt
 * call with the bias epilogue, falling back to cublasGemmEx over the
 * bias-filled output where cuBLASLt has no algorithm; then, for
 * linear_relu, the relu kernel.
 *
 * The bias.  Through the swap of blas_layout.h the row-major rows x out_f
 * result is the column-major out_f x rows matrix D of the call, so the
 * bias, one value per output feature (per column of the row-major result),
 * is one value per row of D: exactly what cuBLASLt's BIAS epilogue takes
 * (a packed vector of D's row count, broadcast along D's columns).
 *
 * The relu.  cuBLASLt documents its RELU epilogues as x := max(x, 0),
 * which gives 0 for NaN; torch's relu (and the CPU, and the unfused path)
 * keeps NaN.  So the relu is always the relu kernel, one pass over the
 * output after the product, on either path.
 *
 * The plan cache.  Building descriptors and running the heuristic costs
 * far more than the product itself for small shapes, so each problem's
 * descriptors and chosen algorithm are kept in a small fixed table keyed
 * by everything the heuristic saw: device, dtype, TF32, epilogue,
 * transposes, sizes, leading dims and the alignment of each pointer (the
 * heuristic assumes what the alignment preferences promise).  A repeated
 * call only sets the bias pointer and calls cublasLtMatmul.  A problem
 * cuBLASLt cannot run is cached too, as "use the fallback".  The least
 * recently used entry is replaced when the table is full.  The table is
 * guarded by the mutex held between pygpu_blas_acquire and _release.
 */
#include "core/pygpu.h"

#include <string.h>

#include "cuda/blas.h"
#include "cuda/cuda_blas_internal.h"
#include "cuda/cuda_runtime.h"

#define LT_SLOTS 64

static pygpu_lt_plan lt_cache[LT_SLOTS];
static uint64_t lt_clock;
static int lt_last; /* the slot hit last: checked first */

static pygpu_lt_plan *lt_find(const pygpu_lt_key *key)
{
    int i;

    if (lt_cache[lt_last].used &&
        memcmp(&lt_cache[lt_last].key, key, sizeof(*key)) == 0) {
        return &lt_cache[lt_last];
    }
    for (i = 0; i < LT_SLOTS; i++) {
        if (lt_cache[i].used &&
            memcmp(&lt_cache[i].key, key, sizeof(*key)) == 0) {
            lt_last = i;
            return &lt_cache[i];
        }
    }
    return NULL;
}

/* A free slot, else the least recently used one, emptied. */
static pygpu_lt_plan *lt_victim(void)
{
    int i, best = 0;

    for (i = 0; i < LT_SLOTS; i++) {
        if (!lt_cache[i].used) {
            best = i;
            break;
        }
        if (lt_cache[i].last_use < lt_cache[best].last_use) {
            best = i;
        }
    }
    pygpu_lt_plan_clear(&lt_cache[best]);
    lt_last = best;
    return &lt_cache[best];
}

/* Run the problem through the cached cuBLASLt plan (built on a miss):
 * 1 when done, 0 when it must take the fallback, -1 with *e set. */
static int lt_run(pygpu_blas_dev *d, int device, int dtype, int tf32,
                  const pygpu_gemm_plan *p, void *out, const void *bias,
                  cudaStream_t stream, pygpu_blas_err *e)
{
    pygpu_lt_key key;
    pygpu_lt_plan *s;

    pygpu_lt_key_make(&key, device, dtype, tf32, p, out, bias);
    s = lt_find(&key);
    if (s == NULL) {
        s = lt_victim();
        if (pygpu_lt_plan_build(d, s, &key, p, bias, e) < 0) {
            return -1;
        }
    }
    s->last_use = ++lt_clock;
    return pygpu_lt_plan_run(d, s, p, out, bias, stream, e);
}

/* A linear call as its steps see it. */
typedef struct linear_call {
    int device, dtype, tf32, kind;
    const pygpu_gemm_plan *p;
    void *out;
    const pygpu_mat *x, *w;
    const void *bias;
    int relu;
} linear_call;

/* One try at the product and bias on d (mutex held), failures in *e:
 * cuBLASLt with the bias epilogue, else the unfused path. */
static void linear_once(pygpu_blas_dev *d, cudaStream_t stream, void *ctx,
                        pygpu_blas_err *e)
{
    linear_call *c = ctx;
    cudaError_t err;
    int done = 0;

    if (pygpu_lt_eligible(c->kind, c->p, c->bias)) {
        done = lt_run(d, c->device, c->dtype, c->tf32, c->p, c->out, c->bias,
                      stream, e);
    }
    if (done == 0) {
        /* The unfused path, as torch's addmm: out starts as the bias
         * and the product accumulates onto it (beta 1), so the sum is
         * rounded once, as in the fused epilogue. */
        int ok = 0;
        if (c->bias != NULL) {
            err = pygpu_cuda_bias_act(c->dtype, c->out, c->bias, c->x->rows,
                                      c->w->rows, PYGPU_BIAS_FILL, stream);
            ok = pygpu_blas_cuda_check(err, "bias_act", __FILE__,
                                       __LINE__, e);
        }
        if (ok == 0) {
            pygpu_blas_gemm(d, c->dtype, c->tf32, c->kind, c->p, c->out,
                            c->bias != NULL, 0, stream, e);
        }
    }
}

/* linear_relu's relu, after either path (see "The relu" above). */
static int linear_after(int device, cudaStream_t stream, void *ctx)
{
    linear_call *c = ctx;
    int rc = 0;

    if (c->relu) {
        PYGPU_CUDA_LAUNCH(rc, device, "relu",
                          pygpu_cuda_relu_contig(c->dtype, c->out, c->out,
                                                 c->x->rows * c->w->rows,
                                                 stream));
    }
    return rc;
}

int pygpu_cuda_linear(int dtype, int device, void *out, const pygpu_mat *x,
                      const pygpu_mat *w, const void *bias, int relu,
                      int allow_tf32)
{
    pygpu_mat wt = pygpu_mat_transpose(w);
    pygpu_gemm_plan p;
    linear_call c = {device, dtype, 0, 0, &p, out, x, w, bias, relu};
    int r;

    r = pygpu_blas_plan(dtype, allow_tf32, x, &wt, 1, "addmm_cuda", "linear",
                        &c.tf32, &c.kind, &p);
    if (r <= 0) {
        return r;
    }
    /* After an allocation failure the whole call runs once more (see
     * pygpu_blas_oom_retry): the bias refilled. */
    return pygpu_blas_run(device, linear_once, linear_after, &c);
}
