/* gelu_slack.h - how far a correct implementation of the gelu family may
 * be from the exact value, beyond the kernel self-test's relative
 * tolerance, at x.
 *
 * The exact gelu, x/2 erfc(-x / sqrt(2)), loses relative accuracy in its
 * negative tail, where erfc's slope magnifies the rounding of its
 * argument.  Three of these rules subtract nearly equal terms: gelu's tanh form,
 * x/2 (1 + tanh(u)) with u = k (x + c x^3), where tanh(u) nears -1 for
 * negative x; its derivative, and the exact gelu's derivative,
 * Phi(x) + x phi(x), which passes through 0 near x = -0.75.  Each term is
 * computed within a few units of rounding of ITS OWN size, so the error of
 * the result is a few units of rounding of the terms (or of |x|), not of
 * the result, which can be far smaller.  The slack is that error bound,
 * taken term by term with the constants below; it is 0 for every other op
 * and for a non-finite x.
 *
 * `unit` is the unit roundoff of the type the rule computes in: 2^-24 for
 * float (float32 and float16, which round the float result once more), and
 * 2^-53 for double.  The libraries' functions are taken within 4 ulp
 * (tanh: CUDA's tanhf is within 2, the CPU's own within 3 of the exact
 * value), erfc within 8 (CUDA's erfcf 4, erfc 5) and exp within 2.
 *
 * Plain C with no CUDA: tests/packaging/test_native_build.py compiles it on
 * the host and checks that the host's own float and double rules stay
 * within it, and that wrong rules do not. */
#ifndef PYGPU_GELU_SLACK_H
#define PYGPU_GELU_SLACK_H

#include <math.h>

#include "kernels/kernels.h"

#define GELU_SLACK_K 0.79788456080286535588  /* sqrt(2 / pi) */
#define GELU_SLACK_C 0.044715
#define GELU_SLACK_INV_SQRT2 0.70710678118654752440
#define GELU_SLACK_INV_SQRT_2PI 0.39894228040143267794
#define GELU_SLACK_2_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi) */

/* Error bound of t = tanh(k (x + c x^3)) as computed, and t itself. */
static inline double gelu_slack_tanh(double x, double unit, double *t)
{
    const double u = GELU_SLACK_K * (x + GELU_SLACK_C * x * x * x);
    /* u carries about six roundings of its own size (the cube, the sum,
     * the products); tanh passes them on times its slope 1 - t^2. */
    *t = tanh(u);
    return 8 * unit * fabs(*t) + (1 - *t * *t) * 6 * unit * fabs(u);
}

static inline double gelu_slack(int op, double x, double unit)
{
    double t, dt, one_t, q, p, term2, z, term1;

    if (!isfinite(x)) {
        return 0;
    }
    switch (op) {
    case PYGPU_GELU:
        /* x/2 erfc(z), z = -x / sqrt(2): z carries two roundings of its
         * own size (the constant's and the product's), which erfc passes
         * on times its slope, 2/sqrt(pi) exp(-z^2): far in the negative
         * tail, many units of rounding of the result. */
        z = -x * GELU_SLACK_INV_SQRT2;
        return 0.5 * fabs(x) * GELU_SLACK_2_SQRTPI * exp(-z * z) * fabs(z) *
               3 * unit;
    case PYGPU_GELU_TANH:
        /* x/2 (1 + t): the error of 1 + t is that of t, plus a rounding. */
        dt = gelu_slack_tanh(x, unit, &t);
        return 0.5 * fabs(x) * (dt + 2 * unit);
    case PYGPU_GELU_TANH_GRAD:
        /* (1 + t)/2 + x/2 (1 - t^2) k (1 + 3c x^2): 1 - t^2 inherits
         * 2 |t| times the error of t. */
        dt = gelu_slack_tanh(x, unit, &t);
        one_t = 0.5 * (1 + t);
        q = 1 - t * t;
        p = GELU_SLACK_K * (1 + 3 * GELU_SLACK_C * x * x);
        term2 = 0.5 * fabs(x) * q * p;
        return 0.5 * (dt + 2 * unit) +
               0.5 * fabs(x) * p * (2 * fabs(t) * dt + 3 * unit) +
               5 * unit * term2 + 2 * unit * (fabs(one_t) + term2);
    case PYGPU_GELU_GRAD:
        /* erfc(z)/2 + x phi(x), z = -x / sqrt(2): erfc within 8 ulp, plus
         * its slope times the rounding of z; phi's exp within 2 ulp, plus
         * the rounding of -x^2/2 times x^2/2. */
        z = -x * GELU_SLACK_INV_SQRT2;
        term1 = 0.5 * erfc(z);
        term2 = fabs(x) * GELU_SLACK_INV_SQRT_2PI * exp(-0.5 * x * x);
        return 16 * unit * term1 +
               0.5 * GELU_SLACK_2_SQRTPI * exp(-z * z) * fabs(z) * unit +
               (8 + x * x) * unit * term2 + 2 * unit * (term1 + term2);
    default:
        return 0;
    }
}

#endif /* PYGPU_GELU_SLACK_H */
