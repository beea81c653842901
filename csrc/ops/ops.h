/* ops.h - the ops floor: the op front ends that compute (checks in
 * torch's words, promotion, broadcasting, out=, the overlap rules,
 * autocast, the dispatch call), copies and conversions.  Nothing here
 * records autograd history: autograd.h's wrappers call these.  Above
 * memory.h and the dispatch contract (dispatch.h). */
#ifndef PYGPU_OPS_H
#define PYGPU_OPS_H

#include "memory/memory.h"
#include "core/dispatch.h"

/* Registration hooks called by the module's init (0 or -1). */
int pygpu_reduce_register(PyObject *m);
int pygpu_matmul_register(PyObject *m);
int pygpu_generator_register(PyObject *m); /* the Generator type */
/* The module functions of ops that are never recorded (PyMethodDef arrays
 * ending NULL; the recorded ops' are in tensor/tensor.h). */
extern PyMethodDef pygpu_random_functions[];  /* ops_generator.c */
extern PyMethodDef pygpu_sample_functions[];  /* ops_random.c */
extern PyMethodDef pygpu_thread_functions[];  /* ops_threads.c */
extern PyMethodDef pygpu_compare_functions[]; /* ops_compare.c */
extern PyMethodDef pygpu_logical_functions[]; /* ops_logical.c */
extern PyMethodDef pygpu_optim_functions[];   /* ops_optim.c */
extern PyMethodDef pygpu_sort_functions[];    /* ops_sort.c */
extern PyMethodDef pygpu_checksum_functions[]; /* ops_checksum.c */
/* Tensor methods of ops never recorded, added by pygpu_tensor_register. */
extern PyMethodDef pygpu_compare_methods[];   /* ops_compare.c */
extern PyMethodDef pygpu_logical_methods[];   /* ops_logical.c */

/* & | ^ ~ and their in-place forms (ops_logical.c). */
PyObject *pygpu_t_and(PyObject *a, PyObject *b);
PyObject *pygpu_t_or(PyObject *a, PyObject *b);
PyObject *pygpu_t_xor(PyObject *a, PyObject *b);
PyObject *pygpu_t_iand(PyObject *a, PyObject *b);
PyObject *pygpu_t_ior(PyObject *a, PyObject *b);
PyObject *pygpu_t_ixor(PyObject *a, PyObject *b);
PyObject *pygpu_t_invert(PyObject *a);
PyObject *pygpu_t_richcompare(PyObject *a, PyObject *b, int op);

/* ----------------------------------------------------------------- tensor */
/* Copies (ops_copy.c), none recorded by autograd.  Copy/convert between
 * any two tensors of equal shape, any devices (unchecked: copy_ and
 * t[k] = v go through pygpu_tensor_assign). */
int pygpu_tensor_copy_into(TensorObject *dst, TensorObject *src);
/* A new contiguous tensor on dev with dtype, holding src's values; with
 * non_blocking, a copy across devices is only queued where the host side
 * is page-locked, as in torch. */
TensorObject *pygpu_tensor_to(TensorObject *src, pygpu_device dev,
                              int dtype);
TensorObject *pygpu_tensor_to_async(TensorObject *src, pygpu_device dev,
                                    int dtype, int non_blocking);
/* src itself (new reference) if contiguous, else a contiguous copy. */
TensorObject *pygpu_tensor_contiguous(TensorObject *src);
/* dst <- src broadcast to dst's shape, any devices (copy_, t[k] = v),
 * after pygpu_check_write. */
int pygpu_tensor_assign(TensorObject *dst, TensorObject *src);
/* A view of t broadcast to want[0..ndim) (-1 keeps a dim; stride 0 where
 * a size-1 dim grows): expand's view, unrecorded. */
TensorObject *pygpu_expand_view(TensorObject *t, int ndim,
                                const int64_t *want);
/* -------------------------------------------------------------------- ops */
/* a <op> b where either may be a Python scalar (at least one a tensor);
 * into `out` when non-NULL, by pygpu_out_prepare's rules: in place when
 * out is a (its shape must be the result's), else out= (resized).  The
 * result is computed in torch's result dtype and cast into out.  New
 * reference or NULL. */
PyObject *pygpu_op_binary(int op, PyObject *a, PyObject *b,
                          TensorObject *out);
PyObject *pygpu_op_unary(int op, TensorObject *a, int inplace);
/* op over dim (NULL/None: all elements), never recorded (ops/reduce.h
 * has the family). MAX over a dim gives a (values, indices) pair, as
 * torch. */
PyObject *pygpu_op_reduce(int op, TensorObject *t, PyObject *dim,
                          int keepdim);
PyObject *pygpu_op_matmul(PyObject *a, PyObject *b);
/* The same into out (NULL: a new tensor), which must have the result's
 * dtype (torch's products); resized and checked by pygpu_out_prepare. */
PyObject *pygpu_op_matmul_out(PyObject *a, PyObject *b, TensorObject *out);
/* torch.backends.cuda.matmul.allow_tf32 (ops_matmul.c): an atomic flag the
 * products' front ends read at each call and pass down to cuBLAS. */
void pygpu_set_allow_tf32(int allow);
int pygpu_get_allow_tf32(void);
/* x @ w.T (+ bias) (relu); bias may be NULL. */
PyObject *pygpu_op_linear(TensorObject *x, TensorObject *w,
                          TensorObject *bias, int relu);
/* Same device and dtype for a matrix product's operands, torch's words. */
int pygpu_check_matmul_pair(const TensorObject *a, const TensorObject *b);
/* TypeError "<fname>(): argument '<arg>' must be Tensor" unless x is one. */
int pygpu_tensor_arg(PyObject *x, const char *fname, const char *arg);
/* Fill a contiguous tensor with a value (ops_fill.c). */
int pygpu_op_fill(TensorObject *t, double value);
/* The same with the value exact (int64 beyond 2^53 too); bool is true for
 * any nonzero value. */
int pygpu_op_fill_value(TensorObject *t, pygpu_scalar_value value);
/* A 0-d tensor of dtype on dev holding v (rounded or wrapped to dtype):
 * a new reference, or NULL with an exception. */
TensorObject *pygpu_scalar_tensor(pygpu_scalar_value v, int dtype,
                                  pygpu_device dev);
/* k's operands for a two-input kind: out = op(a, b) over g's numel
 * elements (the other fields of k are left as they are). */
void pygpu_binary_kargs(pygpu_kargs *k, int op, TensorObject *out,
                        TensorObject *a, TensorObject *b,
                        const pygpu_geom *g, int64_t numel);
/* torch's promotion of operands (ops_elementwise.c): two tensors (a 0-d
 * one decides only when of a higher category), a tensor's dtype with a
 * Python number of category scat (PYGPU_CAT_*). */
int pygpu_result_type_tt(const TensorObject *a, const TensorObject *b);
int pygpu_result_type_ts(int dtype, int scat);
/* A Python bool, int or float as a value and its category: 1, 0 when obj
 * is none of those, -1 with an exception (int overflow). */
int pygpu_scalar_operand(PyObject *obj, pygpu_scalar_value *v, int *cat);
/* x is a 0-d CPU tensor next to a CUDA tensor `other` (torch moves it). */
int pygpu_is_cpu_scalar_tensor(PyObject *x, PyObject *other);
/* a <op> b (enum pygpu_cmpop), either a Python number (one a tensor), as a
 * bool tensor, or into out (any dtype, the result's shape); a new
 * reference, Py_NotImplemented for other operands, or NULL
 * (ops_compare.c). */
PyObject *pygpu_op_compare(int op, PyObject *a, PyObject *b,
                           TensorObject *out);
/* Boolean-mask indexing (ops_mask.c): whether key is a bool (or uint8)
 * tensor, and x[mask] (a copy) / x[mask] = value (0 or -1). */
int pygpu_is_mask_index(PyObject *key);
PyObject *pygpu_mask_getitem(TensorObject *x, TensorObject *mask);
int pygpu_mask_setitem(TensorObject *x, TensorObject *mask,
                       TensorObject *value);
/* out[i] = cond[i] ? a[i] : out[i], cond (bool) and a (any dtype,
 * converted) broadcast to out's shape (ops_where.c); `what` names the op
 * in errors. */
int pygpu_op_masked_copy(TensorObject *out, TensorObject *cond,
                         TensorObject *a, const char *what);
/* Fill a contiguous float tensor with random numbers from generator (a
 * pygpu.Generator, or NULL / None: the device's default) (normal != 0:
 * standard normal) (ops_random.c). */
int pygpu_op_random(TensorObject *t, int normal, PyObject *generator);
/* The Philox state for a draw taking `counters` counters on dev from
 * generator (NULL / None: dev's default), which it advances; TypeError or
 * RuntimeError (a generator of another device type) (ops_generator.c). */
int pygpu_generator_take(PyObject *generator, pygpu_device dev,
                         uint64_t counters, pygpu_philox_state *out);
/* randperm and multinomial drawn on the host (ops_sample_host.c). */
PyObject *pygpu_randperm_fn(PyObject *m, PyObject *const *args,
                            Py_ssize_t nargs);
PyObject *pygpu_multinomial_fn(PyObject *m, PyObject *const *args,
                               Py_ssize_t nargs);
/* Broadcast two shapes (torch/NumPy rules); -1 with RuntimeError. */
int pygpu_broadcast_shapes(int na, const int64_t *sa, int nb,
                           const int64_t *sb, int *nout, int64_t *out);
/* RuntimeError "Expected all tensors to be on the same device, but found at
 * least two devices, cuda:0 and cpu!" unless a and b share a device. */
int pygpu_check_same_device(const TensorObject *a, const TensorObject *b);

/* op(a) into out (NULL: a new tensor; inplace: into a), out= by
 * pygpu_out_prepare's rules. */
PyObject *pygpu_op_unary_out(int op, TensorObject *a, TensorObject *out,
                             int inplace);

/* clamp(x, lo, hi) into out (or in place), lo and hi numbers, tensors or
 * None (ops_clamp.c; name for messages: "clamp", "clip_"). */
PyObject *pygpu_op_clamp(const char *name, TensorObject *x, PyObject *lo,
                         PyObject *hi, TensorObject *out, int inplace);
/* where(cond, x, y), x.masked_fill(mask, value) and its in-place form
 * (ops_where.c): checks, promotion, broadcasting; never recorded. */
PyObject *pygpu_op_where(PyObject *cond, PyObject *x, PyObject *y);
PyObject *pygpu_op_masked_fill(TensorObject *self, TensorObject *mask,
                               PyObject *value);
PyObject *pygpu_op_masked_fill_(TensorObject *self, PyObject *mask,
                                PyObject *value);
/* --------------------------------------------------------------- out= */
/* out_arg.c: torch's rules for an op's out= (and in-place) tensor.  Before
 * writing a result of (ndim, shape, dtype) on dev, read from in1/in2
 * (either may be NULL): out writable, on dev, dtype castable from dtype;
 * resized when its shape differs (UserWarning when it had elements) or,
 * inplace, RuntimeError; then pygpu_check_write.  Returns what to compute
 * into: out itself (new reference) when out's dtype is dtype, else a new
 * tensor of dtype for pygpu_out_finish to copy; NULL with an exception. */
TensorObject *pygpu_out_prepare(TensorObject *out, int ndim,
                                const int64_t *shape, int dtype,
                                pygpu_device dev, int inplace,
                                const TensorObject *in1,
                                const TensorObject *in2);
/* Takes res (from pygpu_out_prepare; NULL passes an error through),
 * copies it into out when it is a temporary; out (new reference) or
 * NULL. */
PyObject *pygpu_out_finish(TensorObject *out, TensorObject *res);
/* RuntimeError "result type Float can't be cast to the desired output type
 * Long" unless torch's can_cast(from, to). */
int pygpu_check_cast(int from, int to);
/* torch's name of a dtype in messages: "Float", "Long", ... */
const char *pygpu_dtype_torch_name(int dtype);
/* t.resize_(shape): contiguous, over the same memory when it is large
 * enough, else over new memory holding the old bytes. */
int pygpu_tensor_resize(TensorObject *t, int ndim, const int64_t *shape);
/* out= for an op that made `result` (stolen; NULL passes an error
 * through) from `in`: out prepared as above, result copied into it; out
 * (new reference) or NULL. */
PyObject *pygpu_out_assign(TensorObject *out, PyObject *result,
                           const TensorObject *in);
/* The vectorcall arguments without an out= keyword: argv (room for cap)
 * gets the positional then the remaining keyword values, *rest their
 * names (NULL when none; a new reference), *out the out tensor or NULL
 * (TypeError unless a Tensor or None).  0 or -1. */
int pygpu_split_out_kwarg(const char *fname, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames,
                          PyObject **argv, Py_ssize_t cap, PyObject **rest,
                          TensorObject **out);
/* Tensor.resize_ (METH_FASTCALL). */
PyObject *pygpu_t_resize_(PyObject *op, PyObject *const *args,
                          Py_ssize_t nargs);


/* ------------------------------------------------------------ binary math */
/* ------------------------------------------------- creation and joining */
/* The tensors of cat/stack (ops_join.c): seq (a new reference, to
 * release) holding n Tensors, all on one device, dtype their promoted
 * dtype; pygpu_tensor_list_parse fills it from a list or tuple (0), or
 * raises torch's errors (-1, nothing to release). */
typedef struct {
    PyObject *seq;
    PyObject **items;
    Py_ssize_t n;
    int dtype;
} pygpu_tensor_list;
int pygpu_tensor_list_parse(const char *fname, PyObject *obj,
                            pygpu_tensor_list *l);
/* cat (fname: cat, concat or concatenate; stack: stack) of l along dim
 * (NULL: 0) into out (NULL or None: a new tensor; else of the result's
 * shape, not resized); *joined_dim (may be NULL) the dim it joined along. */
PyObject *pygpu_op_join(const char *fname, const pygpu_tensor_list *l,
                        PyObject *dim, PyObject *out, int stack,
                        int *joined_dim);
/* Views along a dim (ops_split.c): a call of split, chunk, unbind or
 * narrow (its arguments after input, as named in torch) checked into a
 * plan of n pieces along dim, from start: of sizes[i] (split with sizes)
 * or of step each (the last what is left); select: the indices start,
 * start + 1, ..., the dim dropped (unbind). */
enum { PYGPU_SPLIT, PYGPU_CHUNK, PYGPU_UNBIND, PYGPU_NARROW };
typedef struct {
    int dim, select;
    Py_ssize_t n;
    int64_t start, step;
    int64_t *sizes; /* PyMem, or NULL */
} pygpu_pieces;
int pygpu_pieces_plan(int op, TensorObject *t, PyObject **args,
                      pygpu_pieces *p);
/* The plan's views as a tuple (unrecorded); pygpu_pieces_clear frees the
 * plan's sizes (after a failed plan too). */
PyObject *pygpu_op_pieces(TensorObject *t, const pygpu_pieces *p);
void pygpu_pieces_clear(pygpu_pieces *p);
/* flip (ops_flip.c): a copy of t reversed along dims[0..n) (Python ints,
 * none repeated); repeat: t tiled reps[i] times along each dim i of n (>=
 * t's; leading ones add dims). */
PyObject *pygpu_op_flip(TensorObject *t, PyObject *const *dims,
                        Py_ssize_t n);
PyObject *pygpu_op_repeat(TensorObject *t, const int64_t *reps, int n);

/* The function fname(input, ...) and the method t.fname(...) of
 * `PyObject *fname##_impl(TensorObject *t, PyObject **args)`, reading the
 * names of the array fname##_names ("input" first): the first `pos` after
 * input may come positionally, the first `required` must be given. */
#define PYGPU_FUNCTION_AND_METHOD(fname, pos, required)                      \
    enum {                                                                   \
        fname##_n = sizeof(fname##_names) / sizeof(fname##_names[0])         \
    };                                                                       \
    static PyObject *fname##_fn(PyObject *self, PyObject *const *args,       \
                                Py_ssize_t nargs, PyObject *kwnames)         \
    {                                                                        \
        PyObject *a[fname##_n];                                              \
        if (pygpu_parse_args(#fname, args, nargs, kwnames, fname##_names,    \
                             fname##_n, (pos) + 1, (required) + 1, a) < 0 || \
            pygpu_tensor_arg(a[0], #fname, "input") < 0) {                   \
            return NULL;                                                     \
        }                                                                    \
        return fname##_impl((TensorObject *)a[0], a + 1);                    \
    }                                                                        \
    PyObject *pygpu_t_##fname(PyObject *op, PyObject *const *args,           \
                              Py_ssize_t nargs, PyObject *kwnames)           \
    {                                                                        \
        PyObject *a[fname##_n];                                              \
        if (pygpu_parse_args(#fname, args, nargs, kwnames,                   \
                             fname##_names + 1, fname##_n - 1, (pos),        \
                             (required), a) < 0) {                           \
            return NULL;                                                     \
        }                                                                    \
        return fname##_impl((TensorObject *)op, a);                          \
    }

/* A method NAME(self, *args, **kw) of a family of ops: IMPL(OP, self,
 * args, nargs, kwnames). */
#define PYGPU_OP_METHOD(NAME, IMPL, OP)                                      \
    static PyObject *NAME(PyObject *self, PyObject *const *args,             \
                          Py_ssize_t nargs, PyObject *kwnames)               \
    {                                                                        \
        return IMPL(OP, self, args, nargs, kwnames);                         \
    }

/* ------------------------------------------------- integer indexing */
/* index_select(t, dim, index) and gather(t, dim, index), dim checked
 * (ops_index.c); index is checked here. */
PyObject *pygpu_op_index_select(TensorObject *t, int dim, PyObject *index);
PyObject *pygpu_op_gather(TensorObject *t, int dim, PyObject *index);
/* One GATHER over shape[0..nd): the dense operand, the indexed one
 * (without its indexed dim: dim_stride, dim_size; dim for messages) and
 * the index walk st[0], st[1], st[2]; mode is a pygpu_gather_mode.
 * IndexError "index 5 is out of bounds for dimension 0 with size 3" for an
 * index out of range (the CPU; CUDA raises CudaError).  0 or -1. */
int pygpu_index_plan_run(const char *what, int nd, const int64_t *shape,
                         const int64_t *const *st, int64_t dim_stride,
                         int64_t dim_size, int dim, TensorObject *dense,
                         TensorObject *indexed, TensorObject *index,
                         int mode);
/* The same raising exc on the CPU for an index out of range: in_words, or
 * with in_words NULL "index 5 is out of bounds ..." (torch words these by
 * op: scatter_add's is a RuntimeError, index_add_'s an IndexError "index
 * out of range in self"). */
int pygpu_index_plan_run_as(const char *what, int nd, const int64_t *shape,
                            const int64_t *const *st, int64_t dim_stride,
                            int64_t dim_size, int dim, TensorObject *dense,
                            TensorObject *indexed, TensorObject *index,
                            int mode, PyObject *exc, const char *in_words);
/* t[key] and t[key] = value, unrecorded (ops_getitem.c): keys of ints,
 * slices, None, Ellipsis and bools (views), bool masks (ops_mask.c),
 * integer index tensors (ops_index_int.c); lists and NumPy arrays in a
 * key must be tensors by now (tensor_index.c makes them).  New reference
 * or NULL; 0 or -1. */
PyObject *pygpu_op_getitem(TensorObject *t, PyObject *key);
int pygpu_op_setitem(TensorObject *t, PyObject *key, TensorObject *value);
/* Whether key is only ints, slices, None and Ellipsis: t[key] a view. */
int pygpu_is_basic_key(PyObject *key);
/* Whether key holds an integer index tensor (or a floating one, refused),
 * and t[key] / t[key] = value for such a key (ops_index_int.c). */
int pygpu_index_wants(PyObject *key);
PyObject *pygpu_index_get(TensorObject *t, PyObject *key);
int pygpu_index_put(TensorObject *t, PyObject *key, TensorObject *value);
/* ops_scatter.c: self.scatter_add_(dim, index, src) and
 * self.index_add_(dim, index, src) (checked as torch; 0 or -1). */
int pygpu_scatter_add_into(TensorObject *self, int dim, TensorObject *index,
                           TensorObject *src);
int pygpu_index_add_into(TensorObject *self, int dim, TensorObject *index,
                         TensorObject *src);
/* The arguments of fname (scatter_add(_), index_add(_)): dimobj checked
 * into *dim, index an int32/int64 tensor, src a tensor of self's dtype,
 * all on self's device.  0 or -1. */
int pygpu_scatter_check(const char *fname, TensorObject *self,
                        PyObject *dimobj, PyObject *index, PyObject *src,
                        int index_add, int *dim);
/* After pygpu_scatter_check: src (times alpha, NULL or None: 1) added at
 * index into self (inplace) or into a copy of self; the result (new
 * reference) or NULL. */
PyObject *pygpu_op_scatter(TensorObject *self, int dim, TensorObject *index,
                           TensorObject *src, PyObject *alpha, int index_add,
                           int inplace);

/* --------------------------------------------------------------- overlap */
/* overlap.c: torch's memory-overlap rules.  Only definite answers raise. */
enum { PYGPU_MEM_NO, PYGPU_MEM_YES, PYGPU_MEM_TOO_HARD };
enum {
    PYGPU_ALIAS_NONE,
    PYGPU_ALIAS_FULL,    /* the same elements at the same indices */
    PYGPU_ALIAS_PARTIAL, /* some memory shared otherwise */
    PYGPU_ALIAS_TOO_HARD
};
/* Whether two indices of t reach one address (YES: a zero stride of a
 * dim larger than 1, or a stride k times a smaller one within its size). */
int pygpu_has_internal_overlap(const TensorObject *t);
/* How the memory of a and b relates; zero-element tensors never overlap. */
int pygpu_get_overlap(const TensorObject *a, const TensorObject *b);
/* ValueError "assignment destination is read-only" for a read-only t. */
int pygpu_check_readonly(const TensorObject *t);
/* Before a write to t: read-only refused, autograd's refusal (a tensor
 * that requires grad, outside the recorded in-place ops), then t's
 * version counter bumped: call once per write. */
int pygpu_check_writable(const TensorObject *t);
/* Before writing out from in1/in2 (either may be NULL): writable, no
 * internal overlap, no partial overlap with an input (RuntimeError in
 * torch's words).  0 or -1 with the exception. */
int pygpu_check_write(const TensorObject *out, const TensorObject *in1,
                      const TensorObject *in2);

/* ------------------------------------------------------ im2col, col2im */
/* ops_im2col.c: torch's unfold (im2col) of a (N, C, H, W) or (C, H, W)
 * tensor and fold (col2im) of a (N, C * kh * kw, L) or (C * kh * kw, L)
 * one into out_hw = (H, W); p = (kh, kw, dh, dw, ph, pw, sh, sw).  Never
 * record.  New reference or NULL with torch's error. */
PyObject *pygpu_op_im2col(TensorObject *t, const int64_t p[8]);
PyObject *pygpu_op_col2im(TensorObject *t, const int64_t out_hw[2],
                          const int64_t p[8]);
/* The convolution of x (N, C, H, W) with weight (Cout, C / groups, kh,
 * kw) plus bias (Cout, or NULL) without columns, into a new (N, Cout, oh,
 * ow) tensor; p = (kh, kw, dh, dw, ph, pw, sh, sw), its kernel size
 * taken from the weight.  Float dtypes (float32 and float64 on the CPU).
 * Never records.  New reference or NULL. */
PyObject *pygpu_op_conv2d_direct(TensorObject *x, TensorObject *w,
                                 TensorObject *bias, const int64_t p[8],
                                 int64_t groups);

#endif /* PYGPU_OPS_H */
