/* autograd.h - reverse-mode automatic differentiation, recorded and run in
 * C.
 *
 * While grad mode is on (per thread, core/grad_mode.c), an op whose tensor
 * inputs require grad gives its result a Node (grad_fn): the op's backward
 * rule, the edges to the Nodes of its inputs (a leaf's edge is its
 * AccumulateGrad node), the tensors the rule needs (saved with their
 * version, so an in-place change is caught), and each input's shape, dtype
 * and device.  backward() walks the Nodes from the roots in dependency
 * order, summing the gradients that meet at a Node, and gives each leaf
 * its gradient (autograd_engine.c).  The engine, not the rules, reduces a
 * gradient to its input's shape (broadcasting) and converts it to the
 * input's dtype and device, so a rule only states the math
 * (autograd_rules.c).
 */
#ifndef PYGPU_AUTOGRAD_H
#define PYGPU_AUTOGRAD_H

#include "ops/ops.h"

#define PYGPU_NODE_MAX_SAVED 4

typedef struct pygpu_node pygpu_node;

/* Gradients of the inputs from the gradient of the output: sets
 * grads[i] (new references) for the inputs that need one (next[i] != NULL),
 * NULL meaning zero.  0 or -1 with an exception. */
typedef int (*pygpu_backward_fn)(pygpu_node *n, TensorObject *grad,
                                 TensorObject **grads);

struct pygpu_node {
    PyObject_HEAD
    const char *name;             /* torch's: "AddBackward0" */
    pygpu_backward_fn backward;   /* NULL for AccumulateGrad */
    /* The inputs, nin of them (any number: cat's), in one block that
     * in_shape starts (NULL for AccumulateGrad). */
    int nin;
    PyObject **next;              /* input Nodes, NULL: no grad */
    int *next_nr;                 /* which output of next[i] input i is */
    int *in_ndim;
    int64_t (*in_shape)[PYGPU_MAX_DIMS];
    int *in_dtype;
    pygpu_device *in_device;
    PyObject *saved[PYGPU_NODE_MAX_SAVED]; /* tensors (detached aliases) */
    uint32_t saved_version[PYGPU_NODE_MAX_SAVED];
    int had_saved;                /* saved something: a rerun needs it */
    int is_view;                  /* the output views the input's memory */
    int released;                 /* saved tensors freed by backward */
    /* What the rule needs besides tensors. */
    int op;
    int flag;
    double scalar;
    int perm[PYGPU_MAX_DIMS];
    PyObject *key;                /* an index key */
    PyObject *variable;           /* AccumulateGrad: the leaf */
    /* A weakref to an output keeping .grad, and its output's
     * register_hook dict; a Node of several outputs (nout > 1) holds a
     * list of them instead, one per output (None: none). */
    PyObject *retained;
    PyObject *pre_hooks;
    PyObject *weakreflist;
    /* A custom autograd.Function's Node (autograd_function.c): its
     * outputs (nout; the engine keeps a gradient for each when more than
     * one), the ctx its Python backward gets, weak references to the
     * outputs (several only), the tensors ctx saved, and the str that
     * holds name.  nout is 0 for every other Node (one output). */
    int nout;
    PyObject *fn_ctx;
    PyObject *fn_outputs;
    PyObject *fn_saved;
    PyObject *fn_name;
};

/* The rule of a Node of several outputs: gs[k] the gradient of output k
 * (NULL: none reached it); otherwise as pygpu_backward_fn. */
int pygpu_ag_function_backward(pygpu_node *n, TensorObject *const *gs,
                               TensorObject **grads);
/* A list of n Nones (new ref). */
PyObject *pygpu_ag_none_list(int n);
/* Whether o is a Node. */
int pygpu_ag_is_node(PyObject *o);
/* Which output of its grad_fn t is (0 but for a Function's outputs). */
int pygpu_ag_output_nr(const TensorObject *t);
/* _C._function_record(ctx, name, inputs, outputs, dirty,
 * non_differentiable, saved) and _C._function_saved(node), the entries
 * pygpu/autograd/function.py calls. */
PyObject *pygpu_function_record(PyObject *self, PyObject *args);
PyObject *pygpu_function_saved(PyObject *self, PyObject *node);

/* -------------------------------------------------------------- nodes */
int pygpu_autograd_register(PyObject *m);
/* Nonzero when an op over in[0..n) (NULL entries ignored) is recorded. */
int pygpu_ag_wanted(int n, TensorObject *const *in);
/* A new Node for an op over in[0..n) (NULL: an input that is not a
 * tensor), its edges and input metadata set.  NULL with an exception. */
pygpu_node *pygpu_ag_node(const char *name, pygpu_backward_fn fn, int n,
                          TensorObject *const *in);
/* Save t (a detached alias with t's version) in slot i. */
int pygpu_ag_save(pygpu_node *node, int i, TensorObject *t);
/* The saved tensor of slot i, checked against its version (borrowed);
 * NULL with torch's error if it was released or modified in place. */
TensorObject *pygpu_ag_saved(pygpu_node *node, int i);
/* Make node out's grad_fn (steals node).  0 or -1. */
int pygpu_ag_set_grad_fn(TensorObject *out, pygpu_node *node);
/* The AccumulateGrad node of a leaf that requires grad (new ref). */
PyObject *pygpu_ag_accumulator(TensorObject *leaf);

/* ------------------------ recording (autograd_rules.c, autograd_shapes.c)
 * A front end that sees its call recorded (pygpu_ag_wanted) hands it to
 * the function of its family, which runs the op with grad mode off and
 * gives the result its Node.  New reference or NULL with an exception. */
/* a <op> b (either may be a number); out == a: in place (a's history
 * continues through the op); another out: refused, as torch's out=. */
PyObject *pygpu_ag_binary(int op, PyObject *a, PyObject *b,
                          TensorObject *out);
PyObject *pygpu_ag_binary_inplace(int op, TensorObject *a, PyObject *b);
/* op(a), in place, or into out (refused, as torch's out=). */
PyObject *pygpu_ag_unary(int op, TensorObject *a, TensorObject *out,
                         int inplace);
/* Reductions (autograd_reduce.c, autograd_stats.c): the ops of
 * ops/reduce.h of the same arguments, recorded when autograd records t
 * (else the op alone); a dtype= (-1: not given) that converts t first is
 * a recorded conversion. */
PyObject *pygpu_ag_reduce(int op, TensorObject *t, PyObject *dim,
                          int keepdim, int pair, const char *name);
PyObject *pygpu_ag_reduce_as(int op, TensorObject *t, PyObject *dim,
                             int keepdim, int dtype, const char *name);
PyObject *pygpu_ag_logsumexp(TensorObject *t, PyObject *dim, int keepdim);
PyObject *pygpu_ag_softmax(int op, TensorObject *t, int dim, int dtype);
PyObject *pygpu_ag_scan(int op, TensorObject *t, int dim, int dtype);
PyObject *pygpu_ag_var_std(TensorObject *t, PyObject *dim, double correction,
                           int keepdim, int take_sqrt, const char *name);
PyObject *pygpu_ag_norm(TensorObject *t, double p, PyObject *dim,
                        int keepdim, int dtype);
/* t as dtype, the conversion recorded (t itself when it has it). */
TensorObject *pygpu_ag_to_dtype(TensorObject *t, int dtype);
/* The products (autograd_shapes.c): pygpu_op_matmul_out / pygpu_op_linear,
 * recorded when an operand takes part in autograd (out=: refused then, as
 * torch does). */
PyObject *pygpu_ag_matmul(TensorObject *a, TensorObject *b,
                          TensorObject *out);
PyObject *pygpu_ag_linear(TensorObject *x, TensorObject *w, TensorObject *b,
                          int relu);
/* src.to(dev, dtype): pygpu_tensor_to_async, recorded (a COPY view) when
 * src takes part in autograd. */
TensorObject *pygpu_ag_to(TensorObject *src, pygpu_device dev, int dtype,
                          int non_blocking);
/* Views and copies, after the fact: res (in's view or copy, or NULL) gets
 * a Node when in requires grad.  Its gradient is the output's reshaped
 * (RESHAPE), permuted back (PERMUTE, perm[i] the input dim of output dim
 * i), reduced to the input's shape (EXPAND), converted (COPY), or put into
 * zeros at an index key (INDEX). */
enum { PYGPU_AG_RESHAPE, PYGPU_AG_PERMUTE, PYGPU_AG_EXPAND, PYGPU_AG_COPY,
       PYGPU_AG_INDEX };
PyObject *pygpu_ag_view(int kind, TensorObject *in, const int *perm,
                        PyObject *key, PyObject *res);
/* res, a view of in along dim: [start, stop) (select: the one index
 * start, the dim dropped), recorded as an INDEX view. */
PyObject *pygpu_ag_view_along(TensorObject *in, int dim, int64_t start,
                              int64_t stop, int select, PyObject *res);
/* max/min (full, or along a dim with indices: pair), amax/amin and prod,
 * recorded (autograd_extrema.c), like pygpu_ag_reduce. */
PyObject *pygpu_ag_extreme(int op, TensorObject *t, PyObject *dim,
                           int keepdim, int pair, const char *name);
PyObject *pygpu_ag_prod(TensorObject *t, PyObject *dim, int keepdim,
                        int pair, const char *name);
/* res = t.cumprod(dim), computed: recorded. */
PyObject *pygpu_ag_cumprod(TensorObject *t, int dim, PyObject *res);
/* The wrappers of the indexing ops (autograd_select.c): the op computed
 * (ops/), then recorded when its inputs take part.  index_select(t, dim,
 * index) (gather: gather(t, dim, index)). */
PyObject *pygpu_ag_select(TensorObject *t, int dim, PyObject *index,
                          int gather);
/* The values of a sort-family op (autograd_sort.c): t gathered along dim
 * at ix (int64, t's ndim), squeezed at dim when `squeeze` (ix then has
 * size 1 there); recorded with the Node of `which` (PYGPU_SORTED_*),
 * whose gradient is added into zeros at ix. */
enum {
    PYGPU_SORTED_SORT,
    PYGPU_SORTED_TOPK,
    PYGPU_SORTED_KTHVALUE,
    PYGPU_SORTED_MEDIAN_ALL,
    PYGPU_SORTED_MEDIAN,
    PYGPU_SORTED_MODE,
    PYGPU_NSORTED
};
PyObject *pygpu_ag_sorted_values(int which, TensorObject *t, int dim,
                                 TensorObject *ix, int squeeze);
/* self.scatter_add(dim, index, src) (index_add: self.index_add(dim,
 * index, src, alpha=alpha)) after pygpu_scatter_check; inplace: self
 * rebased onto the Node of (its history, src), the write done with grad
 * mode off, self (new ref) returned; a leaf that requires grad and a view
 * of one are refused. */
PyObject *pygpu_ag_scatter(TensorObject *self, int dim, TensorObject *index,
                           TensorObject *src, PyObject *alpha, int index_add,
                           int inplace);
/* t[key] (its lists and arrays tensors by now): a view recorded as one
 * for ints, slices, None and Ellipsis; else a copy whose gradient is
 * added into zeros at the elements the key picks. */
PyObject *pygpu_ag_getitem(TensorObject *t, PyObject *key);
/* t[key] = value, value or t taking part in autograd: the write, then t
 * rebased onto a Node of (t's history, value).  0 or -1. */
int pygpu_ag_setitem(TensorObject *t, PyObject *key, TensorObject *value);
/* Wrappers of the layout ops (autograd_layout.c): flip(t, dims) (the
 * call's dims), t.repeat(reps), cat or stack (pygpu_op_join; out= is
 * refused when recorded), and the views of a split plan. */
PyObject *pygpu_ag_flip(TensorObject *t, PyObject *const *dims,
                        Py_ssize_t ndims);
PyObject *pygpu_ag_repeat(TensorObject *t, const int64_t *reps, int n);
PyObject *pygpu_ag_join(const char *fname, const pygpu_tensor_list *l,
                        PyObject *dim, PyObject *out, int stack);
PyObject *pygpu_ag_pieces(TensorObject *t, const pygpu_pieces *p);
/* RuntimeError "the derivative of <name> is not implemented ..." when an
 * op over in[0..n) would be recorded; 0 otherwise. */
int pygpu_ag_refuse(const char *name, int n, TensorObject *const *in);
/* res = cat (stack: stack) of items[0..n) along dim, recorded. */
PyObject *pygpu_ag_cat(PyObject *const *items, int n, int dim, int stack,
                       PyObject *res);

/* The rule of pow, maximum, minimum, fmod and remainder (autograd_math.c;
 * the Node as binary_node makes it: flag bit i set when operand i is the
 * number n->scalar; both tensors saved, pow's output in slot 2). */
int pygpu_ag_math_backward(pygpu_node *n, TensorObject *g,
                           TensorObject **grads);
/* clamp(x, lo, hi) (lo, hi: numbers, tensors, None or NULL): the op,
 * recorded when x or a tensor bound takes part in autograd (out= and in
 * place refused then). */
PyObject *pygpu_ag_clamp(const char *name, TensorObject *x, PyObject *lo,
                         PyObject *hi, TensorObject *out, int inplace);

/* where(cond, x, y) (x, y tensors or numbers), self.masked_fill(mask,
 * value): the op, recorded when a tensor operand takes part in autograd;
 * masked_fill_ refuses a value that requires grad (autograd_where.c). */
PyObject *pygpu_ag_where(PyObject *cond, PyObject *x, PyObject *y);
PyObject *pygpu_ag_masked_fill(TensorObject *self, TensorObject *mask,
                               PyObject *value);
PyObject *pygpu_ag_masked_fill_(TensorObject *self, PyObject *mask,
                                PyObject *value);

/* cross_entropy(input, target, weight, ...) over class indices, after
 * the arguments' checks (autograd_xent.c): recorded when input requires
 * grad. */
PyObject *pygpu_ag_cross_entropy(TensorObject *input, TensorObject *target,
                                 TensorObject *weight, int64_t ignore_index,
                                 int reduction, double smoothing);

/* --------------------------- the rules' building blocks (autograd_util.c)
 * New references, or NULL with an exception. */
/* An in-place write a wrapper records, run below autograd: with grad mode
 * off, so that the ops' write check (which refuses any write to a tensor
 * taking part in autograd) lets it through.  Out-of-place ops and the
 * rules need nothing of the kind: ops never record. */
#define PYGPU_BELOW_AUTOGRAD(res, call)                                      \
    do {                                                                     \
        int was_ = pygpu_set_grad_enabled(0);                                \
        (res) = (call);                                                      \
        pygpu_set_grad_enabled(was_);                                        \
    } while (0)
TensorObject *pygpu_ag_bin(int op, TensorObject *a, PyObject *b);
TensorObject *pygpu_ag_bin_s(int op, TensorObject *a, double s);
TensorObject *pygpu_ag_un(int op, TensorObject *a);
/* Views: a size-1 dim (stride 0) at pos; the last two dims swapped. */
TensorObject *pygpu_ag_insert_dim(TensorObject *t, int pos);
TensorObject *pygpu_ag_mT(TensorObject *t);
/* t's values in another shape of the same count (a view of a contiguous
 * t); t as dtype (t itself when it is). */
TensorObject *pygpu_ag_reshaped(TensorObject *t, int ndim,
                                const int64_t *shape);
TensorObject *pygpu_ag_as_dtype(TensorObject *g, int dtype);
/* Zeros of a shape, dtype and device. */
TensorObject *pygpu_ag_zeros(int ndim, const int64_t *shape, int dtype,
                             pygpu_device dev);
/* t with zeros where cond (bool, broadcast to t) holds, torch's
 * masked_fill_(cond, 0): t, a tensor of the rule's own, is written in
 * place.  Steals both (either NULL: NULL). */
TensorObject *pygpu_ag_zero_where(TensorObject *t, TensorObject *cond);
/* t reversed along dim (a copy). */
TensorObject *pygpu_ag_flip_dim(TensorObject *t, int dim);
/* r, reduced over the dims of input 0 marked in n->perm (kept as size 1
 * when n->flag), spread back over input 0's shape: a view, stride 0 along
 * the reduced dims (autograd_reduce.c). */
TensorObject *pygpu_ag_spread(pygpu_node *n, TensorObject *r);
/* res with node as its grad_fn (both stolen; either NULL: NULL); a
 * result of an integer or bool dtype gets none (torch's: only floating
 * tensors require grad). */
PyObject *pygpu_ag_finish(PyObject *res, pygpu_node *node);
/* RuntimeError "the derivative of <name> is not implemented ..."; releases
 * res; NULL. */
PyObject *pygpu_ag_no_rule(PyObject *res, const char *name);

/* ------------------------------------------- engine (autograd_engine.c) */
/* What a pass does besides running Nodes: for autograd.grad, the Nodes
 * whose gradients are wanted (and nothing accumulated into leaves). */
typedef struct {
    int ntargets;            /* autograd.grad: the inputs' Nodes */
    pygpu_node **targets;
    TensorObject **results;  /* their gradients (new refs) */
    int retain_graph;
    const int *target_nr;    /* which output of targets[i] (NULL: 0) */
    const int *root_nr;      /* which output of roots[r] (NULL: 0) */
} pygpu_pass;
/* One backward pass from roots with their gradients (borrowed), grad mode
 * off.  Its bookkeeping is its own, so passes run concurrently, from other
 * threads or from a hook.  0 or -1 with an exception. */
int pygpu_autograd_run(int nroots, pygpu_node *const *roots,
                       TensorObject *const *grads, const pygpu_pass *pa);
/* grad reduced to shape (summing broadcast dims), new reference. */
TensorObject *pygpu_sum_to(TensorObject *grad, int ndim,
                           const int64_t *shape);
extern PyMethodDef pygpu_autograd_functions[];
/* _backward((tensors), (grads), retain_graph) as a tuple of arguments. */
PyObject *pygpu_autograd_backward_args(PyObject *args);

/* ------------------------ leaves' gradients (autograd_accumulate.c) */
/* leaf.grad += g (a copy of g when leaf has no .grad), one pass at a time
 * for a leaf, then the leaf's post-accumulate-grad hooks.  0 or -1. */
int pygpu_ag_accumulate(TensorObject *leaf, TensorObject *g);
/* A tensor of its own holding g's values (g itself when nothing else
 * holds it), new reference. */
TensorObject *pygpu_ag_own_copy(TensorObject *g);
/* Registers the fork handlers of the engine's one shared state (the
 * leaves being added into), once.  0 or -1. */
int pygpu_autograd_engine_init(void);

/* ------------------------------------- hooks (autograd_hooks.c) */
/* The RemovableHandle type.  0 or -1. */
int pygpu_autograd_hooks_register(PyObject *m);
/* register_hook and register_post_accumulate_grad_hook, as Tensor methods
 * (tensor/ adds them). */
extern PyMethodDef pygpu_hook_methods[];
/* Runs the hooks of a dict {id: hook(grad)} (NULL: none) over *g, in
 * order; a hook's tensor replaces *g.  0 or -1 with the hook's error. */
int pygpu_ag_run_hooks(PyObject *hooks, TensorObject **g);
/* Runs leaf's post-accumulate-grad hooks.  0 or -1. */
int pygpu_ag_run_post_hooks(TensorObject *leaf);

/* Layer norm (rms 0) or RMS norm over the last dims of x holding n
 * elements, recorded when x, w or b requires grad (autograd_norm.c; the
 * op and its contract: ops/norm.h). */
PyObject *pygpu_ag_row_norm(TensorObject *x, TensorObject *w,
                            TensorObject *b, int64_t n, double eps, int rms);
/* Batch norm's training step over the channels of x, recorded the same
 * way; the channels' mean and biased variance into *mean and *var. */
PyObject *pygpu_ag_channel_norm(TensorObject *x, TensorObject *w,
                                TensorObject *b, double eps,
                                TensorObject **mean, TensorObject **var);

/* ------------------------------- Tensor attributes (tensor_autograd.c) */
PyObject *pygpu_t_get_requires_grad(PyObject *op, void *c);
int pygpu_t_set_requires_grad(PyObject *op, PyObject *value, void *c);
PyObject *pygpu_t_get_grad(PyObject *op, void *c);
int pygpu_t_set_grad(PyObject *op, PyObject *value, void *c);
PyObject *pygpu_t_get_grad_fn(PyObject *op, void *c);
PyObject *pygpu_t_get_is_leaf(PyObject *op, void *c);
PyObject *pygpu_t_get_retains_grad(PyObject *op, void *c);
PyObject *pygpu_t_get_version(PyObject *op, void *c);
PyObject *pygpu_t_requires_grad_(PyObject *op, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_retain_grad(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_detach_(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_backward(PyObject *op, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames);

/* ---------------------------------- im2col, col2im (autograd_im2col.c) */
/* pygpu_op_im2col / pygpu_op_col2im, recorded when t takes part: each
 * one's gradient is the other of the gradient. */
PyObject *pygpu_ag_im2col(TensorObject *t, const int64_t p[8]);
PyObject *pygpu_ag_col2im(TensorObject *t, const int64_t out_hw[2],
                          const int64_t p[8]);
/* pygpu_op_conv2d_direct where nothing is recorded (no grad mode, or no
 * input that requires grad); a RuntimeError where it would be: the
 * convolution's gradients come from the columns' ops. */
PyObject *pygpu_ag_conv2d_direct(TensorObject *x, TensorObject *w,
                                 TensorObject *bias, const int64_t p[8],
                                 int64_t groups);

#endif /* PYGPU_AUTOGRAD_H */
