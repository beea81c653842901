/* cpu_optim.c - the CPU loop of the optimizer kind: one step of Adam or
 * SGD over a list of contiguous tensors of one dtype (kernels/optim.h).
 *
 * Each tensor is walked once: for every element the parameter, gradient
 * and state are loaded (float16 and bfloat16 widened exactly to float),
 * the rule of kernels/optim_rules.h runs, and the parameter and state are
 * stored back (rounded once).  The tensors of an optimizer are small to
 * middling, so the loop runs on the calling thread (the runner releases
 * the GIL for large steps).
 */
#include <stddef.h>
#include <stdint.h>

#include "cpu/half.h"
#include "kernels/optim_rules.h"

#define SAME(x) (x)

/* The rule over n elements of storage type ST (compute type T, rules
 * suffix S, LD / STORE between them), with or without the third state
 * (VM: amsgrad's maximum, SGD's buffer).  The hyper-parameters are copied
 * to a local first, so the compiler sees them unchanged by the stores
 * (the build has -fno-strict-aliasing) and the loop vectorizes where the
 * conversions allow; the tensors of one parameter never overlap (the
 * front end checks). */
#define ADAM_LOOP(name, ST, T, S, LD, STORE, VM)                             \
    static void name(const pygpu_optim_hyper *hp, ST *restrict p,            \
                     const ST *restrict g, ST *restrict m, ST *restrict v,   \
                     ST *restrict vm, int64_t n)                             \
    {                                                                        \
        const pygpu_optim_hyper h = *hp;                                     \
        for (int64_t j = 0; j < n; j++) {                                    \
            T pv = LD(p[j]), mv = LD(m[j]), vv = LD(v[j]);                   \
            T vmv = VM ? LD(vm[j]) : (T)0;                                   \
            pygpu_adam_##S(&h, &pv, LD(g[j]), &mv, &vv, &vmv);               \
            p[j] = STORE(pv);                                                \
            m[j] = STORE(mv);                                                \
            v[j] = STORE(vv);                                                \
            if (VM) {                                                        \
                vm[j] = STORE(vmv);                                          \
            }                                                                \
        }                                                                    \
    }
#define SGD_LOOP(name, ST, T, S, LD, STORE, BUF)                             \
    static void name(const pygpu_optim_hyper *hp, ST *restrict p,            \
                     const ST *restrict g, ST *restrict b, int64_t n)        \
    {                                                                        \
        const pygpu_optim_hyper h = *hp;                                     \
        for (int64_t j = 0; j < n; j++) {                                    \
            T pv = LD(p[j]);                                                 \
            T bv = BUF ? LD(b[j]) : (T)0;                                    \
            pygpu_sgd_##S(&h, &pv, LD(g[j]), &bv);                           \
            p[j] = STORE(pv);                                                \
            if (BUF) {                                                       \
                b[j] = STORE(bv);                                            \
            }                                                                \
        }                                                                    \
    }

/* adam_<name> and sgd_<name>: tensor i of s. */
#define OPTIM_LOOPS(name, ST, T, S, LD, STORE)                               \
    ADAM_LOOP(adam2_##name, ST, T, S, LD, STORE, 0)                          \
    ADAM_LOOP(adam3_##name, ST, T, S, LD, STORE, 1)                          \
    SGD_LOOP(sgd1_##name, ST, T, S, LD, STORE, 0)                            \
    SGD_LOOP(sgd2_##name, ST, T, S, LD, STORE, 1)                            \
    static void adam_##name(const pygpu_optim_step *s, int64_t i)            \
    {                                                                        \
        void **vm = s->lists[PYGPU_OPT_STATE2];                              \
        (vm != NULL ? adam3_##name : adam2_##name)(                          \
            &s->h, s->lists[PYGPU_OPT_PARAM][i],                             \
            s->lists[PYGPU_OPT_GRAD][i], s->lists[PYGPU_OPT_STATE0][i],      \
            s->lists[PYGPU_OPT_STATE1][i], vm != NULL ? vm[i] : NULL,        \
            s->numel[i]);                                                    \
    }                                                                        \
    static void sgd_##name(const pygpu_optim_step *s, int64_t i)             \
    {                                                                        \
        void **b = s->lists[PYGPU_OPT_STATE0];                               \
        (b != NULL ? sgd2_##name : sgd1_##name)(                             \
            &s->h, s->lists[PYGPU_OPT_PARAM][i],                             \
            s->lists[PYGPU_OPT_GRAD][i], b != NULL ? b[i] : NULL,            \
            s->numel[i]);                                                    \
    }

OPTIM_LOOPS(f32, float, float, f, SAME, SAME)
OPTIM_LOOPS(f64, double, double, d, SAME, SAME)
OPTIM_LOOPS(f16, uint16_t, float, f, pygpu_half_to_float,
            pygpu_float_to_half)
OPTIM_LOOPS(bf16, uint16_t, float, f, pygpu_bf16_to_float,
            pygpu_float_to_bf16)

typedef void (*optim_loop)(const pygpu_optim_step *s, int64_t i);

/* The loops by optimizer and dtype (NULL: not a floating dtype). */
static const optim_loop loops[PYGPU_NOPTIM_OPS][PYGPU_NDTYPES] = {
    [PYGPU_OPTIM_ADAM] = {[PYGPU_FLOAT32] = adam_f32,
                          [PYGPU_FLOAT64] = adam_f64,
                          [PYGPU_FLOAT16] = adam_f16,
                          [PYGPU_BFLOAT16] = adam_bf16},
    [PYGPU_OPTIM_SGD] = {[PYGPU_FLOAT32] = sgd_f32,
                         [PYGPU_FLOAT64] = sgd_f64,
                         [PYGPU_FLOAT16] = sgd_f16,
                         [PYGPU_BFLOAT16] = sgd_bf16},
};

void
pygpu_cpu_optim(int op, int dtype, const pygpu_optim_step *s)
{
    if (op < 0 || op >= PYGPU_NOPTIM_OPS || dtype < 0 ||
        dtype >= PYGPU_NDTYPES || loops[op][dtype] == NULL) {
        return; /* the front end refuses these */
    }
    for (int64_t i = 0; i < s->n; i++) {
        loops[op][dtype](s, i);
    }
}
