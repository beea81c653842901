/* cpu_linear.c - the CPU epilogue of linear: the bias added to every row
 * of the product, then relu when asked.
 */
#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu_arith.h"
#include "cpu/half.h"
#include "kernels/kernels.h"

/* Adds the bias row to every row of out, then applies relu if asked; the
 * relu test is hoisted out of the loops so each loop body is branch-free.
 * float16 and bfloat16 add in float and round once. */
#define BIAS_ACT_LOOP(NAME, T, CT, LD, ST, ADD, RELU)                        \
    static void NAME(T *out, const T *bias, int64_t rows, int64_t cols,      \
                     int relu)                                               \
    {                                                                        \
        for (int64_t r = 0; r < rows; r++) {                                 \
            T *o = out + r * cols;                                           \
            if (relu) {                                                      \
                for (int64_t j = 0; j < cols; j++) {                         \
                    CT v = ADD(LD(o[j]), LD(bias[j]));                       \
                    o[j] = ST(RELU(v));                                       \
                }                                                            \
            } else {                                                         \
                for (int64_t j = 0; j < cols; j++) {                         \
                    o[j] = ST(ADD(LD(o[j]), LD(bias[j])));                   \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

BIAS_ACT_LOOP(bias_act_f32, float, float, AS_IS, AS_IS, pygpu_add_f,
              pygpu_relu_f)
BIAS_ACT_LOOP(bias_act_f16, uint16_t, float, pygpu_half_to_float,
              pygpu_float_to_half, pygpu_add_f, pygpu_relu_f)
BIAS_ACT_LOOP(bias_act_f64, double, double, AS_IS, AS_IS, pygpu_add_d,
              pygpu_relu_d)
BIAS_ACT_LOOP(bias_act_i64, int64_t, int64_t, AS_IS, AS_IS, pygpu_add_i,
              pygpu_relu_i)
BIAS_ACT_LOOP(bias_act_bf16, uint16_t, float, pygpu_bf16_to_float,
              pygpu_float_to_bf16, pygpu_add_f, pygpu_relu_f)
BIAS_ACT_LOOP(bias_act_b8, uint8_t, int64_t, LD_b8, ST_BOOL, pygpu_add_i,
              pygpu_relu_i)
BIAS_ACT_LOOP(bias_act_u8, uint8_t, int64_t, LD_u8, ST_U8, pygpu_add_i,
              pygpu_relu_i)
BIAS_ACT_LOOP(bias_act_i32, int32_t, int64_t, LD_i32, pygpu_i64_to_i32,
              pygpu_add_i, pygpu_relu_i)

void pygpu_cpu_bias_act(int dtype, void *out, const void *bias,
                        int64_t rows, int64_t cols, int relu)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        bias_act_f32((float *)out, (const float *)bias, rows, cols, relu);
        break;
    case PYGPU_FLOAT16:
        bias_act_f16((uint16_t *)out, (const uint16_t *)bias, rows, cols,
                     relu);
        break;
    case PYGPU_FLOAT64:
        bias_act_f64((double *)out, (const double *)bias, rows, cols, relu);
        break;
    case PYGPU_INT64:
        bias_act_i64((int64_t *)out, (const int64_t *)bias, rows, cols,
                     relu);
        break;
    case PYGPU_BFLOAT16:
        bias_act_bf16((uint16_t *)out, (const uint16_t *)bias, rows, cols,
                      relu);
        break;
    case PYGPU_BOOL:
        bias_act_b8((uint8_t *)out, (const uint8_t *)bias, rows, cols, relu);
        break;
    case PYGPU_UINT8:
        bias_act_u8((uint8_t *)out, (const uint8_t *)bias, rows, cols, relu);
        break;
    case PYGPU_INT32:
        bias_act_i32((int32_t *)out, (const int32_t *)bias, rows, cols,
                     relu);
        break;
    default:
        break;
    }
}
