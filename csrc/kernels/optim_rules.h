/* optim_rules.h - the per-element rule of each optimizer, written once
 * for the CPU loop (cpu/cpu_optim.c) and the CUDA kernel (optim.cu), as
 * rules.h is for the elementwise ops.
 *
 * Each rule exists in float (suffix _f: float32, float16 and bfloat16,
 * loaded exactly and rounded once when stored) and double (_d: float64).
 * The state keeps the parameter's dtype, as torch's does; within one
 * element everything is computed in the compute type, so the parameter's
 * update uses the moments before their rounding to float16 / bfloat16.
 *
 * Adam (torch's documented algorithm), with g the gradient (negated
 * under maximize):
 *     Adam:  g += weight_decay * p         AdamW: p *= 1 - lr * weight_decay
 *     m = beta1 * m + (1 - beta1) * g
 *     v = beta2 * v + (1 - beta2) * g * g
 *     amsgrad: vmax = maximum(vmax, v), used for v below (NaN wins)
 *     denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 *     p -= lr / (1 - beta1^t) * (m / denom)
 * SGD, with d = g (negated under maximize) + weight_decay * p:
 *     momentum != 0: buf = d on the first step, else
 *                    buf = momentum * buf + (1 - dampening) * d;
 *                    d = d + momentum * buf (nesterov) or buf
 *     p -= lr * d
 */
#ifndef PYGPU_OPTIM_RULES_H
#define PYGPU_OPTIM_RULES_H

#include <math.h>

#include "optim.h"

#if defined(__CUDACC__)
#define PYGPU_OPTIM_RULE static inline __host__ __device__
#else
#define PYGPU_OPTIM_RULE static inline
#endif

/* pygpu_adam_<s>(h, &p, g, &m, &v, &vmax) and pygpu_sgd_<s>(h, &p, g,
 * &buf) in compute type T with square root SQRT; vmax and buf are read
 * only when amsgrad / momentum say so. */
#define PYGPU_OPTIM_RULES(T, s, SQRT)                                        \
    PYGPU_OPTIM_RULE void pygpu_adam_##s(const pygpu_optim_hyper *h, T *p,   \
                                         T g, T *m, T *v, T *vmax)           \
    {                                                                        \
        T pv = *p;                                                           \
        if (h->maximize) {                                                   \
            g = -g;                                                          \
        }                                                                    \
        if (h->weight_decay != 0) {                                          \
            if (h->decoupled) {                                              \
                pv = pv * (T)(1 - h->lr * h->weight_decay);                  \
            }                                                                \
            else {                                                           \
                g = g + (T)h->weight_decay * pv;                             \
            }                                                                \
        }                                                                    \
        T mv = (T)h->beta1 * *m + (T)(1 - h->beta1) * g;                     \
        T vv = (T)h->beta2 * *v + (T)(1 - h->beta2) * (g * g);               \
        *m = mv;                                                             \
        *v = vv;                                                             \
        if (h->amsgrad) {                                                    \
            T old = *vmax;                                                   \
            vv = (old > vv || old != old) ? old : vv;                        \
            *vmax = vv;                                                      \
        }                                                                    \
        T denom = SQRT(vv) / (T)h->bias2_sqrt + (T)h->eps;                   \
        *p = pv - (T)h->step_size * (mv / denom);                            \
    }                                                                        \
    PYGPU_OPTIM_RULE void pygpu_sgd_##s(const pygpu_optim_hyper *h, T *p,    \
                                        T g, T *buf)                         \
    {                                                                        \
        T d = h->maximize ? -g : g;                                          \
        if (h->weight_decay != 0) {                                          \
            d = d + (T)h->weight_decay * *p;                                 \
        }                                                                    \
        if (h->momentum != 0) {                                              \
            T b = h->first ? d                                               \
                           : (T)h->momentum * *buf +                         \
                                 (T)(1 - h->dampening) * d;                  \
            *buf = b;                                                        \
            d = h->nesterov ? d + (T)h->momentum * b : b;                    \
        }                                                                    \
        *p = *p - (T)h->lr * d;                                              \
    }

PYGPU_OPTIM_RULES(float, f, sqrtf)
PYGPU_OPTIM_RULES(double, d, sqrt)

#endif /* PYGPU_OPTIM_RULES_H */
