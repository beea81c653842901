/* join_methods.h - the Tensor methods of creation, joining, splitting and
 * integer indexing, for the method table of tensor_methods.c: their
 * declarations (defined in tensor_create.c, tensor_type.c,
 * tensor_split.c, tensor_join.c and tensor_select.c) and their rows,
 * PYGPU_JOIN_METHOD_ROWS.
 * Needs FASTKW_DECL, FAST_DECL and NOARGS_DECL (tensor_methods.c).
 */
#ifndef PYGPU_JOIN_METHODS_H
#define PYGPU_JOIN_METHODS_H

FASTKW_DECL(pygpu_t_new_empty);
FASTKW_DECL(pygpu_t_new_zeros);
FASTKW_DECL(pygpu_t_new_ones);
FASTKW_DECL(pygpu_t_new_full);
FASTKW_DECL(pygpu_t_new_tensor);
FASTKW_DECL(pygpu_t_type);
NOARGS_DECL(pygpu_t_type_as); /* METH_O */
FASTKW_DECL(pygpu_t_split);
FASTKW_DECL(pygpu_t_chunk);
FASTKW_DECL(pygpu_t_unbind);
FASTKW_DECL(pygpu_t_narrow);
FAST_DECL(pygpu_t_flip);
FAST_DECL(pygpu_t_repeat);
NOARGS_DECL(pygpu_t_expand_as); /* METH_O */
FASTKW_DECL(pygpu_t_index_select);
FASTKW_DECL(pygpu_t_gather);

#define PYGPU_JOIN_METHOD_ROWS                                               \
    {"new_empty", FASTKW(pygpu_t_new_empty),                                 \
     "new_empty($self, /, *size, dtype=None, device=None,\n"                 \
     "          requires_grad=False, pin_memory=False)\n--\n\n"              \
     "An uninitialised tensor with self's dtype and device unless given."},  \
    {"new_zeros", FASTKW(pygpu_t_new_zeros),                                 \
     "new_zeros($self, /, *size, dtype=None, device=None,\n"                 \
     "          requires_grad=False, pin_memory=False)\n--\n\n"              \
     "Zeros with self's dtype and device unless given."},                    \
    {"new_ones", FASTKW(pygpu_t_new_ones),                                   \
     "new_ones($self, /, *size, dtype=None, device=None,\n"                  \
     "         requires_grad=False, pin_memory=False)\n--\n\n"               \
     "Ones with self's dtype and device unless given."},                     \
    {"new_full", FASTKW(pygpu_t_new_full),                                   \
     "new_full($self, size, fill_value, /, *, dtype=None, device=None,\n"    \
     "         requires_grad=False, pin_memory=False)\n--\n\n"               \
     "fill_value in the shape size, with self's dtype and device unless\n"   \
     "given."},                                                              \
    {"new_tensor", FASTKW(pygpu_t_new_tensor),                               \
     "new_tensor($self, /, data, dtype=None, device=None,\n"                 \
     "           requires_grad=False)\n--\n\n"                               \
     "A copy of data with self's dtype and device unless given."},           \
    {"type", FASTKW(pygpu_t_type),                                           \
     "type($self, /, dtype=None, non_blocking=False)\n--\n\n"                \
     "Without dtype, the type name ('pygpu.FloatTensor',\n"                  \
     "'pygpu.cuda.LongTensor'); with a dtype or a type name, self\n"         \
     "converted to it (self when nothing changes)."},                        \
    {"type_as", pygpu_t_type_as, METH_O,                                     \
     "type_as($self, other, /)\n--\n\n"                                      \
     "self converted to other's type (dtype and device type)."},             \
    {"split", FASTKW(pygpu_t_split),                                         \
     "split($self, /, split_size_or_sections, dim=0)\n--\n\n"                \
     "Views along dim: pieces of split_size_or_sections (an int) or of the\n" \
     "sizes it lists."},                                                     \
    {"chunk", FASTKW(pygpu_t_chunk),                                         \
     "chunk($self, /, chunks, dim=0)\n--\n\n"                                \
     "At most `chunks` views along dim, of ceil(size / chunks) each."},      \
    {"unbind", FASTKW(pygpu_t_unbind),                                       \
     "unbind($self, /, dim=0)\n--\n\n"                                       \
     "The views self.select(dim, i) for every i, as a tuple."},              \
    {"narrow", FASTKW(pygpu_t_narrow),                                       \
     "narrow($self, /, dim, start, length)\n--\n\n"                          \
     "The view of elements start .. start + length - 1 along dim."},         \
    {"flip", FAST(pygpu_t_flip),                                             \
     "flip($self, /, *dims)\n--\n\n"                                         \
     "A copy with the order of elements reversed along dims (ints or one\n"  \
     "tuple)."},                                                             \
    {"repeat", FAST(pygpu_t_repeat),                                         \
     "repeat($self, /, *repeats)\n--\n\n"                                    \
     "A copy tiled repeats[i] times along each dim i (ints or one tuple;\n"  \
     "leading repeats add dims)."},                                          \
    {"expand_as", pygpu_t_expand_as, METH_O,                                 \
     "expand_as($self, other, /)\n--\n\n"                                    \
     "self.expand(other.size()): a broadcast view."},                        \
    {"index_select", FASTKW(pygpu_t_index_select),                           \
     "index_select($self, /, dim, index)\n--\n\n"                            \
     "The entries index (a 1-d int32/int64 tensor) along dim, as a new\n"    \
     "tensor."},                                                             \
    {"gather", FASTKW(pygpu_t_gather),                                       \
     "gather($self, /, dim, index, *, sparse_grad=False)\n--\n\n"            \
     "pygpu.gather(self, dim, index)."},                                     \
    /* end of PYGPU_JOIN_METHOD_ROWS */

#endif /* PYGPU_JOIN_METHODS_H */
