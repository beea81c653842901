/* kernels.h - the contract between the C layer and the compute loops.
 *
 * Plain C, no Python.h: included by ops (C), the CPU loops (C) and the CUDA
 * kernels (.cu).  Every CUDA launcher has the shape
 *     cudaError_t pygpu_cuda_<op>(out, in..., sizes/geometry, stream)
 * and returns the error of the launch (cudaGetLastError right after it).
 * The CPU loops have the same arguments without the stream and return void
 * (they cannot fail: all checking happened before).
 *
 * Sizes and strides are in elements, never bytes.
 */
#ifndef PYGPU_KERNELS_H
#define PYGPU_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYGPU_MAX_DIMS 16
/* CUDA devices pygpu serves (per-device tables are this long). */
#define PYGPU_MAX_DEVICES 64

/* Scalar types.  The codes index pygpu_dtype_table (csrc/dtype.c).
 * bool is one byte holding 0 or 1; bfloat16 is the top half of a float32
 * (kernels/bfloat16.h).  bool, uint8 and int32 are computed in int64
 * (results wrap to the type; bool stores x != 0), bfloat16 in float. */
enum pygpu_scalar {
    PYGPU_FLOAT32 = 0,
    PYGPU_FLOAT16 = 1,
    PYGPU_FLOAT64 = 2,
    PYGPU_INT64 = 3,
    PYGPU_BOOL = 4,
    PYGPU_UINT8 = 5,
    PYGPU_INT32 = 6,
    PYGPU_BFLOAT16 = 7,
    PYGPU_NDTYPES = 8
};

/* The elementwise ops, one row each: X(ENUM, name).  The enum value is
 * PYGPU_<ENUM>; the scalar rules pygpu_<name>_f/_d/_i are in rules.h; the
 * CPU loops, the CUDA functors and the names in messages are generated
 * from these rows (see "Adding an op" in docs/architecture.md). */
#define PYGPU_BINARY_OPS(X) X(ADD, add) X(SUB, sub) X(MUL, mul) X(DIV, div) \
    X(POW, pow) X(MAXIMUM, maximum) X(MINIMUM, minimum) X(FMOD, fmod)        \
    X(REMAINDER, remainder) X(FLOOR_DIVIDE, floor_divide)
/* The bitwise ops follow them in enum pygpu_binop: bool and integer
 * dtypes only (rules pygpu_<name>_i alone; the front end refuses floats,
 * and no loop or kernel exists for them). */
#define PYGPU_BITWISE_OPS(X)                                                 \
    X(AND, bitwise_and) X(OR, bitwise_or) X(XOR, bitwise_xor)
/* Unary ops come in two lists.  Those of PYGPU_UNARY_INT_OPS keep the
 * input's dtype (int64 stays int64).  Those of PYGPU_UNARY_FLOAT_OPS are
 * floating functions: an int64 input promotes to float32 (torch's default
 * dtype) before the op, and an int64 tensor cannot take their in-place form
 * (pygpu_unop_promotes_int).  Their int64 rules exist for the kernel tables
 * only: the op in double, converted back (rules.h). */
#define PYGPU_UNARY_INT_OPS(X)                                               \
    X(NEG, neg) X(RELU, relu) X(ABS, abs) X(FLOOR, floor) X(CEIL, ceil)      \
    X(ROUND, round) X(SIGN, sign)
#define PYGPU_UNARY_FLOAT_OPS(X)                                             \
    X(EXP, exp) X(LOG, log) X(LOG1P, log1p) X(EXPM1, expm1) X(SQRT, sqrt)    \
    X(RSQRT, rsqrt) X(SIN, sin) X(COS, cos) X(TANH, tanh)                    \
    X(SIGMOID, sigmoid) X(RECIPROCAL, reciprocal) X(SILU, silu)              \
    X(GELU, gelu) X(GELU_TANH, gelu_tanh) X(GELU_GRAD, gelu_grad)           \
    X(GELU_TANH_GRAD, gelu_tanh_grad)
#define PYGPU_UNARY_OPS(X) PYGPU_UNARY_INT_OPS(X) PYGPU_UNARY_FLOAT_OPS(X)

#define PYGPU_OP_ENUM_ROW(OP, name) PYGPU_##OP,

/* Binary elementwise operators. */
enum pygpu_binop {
    PYGPU_BINARY_OPS(PYGPU_OP_ENUM_ROW)
    PYGPU_BITWISE_OPS(PYGPU_OP_ENUM_ROW)
    PYGPU_NBINOPS
};

/* Unary elementwise operators. */
enum pygpu_unop { PYGPU_UNARY_OPS(PYGPU_OP_ENUM_ROW) PYGPU_NUNOPS };

/* Rows counted: the float ops follow the int ops in the enum. */
#define PYGPU_OP_COUNT_ROW(OP, name) +1
enum { PYGPU_NUNOPS_INT = 0 PYGPU_UNARY_INT_OPS(PYGPU_OP_COUNT_ROW) };
/* The arithmetic binary ops, before the bitwise ones. */
enum { PYGPU_NBINOPS_ARITH = 0 PYGPU_BINARY_OPS(PYGPU_OP_COUNT_ROW) };

/* Nonzero for the bitwise ops (integers and bool only). */
static inline int pygpu_binop_is_bitwise(int op)
{
    return op >= PYGPU_NBINOPS_ARITH && op < PYGPU_NBINOPS;
}

/* Nonzero when an int64 input of unary op `op` promotes to float32. */
static inline int pygpu_unop_promotes_int(int op)
{
    return op >= PYGPU_NUNOPS_INT && op < PYGPU_NUNOPS;
}

/* Comparisons: a bool result of two inputs converted to their promoted
 * dtype, compared in its compute type (rules.h: pygpu_<name>_f/_d/_i). */
#define PYGPU_COMPARE_OPS(X)                                                 \
    X(EQ, eq) X(NE, ne) X(LT, lt) X(LE, le) X(GT, gt) X(GE, ge)
enum pygpu_cmpop { PYGPU_COMPARE_OPS(PYGPU_OP_ENUM_ROW) PYGPU_NCMPOPS };

/* Reductions.  MAX and MIN may also give the index of their result. */
enum pygpu_redop {
    PYGPU_SUM = 0,
    PYGPU_MEAN = 1,
    PYGPU_MAX = 2,
    PYGPU_MIN = 3,
    PYGPU_PROD = 4,
    PYGPU_NREDOPS = 5
};

/* Reductions and scans read their input in its own dtype and accumulate
 * in this one: int64 for bool, uint8, int32 and int64, float for float16,
 * bfloat16 and float32, double for float64. */
static inline int pygpu_reduce_acc_dtype(int dtype)
{
    switch (dtype) {
    case PYGPU_FLOAT16:
    case PYGPU_BFLOAT16:
    case PYGPU_FLOAT32:
        return PYGPU_FLOAT32;
    case PYGPU_FLOAT64:
        return PYGPU_FLOAT64;
    default:
        return PYGPU_INT64;
    }
}

/* pygpu_kargs.flag of a REDUCE row: SUM, MEAN and PROD write the
 * accumulator (float32 for a float16 input, say) rather than rounding. */
#define PYGPU_REDUCE_TO_ACC 1

/* The output dtype of reduction op over an input of dtype: the
 * accumulator's with to_acc (SUM, MEAN, PROD); else int64 for SUM and
 * PROD of bool and integers (as torch), the input's own otherwise. */
static inline int pygpu_reduce_out_dtype(int op, int dtype, int to_acc)
{
    int acc = pygpu_reduce_acc_dtype(dtype);
    if (op == PYGPU_MAX || op == PYGPU_MIN) {
        return dtype;
    }
    if (to_acc || (acc == PYGPU_INT64 && op != PYGPU_MEAN)) {
        return acc;
    }
    return dtype;
}

/* Inclusive scans along the middle dim of [outer, n, inner]: bool and
 * integer inputs give int64, the others their own dtype. */
enum pygpu_scanop { PYGPU_CUMSUM = 0, PYGPU_CUMPROD = 1, PYGPU_NSCANOPS = 2 };
static inline int pygpu_scan_out_dtype(int dtype)
{
    return pygpu_reduce_acc_dtype(dtype) == PYGPU_INT64 ? PYGPU_INT64
                                                         : dtype;
}

/* The softmax family over the middle dim of [outer, n, inner]: SOFTMAX and
 * LOG_SOFTMAX write [outer, n, inner], LOGSUMEXP writes [outer, inner]. */
enum pygpu_softop {
    PYGPU_SOFTMAX = 0,
    PYGPU_LOG_SOFTMAX = 1,
    PYGPU_LOGSUMEXP = 2,
    PYGPU_NSOFTOPS = 3
};

/* Cross-entropy over class indices (the XENT kind): logits x, a
 * contiguous [outer, n, inner] with the n classes along the middle dim,
 * and one sample per (o, i), s = o * inner + i, of S = outer * inner.
 * Per sample, with t = target[s], w the class weights (all 1 without),
 * W = sum_c w[c], eps the label smoothing and lse = log sum_c exp(x_c):
 *   loss = (1 - eps) w[t] (lse - x_t) + eps / n sum_c w[c] (lse - x_c),
 * and 0 with weight 0 when t == ignore_index.  lse is kept as m, the
 * line's maximum, and ls = log sum_c exp(x_c - m), and lse - x_t computed
 * as ls - (x_t - m), so that a small loss keeps its digits.  Sums are
 * kept in float (float16, bfloat16, float32) or double (float64): "acc"
 * below. */
enum pygpu_xentop {
    PYGPU_XENT_FORWARD = 0,  /* stats: loss[S], w[t][S], m[S], ls[S]
                                (acc) */
    PYGPU_XENT_BACKWARD = 1, /* grad_x = d loss / d x times the sample's
                                incoming gradient */
    PYGPU_NXENTOPS = 2
};
typedef struct pygpu_xent_args {
    const void *x;          /* [outer, n, inner] of the dtype */
    const int64_t *target;  /* [outer, inner] */
    const void *weight;     /* n of the dtype, or NULL */
    int64_t outer, n, inner;
    int64_t ignore_index;
    double smoothing;       /* eps in [0, 1] */
    void *stats;            /* acc: PYGPU_XENT_ROWS rows of S (FORWARD
                               writes them, BACKWARD reads m and ls) */
    void *wsum;             /* acc, one: W (FORWARD writes it when there
                               are weights and eps > 0; BACKWARD reads
                               it then) */
    void *grad_x;           /* BACKWARD: [outer, n, inner] of the dtype */
    const void *grad;       /* BACKWARD: the dtype, sample s at
                               s * grad_stride (0 or 1) */
    int64_t grad_stride;
    const void *denom;      /* BACKWARD: acc, one, that grad is divided by
                               (the mean's sum of w[t]), or NULL */
} pygpu_xent_args;
#define PYGPU_XENT_ROWS 4

/* Geometry of an elementwise op over up to three operands: index 0 is the
 * output, 1 and 2 the inputs.  `shape` is the output shape; stride[k][d] is
 * operand k's stride along dim d (0 where it is broadcast).  Element i of the
 * output (in row-major order over shape) reads operand k at
 *     sum_d idx_d(i) * stride[k][d].
 * ndim may be 0 (a single element).  Callers coalesce dims where they can,
 * so the common contiguous case arrives as ndim == 1 with unit strides. */
typedef struct pygpu_geom {
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t stride[3][PYGPU_MAX_DIMS];
} pygpu_geom;

/* A scalar operand: the value as a double and, exactly, as an int64 (used
 * when the computation dtype is PYGPU_INT64). */
typedef struct pygpu_scalar_value {
    double f;
    int64_t i;
} pygpu_scalar_value;

/* Philox4x32-10 stream position for the random generators: each element
 * index e of a call draws from counter (offset + e / 4) under key seed;
 * the caller advances offset by ceil(n / 4) per call. */
typedef struct pygpu_philox_state {
    uint64_t seed;
    uint64_t offset;
} pygpu_philox_state;

/* What a RANDOM row draws (pygpu_kargs.flag).  UNIFORM and NORMAL are
 * pygpu_cpu_random's; the others are sample.h's, four elements per
 * Philox counter as well (element e: word e % 4 of counter offset + e / 4,
 * and of its sub-blocks), so a draw of n numbers takes ceil(n / 4)
 * counters whatever the distribution. */
enum pygpu_dist {
    PYGPU_DIST_UNIFORM = 0,
    PYGPU_DIST_NORMAL = 1,
    PYGPU_DIST_EXPONENTIAL = 2, /* -ln(u) / lambd, float dtypes */
    PYGPU_DIST_INTEGER = 3,     /* low + bits mod range, int64 only */
    PYGPU_DIST_POISSON = 4,     /* Poisson(rates[e]), float dtypes */
    PYGPU_DIST_BERNOULLI = 5    /* value with probability p (rates[e] when
                                   rates is set), else 0; float dtypes */
};

/* The parameters of a sample.h draw. */
typedef struct pygpu_random_args {
    double lambd;      /* EXPONENTIAL: the rate, > 0 */
    int64_t low;       /* INTEGER: the least value */
    uint64_t range;    /* INTEGER: values in [low, low + range); 0: 2^64 */
    const void *rates; /* POISSON, BERNOULLI: contiguous, of the output's
                          dtype (BERNOULLI: NULL for one p) */
    double p, value;   /* BERNOULLI */
} pygpu_random_args;

/* ------------------------------------------------------------------ CPU */
/* out = a <op> b with all three of dtype `dtype`, following geom. */
void pygpu_cpu_binary(int op, int dtype, void *out, const void *a,
                      const void *b, const pygpu_geom *g);
/* out = a <op> s (scalar_first == 0) or s <op> a (scalar_first == 1);
 * geom uses operands 0 (out) and 1 (a). */
void pygpu_cpu_binary_scalar(int op, int dtype, void *out, const void *a,
                             pygpu_scalar_value s, int scalar_first,
                             const pygpu_geom *g);
/* The same with inputs of other dtypes: a (a_dtype) and b (b_dtype) are
 * read in their own dtypes and converted to dtype as pygpu_cpu_copy does
 * before the op, as if they had been converted first. */
void pygpu_cpu_binary_mixed(int op, int dtype, void *out, int a_dtype,
                            const void *a, int b_dtype, const void *b,
                            const pygpu_geom *g);
void pygpu_cpu_binary_scalar_mixed(int op, int dtype, void *out,
                                   int a_dtype, const void *a,
                                   pygpu_scalar_value s, int scalar_first,
                                   const pygpu_geom *g);
/* out (bool: 0 or 1 bytes) = a <op> b (enum pygpu_cmpop), a (a_dtype)
 * and b (b_dtype) converted to dtype as pygpu_cpu_copy does, then
 * compared in dtype's compute type; NaN compares unequal to everything. */
void pygpu_cpu_compare(int op, int dtype, void *out, int a_dtype,
                       const void *a, int b_dtype, const void *b,
                       const pygpu_geom *g);
/* out[i] = cond[i] ? a[i] : out[i] over g (operands 0 out, 1 cond (bool),
 * 2 a), a (a_dtype) converted to dtype as pygpu_cpu_copy does: where,
 * masked_fill and mask assignment. */
void pygpu_cpu_masked_copy(int dtype, void *out, const void *cond,
                           int a_dtype, const void *a, const pygpu_geom *g);
/* Whole rows of `row` contiguous elements of dtype: gather (scatter == 0)
 * out row j = in row idx[j], or scatter: out row idx[j] = in row j, for
 * j < n (boolean-mask indexing; idx holds distinct rows). */
void pygpu_cpu_index_rows(int dtype, void *out, const void *in,
                          const int64_t *idx, int64_t n, int64_t row,
                          int scatter);
/* out = op(a); geom uses operands 0 and 1.  RELU keeps NaN. */
void pygpu_cpu_unary(int op, int dtype, void *out, const void *a,
                     const pygpu_geom *g);
/* out (dtype out_dtype) = a (dtype in_dtype) converted, following geom
 * (operands 0 and 1).  Conversion to float16 rounds to nearest even;
 * float to int64 truncates toward zero.  `whole` is the element count of
 * the whole copy that g is (a part of): large ones bypass the caches. */
void pygpu_cpu_copy(int out_dtype, void *out, int in_dtype, const void *a,
                    const pygpu_geom *g, int64_t whole);
/* Contiguous out[0..n) = value. */
void pygpu_cpu_fill(int dtype, void *out, pygpu_scalar_value value,
                    int64_t n);
/* Reduce a contiguous input seen as [outer, n, inner] over its middle dim:
 * out[o * inner + i] = op over j of in[(o * n + j) * inner + i].
 * in is read in its own dtype and accumulated in pygpu_reduce_acc_dtype;
 * out has outer * inner elements of pygpu_reduce_out_dtype(op, dtype,
 * to_acc).  If `indices` is not NULL (MAX, MIN) it receives the int64
 * index j of the maximum (the first one; a NaN wins and its index is
 * reported); MIN likewise.  n == 0: SUM gives 0, MEAN NaN, PROD 1; MAX and
 * MIN with n == 0 are refused by the caller.  Float sums are pairwise /
 * blocked in the accumulator type (cpu_reduce.c). */
void pygpu_cpu_reduce(int op, int dtype, int to_acc, void *out,
                      int64_t *indices, const void *in, int64_t outer,
                      int64_t n, int64_t inner);
/* Inclusive scan (cumsum, cumprod) of a contiguous [outer, n, inner] of
 * dtype along n into out of the same shape and pygpu_scan_out_dtype:
 * out[o, j, i] = op over j' <= j of in[o, j', i], accumulated in
 * pygpu_reduce_acc_dtype; int64 wraps (cpu_scan.c). */
void pygpu_cpu_scan(int op, int dtype, void *out, const void *in,
                    int64_t outer, int64_t n, int64_t inner);
/* softmax, log_softmax (out like in) or logsumexp (out [outer, inner]) over
 * n of a contiguous [outer, n, inner], n >= 1, with the maximum subtracted
 * first; float16 computes in float (cpu_softmax.c). */
void pygpu_cpu_softmax(int op, int dtype, void *out, const void *in,
                       int64_t outer, int64_t n, int64_t inner);
/* Contiguous uniform [0, 1) (normal == 0) or standard normal (normal == 1)
 * numbers, generated by Philox4x32-10 from *st (see philox.h).  Uniform
 * numbers are bit-identical to the CUDA generator's for the same state;
 * normal ones go through log/sin/cos, whose last bit may differ between
 * the C library and CUDA's. */
void pygpu_cpu_random(int dtype, void *out, int64_t n, int normal,
                      pygpu_philox_state st);
/* Contiguous numbers of distribution dist (EXPONENTIAL, INTEGER, POISSON;
 * see enum pygpu_dist and sample.h) from *st: the CUDA generator's for
 * the same state (cpu_sample.c). */
void pygpu_cpu_sample(int dtype, void *out, int64_t n, int dist,
                      const pygpu_random_args *a, pygpu_philox_state st);
/* What the gather loops do with an element (their `mode`). */
enum pygpu_gather_mode {
    PYGPU_GATHER_READ = 0,    /* dense[o0] = indexed[o1 + i * dim_stride] */
    PYGPU_GATHER_SCATTER = 1, /* indexed[o1 + i * dim_stride] = dense[o0] */
    PYGPU_GATHER_OFFSETS = 2, /* dense[o0] (int64) = i * dim_stride: the
                                 checked offsets of one of several indices */
    PYGPU_GATHER_ADD = 3,     /* indexed[o1 + i * dim_stride] += dense[o0]:
                                 float32 (esize 4) or float64 (esize 8);
                                 atomic on CUDA */
    PYGPU_GATHER_ADD_INT = 4, /* the same for int64 (esize 8) */
    /* Or'ed into a mode: a negative index is out of range (gather,
     * scatter_add, index_select, index_add_, as torch's) instead of
     * counting from the end (t[idx]). */
    PYGPU_GATHER_NO_WRAP = 8
};
/* The mode without the PYGPU_GATHER_NO_WRAP bit. */
static inline int pygpu_gather_base_mode(int mode)
{
    return mode & ~PYGPU_GATHER_NO_WRAP;
}
/* Nonzero when mode writes the indexed operand (out) from the dense one. */
static inline int pygpu_gather_writes_indexed(int mode)
{
    mode = pygpu_gather_base_mode(mode);
    return mode == PYGPU_GATHER_SCATTER || mode == PYGPU_GATHER_ADD ||
           mode == PYGPU_GATHER_ADD_INT;
}
/* For every element of g, whose operands are 0: dense, 1: indexed
 * (without its indexed dim), 2: index (int32 or int64: index_esize 4 or
 * 8 bytes), i is the index read there, plus dim_size when negative
 * (unless mode has PYGPU_GATHER_NO_WRAP), and the element is moved as
 * `mode` says.  Elements are esize bytes (1, 2, 4 or 8; 8 for OFFSETS),
 * moved as they are, so every dtype takes the same loop.  Stops at the
 * first i outside [0, dim_size): returns 1 with *bad set to the index as
 * read, else 0. */
int pygpu_cpu_gather(int esize, void *dense, void *indexed,
                     const void *index, int index_esize,
                     const pygpu_geom *g, int64_t dim_stride,
                     int64_t dim_size, int mode, int64_t *bad);
/* op (enum pygpu_xentop) of cross-entropy over a (cpu_xent.c).
 * FORWARD stops at the first target outside [0, n) that is not
 * ignore_index: returns 1 with *bad set to it, else 0. */
int pygpu_cpu_xent(int op, int dtype, const pygpu_xent_args *a,
                   int64_t *bad);
/* The same over the lines o in [lo, hi) of [outer, n, inner] only (the
 * samples o * inner .. (o + 1) * inner - 1 of each); the line-0 part also
 * writes wsum.  Parts over disjoint ranges may run at once. */
int pygpu_cpu_xent_lines(int op, int dtype, const pygpu_xent_args *a,
                         int64_t lo, int64_t hi, int64_t *bad);
/* Contiguous relu, the fast path: out may equal in. */
void pygpu_cpu_relu_contig(int dtype, void *out, const void *in, int64_t n);
/* out[i] += bias[i % cols] over rows * cols contiguous elements, then relu
 * when `relu` is nonzero: the CPU epilogue of linear. */
void pygpu_cpu_bias_act(int dtype, void *out, const void *bias,
                        int64_t rows, int64_t cols, int relu);

/* The indices (int64) that sort each line along n of a contiguous input
 * seen as [outer, n, inner], into out of the same shape, in the order of
 * kernels/sort_key.h (cpu/cpu_sort.c). */
void pygpu_cpu_sort(int dtype, int64_t *out, const void *in, int64_t outer,
                    int64_t n, int64_t inner, int descending);

/* ------------------------------------------------- im2col and col2im
 * An image batch [batch, channels, height, width] and its columns
 * [batch, channels * kh * kw, out_h * out_w] (torch's unfold / fold):
 * column row (c * kh + i) * kw + j, column l = oh * out_w + ow holds
 * image (c, oh * sh - ph + i * dh, ow * sw - pw + j * dw), 0 outside it.
 * Both contiguous; out_h, out_w >= 1. */
typedef struct pygpu_im2col_args {
    int64_t batch, channels, height, width;
    int64_t kh, kw, dh, dw, ph, pw, sh, sw;
    int64_t out_h, out_w;
    /* The direct convolution (the kind's flag 2) only: its output
     * channels and groups, and the bias (out_channels elements, or
     * NULL). */
    int64_t out_channels, groups;
    const void *bias;
    void *work; /* the CPU's: pygpu_cpu_conv2d_work elements */
} pygpu_im2col_args;
/* cols = the columns of img (elements moved as they are: every dtype of
 * that size); split over the thread pool when large (cpu_im2col.c). */
void pygpu_cpu_im2col(int dtype, void *cols, const void *img,
                      const pygpu_im2col_args *a);
/* img = the sum, at each image element, of the columns' elements that
 * hold it (float dtypes; float16 and bfloat16 summed in float, rounded
 * once); each image plane is summed by one thread in a fixed order. */
void pygpu_cpu_col2im(int dtype, void *img, const void *cols,
                      const pygpu_im2col_args *a);
/* out [batch, out_channels, out_h, out_w] = the convolution of img with
 * weight [out_channels, channels / groups, kh, kw] plus a->bias,
 * without columns (cpu_conv.c; float32 and float64 only; vector loads at
 * sw == 1);
 * every output element summed by one thread in (c, i, j) order from its
 * bias. */
void pygpu_cpu_conv2d(int dtype, void *out, const void *img,
                      const void *weight, const pygpu_im2col_args *a);
/* Output channels the CPU loop sums at once, and the elements of the
 * dtype it needs at a->work: the weight in its order, each group's
 * channels padded to a multiple of PYGPU_CONV_CB. */
#define PYGPU_CONV_CB 8
static inline int64_t
pygpu_cpu_conv2d_work(const pygpu_im2col_args *a)
{
    const int64_t cog = a->out_channels / a->groups;
    return a->groups * ((cog + PYGPU_CONV_CB - 1) / PYGPU_CONV_CB) *
           PYGPU_CONV_CB * (a->channels / a->groups) * a->kh * a->kw;
}

/* ----------------------------------------------------------------- CUDA */
#ifdef PYGPU_WITH_CUDA
#include <cuda_runtime_api.h>

cudaError_t pygpu_cuda_binary(int op, int dtype, void *out, const void *a,
                              const void *b, const pygpu_geom *g,
                              cudaStream_t stream);
cudaError_t pygpu_cuda_binary_scalar(int op, int dtype, void *out,
                                     const void *a, pygpu_scalar_value s,
                                     int scalar_first, const pygpu_geom *g,
                                     cudaStream_t stream);
/* The same with inputs read in their own dtypes, converted to dtype as
 * pygpu_cuda_copy does (see pygpu_cpu_binary_mixed). */
cudaError_t pygpu_cuda_binary_mixed(int op, int dtype, void *out,
                                    int a_dtype, const void *a, int b_dtype,
                                    const void *b, const pygpu_geom *g,
                                    cudaStream_t stream);
cudaError_t pygpu_cuda_binary_scalar_mixed(int op, int dtype, void *out,
                                           int a_dtype, const void *a,
                                           pygpu_scalar_value s,
                                           int scalar_first,
                                           const pygpu_geom *g,
                                           cudaStream_t stream);
cudaError_t pygpu_cuda_unary(int op, int dtype, void *out, const void *a,
                             const pygpu_geom *g, cudaStream_t stream);
/* See pygpu_cpu_masked_copy (kernels/mask.cu). */
cudaError_t pygpu_cuda_masked_copy(int dtype, void *out, const void *cond,
                                   int a_dtype, const void *a,
                                   const pygpu_geom *g, cudaStream_t stream);
/* See pygpu_cpu_index_rows (kernels/mask.cu); idx is device memory. */
cudaError_t pygpu_cuda_index_rows(int dtype, void *out, const void *in,
                                  const int64_t *idx, int64_t n, int64_t row,
                                  int scatter, cudaStream_t stream);
/* See pygpu_cpu_compare (kernels/compare.cu). */
cudaError_t pygpu_cuda_compare(int op, int dtype, void *out, int a_dtype,
                               const void *a, int b_dtype, const void *b,
                               const pygpu_geom *g, cudaStream_t stream);
cudaError_t pygpu_cuda_copy(int out_dtype, void *out, int in_dtype,
                            const void *a, const pygpu_geom *g,
                            cudaStream_t stream);
cudaError_t pygpu_cuda_fill(int dtype, void *out, pygpu_scalar_value value,
                            int64_t n, cudaStream_t stream);
/* Bytes of device workspace pygpu_cuda_reduce needs for this shape (may be
 * 0); the caller allocates it and passes it in. */
size_t pygpu_cuda_reduce_workspace(int op, int dtype, int64_t outer,
                                   int64_t n, int64_t inner);
cudaError_t pygpu_cuda_reduce(int op, int dtype, int to_acc, void *out,
                              int64_t *indices, const void *in,
                              int64_t outer, int64_t n, int64_t inner,
                              void *workspace, cudaStream_t stream);
/* Bytes of device workspace pygpu_cuda_scan needs for this shape (0 when
 * it scans in one pass: many lines, or short ones); the caller allocates
 * it and passes it in.  A shape gives the same bits on every call. */
size_t pygpu_cuda_scan_workspace(int op, int dtype, int64_t outer,
                                 int64_t n, int64_t inner);
cudaError_t pygpu_cuda_scan(int op, int dtype, void *out, const void *in,
                            int64_t outer, int64_t n, int64_t inner,
                            void *workspace, cudaStream_t stream);
/* Bytes of device workspace pygpu_cuda_sort needs (0 when every line fits
 * one block's shared memory). */
size_t pygpu_cuda_sort_workspace(int dtype, int64_t outer, int64_t n,
                                 int64_t inner);
/* pygpu_cpu_sort on the GPU (kernels/sort.cu). */
cudaError_t pygpu_cuda_sort(int dtype, int64_t *out, const void *in,
                            int64_t outer, int64_t n, int64_t inner,
                            int descending, void *workspace,
                            cudaStream_t stream);
cudaError_t pygpu_cuda_softmax(int op, int dtype, void *out, const void *in,
                               int64_t outer, int64_t n, int64_t inner,
                               cudaStream_t stream);
cudaError_t pygpu_cuda_random(int dtype, void *out, int64_t n, int normal,
                              pygpu_philox_state st, cudaStream_t stream);
/* See pygpu_cpu_sample (kernels/sample.cu); a->rates is device memory. */
cudaError_t pygpu_cuda_sample(int dtype, void *out, int64_t n, int dist,
                              const pygpu_random_args *a,
                              pygpu_philox_state st, cudaStream_t stream);
/* pygpu_cpu_gather on the GPU.  An index out of range is not fatal to the
 * context (no trap): the first thread to meet one stores 1 in err[0] and
 * the index in err[1] (err: two int64 of device memory, zeroed here on
 * the stream first), and the caller reads err back after the kernel. */
cudaError_t pygpu_cuda_gather(int esize, void *dense, void *indexed,
                              const void *index, int index_esize,
                              const pygpu_geom *g, int64_t dim_stride,
                              int64_t dim_size, int mode, int64_t *err,
                              cudaStream_t stream);
/* pygpu_cpu_xent on the GPU (kernels/xent.cu).  FORWARD zeroes err
 * (two int64 of device memory) on the stream first; a target out of range
 * sets err[0] to 1 and err[1] to such a target, for the caller to read
 * back after the kernel. */
cudaError_t pygpu_cuda_xent(int op, int dtype, const pygpu_xent_args *a,
                            int64_t *err, cudaStream_t stream);
/* Contiguous relu with 128-bit loads/stores and a scalar head and tail, for
 * any alignment of out and in (out may equal in). */
cudaError_t pygpu_cuda_relu_contig(int dtype, void *out, const void *in,
                                   int64_t n, cudaStream_t stream);
/* Over rows x cols contiguous: out += bias[col] (mode 0), then relu (mode
 * 1); mode PYGPU_BIAS_FILL sets out = bias[col], the start of an
 * accumulating GEMM (one rounding, as in the fused epilogue). */
#define PYGPU_BIAS_FILL 2
cudaError_t pygpu_cuda_bias_act(int dtype, void *out, const void *bias,
                                int64_t rows, int64_t cols, int mode,
                                cudaStream_t stream);
/* pygpu_cpu_im2col and pygpu_cpu_col2im on the GPU (kernels/im2col.cu):
 * one thread per output element; col2im gathers the columns' elements of
 * its image element in a fixed order (no atomics: the same bits on every
 * call). */
cudaError_t pygpu_cuda_im2col(int dtype, void *cols, const void *img,
                              const pygpu_im2col_args *a,
                              cudaStream_t stream);
cudaError_t pygpu_cuda_col2im(int dtype, void *img, const void *cols,
                              const pygpu_im2col_args *a,
                              cudaStream_t stream);
/* pygpu_cpu_conv2d on the GPU (kernels/conv.cu), any float dtype and
 * column stride: one thread per output element, summed in the compute
 * type in (c, i, j) order from its bias, rounded once. */
cudaError_t pygpu_cuda_conv2d(int dtype, void *out, const void *img,
                              const void *weight,
                              const pygpu_im2col_args *a,
                              cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* PYGPU_KERNELS_H */
