/* stream_docs.h - the module functions behind pygpu.cuda.Stream, Event,
 * the stream-ordered copy and CUDA graphs, listed once: name, text
 * signature and doc.  A CUDA build defines pygpu_py_<name> for each
 * (cuda_stream.c, cuda_event.c, cuda_copy.c, cuda_graph.c,
 * cuda_capture.c); a CPU-only build's table (cuda_none.c) refuses every
 * one.  All take positional arguments (METH_FASTCALL). */
#ifndef PYGPU_STREAM_DOCS_H
#define PYGPU_STREAM_DOCS_H

#define PYGPU_STREAM_FUNCTION_LIST(X)                                        \
    X(_cuda_stream_new, "($module, device, priority, /)",                    \
      "A stream of CUDA device `device` (an int handle) from its pool;\n"    \
      "priority < 0 takes the high-priority pool.")                          \
    X(_cuda_current_stream, "($module, device, /)",                          \
      "The calling thread's current stream on `device` (0: the legacy\n"     \
      "default stream).")                                                    \
    X(_cuda_set_stream, "($module, device, stream, /)",                      \
      "Make `stream` (an int handle) current on `device` for this thread.")  \
    X(_cuda_stream_query, "($module, device, stream, /)",                    \
      "True when all work queued on `stream` is done.")                      \
    X(_cuda_stream_synchronize, "($module, device, stream, /)",              \
      "Wait for the work queued on `stream`.")                               \
    X(_cuda_stream_wait_event, "($module, device, stream, event, /)",        \
      "Make later work on `stream` wait for `event`.")                       \
    X(_cuda_stream_priority, "($module, device, stream, /)",                 \
      "The priority of `stream`.")                                           \
    X(_cuda_stream_priority_range, "($module, /)",                           \
      "(least, greatest) stream priorities of the current device.")          \
    X(_cuda_event_new, "($module, device, flags, /)",                        \
      "A CUDA event (an int handle) on `device`; flags: 1 timing,\n"         \
      "2 blocking sync, 4 interprocess.")                                    \
    X(_cuda_event_destroy, "($module, device, event, /)",                    \
      "Destroy `event`.")                                                    \
    X(_cuda_event_record, "($module, device, event, stream, /)",             \
      "Record `event` on `stream`.")                                         \
    X(_cuda_event_query, "($module, device, event, /)",                      \
      "True when the work before `event` is done.")                          \
    X(_cuda_event_synchronize, "($module, device, event, /)",                \
      "Wait for the work before `event`.")                                   \
    X(_cuda_event_elapsed_time, "($module, device, start, end, /)",          \
      "Milliseconds between two recorded timing events.")                    \
    X(_cuda_event_ipc_handle, "($module, device, event, /)",                 \
      "The IPC handle (bytes) of an interprocess `event`.")                  \
    X(_cuda_event_from_ipc_handle, "($module, device, handle, /)",           \
      "An event (an int handle) on `device` opened from the IPC handle\n"    \
      "another process made.")                                               \
    X(_cuda_memcpy, "($module, dst, dst_device, src, src_device, nbytes,\n"  \
      "             sync, /)",                                               \
      "Copy nbytes between raw addresses (device -1: host) on the current\n" \
      "stream, as tensor copies do; for benchmarks.")                        \
    X(_cuda_graph_new, "($module, /)",                                       \
      "A new, empty CUDA graph (a capsule).")                                \
    X(_cuda_graph_pool_handle, "($module, /)",                               \
      "A new private memory pool id for graphs to share.")                   \
    X(_cuda_graph_capture_begin, "($module, graph, pool, mode, /)",          \
      "Begin capturing the current stream's work into `graph`, its memory\n" \
      "from private pool `pool` (0: a new one); mode: 0 global,\n"           \
      "1 thread_local, 2 relaxed.  Returns the pool's id.")                  \
    X(_cuda_graph_capture_end, "($module, graph, /)",                        \
      "End the capture of `graph` and instantiate it.")                      \
    X(_cuda_graph_replay, "($module, graph, /)",                             \
      "Launch the captured `graph` on the current stream.")                  \
    X(_cuda_graph_reset, "($module, graph, /)",                              \
      "Drop what `graph` captured and let go of its memory pool.")           \
    X(_cuda_is_current_stream_capturing, "($module, device, /)",             \
      "Whether the current stream of `device` is capturing a graph.")

#define PYGPU_STREAM_DECLARE(name, sig, doc)                                 \
    PyObject *pygpu_py##name(PyObject *m, PyObject *const *args,             \
                             Py_ssize_t nargs);
#define PYGPU_STREAM_ROW(name, sig, doc)                                     \
    {#name, (PyCFunction)(void (*)(void))pygpu_py##name, METH_FASTCALL,      \
     #name sig "\n--\n\n" doc},

#endif /* PYGPU_STREAM_DOCS_H */
