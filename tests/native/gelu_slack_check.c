/* gelu_slack_check.c - the kernel self-test's slack for the gelu family
 * (tests/native/kernels_selftest/gelu_slack.h) checked on the host:
 * the host's own float rules (kernels/rules.h, which the CPU loops run)
 * and double rules stay within the self-test's tolerance of the exact
 * value with it, a good share of the float ones do not without it, and
 * rules with a wrong constant or term fall outside it.
 *
 * The exact value: the double rule for the float rules, a long double
 * evaluation of the same formula for the double rules.  The tolerance is
 * the self-test's (elementwise.cu, unary_tolerance): relative 2^-20 and
 * absolute 2^-146 for float32, 2^-48 and 2^-1070 for float64, plus the
 * slack.  The inputs: every float32 from -10 to 10 in steps of 2^-12, and
 * 2^20 random floats of [-10, 10] (a fixed generator).
 *
 * Prints one line per check and last "N passed, M failed"; exits 1 when
 * a check failed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/rules.h"
#include "kernels_selftest/gelu_slack.h"

static int passed, failed;

static void check(int ok, const char *what, long n_out, long n)
{
    printf("%s %s: %ld of %ld outside\n", ok ? "ok  " : "FAIL", what, n_out,
           n);
    if (ok) {
        passed++;
    } else {
        failed++;
    }
}

/* The gelu family in long double, the same formulas as the double rules
 * (rules.h). */
static long double exact_l(int op, long double x)
{
    const long double k = 0.797884560802865355879892119868763737L;
    const long double inv_sqrt2 = 0.707106781186547524400844362104849039L;
    const long double inv_sqrt_2pi = 0.398942280401432677939946059934381868L;
    long double t;

    switch (op) {
    case PYGPU_GELU:
        return 0.5L * x * erfcl(-x * inv_sqrt2);
    case PYGPU_GELU_TANH:
        return 0.5L * x * (1 + tanhl(k * (x + 0.044715L * x * x * x)));
    case PYGPU_GELU_TANH_GRAD:
        t = tanhl(k * (x + 0.044715L * x * x * x));
        return 0.5L * (1 + t) +
               0.5L * x * (1 - t * t) * k * (1 + 0.134145L * x * x);
    default: /* PYGPU_GELU_GRAD */
        return 0.5L * erfcl(-x * inv_sqrt2) +
               x * inv_sqrt_2pi * expl(-0.5L * x * x);
    }
}

/* Wrong float rules the tolerance must catch: the exact gelu with 0.7071
 * for 1/sqrt(2); 0.0447 for 0.044715 in the tanh form; the derivative of the tanh form without its 3 c x^2 term;
 * the exact gelu's derivative without x phi(x)'s exp argument halved. */
static double wrong_f(int op, float x)
{
    float t;

    switch (op) {
    case PYGPU_GELU:
        return 0.5f * x * erfcf(-x * 0.7071f);
    case PYGPU_GELU_TANH:
        t = pygpu_tanh_f(0.79788456080286536f * (x + 0.0447f * x * x * x));
        return 0.5f * x * (1.0f + t);
    case PYGPU_GELU_TANH_GRAD:
        t = pygpu_tanh_f(0.79788456080286536f *
                         (x + 0.044715f * x * x * x));
        return 0.5f * (1.0f + t) +
               0.5f * x * (1.0f - t * t) * 0.79788456080286536f;
    default:
        return 0.5f * erfcf(-x * 0.70710678118654752f) +
               x * 0.39894228040143268f * expf(-x * x);
    }
}

static double rule_f(int op, float x)
{
    switch (op) {
    case PYGPU_GELU:
        return pygpu_gelu_f(x);
    case PYGPU_GELU_TANH:
        return pygpu_gelu_tanh_f(x);
    case PYGPU_GELU_TANH_GRAD:
        return pygpu_gelu_tanh_grad_f(x);
    default:
        return pygpu_gelu_grad_f(x);
    }
}

static double rule_d(int op, double x)
{
    switch (op) {
    case PYGPU_GELU:
        return pygpu_gelu_d(x);
    case PYGPU_GELU_TANH:
        return pygpu_gelu_tanh_d(x);
    case PYGPU_GELU_TANH_GRAD:
        return pygpu_gelu_tanh_grad_d(x);
    default:
        return pygpu_gelu_grad_d(x);
    }
}

static int within(double got, double want, double rtol, double atol,
                  double slack)
{
    return fabs(got - want) <= rtol * fabs(want) + atol + slack;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* A float of [-10, 10] (splitmix64). */
static float random_x(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1p-53 * 20.0 - 10.0);
}

int main(void)
{
    static const int ops[] = {PYGPU_GELU, PYGPU_GELU_TANH,
                              PYGPU_GELU_TANH_GRAD, PYGPU_GELU_GRAD};
    static const char *names[] = {"gelu", "gelu_tanh", "gelu_tanh_grad",
                                  "gelu_grad"};
    const long n_grid = 20 * 4096 + 1, n_random = 1 << 20;
    const long n = n_grid + n_random;
    char what[160];

    for (int k = 0; k < 4; k++) {
        const int op = ops[k];
        long out_f = 0, out_f_bare = 0, out_d = 0, out_wrong = 0;

        rng_state = 0x9E3779B97F4A7C15ull;
        for (long i = 0; i < n; i++) {
            const float x = i < n_grid ? -10.0f + (float)i * 0x1p-12f
                                       : random_x();
            const double want_f = rule_d(op, x);
            const double want_d = (double)exact_l(op, x);
            const double slack_f = gelu_slack(op, x, 0x1p-24);
            const double slack_d = gelu_slack(op, x, 0x1p-53);
            const double got_f = rule_f(op, x);

            out_f += !within(got_f, want_f, 0x1p-20, 0x1p-146, slack_f);
            out_f_bare += !within(got_f, want_f, 0x1p-20, 0x1p-146, 0);
            out_d += !within(rule_d(op, x), want_d, 0x1p-48, 0x1p-1070,
                             slack_d);
            out_wrong += !within(wrong_f(op, x), want_f, 0x1p-20, 0x1p-146,
                                 slack_f);
        }
        snprintf(what, sizeof(what), "%s: the float rule within the slack",
                 names[k]);
        check(out_f == 0, what, out_f, n);
        snprintf(what, sizeof(what),
                 "%s: the float rule needs the slack (some outside without)",
                 names[k]);
        check(out_f_bare > 0, what, out_f_bare, n);
        snprintf(what, sizeof(what), "%s: the double rule within the slack",
                 names[k]);
        check(out_d == 0, what, out_d, n);
        snprintf(what, sizeof(what),
                 "%s: a wrong rule falls outside (many outside)", names[k]);
        check(out_wrong > n / 20, what, out_wrong, n);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
