/* optim.h - the contract of the optimizer kind (PYGPU_K_OPTIM): one step
 * of Adam / AdamW or SGD over a list of tensors of one device and dtype,
 * as the CPU loop (cpu/cpu_optim.c) and the multi-tensor CUDA kernel
 * (kernels/optim.cu) take it.  Plain C, no Python.h.
 *
 * The front end (ops/ops_optim.c) checks the lists and fills a
 * pygpu_optim_step: for tensor i of the group, list j's memory is
 * lists[j][i], numel[i] elements, contiguous, all of the group's dtype.
 * The per-element rules are in optim_rules.h.
 */
#ifndef PYGPU_OPTIM_H
#define PYGPU_OPTIM_H

#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The optimizers: pygpu_kargs.op of an OPTIM row. */
enum pygpu_optim_op {
    PYGPU_OPTIM_ADAM = 0,
    PYGPU_OPTIM_SGD = 1,
    PYGPU_NOPTIM_OPS = 2
};

/* The lists of one step, by index into pygpu_optim_step.lists. */
enum pygpu_optim_list {
    PYGPU_OPT_PARAM = 0,  /* written */
    PYGPU_OPT_GRAD = 1,   /* read */
    PYGPU_OPT_STATE0 = 2, /* Adam: exp_avg; SGD: momentum_buffer */
    PYGPU_OPT_STATE1 = 3, /* Adam: exp_avg_sq */
    PYGPU_OPT_STATE2 = 4, /* Adam: max_exp_avg_sq (amsgrad) */
    PYGPU_OPT_NLISTS = 5
};

/* The hyper-parameters of one step, in double; the rules convert them to
 * the compute type (float for float32, float16 and bfloat16, double for
 * float64) as torch converts a Python number for an op. */
typedef struct pygpu_optim_hyper {
    double lr, weight_decay;
    /* Adam */
    double beta1, beta2, eps;
    double step_size;  /* lr / (1 - beta1^step) */
    double bias2_sqrt; /* sqrt(1 - beta2^step) */
    int amsgrad, decoupled;
    /* SGD */
    double momentum, dampening;
    int nesterov, first; /* first: the buffers are new, buf = d */
    int maximize;
} pygpu_optim_hyper;

typedef struct pygpu_optim_step {
    pygpu_optim_hyper h;
    int64_t n;                           /* tensors */
    void **lists[PYGPU_OPT_NLISTS];      /* NULL: a list not used */
    const int64_t *numel;                /* numel[i] of tensor i */
} pygpu_optim_step;

/* Elements per chunk of the CUDA launch: one block walks one chunk. */
#define PYGPU_OPTIM_CHUNK ((int64_t)1 << 16)

/* Chunks of a step: ceil(numel / CHUNK) summed over its tensors. */
static inline int64_t pygpu_optim_chunks(const pygpu_optim_step *s)
{
    int64_t c = 0;
    for (int64_t i = 0; i < s->n; i++) {
        c += (s->numel[i] + PYGPU_OPTIM_CHUNK - 1) / PYGPU_OPTIM_CHUNK;
    }
    return c;
}

/* One chunk of the CUDA launch: the lists' addresses at its first
 * element, and its length. */
typedef struct pygpu_optim_chunk {
    void *ptr[PYGPU_OPT_NLISTS];
    int64_t n;
} pygpu_optim_chunk;

/* One step (op: enum pygpu_optim_op) over every tensor of s, each read
 * and written in one pass; dtype is float32, float16, float64 or
 * bfloat16. */
void pygpu_cpu_optim(int op, int dtype, const pygpu_optim_step *s);

#ifdef PYGPU_WITH_CUDA
#include <cuda_runtime_api.h>

/* The same in ONE kernel launch: the chunk table (pygpu_optim_chunks(s)
 * entries of pygpu_optim_chunk) is built on the host, copied into
 * `workspace` (device memory of that many entries) on the stream, and
 * the grid has a block per chunk. */
cudaError_t pygpu_cuda_optim(int op, int dtype, const pygpu_optim_step *s,
                             void *workspace, cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* PYGPU_OPTIM_H */
