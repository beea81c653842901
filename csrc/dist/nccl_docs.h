/* nccl_docs.h - what both flavours of the NCCL layer show Python: the
 * docstrings of the module functions and the list of NcclComm's methods
 * and attributes, so that the CUDA build (nccl_*.c) and the stand-ins of a
 * build without NCCL (nccl_none.c) have the same names and signatures. */
#ifndef PYGPU_NCCL_DOCS_H
#define PYGPU_NCCL_DOCS_H

#define PYGPU_DOC_NCCL_IS_BUILT \
    "_nccl_is_built($module, /)\n--\n\n" \
    "Whether this build has the NCCL layer (a CUDA build that found\n" \
    "nccl.h); without it every NCCL request says why."

#define PYGPU_DOC_NCCL_CAPABILITIES \
    "_nccl_capabilities($module, /)\n--\n\n" \
    "{'dtypes': [...], 'ops': [...]}: the dtype names and reduce ops the\n" \
    "loaded NCCL serves (bfloat16 and AVG from NCCL 2.10).  RuntimeError\n" \
    "when NCCL cannot be loaded."

#define PYGPU_DOC_NCCL_VERSION \
    "_nccl_version($module, /)\n--\n\n" \
    "(major, minor, patch) of the NCCL library loaded, or None when it\n" \
    "cannot be loaded (see _nccl_load_error)."

#define PYGPU_DOC_NCCL_LOAD_ERROR \
    "_nccl_load_error($module, /)\n--\n\n" \
    "Why NCCL cannot be used (the paths tried and what the loader said),\n" \
    "or None when it is loaded."

#define PYGPU_DOC_NCCL_LOAD \
    "_nccl_load($module, paths=(), /)\n--\n\n" \
    "Load NCCL now, trying libnccl.so.2 where every CUDA library is\n" \
    "looked for (pip's nvidia/nccl/lib next to pygpu, the loader's\n" \
    "search, CUDA_HOME), then each of `paths` (a sequence of file names);\n" \
    "PYGPU_NCCL_LIBRARY, when set, is the only path tried.  A library\n" \
    "once loaded stays.  Returns None on success, else the reason, as\n" \
    "_nccl_load_error does."

#define PYGPU_DOC_NCCL_UNIQUE_ID \
    "_nccl_unique_id($module, /)\n--\n\n" \
    "A new ncclUniqueId (128 bytes) for rank 0 to hand to every rank."

#define PYGPU_DOC_NCCL_COMM \
    "NcclComm(unique_id, world_size, rank, device_index, timeout=None)\n" \
    "--\n\n" \
    "An NCCL communicator: this process is `rank` of `world_size`, on CUDA\n" \
    "device `device_index`.  Every rank passes the same 128-byte\n" \
    "`unique_id`.  With `timeout` (seconds) initialisation is nonblocking\n" \
    "and gives up (RuntimeError) when the other ranks have not joined in\n" \
    "time.  Operations take contiguous CUDA tensors on that device, work\n" \
    "in place and run on the device's current stream."

/* The methods: X(name, KIND, doc), KIND NOARGS or FASTKW. */
#define PYGPU_NCCL_COMM_METHODS(X)                                           \
    X(all_reduce, FASTKW,                                                    \
      "all_reduce($self, tensor, op)\n--\n\n"                                \
      "Reduce `tensor` over all ranks with `op` ('SUM', 'PRODUCT', 'MAX',\n" \
      "'MIN', 'AVG'); every rank gets the result in `tensor`.")             \
    X(broadcast, FASTKW,                                                     \
      "broadcast($self, tensor, root)\n--\n\n"                               \
      "Copy rank `root`'s `tensor` into `tensor` on every rank.")            \
    X(reduce, FASTKW,                                                        \
      "reduce($self, tensor, op, root)\n--\n\n"                              \
      "Reduce `tensor` over all ranks with `op` into rank `root`'s\n"        \
      "`tensor`.")                                                           \
    X(all_gather_into_tensor, FASTKW,                                        \
      "all_gather_into_tensor($self, output, input)\n--\n\n"                 \
      "Rank i's `input` into block i of `output` (world_size times as\n"     \
      "many elements) on every rank.")                                       \
    X(reduce_scatter_tensor, FASTKW,                                         \
      "reduce_scatter_tensor($self, output, input, op)\n--\n\n"              \
      "Reduce `input` (world_size blocks) over all ranks with `op`; rank i\n" \
      "gets block i in `output`.")                                           \
    X(send, FASTKW,                                                          \
      "send($self, tensor, peer)\n--\n\n"                                    \
      "Send `tensor` to rank `peer`, which receives it with recv.")          \
    X(recv, FASTKW,                                                          \
      "recv($self, tensor, peer)\n--\n\n"                                    \
      "Receive into `tensor` what rank `peer` sends.")                       \
    X(group_start, NOARGS,                                                   \
      "group_start($self, /)\n--\n\n"                                        \
      "Queue the calls that follow until group_end (ncclGroupStart): sends\n" \
      "and receives between the same ranks need it.")                       \
    X(group_end, NOARGS,                                                     \
      "group_end($self, /)\n--\n\n"                                          \
      "Launch the calls queued since group_start (ncclGroupEnd).")          \
    X(async_error, NOARGS,                                                   \
      "async_error($self, /)\n--\n\n"                                        \
      "None, or what went wrong in work already launched\n"                  \
      "(ncclCommGetAsyncError), as a string.")                               \
    X(abort, NOARGS,                                                         \
      "abort($self, /)\n--\n\n"                                              \
      "Abandon the communicator and the work in flight (ncclCommAbort).")    \
    X(destroy, NOARGS,                                                       \
      "destroy($self, /)\n--\n\n"                                            \
      "Finish the work in flight and free the communicator; it is freed\n"   \
      "when garbage collected otherwise.")

/* The read-only attributes: X(name, doc). */
#define PYGPU_NCCL_COMM_GETTERS(X)                                           \
    X(rank, "This process's rank.")                                          \
    X(world_size, "The number of ranks.")                                    \
    X(device, "The CUDA device index of this rank.")                         \
    X(closed, "True once destroyed or aborted.")

#endif
