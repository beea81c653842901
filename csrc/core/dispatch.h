/* dispatch.h - the one place that chooses between the CPU and CUDA.
 *
 * An op's front end (ops_*.c) checks its arguments, promotes, broadcasts
 * and allocates its output, fills a pygpu_kargs and calls pygpu_dispatch
 * once.  That looks up the row (kind, device type, dtype) of the table: a
 * CPU loop (cpu_dispatch.c) or a CUDA launcher (cuda_dispatch.c, present
 * only in a CUDA build), and runs it the way its backend runs things: the
 * CPU without the GIL when the work is large, CUDA on the tensor's device
 * and current stream with the launch checked.  The lookup (core/dispatch.c)
 * names no backend: each registers its rows at the module's init
 * (pygpu_dispatch_register).  A CPU-only build registers no CUDA rows, and
 * pygpu_dispatch says so for every CUDA tensor.
 */
#ifndef PYGPU_DISPATCH_H
#define PYGPU_DISPATCH_H

#include "core/pygpu.h"

/* What a row computes; the op within the kind is pygpu_kargs.op. */
enum pygpu_kind {
    PYGPU_K_BINARY = 0,    /* out = in[0] op in[1] over g, the inputs
                              converted from their in_dtypes */
    PYGPU_K_BINARY_SCALAR, /* out = in[0] op s (flag: s op in[0]) over g */
    PYGPU_K_UNARY,         /* out = op(in[0]) over g */
    PYGPU_K_COPY,          /* out = in[0] converted from in_dtypes[0] */
    PYGPU_K_FILL,          /* contiguous out[0..numel) = s */
    PYGPU_K_REDUCE,        /* out (indices) = op over [outer, n, inner],
                              keyed by the input's dtype (flag:
                              PYGPU_REDUCE_TO_ACC) */
    PYGPU_K_RANDOM,        /* contiguous random numbers, flag an enum
                              pygpu_dist (0 uniform, 1 normal), its
                              parameters in rnd; float rows, and int64
                              for INTEGER */
    PYGPU_K_COMPARE,       /* out (bool) = in[0] op in[1] over g, in the
                              row's dtype, the inputs converted from their
                              in_dtypes */
    PYGPU_K_MASKED_COPY,   /* out = in[0] (bool) ? in[1] : out over g, in[1]
                              converted from in_dtypes[1] */
    PYGPU_K_INDEX_ROWS,    /* rows of `inner` elements: out row j = in[0]
                              row indices[j] for j < n (flag: scatter, the
                              other way round); indices on the device */
    PYGPU_K_SCAN,          /* out = inclusive scan (op) over [outer, n,
                              inner] along n, keyed by the input's
                              dtype */
    PYGPU_K_SOFTMAX,       /* out = softmax-family op over [outer, n,
                              inner] along n */
    PYGPU_K_GATHER,        /* over g, operand 0 the dense side, 1 the
                              indexed side without its indexed dim, 2 the
                              index (dtype in_dtypes[1]): i = the index,
                              wrapped once if negative, checked against
                              ix.size; flag, a pygpu_gather_mode: READ:
                              out (dense) = in[0] (indexed) at
                              +i * ix.stride; SCATTER: in[0] (dense) is
                              written to out (indexed) there; OFFSETS:
                              out (int64) = i * ix.stride.  Moves bytes:
                              one row serves every dtype. */
    PYGPU_K_XENT,          /* cross-entropy over class indices: op a
                              pygpu_xentop over *xent (kernels.h); a
                              target out of range in ix.failed / ix.bad */
    PYGPU_K_OPTIM,         /* one optimizer step (op: enum pygpu_optim_op)
                              over the lists of `optim`, all of the row's
                              dtype (kernels/optim.h) */
    PYGPU_K_SORT,          /* out (int64) = the indices that sort in[0]
                              (contiguous, [outer, n, inner]) along n, by
                              kernels/sort_key.h's order (flag:
                              descending) */
    PYGPU_K_IM2COL,        /* out = the columns of in[0] (flag 0) or the
                              image summed from them (flag 1), shapes in
                              *im2col (kernels.h) */
    PYGPU_K_NORM,          /* layer / RMS norm over contiguous rows,
                              forward or backward (op: enum
                              pygpu_norm_op) over *norm (kernels/norm.h) */
    /* Kinds past here take tensors and raise themselves (0 or -1). */
    PYGPU_K_MATMUL,        /* t[0] = t[1] @ t[2]; t[3], t[4]: them as
                              batches of matrices over mm.bshape */
    PYGPU_K_LINEAR,        /* t[0] = t[1] @ t[2].T (+ t[3]) (flag: relu) */
    PYGPU_NKINDS
};

#define PYGPU_K_FIRST_CALL PYGPU_K_MATMUL

/* The arguments of a row.  A front end sets the fields its kind reads
 * (the hot elementwise paths set just those, uninitialised otherwise);
 * pygpu_dispatch sets the rest. */
typedef struct pygpu_kargs {
    int op;                    /* enum pygpu_binop / unop / redop /
                                  cmpop / scanop / softop */
    int in_dtypes[2];          /* BINARY*, COPY, COMPARE, MASKED_COPY,
                                  GATHER: dtypes of in[] */
    void *out;
    const void *in[2];
    const pygpu_geom *g;       /* the elementwise kinds */
    pygpu_scalar_value s;      /* BINARY_SCALAR, FILL */
    int flag;                  /* scalar first / normal / relu */
    int allow_tf32;            /* MATMUL, LINEAR: float32 may use TF32 */
    int64_t numel;             /* elements touched: the CPU's threading */
    int64_t *indices;          /* REDUCE (max over a dim), or NULL */
    int64_t outer, n, inner;   /* REDUCE, SCAN, SOFTMAX, SORT */
    pygpu_philox_state philox; /* RANDOM */
    pygpu_random_args rnd;     /* RANDOM past NORMAL */
    TensorObject *t[5];        /* MATMUL, LINEAR */
    const pygpu_xent_args *xent; /* XENT */
    const struct pygpu_optim_step *optim; /* OPTIM */
    const pygpu_im2col_args *im2col; /* IM2COL */
    const struct pygpu_norm_args *norm; /* NORM */
    struct {
        int nb;                /* batch dims */
        const int64_t *bshape; /* batch shape */
        int64_t batch;         /* batch items */
    } mm;
    struct {
        int64_t stride;        /* GATHER: the indexed dim's stride, */
        int64_t size;          /* its size, */
        int dim;               /* its number (for messages); */
        int failed;            /* the CPU row sets these for the first */
        int64_t bad;           /* index out of range (CUDA raises) */
    } ix;
    /* Set by the backend for the row. */
    int dtype;
    int device;
    void *stream;
    void *workspace;
} pygpu_kargs;

/* A launch row returns 0 or a device error code (a cudaError_t) and
 * touches no Python object; a call row (kinds from PYGPU_K_FIRST_CALL)
 * returns 0 or -1 with a Python exception. */
typedef int (*pygpu_kernel_fn)(pygpu_kargs *k);

typedef struct pygpu_backend {
    /* Runs fn(k) for kind on k->device, naming `what` in errors; 0 or -1
     * with an exception. */
    int (*run)(int kind, pygpu_kernel_fn fn, pygpu_kargs *k,
               const char *what);
    pygpu_kernel_fn rows[PYGPU_NKINDS][PYGPU_NDTYPES];
} pygpu_backend;

/* The rows of a backend that runs every dtype with one function per
 * kind, named after the kind as below (each backend file defines them). */
#define PYGPU_ALL_DTYPES(fn) {fn, fn, fn, fn, fn, fn, fn, fn}
/* Reductions and scans have a row for every input dtype: the loop reads
 * the input as it is and accumulates in pygpu_reduce_acc_dtype
 * (kernels.h), so the front end converts nothing.  So does the softmax
 * family, on the four floating dtypes (float16 and bfloat16 computed in
 * float). */
#define PYGPU_FLOAT_DTYPES(fn)                                               \
    {[PYGPU_FLOAT32] = fn, [PYGPU_FLOAT16] = fn, [PYGPU_FLOAT64] = fn,       \
     [PYGPU_BFLOAT16] = fn}
#define PYGPU_ROWS_BY_KIND                                                   \
    {                                                                        \
        [PYGPU_K_BINARY] = PYGPU_ALL_DTYPES(binary),                         \
        [PYGPU_K_BINARY_SCALAR] = PYGPU_ALL_DTYPES(binary_scalar),           \
        [PYGPU_K_UNARY] = PYGPU_ALL_DTYPES(unary),                           \
        [PYGPU_K_COPY] = PYGPU_ALL_DTYPES(copy),                             \
        [PYGPU_K_FILL] = PYGPU_ALL_DTYPES(fill),                             \
        [PYGPU_K_REDUCE] = PYGPU_ALL_DTYPES(reduce),                         \
        [PYGPU_K_RANDOM] = {[PYGPU_FLOAT32] = random_numbers,                \
                            [PYGPU_FLOAT16] = random_numbers,                \
                            [PYGPU_FLOAT64] = random_numbers,                \
                            [PYGPU_BFLOAT16] = random_numbers,               \
                            [PYGPU_INT64] = random_numbers},                 \
        [PYGPU_K_COMPARE] = PYGPU_ALL_DTYPES(compare),                       \
        [PYGPU_K_MASKED_COPY] = PYGPU_ALL_DTYPES(masked_copy),               \
        [PYGPU_K_INDEX_ROWS] = PYGPU_ALL_DTYPES(index_rows),                 \
        [PYGPU_K_SCAN] = PYGPU_ALL_DTYPES(scan),                             \
        [PYGPU_K_SOFTMAX] = PYGPU_FLOAT_DTYPES(softmax),                     \
        [PYGPU_K_GATHER] = PYGPU_ALL_DTYPES(gather),                         \
        [PYGPU_K_XENT] = PYGPU_FLOAT_DTYPES(xent),                           \
        [PYGPU_K_OPTIM] = PYGPU_FLOAT_DTYPES(optim),                         \
        [PYGPU_K_SORT] = PYGPU_ALL_DTYPES(sort_rows),                        \
        [PYGPU_K_IM2COL] = PYGPU_FLOAT_DTYPES(im2col),                       \
        [PYGPU_K_NORM] = PYGPU_FLOAT_DTYPES(norm),                           \
        [PYGPU_K_MATMUL] = PYGPU_ALL_DTYPES(matmul),                         \
        [PYGPU_K_LINEAR] = PYGPU_ALL_DTYPES(linear),                         \
    }

/* Make `be` the backend of device type `device_type` (enum
 * pygpu_device_type): called once per backend by the module's init, under
 * the GIL, before any op can run (the CPU rows by cpu/'s init, the CUDA
 * rows by cuda/'s; a CPU-only build registers none for CUDA).  The table
 * is read-only afterwards.  0, or -1 with SystemError for a device type
 * out of range or one registered already (core/dispatch.c). */
int pygpu_dispatch_register(int device_type, const pygpu_backend *be);

/* Runs kind for a tensor of dtype on dev: the one lookup.  `what` names
 * the op in errors ("add", "copy").  0 or -1 with an exception. */
int pygpu_dispatch(int kind, pygpu_device dev, int dtype, pygpu_kargs *k,
                   const char *what);

/* The names of the ops of a kind, for messages (core/dispatch.c). */
extern const char *const pygpu_binop_names[PYGPU_NBINOPS];
extern const char *const pygpu_unop_names[PYGPU_NUNOPS];

#endif /* PYGPU_DISPATCH_H */
