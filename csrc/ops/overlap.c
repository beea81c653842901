/* overlap.c - what a write may touch.  torch's memory-overlap rules for
 * in-place ops, out=, copy_ and item assignment (a written-to tensor may
 * not have two elements at one address, nor share memory with an input
 * other than element for element), and the read-only flag of tensors over
 * immutable memory.  Only definite answers raise: a layout too hard to
 * decide is let through, as torch does. */
#include "ops/ops.h"

/* One dim of size > 1: its size and the distance (elements) between steps. */
typedef struct {
    int64_t size, stride;
} dim_step;

/* t's dims of size > 1 into d[], sorted by stride (smallest first), the
 * strides as magnitudes times scale (1: elements, itemsize: bytes);
 * returns how many.  scale 0 is itemsize, and leaves out zero strides
 * (they reach no other address). */
static int
sorted_dims(const TensorObject *t, int64_t scale, dim_step *d)
{
    int n = 0, addresses = scale == 0;
    if (addresses) {
        scale = pygpu_dtype_table[t->dtype].itemsize;
    }
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] > 1 && !(addresses && t->strides[i] == 0)) {
            dim_step s = {t->shape[i], scale * (t->strides[i] < 0
                                                    ? -t->strides[i]
                                                    : t->strides[i])};
            int j = n++;
            for (; j > 0 && d[j - 1].stride > s.stride; j--) {
                d[j] = d[j - 1];
            }
            d[j] = s;
        }
    }
    return n;
}

/* 1 when every stride steps over everything the smaller dims reach, so no
 * two indices meet (sufficient, not necessary). */
static int
strides_separate(const dim_step *d, int n)
{
    int64_t span = 0; /* furthest offset the smaller dims reach */
    for (int i = 0; i < n; i++) {
        if (d[i].stride <= span) {
            return 0;
        }
        span += d[i].stride * (d[i].size - 1);
    }
    return 1;
}

int
pygpu_has_internal_overlap(const TensorObject *t)
{
    dim_step d[PYGPU_MAX_DIMS];
    int n = sorted_dims(t, 1, d);
    if (pygpu_numel(t->ndim, t->shape) == 0 || n == 0) {
        return PYGPU_MEM_NO;
    }
    if (d[0].stride == 0) {
        return PYGPU_MEM_YES; /* expand */
    }
    if (strides_separate(d, n)) {
        return PYGPU_MEM_NO;
    }
    /* A stride that is k times a smaller one, k within that dim's size:
     * one step along the larger dim lands on k steps along the smaller. */
    for (int i = 1; i < n; i++) {
        for (int j = 0; j < i; j++) {
            if (d[i].stride % d[j].stride == 0 &&
                d[i].stride / d[j].stride <= d[j].size - 1) {
                return PYGPU_MEM_YES;
            }
        }
    }
    return PYGPU_MEM_TOO_HARD;
}

/* Lowest byte and one past the highest byte t touches. */
static void
byte_range(const TensorObject *t, uintptr_t *lo, uintptr_t *hi)
{
    int64_t itemsize = pygpu_dtype_table[t->dtype].itemsize, neg = 0,
            pos = 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t reach = (t->shape[i] - 1) * t->strides[i];
        *(reach < 0 ? &neg : &pos) += reach;
    }
    *lo = (uintptr_t)t->data + (uintptr_t)(neg * itemsize);
    *hi = (uintptr_t)t->data + (uintptr_t)((pos + 1) * itemsize);
}

/* Whether a and b step through their dims of size > 1 alike, in order. */
static int
same_order(const TensorObject *a, const TensorObject *b)
{
    int i = 0, j = 0;
    if (pygpu_dtype_table[a->dtype].itemsize !=
        pygpu_dtype_table[b->dtype].itemsize) {
        return 0;
    }
    for (;; i++, j++) {
        while (i < a->ndim && a->shape[i] == 1) {
            i++;
        }
        while (j < b->ndim && b->shape[j] == 1) {
            j++;
        }
        if (i == a->ndim || j == b->ndim) {
            return i == a->ndim && j == b->ndim;
        }
        if (a->shape[i] != b->shape[j] || a->strides[i] != b->strides[j]) {
            return 0;
        }
    }
}

/* Floor and ceiling of a / b for b > 0. */
static int64_t
floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

/* Whether sum k_i * d[i].stride lies in [lo, hi] for some k_i in
 * [0, size_i) (or (-size_i, size_i) when signed), over dims whose strides
 * separate.  Then at one level either a multiple of the largest stride
 * lies in [lo, hi] (the smaller dims add 0), or only the first and the
 * last candidate can reach it.  1, 0, or -1 when *budget runs out. */
static int
steps_reach(const dim_step *d, int n, int64_t lo, int64_t hi, int is_signed,
            int *budget)
{
    if (n == 0) {
        return lo <= 0 && 0 <= hi;
    }
    if (--*budget < 0) {
        return -1;
    }
    int64_t span = 0, s = d[n - 1].stride, m = d[n - 1].size - 1;
    for (int i = 0; i < n - 1; i++) {
        span += d[i].stride * (d[i].size - 1);
    }
    int64_t rlo = is_signed ? -span : 0;
    int64_t kmin = ceil_div(lo - span, s), kmax = floor_div(hi - rlo, s);
    kmin = kmin < (is_signed ? -m : 0) ? (is_signed ? -m : 0) : kmin;
    kmax = kmax > m ? m : kmax;
    if (kmin > kmax) {
        return 0;
    }
    int64_t k0 = ceil_div(lo, s);
    k0 = k0 < kmin ? kmin : k0;
    if (k0 <= kmax && k0 * s <= hi) {
        return 1;
    }
    int r = steps_reach(d, n - 1, lo - kmin * s, hi - kmin * s, is_signed,
                        budget);
    if (r == 0 && kmax != kmin) {
        r = steps_reach(d, n - 1, lo - kmax * s, hi - kmax * s, is_signed,
                        budget);
    }
    return r;
}

/* Whether the elements of itemsize at sorted dims d[0..n) (bytes) fill
 * the byte range [lo, hi). */
static int
is_dense(const dim_step *d, int n, uintptr_t lo, uintptr_t hi,
         int64_t itemsize)
{
    int64_t count = 1;
    for (int i = 0; i < n; i++) {
        count *= d[i].size;
    }
    return strides_separate(d, n) && hi - lo == (uintptr_t)(count * itemsize);
}

int
pygpu_get_overlap(const TensorObject *a, const TensorObject *b)
{
    uintptr_t alo, ahi, blo, bhi;
    dim_step da[PYGPU_MAX_DIMS], db[PYGPU_MAX_DIMS];
    int64_t isa = pygpu_dtype_table[a->dtype].itemsize,
            isb = pygpu_dtype_table[b->dtype].itemsize;
    int budget = 4096, r = -1;
    if (pygpu_numel(a->ndim, a->shape) == 0 ||
        pygpu_numel(b->ndim, b->shape) == 0 ||
        !pygpu_device_equal(&a->device, &b->device)) {
        return PYGPU_ALIAS_NONE;
    }
    byte_range(a, &alo, &ahi);
    byte_range(b, &blo, &bhi);
    if (ahi <= blo || bhi <= alo) {
        return PYGPU_ALIAS_NONE;
    }
    if (a->data == b->data && same_order(a, b)) {
        return PYGPU_ALIAS_FULL; /* element for element */
    }
    int na = sorted_dims(a, 0, da), nb = sorted_dims(b, 0, db);
    int same_steps = na == nb && isa == isb;
    for (int i = 0; same_steps && i < na; i++) {
        same_steps = da[i].size == db[i].size && da[i].stride == db[i].stride;
    }
    /* Every byte of a dense tensor's range is in one of its elements: the
     * question is whether an element of the other one meets that range. */
    if (is_dense(da, na, alo, ahi, isa) && strides_separate(db, nb)) {
        r = steps_reach(db, nb, (int64_t)(alo - blo) - isb + 1,
                        (int64_t)(ahi - blo) - 1, 0, &budget);
    }
    else if (is_dense(db, nb, blo, bhi, isb) &&
             strides_separate(da, na)) {
        r = steps_reach(da, na, (int64_t)(blo - alo) - isa + 1,
                        (int64_t)(bhi - alo) - 1, 0, &budget);
    }
    /* The same steps from two origins (z[:, 1:] and z[:, :-1]): whether
     * some difference of indices spans the distance between them. */
    else if (same_steps && strides_separate(da, na)) {
        int64_t delta = (int64_t)(blo - alo);
        r = steps_reach(da, na, delta - isa + 1, delta + isa - 1, 1,
                        &budget);
    }
    return r < 0 ? PYGPU_ALIAS_TOO_HARD
                 : r ? PYGPU_ALIAS_PARTIAL : PYGPU_ALIAS_NONE;
}

int
pygpu_check_readonly(const TensorObject *t)
{
    if (t->readonly) {
        PyErr_SetString(PyExc_ValueError,
                        "assignment destination is read-only");
        return -1;
    }
    return 0;
}

int
pygpu_check_writable(const TensorObject *t)
{
    if (pygpu_check_readonly(t) < 0) {
        return -1;
    }
    /* Recorded in-place ops reach here with grad mode off; any other
     * write to a tensor that takes part in autograd is refused. */
    if (pygpu_grad_enabled() && pygpu_requires_grad(t)) {
        PyErr_SetString(PyExc_RuntimeError, pygpu_state->write_refusal(t));
        return -1;
    }
    /* Every write goes through here: saved tensors notice it. */
    (*pygpu_version_counter((TensorObject *)t))++;
    return 0;
}

/* The input overlap check of pygpu_check_write for one operand. */
static int
check_input(const TensorObject *out, const TensorObject *in)
{
    int r = in == NULL ? PYGPU_ALIAS_NONE : pygpu_get_overlap(out, in);
    if (r == PYGPU_ALIAS_PARTIAL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "unsupported operation: some elements of the input "
                        "tensor and the written-to tensor refer to a single "
                        "memory location. Please clone() the tensor before "
                        "performing the operation.");
        return -1;
    }
    return 0;
}

int
pygpu_check_write(const TensorObject *out, const TensorObject *in1,
                  const TensorObject *in2)
{
    if (pygpu_check_writable(out) < 0) {
        return -1;
    }
    if (pygpu_has_internal_overlap(out) == PYGPU_MEM_YES) {
        PyErr_SetString(PyExc_RuntimeError,
                        "unsupported operation: more than one element of the "
                        "written-to tensor refers to a single memory "
                        "location. Please clone() the tensor before "
                        "performing the operation.");
        return -1;
    }
    return check_input(out, in1) < 0 || check_input(out, in2) < 0 ? -1 : 0;
}
